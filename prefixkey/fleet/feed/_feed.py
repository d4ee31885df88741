"""One replica's feed, sans-IO: bytes in, what to do out.

The threaded :class:`~prefixkey.fleet.Subscriber` and the asyncio
:class:`~prefixkey.fleet.AsyncSubscriber` move bytes; everything they decide
about a message is here, per replica, so that each replica's state, bounds and
counters are its own and both transports behave alike. As h11's ``Connection``
does for HTTP, a :class:`ReplicaFeed` takes a replica's frames and answers
what to do; it never touches the index, takes no index lock, sleeps, retries,
awaits or logs:

* :meth:`ReplicaFeed.admit` bounds the messages queued for the replica, in
  count and in bytes: their size, or None (drop it; counted, and the seq gap
  it leaves is replayed);
* :meth:`ReplicaFeed.accept` frames and sequences a PUB message: an
  :class:`Accepted` to apply, with the range to replay first (bounded by
  ``max_jump``) and, when it revealed a publisher restart, the :class:`Restart`
  to carry out on the index first (re-register or clear the replica's ranks);
  or None (a duplicate, bad framing: counted);
* :class:`ReplayExchange` collects one replay's replies
  (:meth:`ReplicaFeed.on_reply`);
* :meth:`ReplicaFeed.plan` decodes a payload (:meth:`EventDecoder.ops
  <prefixkey.events.EventDecoder.ops>`, or the full batch when ``on_batch`` or the
  scheme learning needs the events), bounds the data-parallel ranks an endpoint
  may announce and answers the :class:`Apply` to carry out: the replica, its
  ops, the scheme to register it with when the index does not know it; or
  None (not decoded, over ``max_ranks``: counted).

What the feed would log waits in :attr:`ReplicaFeed.notes`. The effects (the
index under the lock, retries of :class:`~prefixkey.fleet.IndexUnavailableError`
with backoff, ``on_batch``, the log) are
:class:`~prefixkey.fleet.feed._driver.FeedDriver`'s, which both transports share;
it tells the feed what came of them (:meth:`ReplicaFeed.applied`,
:meth:`ReplicaFeed.restarted`, :meth:`ReplicaFeed.learned`). The counters are
read by ``stats()`` from other threads: :attr:`ReplicaFeed.stats_lock` guards
them (it is never held across anything else).

The publishers' endpoints are in :mod:`prefixkey.fleet.feed._endpoints`, the set
of feeds a subscriber holds in :mod:`prefixkey.fleet.feed._feed_set`.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from logging import DEBUG, INFO, WARNING
from typing import Any, Literal, NamedTuple, cast

from packaging.version import Version

from ...events import (
    DecodedOps,
    EventBatch,
    EventDecodeError,
    EventDecoder,
    ReplayEnd,
    StreamSequence,
    split_message,
)
from .._replicas import ReplicaId, ReplicaScheme
from ..routing._metrics import COUNTERS, ReplicaStats
from ._endpoints import ReplicaEndpoint
from ._learning import SchemeLearner, WireEraGuess, inferred_releases
from ._options import SubscriberOptions

__all__ = ["Accepted", "Apply", "Note", "ReplayExchange", "ReplicaFeed", "Restart", "sampled"]

#: Builds a NamedTuple from its fields in C (its ``__new__`` is a Python call): once per
#: message on the hot path.
_new_tuple = tuple.__new__

#: A log record the feed would write: ``(level, format, args)``, the replica's key
#: prefixed by whoever logs it.
Note = tuple[int, str, tuple[Any, ...]]


class Restart(NamedTuple):
    """A publisher restart to carry out on the index before the message that revealed it.

    With ``clear``, each of ``ranks`` (the replica's data-parallel ranks seen on
    ``topic``) registered in the index is removed and registered again with its
    scheme, except with ``forget``: a learned scheme, learned again.
    """

    topic: str
    why: str
    ranks: tuple[int, ...]
    clear: bool
    forget: ReplicaScheme | None


class Accepted(NamedTuple):
    """A PUB message to apply, after replaying ``replay`` (``[start, end)``) when given,
    and carrying out ``restart`` first when given."""

    topic: str
    seq: int
    payload: bytes
    recv_time: float
    replay: tuple[int, int] | None
    restart: Restart | None = None


class Apply(NamedTuple):
    """A decoded batch to apply to the index as ``replica``.

    ``decoded`` is what every backend's ``apply_ops`` takes; ``batch`` the event
    objects, when ``on_batch`` or the scheme learning needs them. ``scheme`` is
    registered first when the index does not know the replica. With ``learn``,
    the scheme is being learned: ask the index whether it knows the replica; if
    not, :meth:`ReplicaFeed.learned` says what to apply.
    """

    topic: str
    seq: int
    via: Literal["pub", "replay"]
    recv_time: float
    replica: ReplicaId
    decoded: DecodedOps
    batch: EventBatch | None
    scheme: ReplicaScheme | None
    learn: bool


@dataclass
class ReplayExchange:
    """One replay request's progress: the range wanted and what came back."""

    topic: str
    stream: StreamSequence
    start: int
    end: int
    filled: int = 0
    recovered: int = 0
    ended: bool = False


@dataclass
class ReplicaFeed:
    """The state and counters of one publisher (see the module docstring).

    ``wants_batch``: the event objects are needed (``on_batch``), not only the ops.
    """

    config: ReplicaEndpoint
    options: SubscriberOptions = field(default_factory=SubscriberOptions)
    wants_batch: bool = False
    stats_lock: threading.Lock = field(default_factory=threading.Lock)
    streams: dict[str, StreamSequence] = field(default_factory=dict)
    ranks: dict[str, set[int]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    decode_errors_by_type: Counter[str] = field(default_factory=Counter)
    #: What the feed would log, oldest first (taken by the transport's logger).
    notes: deque[Note] = field(default_factory=deque)
    last_seen: float | None = None
    idle: bool = False
    queued: int = 0
    queued_bytes: int = 0
    decoder: EventDecoder | None = None
    era_guess: WireEraGuess | None = None
    #: The releases the payloads fit when the era guess settled: ``[first, end)``.
    wire_span: tuple[Version, Version | None] | None = None
    learner: SchemeLearner | None = None

    def __post_init__(self) -> None:
        version = self.config.vllm_version
        if version is not None:
            self.decoder = EventDecoder(version, strict=self.config.strict)
            for warning in self.decoder.version_warnings:
                self._note(WARNING, "%s", warning)
        self._start_learning()

    def _start_learning(self) -> None:
        """Guess the wire era (no release configured) and learn the scheme (none configured)."""
        version = self.config.vllm_version
        if version is None:
            self.era_guess = WireEraGuess(self.config.key, self.notes)
        if self.config.scheme is None and self.options.learn_schemes:
            self.learner = SchemeLearner(self.config.key, version,
                                         on_drop=lambda: self.count("unlearned_batches"),
                                         notes=self.notes)

    @property
    def key(self) -> str:
        return self.config.key

    def count(self, name: str, n: int = 1) -> None:
        with self.stats_lock:
            self.counters[name] += n

    def _note(self, level: int, text: str, *args: Any) -> None:
        self.notes.append((level, text, args))

    # -- the queue's bounds (the transport holds the queue) ----------------------------

    def admit(self, frames: list[bytes], recv_time: float | None = None) -> int | None:
        """Reserve queue room for ``frames``: their size, or None (dropped and counted).

        ``recv_time`` (when the transport took them off the socket) is when the replica
        was last heard from, dropped or not: a backlog is not silence (issue 23).
        """
        if recv_time is not None and (self.last_seen is None or recv_time > self.last_seen):
            self.last_seen = recv_time
        size = sum(map(len, frames))
        opts = self.options
        with self.stats_lock:
            if self.queued >= opts.queue_size or self.queued_bytes + size > opts.queue_bytes:
                self.counters["dropped"] += 1
                dropped = self.counters["dropped"]
            else:
                self.queued += 1
                self.queued_bytes += size
                return size
        if sampled(dropped):
            self._note(WARNING, "queue full (%d messages, %d bytes), message dropped (%d so far)",
                       opts.queue_size, opts.queue_bytes, dropped)
        return None

    def taken(self, size: int) -> None:
        """A message admitted with ``size`` left the queue."""
        with self.stats_lock:
            self.queued -= 1
            self.queued_bytes -= size

    def check_idle(self, now: float, started_at: float) -> None:
        since = now - (self.last_seen if self.last_seen is not None else started_at)
        if since > self.options.idle_timeout and not self.idle:
            self.idle = True
            self.count("idle_periods")
            self._note(WARNING, "no message for %.1f s", since)
        elif self.idle and since <= self.options.idle_timeout:  # heard from, not yet taken
            self.idle = False
            self._note(INFO, "messages again")

    # -- PUB messages ----------------------------------------------------------------

    def accept(self, frames: list[bytes], recv_time: float) -> Accepted | None:
        """Frame and sequence a PUB message: what to apply (and replay, restart first), or None."""
        if self.idle:
            self.idle = False
            self._note(INFO, "messages again")
        if self.last_seen is None or recv_time > self.last_seen:  # never back: see admit()
            self.last_seen = recv_time
        try:
            topic, seq, payload = split_message(frames)
        except EventDecodeError as exc:
            self.count("framing_errors")
            self._note(WARNING, "bad message framing: %s", exc)
            return None
        stream = self.streams.get(topic)
        if stream is None:
            stream = self.streams[topic] = StreamSequence(max_jump=self.options.max_jump)
        verdict = stream.observe(seq, hash(payload))
        kind = verdict.kind
        restart = None
        if kind == "duplicate":
            self.count("duplicates")
            self._note(DEBUG, "duplicate seq %d skipped", seq)
            return None
        if kind == "late":
            self.count("late_batches")
            self._note(INFO, "seq %d arrived after its gap", seq)
        elif kind == "restart":
            restart = self._new_epoch(topic, f"seq back to {seq}")
        elif kind == "jump":
            self.count("seq_jumps")
            restart = self._new_epoch(
                topic, f"seq jumped to {seq}, over max_jump {self.options.max_jump}")
        replay = None
        if verdict.missing is not None:
            start, end = verdict.missing
            if kind == "first":
                self.count("late_joins")
            else:
                self.count("gaps")
                self.count("missing_batches", end - start)
                self._note(WARNING, "gap, seq %d-%d missing", start, end - 1)
            if self.config.replay_endpoint is not None and (kind != "first"
                                                            or self.options.catch_up):
                self.count("replay_requests")
                replay = verdict.missing
            elif kind != "first":
                self.count("lost_batches", end - start)
        return Accepted(topic, seq, payload, recv_time, replay, restart)

    def _new_epoch(self, topic: str, why: str) -> Restart:
        self.count("restarts")
        learner = self.learner
        clear = self.options.restart_policy == "clear"
        # A restarted process may run another release or seed: what was learned is learned again.
        forget = learner.scheme if clear and learner is not None else None
        return Restart(topic, why, tuple(sorted(self.ranks.pop(topic, set()))), clear, forget)

    def restarted(self, restart: Restart, cleared: int, failed: bool) -> None:
        """The transport carried ``restart`` out on the index: ``cleared`` entries went, and
        the clear did not complete when ``failed`` (counted in ``restart_errors``)."""
        if restart.forget is not None:
            self._start_learning()
        self.count("cleared_entries", cleared)
        self._note(WARNING, "publisher restarted (%s): new epoch, %d entries %s%s", restart.why,
                   cleared, "cleared" if restart.clear else "kept",
                   "; the clear did not complete (restart_errors)" if failed else "")

    # -- replay ------------------------------------------------------------------------

    def replay_exchange(self, accepted: Accepted) -> ReplayExchange:
        assert accepted.replay is not None
        start, end = accepted.replay
        return ReplayExchange(accepted.topic, self.streams[accepted.topic], start, end)

    def on_reply(self, exchange: ReplayExchange, frames: list[bytes],
                 recv_time: float) -> Apply | None:
        """Take one replay reply: the batch to apply (count it in ``exchange.recovered`` once
        applied), or None; ``exchange.ended`` once the end marker arrived."""
        decoder = (self.decoder if self.era_guess is None
                    else self.era_guess.replay_decoder(frames))
        if decoder is None:  # no era the payloads fit frames replies like this
            self.count("framing_errors")
            return None
        try:
            reply = decoder.split_replay_reply(frames)
        except EventDecodeError as exc:
            self.count("framing_errors")
            self._note(WARNING, "bad replay reply framing: %s", exc)
            return None
        if isinstance(reply, ReplayEnd):
            exchange.ended = True
            return None
        topic, seq, payload = reply
        if decoder.era.replay_carries_topic and topic != exchange.topic:
            return None
        if not exchange.start <= seq < exchange.end or not exchange.stream.fill(seq,
                                                                                hash(payload)):
            return None
        exchange.filled += 1
        return self.plan(exchange.topic, seq, payload, "replay", recv_time)

    def replay_finished(self, exchange: ReplayExchange) -> None:
        if exchange.ended:
            self.count("replay_completed")
        else:
            self.count("replay_failures")
            self._note(WARNING, "replay from seq %d got no end marker within %.1f s",
                       exchange.start, self.options.replay_timeout)
        self.count("replayed_batches", exchange.recovered)
        self.count("lost_batches", (exchange.end - exchange.start) - exchange.filled)

    # -- payloads ------------------------------------------------------------------------

    def _decoder(self, payload: bytes) -> EventDecoder:
        """The decoder for ``payload``; may raise EventDecodeError (no era decodes it)."""
        guess = self.era_guess
        if guess is None:
            assert self.decoder is not None
            return self.decoder
        decoder = guess.observe(payload)
        if guess.settled:
            self.decoder, self.era_guess, self.wire_span = guess.decoder, None, guess.span()
        return decoder

    def plan(self, topic: str, seq: int, payload: bytes, via: Literal["pub", "replay"],
             recv_time: float) -> Apply | None:
        """Decode ``payload``: the :class:`Apply` to carry out, or None (counted)."""
        learner = self.learner
        learning = learner is not None and learner.state == "learning"
        scheme = self.config.scheme or (learner.scheme if learner is not None else None)
        batch: EventBatch | None = None
        try:
            decoder = self._decoder(payload)
            if self.wants_batch or learning:
                full = decoder.decode(payload)
                batch = full.batch
                decoded = DecodedOps.of_batch(batch, full.warnings)
            else:
                decoded = decoder.ops(payload)
        except EventDecodeError as exc:
            with self.stats_lock:
                self.counters["decode_errors"] += 1
                self.decode_errors_by_type[type(exc).__name__] += 1
            self._note(WARNING, "seq %d (%s) not decoded, skipped: %s: %s", seq, via,
                       type(exc).__name__, exc)
            return None
        if decoded.warnings:
            self.count("ignored_fields", len(decoded.warnings))
        rid = self._replica(topic, seq, decoded.data_parallel_rank)
        if rid is None:
            return None
        return _new_tuple(Apply, (topic, seq, via, recv_time, rid, decoded, batch, scheme,
                                  learning))

    def learned(self, apply: Apply) -> tuple[list[tuple[ReplicaId, DecodedOps]],
                                              ReplicaScheme | None]:
        """What to apply for ``apply`` while learning, the index not knowing its replica:
        the batches (held ones first, once learned; none while still held) and the scheme
        to register their replicas with."""
        learner = self.learner
        assert learner is not None and apply.batch is not None
        # Fingerprinting runs outside the lock: readers are not held up by it.
        span = self.era_guess.span() if self.era_guess is not None else None
        todo = learner.observe(apply.replica, apply.batch, span)
        return ([(rid, apply.decoded if held is apply.batch else DecodedOps.of_batch(held))
                 for rid, held in todo], learner.scheme)

    def _replica(self, topic: str, seq: int, rank: int | None) -> ReplicaId | None:
        """The replica a batch of ``rank`` (None: unpublished) is for; None past max_ranks."""
        if rank is None:
            rank = self.config.dp_rank or 0
        seen = self.ranks.setdefault(topic, set())
        if rank not in seen:
            if sum(map(len, self.ranks.values())) >= self.options.max_ranks:
                self.count("rank_overflows")
                n = self.counters["rank_overflows"]
                if sampled(n):
                    self._note(WARNING, "seq %d announces rank %d beyond max_ranks %d: skipped "
                               "(%d so far)", seq, rank, self.options.max_ranks, n)
                return None
            seen.add(rank)
        return ReplicaId(self.config.name, rank)

    def applied(self, apply: Apply) -> None:
        """``apply`` was carried out: count the batch."""
        with self.stats_lock:
            self.counters["batches"] += 1
            self.counters["events"] += len(apply.decoded.ops)

    # -- observability -------------------------------------------------------------------

    def snapshot(self, now: float, started_at: float, index_size: int) -> ReplicaStats:
        with self.stats_lock:
            seen = self.last_seen
            return cast(ReplicaStats, {  # the counters: ReplicaCounters' keys
                **self.counters,
                "decode_errors_by_type": dict(self.decode_errors_by_type),
                "last_seen": seen,
                "idle_seconds": now - (seen if seen is not None else started_at),
                "idle": self.idle,
                "epochs": sum(s.epoch for s in self.streams.values()),
                "index_size": index_size,
                "queued": self.queued,
                "queued_bytes": self.queued_bytes,
                "vllm_version": None if self.decoder is None else self.decoder.vllm_version,
                "vllm_releases": (self.config.vllm_version if self.config.vllm_version is not None
                                  else inferred_releases(self.era_guess, self.wire_span,
                                                         self.learner)),
                "scheme": ("configured" if self.config.scheme is not None
                           else "none" if self.learner is None else self.learner.state),
            })


def sampled(n: int) -> bool:
    """Log the 1st, 10th, 100th… occurrence only: a flood must not flood the log too."""
    if n < 1:
        return False
    while n % 10 == 0:
        n //= 10
    return n == 1


