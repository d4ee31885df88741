"""What both transports do alike around the sans-IO feed: its effects.

A :class:`~prefixkey.fleet.feed._feed.ReplicaFeed` answers what to do with a
message; :class:`FeedDriver` does it, the same way for the threaded and the
asyncio subscriber: it carries out a restart's :class:`~._feed.Restart` and a
batch's :class:`~._feed.Apply` on the index, under the subscriber's
:class:`~prefixkey.fleet.feed._fair_lock.FairLock`, through the one path every
backend offers (``apply_ops``, after ``register`` when the index does not
know the replica); calls ``on_batch``; and logs the feed's notes.

When the index raises :class:`~prefixkey.fleet.IndexUnavailableError` (Redis
down or restarting), the same step runs again after a bounded backoff,
outside the lock, for up to ``retry_seconds``: an apply is idempotent (a
chunked one completes exactly once), and a backend that restarted without
persistence re-establishes its registrations itself (its epoch). A restart's
index clear is retried the same way; one that gives up is counted
(``restart_errors``) and the message that revealed the restart is still
applied. The wait between tries is the transport's ``backoff`` (cut short when
it stops).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Mapping
from typing import Final

from ...events import DecodedOps
from ..index._backend import IndexUnavailableError, PrefixIndexBackend
from ..index._memory import ReplicaId, ReplicaScheme
from ..index._ops import slices
from ._endpoints import ReceivedBatch
from ._fair_lock import FairLock
from ._feed import Accepted, Apply, ReplayExchange, ReplicaFeed, Restart, sampled

__all__ = ["SLICE_KEYS", "Backoff", "FeedDriver", "Steps", "drain", "log_notes"]

logger = logging.getLogger("prefixkey.fleet.Subscriber")

# The backoff between retries: doubling from the first delay up to the last.
_FIRST_DELAY, _MAX_DELAY = 0.05, 2.0

#: Waits up to the given seconds; False when the subscriber is stopping (give up).
Backoff = Callable[[float], bool]

#: Keys (plus one per event) applied under the lock in one go: a larger batch is applied
#: in slices of this size, the lock released between two (issue 23: a valid 30 MB batch
#: held the lock for 1.2 s, and every other replica waited). About a millisecond in memory.
SLICE_KEYS: Final = 1024

#: A step of work that pauses (yields) where the lock is free; its value is the result.
Steps = Generator[None, None, bool]


def drain(steps: Steps) -> bool:
    """Run ``steps`` to the end without pausing; their result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return bool(done.value)


def log_notes(feed: ReplicaFeed) -> None:
    """Log what the feed noted, oldest first (any thread may call it)."""
    notes = feed.notes
    while notes:
        try:
            level, text, args = notes.popleft()
        except IndexError:  # another thread took the last one
            return
        logger.log(level, "%s: " + text, feed.key, *args)


class FeedDriver:
    """Carries out the feeds' answers on ``index`` (see the module docstring)."""

    def __init__(self, index: PrefixIndexBackend | None, lock: FairLock,
                 on_batch: Callable[[ReceivedBatch], None] | None, retry_seconds: float,
                 backoff: Backoff) -> None:
        self.index = index
        self.lock = lock
        self.on_batch = on_batch
        self.retry_seconds = retry_seconds
        self.backoff = backoff

    # -- what a transport calls per message ------------------------------------------

    def accept(self, feed: ReplicaFeed, frames: list[bytes], recv_time: float
               ) -> Accepted | None:
        """``feed.accept``, and the restart it revealed carried out on the index."""
        accepted = feed.accept(frames, recv_time)
        if accepted is not None and accepted.restart is not None:
            self.restart(feed, accepted.restart)
        if feed.notes:
            log_notes(feed)
        return accepted

    def apply(self, feed: ReplicaFeed, accepted: Accepted) -> bool:
        """Decode and apply an accepted message; True if it applied."""
        todo = self.plan(feed, accepted)
        return todo is not None and drain(self.run_steps(feed, todo))

    def plan(self, feed: ReplicaFeed, accepted: Accepted) -> Apply | None:
        """Decode an accepted message (no index, no lock: any thread may run it)."""
        todo = feed.plan(accepted.topic, accepted.seq, accepted.payload, "pub",
                         accepted.recv_time)
        if feed.notes:
            log_notes(feed)
        return todo

    def reply(self, feed: ReplicaFeed, exchange: ReplayExchange, frames: list[bytes],
              recv_time: float) -> bool:
        """Take one replay reply (applying its batch); True once the end marker arrived."""
        return drain(self.reply_steps(feed, exchange, frames, recv_time))

    def reply_steps(self, feed: ReplicaFeed, exchange: ReplayExchange, frames: list[bytes],
                    recv_time: float) -> Steps:
        """:meth:`reply`, pausing between the slices of a large batch (see :meth:`run_steps`)."""
        todo = feed.on_reply(exchange, frames, recv_time)
        if todo is not None and (yield from self.run_steps(feed, todo)):
            exchange.recovered += 1
        log_notes(feed)
        return exchange.ended

    def replay_finished(self, feed: ReplicaFeed, exchange: ReplayExchange) -> None:
        feed.replay_finished(exchange)
        log_notes(feed)

    # -- the effects -----------------------------------------------------------------

    def run(self, feed: ReplicaFeed, todo: Apply) -> bool:
        """Apply ``todo`` to the index (if any) and hand it to ``on_batch``; True if applied."""
        return drain(self.run_steps(feed, todo))

    def run_steps(self, feed: ReplicaFeed, todo: Apply) -> Steps:
        """:meth:`run` as steps: a batch of more than :data:`SLICE_KEYS` keys is applied a
        slice at a time, each under the lock, and the generator yields between two slices
        with the lock released, so that the other replicas' batches (and readers) are let
        in: the threaded transport goes straight on (the fair lock hands over to whoever
        waits), the asyncio one returns to the loop. Its value: True if applied."""
        index = self.index
        if index is not None:
            if todo.learn:
                applied = self._learn_and_apply(feed, index, todo)
            else:
                applied = yield from self._apply_slices(feed, index, todo)
            if not applied:
                return False
        feed.applied(todo)
        on_batch = self.on_batch
        if on_batch is not None:
            assert todo.batch is not None
            try:
                on_batch(ReceivedBatch(feed.key, todo.topic, todo.seq, todo.batch, todo.via,
                                       todo.recv_time))
            except Exception:
                feed.count("callback_errors")
                logger.exception("%s: on_batch raised", feed.key)
        return True

    def _apply_slices(self, feed: ReplicaFeed, index: PrefixIndexBackend, todo: Apply
                      ) -> Steps:
        rid, scheme = todo.replica, todo.scheme
        try:
            # Checked whole when cut: a bad op refuses the batch before any slice.
            parts = slices(todo.decoded, SLICE_KEYS)
        except Exception:
            feed.count("apply_errors")
            logger.exception("%s: seq %d refused", feed.key, todo.seq)
            return False
        for k, part in enumerate(parts):
            if k:
                yield  # the lock is free: the other replicas' turn

            def apply_one(part: DecodedOps = part) -> None:
                if scheme is not None and rid not in index.replicas():
                    index.register(rid, scheme)
                index.apply_ops(rid, part)

            if not self._retrying(feed, apply_one, "apply_errors", "seq %d", todo.seq):
                return False
        return True

    def _learn_and_apply(self, feed: ReplicaFeed, index: PrefixIndexBackend, todo: Apply
                         ) -> bool:
        """:meth:`run` while the scheme is learned: the batch, or what learning releases."""
        rid = todo.replica
        batches = [(rid, todo.decoded)]
        scheme = todo.scheme
        known: list[bool] = []
        if not self._retrying(feed, lambda: known.append(rid in index.replicas()),
                              "apply_errors", "seq %d", todo.seq):
            return False
        if not known[-1]:
            batches, scheme = feed.learned(todo)
        done = 0  # batches applied: a retry goes on from the one that failed

        def apply_batches() -> None:
            nonlocal done
            registered = index.replicas()
            for held_rid, decoded in batches[done:]:
                if scheme is not None and held_rid not in registered:
                    index.register(held_rid, scheme)
                    registered = index.replicas()
                index.apply_ops(held_rid, decoded)
                done += 1

        return self._retrying(feed, apply_batches, "apply_errors", "seq %d", todo.seq)

    def restart(self, feed: ReplicaFeed, restart: Restart) -> None:
        """Carry out a publisher restart on the index, then tell the feed."""
        index = self.index
        cleared = 0
        failed = False
        if restart.clear and index is not None and restart.ranks:
            ranks = list(restart.ranks)
            registered: Mapping[ReplicaId, ReplicaScheme] | None = None
            removed: set[int] = set()

            def clear_ranks() -> None:
                # Resumable: a retry after IndexUnavailableError neither removes a rank twice
                # nor forgets the scheme a removed rank is registered again with.
                nonlocal registered, cleared
                if registered is None:
                    registered = index.replicas()
                while ranks:
                    rid = ReplicaId(feed.config.name, ranks[0])
                    scheme = registered.get(rid)
                    if scheme is not None:
                        if ranks[0] not in removed:
                            cleared += index.remove_replica(rid)
                            removed.add(ranks[0])
                        if restart.forget is None or scheme is not restart.forget:
                            index.register(rid, scheme)
                    ranks.pop(0)

            failed = not self._retrying(feed, clear_ranks, "restart_errors",
                                        "the restart's index clear (%s)", restart.why)
        feed.restarted(restart, cleared, failed)

    def _retrying(self, feed: ReplicaFeed, step: Callable[[], None], give_up_counter: str,
                  what: str, detail: object) -> bool:
        """Run ``step`` under the lock; while the index is unavailable, again after a backoff.

        ``step`` must resume where a failed call left off. Retries are counted in
        ``apply_retries``; False (counted in ``give_up_counter``) after
        ``retry_seconds``, when stopping, or on any other error. ``what % detail``
        names the step in the log (formatted only then).
        """
        deadline = time.monotonic() + self.retry_seconds
        delay = _FIRST_DELAY
        while True:
            try:
                with self.lock:
                    step()
                return True
            except IndexUnavailableError as exc:
                left = deadline - time.monotonic()
                if left <= 0 or not self.backoff(min(delay, left)):
                    # A timed-out apply may have been applied after all: not an error count
                    # then, but unknown (the backend re-syncs the replica on its next batch).
                    unknown = exc.maybe_applied and give_up_counter == "apply_errors"
                    feed.count("apply_unknown" if unknown else give_up_counter)
                    logger.warning("%s: %s failed: the index stayed unavailable (retry_seconds "
                                   "%.1f, or stopping): %s", feed.key, what % detail,
                                   self.retry_seconds, exc)
                    return False
                feed.count("apply_retries")
                retries = feed.counters["apply_retries"]
                if sampled(retries):
                    logger.warning("%s: %s: index unavailable, retrying (%d retries so far): %s",
                                   feed.key, what % detail, retries, exc)
                delay = min(delay * 2, _MAX_DELAY)
            except Exception:
                feed.count(give_up_counter)
                logger.exception("%s: %s failed", feed.key, what % detail)
                return False
