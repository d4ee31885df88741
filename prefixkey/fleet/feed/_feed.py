"""One replica's feed: framing, sequencing, replay bookkeeping, decoding, applying (sans-IO).

The threaded :class:`~prefixkey.fleet.Subscriber` and the asyncio
:class:`~prefixkey.fleet.AsyncSubscriber` move bytes; everything they decide
about a message is here, per replica, so that each replica's state, bounds and
counters are its own and both transports behave alike:

* :meth:`ReplicaFeed.admit` bounds the messages queued for the replica, in
  count and in bytes (a drop is counted, and the seq gap it leaves is replayed);
* :meth:`ReplicaFeed.accept` frames and sequences a PUB message and says which
  range to replay (bounded by ``max_jump``);
* :class:`ReplayExchange` collects one replay's replies;
* :meth:`ReplicaFeed.apply` decodes a payload, bounds the data-parallel ranks
  an endpoint may announce, learns the scheme when none is configured
  (:mod:`prefixkey.fleet.feed._learning`) and applies the batch to the index under
  the shared :class:`~prefixkey.fleet.feed._fair_lock.FairLock`. An in-memory
  :class:`~prefixkey.fleet.PrefixIndex` is fed through its ``ingest`` (decoded
  and applied in one step, the event objects built only for ``on_batch``) once
  the feed knows its wire era and scheme (decoded outside the lock, applied
  under it, as with any index). Any other index is a
  :class:`~prefixkey.fleet.PrefixIndexBackend` fed decoded batches; when it raises
  :class:`~prefixkey.fleet.IndexUnavailableError` (Redis down or restarting)
  the same batch is applied again after a bounded backoff, outside the lock,
  for up to ``retry_seconds``: an apply is idempotent (a chunked one completes
  exactly once), and a backend that restarted without persistence
  re-establishes its registrations itself (its epoch). A publisher restart's
  index clear (``remove_replica`` and ``register`` again) is retried the same
  way; one that gives up is counted (``restart_errors``) and the message that
  revealed the restart is still applied.

The publishers' endpoints are in :mod:`prefixkey.fleet.feed._endpoints`, the set
of feeds a subscriber holds in :mod:`prefixkey.fleet.feed._feed_set`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from packaging.version import Version

from ...events import (
    EventBatch,
    EventDecodeError,
    EventDecoder,
    ReplayEnd,
    StreamSequence,
    split_message,
)
from ..index._backend import IndexUnavailableError, PrefixIndexBackend
from ..index._memory import PrefixIndex, ReplicaId, ReplicaScheme
from ..routing._metrics import COUNTERS
from ._endpoints import ReceivedBatch, ReplicaEndpoint
from ._fair_lock import FairLock
from ._learning import SchemeLearner, WireEraGuess, inferred_releases

__all__ = ["Accepted", "Backoff", "FeedOptions", "ReplayExchange", "ReplicaFeed"]

logger = logging.getLogger("prefixkey.fleet.Subscriber")

# The backoff between retries: doubling from the first delay up to the last.
_FIRST_DELAY, _MAX_DELAY = 0.05, 2.0

#: Waits up to the given seconds; False when the subscriber is stopping (give up).
Backoff = Callable[[float], bool]


class Accepted(NamedTuple):
    """A PUB message to apply, after replaying ``replay`` (``[start, end)``) when given."""

    topic: str
    seq: int
    payload: bytes
    recv_time: float
    replay: tuple[int, int] | None


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
class FeedOptions:
    """What every feed of a subscriber shares (validated by ``FeedSet``)."""

    index: PrefixIndexBackend | None
    lock: FairLock
    on_batch: Callable[[ReceivedBatch], None] | None
    restart_policy: Literal["clear", "keep"]
    catch_up: bool
    queue_size: int
    queue_bytes: int
    max_jump: int
    max_ranks: int
    learn_schemes: bool
    retry_seconds: float
    backoff: Backoff


@dataclass
class ReplicaFeed:
    """The state and counters of one publisher (see the module docstring)."""

    config: ReplicaEndpoint
    options: FeedOptions
    stats_lock: threading.Lock = field(default_factory=threading.Lock)
    streams: dict[str, StreamSequence] = field(default_factory=dict)
    ranks: dict[str, set[int]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    decode_errors_by_type: Counter[str] = field(default_factory=Counter)
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
                logger.warning("%s: %s", self.config.key, warning)
        self._start_learning()

    def _start_learning(self) -> None:
        """Guess the wire era (no release configured) and learn the scheme (none configured)."""
        version = self.config.vllm_version
        if version is None:
            self.era_guess = WireEraGuess(self.config.key)
        if self.config.scheme is None and self.options.learn_schemes:
            self.learner = SchemeLearner(self.config.key, version,
                                         on_drop=lambda: self.count("unlearned_batches"))

    @property
    def key(self) -> str:
        return self.config.key

    def count(self, name: str, n: int = 1) -> None:
        with self.stats_lock:
            self.counters[name] += n

    # -- the queue's bounds (the transport holds the queue) ----------------------------

    def admit(self, frames: list[bytes]) -> int | None:
        """Reserve queue room for ``frames``: their size, or None (dropped and counted)."""
        size = sum(map(len, frames))
        opts = self.options
        with self.stats_lock:
            if self.queued >= opts.queue_size or self.queued_bytes + size > opts.queue_bytes:
                self.counters["dropped"] += 1
                full = True
            else:
                self.queued += 1
                self.queued_bytes += size
                full = False
        if full:
            if _sampled(self.counters["dropped"]):
                logger.warning("%s: queue full (%d messages, %d bytes), message dropped (%d so "
                               "far)", self.key, opts.queue_size, opts.queue_bytes,
                               self.counters["dropped"])
            return None
        return size

    def taken(self, size: int) -> None:
        """A message admitted with ``size`` left the queue."""
        with self.stats_lock:
            self.queued -= 1
            self.queued_bytes -= size

    def check_idle(self, now: float, started_at: float, idle_timeout: float) -> None:
        since = now - (self.last_seen if self.last_seen is not None else started_at)
        if since > idle_timeout and not self.idle:
            self.idle = True
            self.count("idle_periods")
            logger.warning("%s: no message for %.1f s", self.key, since)

    # -- PUB messages ----------------------------------------------------------------

    def accept(self, frames: list[bytes], recv_time: float) -> Accepted | None:
        """Frame and sequence a PUB message: what to apply (and replay first), or None."""
        key = self.key
        if self.idle:
            self.idle = False
            logger.info("%s: messages again", key)
        self.last_seen = recv_time
        try:
            topic, seq, payload = split_message(frames)
        except EventDecodeError as exc:
            self.count("framing_errors")
            logger.warning("%s: bad message framing: %s", key, exc)
            return None
        stream = self.streams.get(topic)
        if stream is None:
            stream = self.streams[topic] = StreamSequence(max_jump=self.options.max_jump)
        verdict = stream.observe(seq, hash(payload))
        kind = verdict.kind
        if kind == "duplicate":
            self.count("duplicates")
            logger.debug("%s: duplicate seq %d skipped", key, seq)
            return None
        if kind == "late":
            self.count("late_batches")
            logger.info("%s: seq %d arrived after its gap", key, seq)
        elif kind == "restart":
            self._new_epoch(topic, f"seq back to {seq}")
        elif kind == "jump":
            self.count("seq_jumps")
            self._new_epoch(topic, f"seq jumped to {seq}, over max_jump {self.options.max_jump}")
        replay = None
        if verdict.missing is not None:
            start, end = verdict.missing
            if kind == "first":
                self.count("late_joins")
            else:
                self.count("gaps")
                self.count("missing_batches", end - start)
                logger.warning("%s: gap, seq %d-%d missing", key, start, end - 1)
            if self.config.replay_endpoint is not None and (kind != "first"
                                                            or self.options.catch_up):
                self.count("replay_requests")
                replay = verdict.missing
            elif kind != "first":
                self.count("lost_batches", end - start)
        return Accepted(topic, seq, payload, recv_time, replay)

    def _new_epoch(self, topic: str, why: str) -> None:
        self.count("restarts")
        ranks = sorted(self.ranks.pop(topic, set()))
        index = self.options.index
        clear = self.options.restart_policy == "clear"
        learner = self.learner
        # A restarted process may run another release or seed: what was learned is learned again.
        relearn = clear and learner is not None and learner.scheme is not None
        cleared = 0
        failed = False
        if clear and index is not None and ranks:
            registered: Mapping[ReplicaId, ReplicaScheme] | None = None
            removed: set[int] = set()

            def clear_ranks() -> None:
                # Resumable: a retry after IndexUnavailableError neither removes a rank twice
                # nor forgets the scheme a removed rank is registered again with.
                nonlocal registered, cleared
                if registered is None:
                    registered = index.replicas()
                while ranks:
                    rid = ReplicaId(self.config.name, ranks[0])
                    scheme = registered.get(rid)
                    if scheme is not None:
                        if ranks[0] not in removed:
                            cleared += index.remove_replica(rid)
                            removed.add(ranks[0])
                        if not (relearn and learner is not None and scheme is learner.scheme):
                            index.register(rid, scheme)
                    ranks.pop(0)

            # The message that revealed the restart is applied either way (its own retries).
            failed = not self._retrying(f"the restart's index clear ({why})", clear_ranks,
                                        "restart_errors")
        if relearn:
            self._start_learning()
        self.count("cleared_entries", cleared)
        logger.warning("%s: publisher restarted (%s): new epoch, %d entries %s%s", self.key, why,
                       cleared, "cleared" if clear else "kept",
                       "; the clear did not complete (restart_errors)" if failed else "")

    # -- replay ------------------------------------------------------------------------

    def replay_exchange(self, accepted: Accepted) -> ReplayExchange:
        assert accepted.replay is not None
        start, end = accepted.replay
        return ReplayExchange(accepted.topic, self.streams[accepted.topic], start, end)

    def on_reply(self, exchange: ReplayExchange, frames: list[bytes], recv_time: float) -> bool:
        """Take one replay reply; True once the end marker arrived."""
        decoder = (self.decoder if self.era_guess is None
                    else self.era_guess.replay_decoder(frames))
        if decoder is None:  # no era the payloads fit frames replies like this
            self.count("framing_errors")
            return False
        try:
            reply = decoder.split_replay_reply(frames)
        except EventDecodeError as exc:
            self.count("framing_errors")
            logger.warning("%s: bad replay reply framing: %s", self.key, exc)
            return False
        if isinstance(reply, ReplayEnd):
            exchange.ended = True
            return True
        topic, seq, payload = reply
        if decoder.era.replay_carries_topic and topic != exchange.topic:
            return False
        if not exchange.start <= seq < exchange.end or not exchange.stream.fill(seq,
                                                                                hash(payload)):
            return False
        exchange.filled += 1
        if self.apply(exchange.topic, seq, payload, "replay", recv_time):
            exchange.recovered += 1
        return False

    def replay_finished(self, exchange: ReplayExchange, timeout: float) -> None:
        if exchange.ended:
            self.count("replay_completed")
        else:
            self.count("replay_failures")
            logger.warning("%s: replay from seq %d got no end marker within %.1f s", self.key,
                           exchange.start, timeout)
        self.count("replayed_batches", exchange.recovered)
        self.count("lost_batches", (exchange.end - exchange.start) - exchange.filled)

    # -- payloads ------------------------------------------------------------------------

    def _decoder(self, payload: bytes) -> EventDecoder | None:
        """The decoder for ``payload``; may raise EventDecodeError (no era decodes it)."""
        guess = self.era_guess
        if guess is None:
            return self.decoder
        decoder = guess.observe(payload)
        if guess.settled:
            self.decoder, self.era_guess, self.wire_span = guess.decoder, None, guess.span()
        return decoder

    def apply(self, topic: str, seq: int, payload: bytes, via: Literal["pub", "replay"],
              recv_time: float) -> bool:
        """Decode ``payload`` and apply it to the index; True if it applied."""
        index = self.options.index
        learner = self.learner
        # A feed inferring its era or learning its scheme decodes the full batch.
        fast = (index if isinstance(index, PrefixIndex) and self.era_guess is None
                and (learner is None or learner.state != "learning") else None)
        try:
            decoder = self._decoder(payload)
            assert decoder is not None
            if fast is not None:
                return self._ingest(fast, decoder, topic, seq, payload, via, recv_time)
            decoded = decoder.decode(payload)
        except EventDecodeError as exc:
            self._not_decoded(exc, seq, via)
            return False
        batch = decoded.batch
        if decoded.warnings:
            self.count("ignored_fields", len(decoded.warnings))
        rid = self._replica(topic, seq, batch.data_parallel_rank)
        if rid is None:
            return False
        if index is not None and not self._to_index(index, rid, batch, seq):
            return False
        self._applied(topic, seq, len(batch.events), batch, via, recv_time)
        return True

    def _ingest(self, index: PrefixIndex, decoder: EventDecoder, topic: str, seq: int,
                payload: bytes, via: Literal["pub", "replay"], recv_time: float) -> bool:
        """:meth:`apply` through ``PrefixIndex.ingest``: decoded and applied in one step,
        event objects built only for ``on_batch``.

        The same counters, outcomes and lock: the payload is decoded outside the
        lock; once it has, ``ingest`` asks for the replica, and there the rank
        is bounded, the lock taken and a configured (or learned) scheme
        registered, before anything is applied. An in-memory index is never
        unavailable, so nothing is retried.
        """
        learner = self.learner
        scheme = self.config.scheme or (learner.scheme if learner is not None else None)
        lock = self.options.lock
        admitted: list[ReplicaId] = []  # the replica, once the lock is held for it

        def target(rank: int | None) -> ReplicaId | None:
            rid = self._replica(topic, seq, rank)
            if rid is not None:
                lock.acquire()
                admitted.append(rid)
                if scheme is not None and rid not in index.replicas():
                    index.register(rid, scheme)
            return rid

        try:
            ingested = index.ingest(target, decoder, payload,
                                    batch=self.options.on_batch is not None)
        except EventDecodeError as exc:
            self._not_decoded(exc, seq, via)
            return False
        except Exception:
            self.count("apply_errors")
            logger.exception("%s: seq %d failed", self.key, seq)
            return False
        finally:
            if admitted:
                lock.release()
        if ingested.warnings:
            self.count("ignored_fields", len(ingested.warnings))
        if not admitted:
            return False
        self._applied(topic, seq, ingested.events, ingested.batch, via, recv_time)
        return True

    def _not_decoded(self, exc: EventDecodeError, seq: int, via: str) -> None:
        with self.stats_lock:
            self.counters["decode_errors"] += 1
            self.decode_errors_by_type[type(exc).__name__] += 1
        logger.warning("%s: seq %d (%s) not decoded, skipped: %s: %s", self.key, seq, via,
                       type(exc).__name__, exc)

    def _replica(self, topic: str, seq: int, rank: int | None) -> ReplicaId | None:
        """The replica a batch of ``rank`` (None: unpublished) is for; None past max_ranks."""
        if rank is None:
            rank = self.config.dp_rank or 0
        seen = self.ranks.setdefault(topic, set())
        if rank not in seen:
            if sum(map(len, self.ranks.values())) >= self.options.max_ranks:
                self.count("rank_overflows")
                if _sampled(self.counters["rank_overflows"]):
                    logger.warning("%s: seq %d announces rank %d beyond max_ranks %d: skipped "
                                   "(%d so far)", self.key, seq, rank, self.options.max_ranks,
                                   self.counters["rank_overflows"])
                return None
            seen.add(rank)
        return ReplicaId(self.config.name, rank)

    def _applied(self, topic: str, seq: int, events: int, batch: EventBatch | None,
                 via: Literal["pub", "replay"], recv_time: float) -> None:
        """Count an applied batch and hand it to ``on_batch`` (``batch`` is given then)."""
        with self.stats_lock:
            self.counters["batches"] += 1
            self.counters["events"] += events
        on_batch = self.options.on_batch
        if on_batch is not None:
            assert batch is not None
            try:
                on_batch(ReceivedBatch(self.key, topic, seq, batch, via, recv_time))
            except Exception:
                self.count("callback_errors")
                logger.exception("%s: on_batch raised", self.key)

    def _to_index(self, index: PrefixIndexBackend, rid: ReplicaId, batch: EventBatch,
                  seq: int) -> bool:
        scheme = self.config.scheme
        todo = [(rid, batch)]
        learner = self.learner
        if scheme is None and learner is not None:
            known: list[bool] = []
            if not self._retrying(f"seq {seq}", lambda: known.append(rid in index.replicas()),
                                  "apply_errors"):
                return False
            if not known[-1]:
                # Fingerprinting runs outside the lock: readers are not held up by it.
                span = self.era_guess.span() if self.era_guess is not None else None
                todo = learner.observe(rid, batch, span)
                scheme = learner.scheme
        done = 0  # batches of todo applied: a retry goes on from the one that failed

        def apply_todo() -> None:
            nonlocal done
            known = index.replicas()
            for held_rid, held in todo[done:]:
                if scheme is not None and held_rid not in known:
                    index.register(held_rid, scheme)
                    known = index.replicas()
                index.apply(held_rid, held)
                done += 1

        return self._retrying(f"seq {seq}", apply_todo, "apply_errors")

    def _retrying(self, what: str, step: Callable[[], None], give_up_counter: str) -> bool:
        """Run ``step`` under the lock; while the index is unavailable, again after a backoff.

        ``step`` must resume where a failed call left off. Retries are counted in
        ``apply_retries``; False (counted in ``give_up_counter``) after
        ``retry_seconds``, when stopping, or on any other error.
        """
        opts = self.options
        deadline = time.monotonic() + opts.retry_seconds
        delay = _FIRST_DELAY
        while True:
            try:
                with opts.lock:
                    step()
                return True
            except IndexUnavailableError as exc:
                left = deadline - time.monotonic()
                if left <= 0 or not opts.backoff(min(delay, left)):
                    self.count(give_up_counter)
                    logger.warning("%s: %s failed: the index stayed unavailable (retry_seconds "
                                   "%.1f, or stopping): %s", self.key, what, opts.retry_seconds,
                                   exc)
                    return False
                self.count("apply_retries")
                if _sampled(self.counters["apply_retries"]):
                    logger.warning("%s: %s: index unavailable, retrying (%d retries so far): %s",
                                   self.key, what, self.counters["apply_retries"], exc)
                delay = min(delay * 2, _MAX_DELAY)
            except Exception:
                self.count(give_up_counter)
                logger.exception("%s: %s failed", self.key, what)
                return False

    # -- observability -------------------------------------------------------------------

    def snapshot(self, now: float, started_at: float, index_size: int) -> dict[str, Any]:
        with self.stats_lock:
            seen = self.last_seen
            return {
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
            }


def _sampled(n: int) -> bool:
    """Log the 1st, 10th, 100th… occurrence only: a flood must not flood the log too."""
    if n < 1:
        return False
    while n % 10 == 0:
        n //= 10
    return n == 1


