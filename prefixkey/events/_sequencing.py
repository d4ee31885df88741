"""Sequence numbers of one KV-event stream: next, gap, duplicate, late or restart (sans-IO).

vLLM numbers the batches of each publisher (one per replica, per data-parallel
rank) from 0, one per batch. :class:`StreamSequence` classifies each received
``seq`` against what the stream has seen; it opens no sockets, so the
subscriber's transport (:mod:`prefixkey.fleet.feed._subscriber`) and tests share it.

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
  counts from 0 again: a new epoch; ``missing`` is ``[0, seq)`` when ``seq > 0``);
* ``seq > expected + max_jump``: ``"jump"``, handled as a restart (a new epoch
  starting at ``seq``, nothing missing): no publisher skips that many batches
  (vLLM's replay buffer holds 10,000 by default), so the stream is either
  bogus or unrecoverable. If the old numbering resumes, that is a ``"restart"``
  again, so one bogus seq costs two epochs, never gap detection.

No missing range is longer than ``max_jump``: a first message or a restart at a
huge seq asks for the last ``max_jump`` seqs only, so a hostile seq cannot
inflate the counters or the replay.

A restarted vLLM stamps its batches with the wall clock, so its new seq 0 never
has the digest of the old seq 0; a re-sent identical message does.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Literal, NamedTuple

__all__ = ["DEFAULT_MAX_JUMP", "SeqVerdict", "StreamSequence"]

Kind = Literal["first", "next", "gap", "duplicate", "late", "restart", "jump"]

#: The largest gap taken as a gap; beyond it a seq is a restart (``"jump"``).
DEFAULT_MAX_JUMP = 10_000


class SeqVerdict(NamedTuple):
    """How a received seq relates to the stream, and the range ``[start, end)`` missing."""

    kind: Kind
    missing: tuple[int, int] | None = None


class StreamSequence:
    """The sequence state of one ``(replica, topic)`` stream."""

    def __init__(self, *, window: int = 4096, max_open_gaps: int = 64,
                 max_jump: int = DEFAULT_MAX_JUMP) -> None:
        self.window = window
        self.max_open_gaps = max_open_gaps
        self.max_jump = max_jump
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

    def _open_gap(self, start: int, end: int) -> tuple[int, int]:
        self._open.append((start, end))
        del self._open[: -self.max_open_gaps]
        return start, end

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
                return SeqVerdict("first", self._open_gap(max(0, seq - self.max_jump), seq))
            return SeqVerdict("first")
        if seq == expected:
            self.expected = seq + 1
            self._remember(seq, digest)
            return SeqVerdict("next")
        if seq > expected + self.max_jump:
            self._new_epoch(seq, digest)
            return SeqVerdict("jump")
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
        self._new_epoch(seq, digest)
        if seq > 0:
            return SeqVerdict("restart", self._open_gap(max(0, seq - self.max_jump), seq))
        return SeqVerdict("restart")

    def _new_epoch(self, seq: int, digest: int) -> None:
        self.epoch += 1
        self._recent.clear()
        self._open.clear()
        self.expected = seq + 1
        self._remember(seq, digest)

    def fill(self, seq: int, digest: int) -> bool:
        """Record a batch recovered for an open gap; False if ``seq`` was not missing."""
        for i, (start, end) in enumerate(self._open):
            if start <= seq < end:
                parts = [(a, b) for a, b in ((start, seq), (seq + 1, end)) if a < b]
                self._open[i : i + 1] = parts
                self._remember(seq, digest)
                return True
        return False
