"""Sequence numbers of one KV-event stream: next, gap, duplicate, late or restart (sans-IO).

vLLM numbers the batches of each publisher (one per replica, per data-parallel
rank) from 0, one per batch. :class:`StreamSequence` classifies each received
``seq`` against what the stream has seen; it opens no sockets, so the
subscriber's transport (:mod:`prefixkey.fleet._subscriber`) and tests share it.

Rules (``expected`` is the last consumed seq + 1):

* first message: ``"first"``; ``missing`` is ``[0, seq)`` when ``seq > 0`` (a
  late join: a replay endpoint can fill it);
* ``seq == expected``: ``"next"``;
* ``seq > expected``: ``"gap"``, ``missing`` ``[expected, seq)``;
* ``seq < expected`` and the same payload digest as the batch consumed under
  that seq (kept for the last ``window`` seqs): ``"duplicate"`` (skip it);
* ``seq < expected`` inside a gap still open: ``"late"`` (a lost batch after
  all: apply it);
* any other ``seq < expected``: ``"restart"`` (the publisher restarted and
  counts from 0 again: a new epoch; ``missing`` is ``[0, seq)`` when ``seq > 0``).

A restarted vLLM stamps its batches with the wall clock, so its new seq 0 never
has the digest of the old seq 0; a re-sent identical message does.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Literal, NamedTuple

__all__ = ["SeqVerdict", "StreamSequence"]

Kind = Literal["first", "next", "gap", "duplicate", "late", "restart"]


class SeqVerdict(NamedTuple):
    """How a received seq relates to the stream, and the range ``[start, end)`` missing."""

    kind: Kind
    missing: tuple[int, int] | None = None


class StreamSequence:
    """The sequence state of one ``(replica, topic)`` stream."""

    def __init__(self, *, window: int = 4096, max_open_gaps: int = 64) -> None:
        self.window = window
        self.max_open_gaps = max_open_gaps
        #: The next seq in order (None before the first message).
        self.expected: int | None = None
        #: How many times the stream restarted (seq went backwards).
        self.epoch = 0
        self._recent: OrderedDict[int, int] = OrderedDict()  # seq -> payload digest
        self._open: list[tuple[int, int]] = []  # gaps not (yet) recovered

    def _remember(self, seq: int, digest: int) -> None:
        self._recent[seq] = digest
        self._recent.move_to_end(seq)
        while len(self._recent) > self.window:
            self._recent.popitem(last=False)

    def _open_gap(self, start: int, end: int) -> None:
        self._open.append((start, end))
        del self._open[: -self.max_open_gaps]

    def is_open(self, seq: int) -> bool:
        """Whether ``seq`` lies in a gap that was never filled."""
        return any(start <= seq < end for start, end in self._open)

    def open_gaps(self) -> tuple[tuple[int, int], ...]:
        return tuple(self._open)

    def observe(self, seq: int, digest: int) -> SeqVerdict:
        """Classify ``seq`` (its payload hashing to ``digest``) and consume it."""
        expected = self.expected
        if expected is None:
            self.expected = seq + 1
            self._remember(seq, digest)
            if seq > 0:
                self._open_gap(0, seq)
                return SeqVerdict("first", (0, seq))
            return SeqVerdict("first")
        if seq == expected:
            self.expected = seq + 1
            self._remember(seq, digest)
            return SeqVerdict("next")
        if seq > expected:
            self._open_gap(expected, seq)
            self.expected = seq + 1
            self._remember(seq, digest)
            return SeqVerdict("gap", (expected, seq))
        if self._recent.get(seq) == digest:
            return SeqVerdict("duplicate")
        if self.is_open(seq):
            self.fill(seq, digest)
            return SeqVerdict("late")
        self.epoch += 1
        self._recent.clear()
        self._open.clear()
        self.expected = seq + 1
        self._remember(seq, digest)
        if seq > 0:
            self._open_gap(0, seq)
            return SeqVerdict("restart", (0, seq))
        return SeqVerdict("restart")

    def fill(self, seq: int, digest: int) -> bool:
        """Record a batch recovered for an open gap; False if ``seq`` was not missing."""
        for i, (start, end) in enumerate(self._open):
            if start <= seq < end:
                parts = [(a, b) for a, b in ((start, seq), (seq + 1, end)) if a < b]
                self._open[i : i + 1] = parts
                self._remember(seq, digest)
                return True
        return False
