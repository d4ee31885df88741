"""Subscribe to vLLM replicas' KV-event publishers over ZMQ, with threads.

Decoding, sequencing and the replica's bounds live in the sans-IO feed
(:mod:`prefixkey.fleet.feed._feed`), shared with the asyncio subscriber
(:mod:`prefixkey.fleet.feed._async_subscriber`); this module moves bytes::

    from prefixkey import Hasher
    from prefixkey.fleet import PrefixIndex, ReplicaEndpoint, ReplicaScheme, Router, Subscriber

    index = PrefixIndex()
    scheme = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0"))
    replicas = [ReplicaEndpoint("gpu-a", "tcp://10.0.0.1:5557", "0.31.0",
                                replay_endpoint="tcp://10.0.0.1:5558", scheme=scheme)]
    with Subscriber(replicas, index=index) as sub:
        ...
        with sub.lock:                       # the index is not thread-safe
            decision = Router(index).route(token_ids)[0]

Threads: one *receiver* owns the SUB sockets (and their monitors), records
raw PUB messages and puts each on its replica's queue, bounded in messages and
bytes (a full queue drops the message and counts it: the seq gap it leaves is
then recovered by replay like any other); one *worker per replica* decodes,
sequences, replays (it owns the replica's DEALER socket and records its
replies) and applies batches to the index under :attr:`Subscriber.lock`, a
fair lock, then calls ``on_batch``. A replica whose replay never answers, or
that floods, stalls only its own worker. See docs/subscriber.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import IO, Any, Final

import zmq
from zmq.utils.monitor import recv_monitor_message

from ...events import replay_request
from ..index._backend import PrefixIndexBackend
from ..routing._metrics import COUNTERS, SubscriberStats
from ._driver import log_notes
from ._endpoints import ReceivedBatch, ReplicaEndpoint, data_parallel_endpoints, offset_endpoint
from ._feed import Accepted, ReplicaFeed
from ._options import SubscriberOptions
from ._zmq import (
    Lane,
    SubscriberStateError,
    Transport,
    check_startable,
    handling_error,
    on_monitor_event,
)

__all__ = [
    "COUNTERS",
    "ReceivedBatch",
    "ReplicaEndpoint",
    "Subscriber",
    "SubscriberStateError",
    "data_parallel_endpoints",
    "offset_endpoint",
]

logger = logging.getLogger("prefixkey.fleet.Subscriber")

#: Seconds the receiver spends on one replica's socket before serving the others.
_TURN: Final = 0.002


class _Worker(Lane["zmq.Socket[bytes]"]):
    """One replica's sockets and queue, and its thread (woken by ``ready``)."""

    def __init__(self, feed: ReplicaFeed) -> None:
        super().__init__(feed)
        self.ready = threading.Condition(threading.Lock())
        self.thread: threading.Thread | None = None


class Subscriber(Transport):
    """SUBs to many replicas' KV-event publishers and feeds a prefix index.

    ``index`` (optional, any :class:`~prefixkey.fleet.PrefixIndexBackend`:
    a :class:`~prefixkey.fleet.PrefixIndex`, a
    :class:`~prefixkey.fleet.RedisPrefixIndex`, a
    :class:`~prefixkey.fleet.PredictedIndex`) receives every applied batch under :attr:`lock`;
    ``on_batch`` (optional) is called after it, in the replica's worker
    thread (so callbacks of different replicas may run at once), with a
    :class:`ReceivedBatch`. ``record`` (a text file) receives every raw PUB
    message and replay reply in the recording format, each line with its
    ``"via"``. ``options`` is a :class:`SubscriberOptions` (queues, replay,
    restarts, retries, sockets: its defaults when not given); each of its
    fields may also be given as a keyword (``queue_size=1000``), applied over
    it. A bad value raises :class:`~prefixkey.errors.InvalidRequestError`
    naming the option.
    """

    def __init__(
        self,
        replicas: Iterable[ReplicaEndpoint],
        *,
        index: PrefixIndexBackend | None = None,
        on_batch: Callable[[ReceivedBatch], None] | None = None,
        record: IO[str] | None = None,
        options: SubscriberOptions | None = None,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        **changes: Any,
    ) -> None:
        self._stop = threading.Event()
        # The receiver writes PUB messages to the recording, each worker its replies.
        super().__init__(list(replicas), index, on_batch, record, options, self._backoff,
                         context is None, changes)
        self._workers = [_Worker(f) for f in self._feeds.feeds]
        self._ctx: zmq.Context[zmq.Socket[bytes]] = context or zmq.Context()
        self._threads: list[threading.Thread] = []

    # -- lifecycle ----------------------------------------------------------------

    def _backoff(self, delay: float) -> bool:
        """A retry's wait, cut short by :meth:`stop`: False when stopping."""
        return not self._stop.wait(delay)

    def start(self) -> Subscriber:
        """Connect the SUB sockets and start the receiver and the replicas' workers."""
        check_startable(bool(self._threads), self._closed)
        for w in self._workers:
            w.open(self._ctx, self.options)
        self._feeds.started_at = time.time()
        self._stop.clear()
        self._threads = [
            threading.Thread(target=self._receive_loop, name="prefixkey-sub-recv", daemon=True)]
        for w in self._workers:
            w.thread = threading.Thread(target=self._work_loop, args=(w,), daemon=True,
                                        name=f"prefixkey-sub-{w.feed.key}")
            self._threads.append(w.thread)
        for t in self._threads:
            t.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the threads and close the sockets (the context too, if the subscriber made it)."""
        self._stop.set()
        for w in self._workers:
            with w.ready:
                w.ready.notify()
        for t in self._threads:
            t.join(timeout)
        alive = [t for t in self._threads if t.is_alive()]
        if alive:
            # Closing a socket under a running thread is undefined in ZMQ (a ZMQError in
            # that thread at best): leave them to it; it ends at its next stop check.
            logger.error("stop: %d thread(s) still running after %.1f s; their sockets "
                         "are left open", len(alive), timeout)
            self._threads = alive
            return
        self._threads = []
        for w in self._workers:
            with w.ready:
                w.close()
        self._recorder.flush()

    def close(self) -> None:
        self.stop()
        if self._own_context and not self._closed and not self._threads:
            self._ctx.term()
        self._closed = True

    def __enter__(self) -> Subscriber:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    # -- receiver thread -------------------------------------------------------------

    def _receive_loop(self) -> None:
        poller = zmq.Poller()
        owners: dict[zmq.Socket[bytes], tuple[_Worker, bool]] = {}
        for w in self._workers:
            assert w.sub is not None and w.monitor is not None
            poller.register(w.sub, zmq.POLLIN)
            poller.register(w.monitor, zmq.POLLIN)
            owners[w.sub] = (w, False)
            owners[w.monitor] = (w, True)
        while not self._stop.is_set():
            try:
                ready = poller.poll(100)
            except zmq.ZMQError as exc:  # pragma: no cover - context terminated
                logger.error("poll failed: %s", exc)
                return
            for sock, _ in ready:
                w, is_monitor = owners[sock]
                if is_monitor:
                    assert w.sub is not None
                    drain_monitor(w.feed, sock, w.sub)
                else:
                    self._drain_sub(w, sock)
            self._recorder.flush(every=1.0)

    def _drain_sub(self, w: _Worker, sock: zmq.Socket[bytes]) -> None:
        turn = time.monotonic()
        for _ in range(1000):  # then the other replicas' turn (or after 2 ms: a flood's
            # messages are cheap one by one, and a healthy replica's waits behind them all)
            if self._stop.is_set():  # a message can take seconds (30 MB recorded): stop now
                return
            if time.monotonic() - turn > _TURN:
                return
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            item = w.received(frames, self._recorder)
            if item is not None:
                with w.ready:
                    w.items.append(item)
                    w.ready.notify()

    # -- worker threads ----------------------------------------------------------------

    def _work_loop(self, w: _Worker) -> None:
        feed = w.feed
        driver = self._driver
        last_idle_check = 0.0
        while not self._stop.is_set():
            with w.ready:
                if not w.items:
                    w.ready.wait(0.05)
                item = w.items.popleft() if w.items else None
            if item is not None:
                recv_time, frames, size = item
                feed.taken(size)
                try:
                    accepted = driver.accept(feed, frames, recv_time)
                    if accepted is not None:
                        if accepted.replay is not None:
                            self._replay(w, accepted)
                        driver.apply(feed, accepted)
                except Exception:  # a bug must not kill the subscriber
                    handling_error(feed)
            now = time.monotonic()
            if now - last_idle_check > 0.2:
                last_idle_check = now
                feed.check_idle(time.time(), self._feeds.started_at)
                log_notes(feed)

    def _replay(self, w: _Worker, accepted: Accepted) -> None:
        feed = w.feed
        exchange = feed.replay_exchange(accepted)
        try:
            sock = w.dealer_socket(self._ctx, self.options)
            sock.send_multipart([b"", replay_request(exchange.start)], zmq.NOBLOCK)
            deadline = time.monotonic() + self.options.replay_timeout
            while not self._stop.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not sock.poll(max(1, int(min(remaining, 0.1) * 1000))):
                    if remaining <= 0:
                        break
                    continue
                frames = sock.recv_multipart()
                now = time.time()
                self._recorder.write(feed.key, frames, now, "replay")
                if self._driver.reply(feed, exchange, frames, now):
                    break
        except zmq.ZMQError as exc:
            logger.warning("%s: replay failed: %s", feed.key, exc)
        w.replay_finished(self._driver, exchange)

    # -- observability ---------------------------------------------------------------

    def wait_until(self, predicate: Callable[[SubscriberStats], bool], timeout: float = 5.0,
                   interval: float = 0.01) -> bool:
        """Poll :meth:`stats` until ``predicate`` holds (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        while True:
            if predicate(self.stats()):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)


def drain_monitor(feed: ReplicaFeed, sock: zmq.Socket[bytes], sub: zmq.Socket[bytes]) -> None:
    """Count the SUB socket's connects and disconnects (:func:`on_monitor_event`)."""
    while True:
        try:
            event = recv_monitor_message(sock, zmq.NOBLOCK)
        except zmq.Again:
            return
        except zmq.ZMQError:  # pragma: no cover - closed while stopping
            return
        on_monitor_event(feed, event.get("event"), sub)
