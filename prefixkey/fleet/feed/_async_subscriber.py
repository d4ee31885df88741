"""Subscribe to vLLM replicas' KV-event publishers from asyncio (``zmq.asyncio``).

The same sans-IO feed as the threaded :class:`~prefixkey.fleet.Subscriber`
(:mod:`prefixkey.fleet.feed._feed`), driven by tasks on the running loop: per
replica, one task receives (SUB and monitor sockets) into the replica's queue,
bounded in messages and bytes, and one task decodes, sequences, replays (its
own DEALER) and applies. Batches are applied on the loop, so a handler on the
same loop reads the index between two batches without any lock::

    async with AsyncSubscriber(replicas, index=index) as sub:
        ...
        decision = router.route(token_ids)[0]    # on the loop: no apply runs meanwhile

Threads other than the loop's must still hold :attr:`AsyncSubscriber.lock`.
Decoding runs on the loop too, except for payloads over 256 KiB (decoded in a
worker thread); a batch of more than ``SLICE_KEYS`` keys is applied a slice at a
time, back to the loop between two; each replica's tasks give the loop back
after 2 ms of work (a turn). So a replica that floods or sends huge batches delays
the others by a slice or a turn, never by its whole backlog (issue 23).

An index that does I/O (any backend but an in-memory
:class:`~prefixkey.fleet.PrefixIndex`, bare or in a
:class:`~prefixkey.fleet.PredictedIndex`; e.g. a
:class:`~prefixkey.fleet.RedisPrefixIndex`) is fed from a worker thread
(``asyncio.to_thread``), one batch at a time per replica, under
:attr:`~AsyncSubscriber.lock`: the loop never waits on Redis, nor on the
backoff of a retry while Redis is down. Readers of such an index on the loop
hold the lock too when the index keeps state in memory (a ``PredictedIndex``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import IO, Any, Final, TypeVar

import zmq
import zmq.asyncio
from zmq.utils.monitor import parse_monitor_message

from ...events import replay_request
from ..index._backend import PrefixIndexBackend
from ..index._memory import PrefixIndex
from ..routing._metrics import SubscriberStats
from ..routing._predictions import PredictedIndex
from ._driver import Steps, log_notes
from ._endpoints import ReceivedBatch, ReplicaEndpoint
from ._feed import Accepted, ReplicaFeed
from ._options import SubscriberOptions
from ._zmq import Lane, Transport, check_startable, handling_error, on_monitor_event

__all__ = ["AsyncSubscriber"]

logger = logging.getLogger("prefixkey.fleet.Subscriber")

_T = TypeVar("_T")

#: Seconds a replica's task (receiving, or decoding and applying) runs before the loop's
#: other tasks get theirs: a turn is bounded in time, not in messages, so that a replica
#: with a backlog of cheap messages drains it at the pace of one that floods (one message
#: per turn let a flood of 64-message turns starve a healthy replica's worker).
_TURN: Final = 0.002
#: Payloads longer than this are decoded in a worker thread, off the loop (bytes).
_DECODE_IN_THREAD: Final = 256 * 1024


def _does_io(index: PrefixIndexBackend | None) -> bool:
    while isinstance(index, PredictedIndex):
        index = index.index
    return index is not None and not isinstance(index, PrefixIndex)


class _Lane(Lane[zmq.asyncio.Socket]):
    """One replica's sockets and queue, its tasks woken by ``ready``."""

    def __init__(self, feed: ReplicaFeed) -> None:
        super().__init__(feed)
        self.ready = asyncio.Event()


class AsyncSubscriber(Transport):
    """The asyncio twin of :class:`~prefixkey.fleet.Subscriber`: same options
    (:class:`SubscriberOptions`, or its fields as keywords), same stats.

    ``start()``, ``stop()`` and ``wait_until()`` are coroutines; ``on_batch``
    is called on the loop; ``record`` is written on the loop (a slow file
    slows the loop: give it a buffered one). ``context`` may be a ``zmq.asyncio.Context`` or a
    plain ``zmq.Context`` (shadowed).
    """

    def __init__(
        self,
        replicas: Iterable[ReplicaEndpoint],
        *,
        index: PrefixIndexBackend | None = None,
        on_batch: Callable[[ReceivedBatch], None] | None = None,
        record: IO[str] | None = None,
        options: SubscriberOptions | None = None,
        context: zmq.Context[Any] | None = None,
        **changes: Any,
    ) -> None:
        self._stopping = threading.Event()  # cuts a retry's backoff short, in its thread
        # The lock is held while a batch is applied (on the loop, or in a worker thread for
        # an index that does I/O); other threads hold it to read.
        super().__init__(list(replicas), index, on_batch, record, options,
                         lambda delay: not self._stopping.wait(delay), context is None, changes)
        self._in_thread = _does_io(index)
        if context is None:
            self._ctx = zmq.asyncio.Context()
        elif isinstance(context, zmq.asyncio.Context):
            self._ctx = context
        else:
            self._ctx = zmq.asyncio.Context.shadow(context.underlying)
        self._lanes = [_Lane(f) for f in self._feeds.feeds]
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ----------------------------------------------------------------

    async def start(self) -> AsyncSubscriber:
        """Connect the SUB sockets and start the replicas' tasks on the running loop."""
        check_startable(bool(self._tasks), self._closed)
        self._stopping.clear()
        for lane in self._lanes:
            lane.open(self._ctx, self.options)
        self._feeds.started_at = time.time()
        for lane in self._lanes:
            key = lane.feed.key
            self._tasks += [
                asyncio.create_task(self._guard(self._receive(lane), key),
                                    name=f"prefixkey-sub-recv-{key}"),
                asyncio.create_task(self._guard(self._monitor(lane), key),
                                    name=f"prefixkey-sub-mon-{key}"),
                asyncio.create_task(self._guard(self._work(lane), key),
                                    name=f"prefixkey-sub-work-{key}"),
            ]
        return self

    async def stop(self) -> None:
        """Cancel the tasks and close the sockets (the context too, if the subscriber made it)."""
        self._stopping.set()
        for task in self._tasks:
            while not task.done():  # cancelled again should a cancellation be lost
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
            if not task.cancelled() and task.exception() is not None:
                logger.error("%s ended: %r", task.get_name(), task.exception())
        self._tasks = []
        for lane in self._lanes:
            lane.close()
        self._recorder.flush()

    async def close(self) -> None:
        await self.stop()
        if self._own_context and not self._closed:
            self._ctx.term()
        self._closed = True

    async def __aenter__(self) -> AsyncSubscriber:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def running(self) -> bool:
        return any(not t.done() for t in self._tasks)

    @staticmethod
    async def _guard(work: Awaitable[None], key: str) -> None:
        try:
            await work
        except asyncio.CancelledError:
            raise
        except zmq.ZMQError as exc:  # pragma: no cover - context terminated under us
            logger.error("%s: socket failed: %s", key, exc)

    # -- tasks -----------------------------------------------------------------------

    async def _receive(self, lane: _Lane) -> None:
        assert lane.sub is not None
        turn = time.monotonic()
        while True:
            frames = await lane.sub.recv_multipart()
            if time.monotonic() - turn > _TURN:
                # A recv of a message already queued completes without suspending: a replica
                # that floods would keep the loop (every other replica) until its pipe ran dry.
                await asyncio.sleep(0)
                turn = time.monotonic()
            item = lane.received(frames, self._recorder)
            self._recorder.flush(every=1.0)
            if item is not None:
                lane.items.append(item)
                lane.ready.set()

    async def _monitor(self, lane: _Lane) -> None:
        assert lane.monitor is not None and lane.sub is not None
        while True:
            event = parse_monitor_message(await lane.monitor.recv_multipart())["event"]
            on_monitor_event(lane.feed, event, lane.sub)

    async def _work(self, lane: _Lane) -> None:
        feed = lane.feed
        turn = time.monotonic()
        while True:
            if not lane.items:
                lane.ready.clear()
                # Woken by a batch or by the idle check's tick. Not asyncio.wait_for: before
                # Python 3.12 it can swallow a cancellation that lands as it times out, and
                # stop() would then wait for this task forever.
                tick = asyncio.get_running_loop().call_later(0.2, lane.ready.set)
                try:
                    await lane.ready.wait()
                finally:
                    tick.cancel()
                turn = time.monotonic()
            feed.check_idle(time.time(), self._feeds.started_at)
            log_notes(feed)
            if not lane.items:
                continue
            recv_time, frames, size = lane.items.popleft()
            feed.taken(size)
            try:
                # accept() may clear the index (a publisher restart): it touches the index too.
                accepted = await self._call(self._driver.accept, feed, frames, recv_time)
                if accepted is not None:
                    if accepted.replay is not None:
                        await self._replay(lane, accepted)
                    if self._in_thread:
                        await asyncio.to_thread(self._driver.apply, feed, accepted)
                    else:
                        await self._apply_on_loop(feed, accepted)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug must not kill the subscriber
                handling_error(feed)
            if time.monotonic() - turn > _TURN:  # a burst of batches: the others' turn
                await asyncio.sleep(0)
                turn = time.monotonic()

    async def _apply_on_loop(self, feed: ReplicaFeed, accepted: Accepted) -> None:
        """Decode and apply a batch to an in-memory index without holding the loop long.

        A large payload is decoded in a worker thread (decoding needs no lock); a large
        batch is applied a slice at a time, back to the loop between two slices
        (:meth:`FeedDriver.run_steps`): the other replicas' tasks run meanwhile.
        """
        driver = self._driver
        if len(accepted.payload) > _DECODE_IN_THREAD:
            todo = await asyncio.to_thread(driver.plan, feed, accepted)
        else:
            todo = driver.plan(feed, accepted)
        if todo is not None:
            await _paced(driver.run_steps(feed, todo))

    async def _call(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(*args)``: on the loop, or in a worker thread for an index that does I/O."""
        if self._in_thread:
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    async def _replay(self, lane: _Lane, accepted: Accepted) -> None:
        feed = lane.feed
        exchange = feed.replay_exchange(accepted)
        try:
            sock = lane.dealer_socket(self._ctx, self.options)
            await sock.send_multipart([b"", replay_request(exchange.start)])
            deadline = time.monotonic() + self.options.replay_timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                frames = await _within(asyncio.ensure_future(sock.recv_multipart()), remaining)
                if frames is None:
                    break
                now = time.time()
                self._recorder.write(feed.key, frames, now, "replay")
                if self._in_thread:
                    ended = await asyncio.to_thread(self._driver.reply, feed, exchange,
                                                    frames, now)
                else:
                    ended = await _paced(self._driver.reply_steps(feed, exchange, frames, now))
                if ended:
                    break
        except zmq.ZMQError as exc:
            logger.warning("%s: replay failed: %s", feed.key, exc)
        lane.replay_finished(self._driver, exchange)

    # -- observability ---------------------------------------------------------------

    async def wait_until(self, predicate: Callable[[SubscriberStats], bool],
                         timeout: float = 5.0, interval: float = 0.01) -> bool:
        """Poll :meth:`stats` until ``predicate`` holds (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self.stats()):
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(interval)


async def _paced(steps: Steps) -> bool:
    """Run ``steps`` on the loop, back to it at each pause (between two slices)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return bool(done.value)
        await asyncio.sleep(0)


async def _within(reply: asyncio.Future[list[bytes]], seconds: float) -> list[bytes] | None:
    """``reply``'s frames, or None after ``seconds`` (``reply`` is then cancelled).

    Not asyncio.wait_for, which before Python 3.12 can swallow the caller's
    cancellation; asyncio.wait never does.
    """
    try:
        done, _ = await asyncio.wait({reply}, timeout=seconds)
    except asyncio.CancelledError:
        reply.cancel()
        raise
    if not done:
        reply.cancel()
        return None
    return reply.result()
