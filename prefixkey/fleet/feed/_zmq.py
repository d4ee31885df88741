"""What both ZMQ transports share: a replica's sockets and queue, reconnecting, the recording.

The threaded :class:`~prefixkey.fleet.Subscriber` and the asyncio
:class:`~prefixkey.fleet.AsyncSubscriber` keep per replica the same
:class:`Lane` (SUB, monitor and DEALER sockets, the queue of admitted
messages): opened, queued into, replayed through and closed alike, with the
same SUB options (:func:`configure_sub`, from
:class:`~._options.SubscriberOptions`). Both count a monitor's events alike
(:func:`on_monitor_event`: connecting afresh on every disconnection,
:func:`on_disconnect`), write the same recording (:class:`Recorder`), check
their lifecycle alike (:func:`check_startable`, raising
:class:`SubscriberStateError`) and count a handling bug alike
(:func:`handling_error`); their common state, stats and metrics are
:class:`Transport`'s. What differs is how they wait: threads and a condition,
or tasks and an event. Needs pyzmq (extra ``zmq``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from typing import IO, Any, Generic, TypeVar

import zmq

from ...errors import PrefixKeyError
from ...events import Via, recording_line
from ..index._backend import PrefixIndexBackend
from ..routing._metrics import SubscriberStats, prometheus_text
from ._driver import Backoff, FeedDriver, log_notes
from ._endpoints import ReceivedBatch, ReplicaEndpoint
from ._fair_lock import FairLock
from ._feed import ReplayExchange, ReplicaFeed
from ._feed_set import FeedSet
from ._options import SubscriberOptions

__all__ = [
    "Lane",
    "Queued",
    "Recorder",
    "SubscriberStateError",
    "Transport",
    "check_startable",
    "configure_sub",
    "handling_error",
    "on_disconnect",
    "on_monitor_event",
]

#: A socket of either transport (``zmq.Socket[bytes]``, ``zmq.asyncio.Socket``).
_S = TypeVar("_S", bound="zmq.Socket[Any]")

#: A message admitted to a replica's queue: when it was received, its frames, its size.
Queued = tuple[float, list[bytes], int]

logger = logging.getLogger("prefixkey.fleet.Subscriber")


class SubscriberStateError(PrefixKeyError, RuntimeError):
    """A lifecycle call out of order: starting a subscriber twice, or after close."""


def configure_sub(sock: zmq.Socket[Any], config: ReplicaEndpoint,
                  options: SubscriberOptions) -> None:
    """The SUB socket options both subscribers set."""
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, options.rcvhwm)
    sock.setsockopt(zmq.RECONNECT_IVL, options.reconnect_ivl_ms)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, options.reconnect_ivl_max_ms)
    sock.setsockopt(zmq.MAXMSGSIZE, options.max_message_bytes)
    sock.setsockopt(zmq.SUBSCRIBE, config.topic.encode("utf-8"))


class Recorder:
    """Writes raw messages to a recording (docs/events.md) from any thread; stops on error."""

    def __init__(self, file: IO[str] | None) -> None:
        self.file = file
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()

    def write(self, source: str, frames: list[bytes], recv_time: float, via: Via) -> None:
        if self.file is None:
            return
        line = recording_line(frames, recv_time=recv_time, source=source, via=via)
        with self._lock:
            self._append(line)

    def _append(self, line: str) -> None:
        if self.file is None:  # another thread stopped the recording meanwhile
            return
        try:
            self.file.write(line + "\n")
        except (OSError, ValueError) as exc:
            logger.error("recording failed, recording stops: %s", exc)
            self.file = None

    def flush(self, every: float = 0.0) -> None:
        """Flush, at most once per ``every`` seconds."""
        if self.file is None or time.monotonic() - self._last_flush < every:
            return
        with self._lock:
            if self.file is not None:
                self.file.flush()
        self._last_flush = time.monotonic()


def on_disconnect(feed: ReplicaFeed, sub: zmq.Socket[Any]) -> None:
    """Count a disconnection and connect again.

    libzmq reconnects by itself after most disconnections, but not after a
    protocol error such as a frame over ``MAXMSGSIZE``: one oversized message
    would end the subscription for good. Connecting afresh covers both.
    """
    feed.count("disconnects")
    endpoint = feed.config.endpoint
    logger.warning("%s: disconnected from %s (reconnecting)", feed.key, endpoint)
    with contextlib.suppress(zmq.ZMQError):  # already gone
        sub.disconnect(endpoint)
    sub.connect(endpoint)


def on_monitor_event(feed: ReplicaFeed, event: object, sub: zmq.Socket[Any]) -> None:
    """Count a SUB socket's connect, or its disconnect (connecting again: on_disconnect)."""
    if event == zmq.EVENT_CONNECTED:
        feed.count("connects")
        logger.info("%s: connected to %s", feed.key, feed.config.endpoint)
    elif event == zmq.EVENT_DISCONNECTED:
        on_disconnect(feed, sub)


def check_startable(started: bool, closed: bool) -> None:
    """Raise :class:`SubscriberStateError` for a start out of order."""
    if started:
        raise SubscriberStateError("the subscriber is already started")
    if closed:
        raise SubscriberStateError("the subscriber is closed: build a new one")


def handling_error(feed: ReplicaFeed) -> None:
    """Count and log (with its traceback) an unexpected error handling a message: a bug
    must not kill the subscriber. Call it from the ``except`` block."""
    feed.count("handling_errors")
    logger.exception("%s: unexpected error handling a message (skipped, counted in "
                     "handling_errors)", feed.key)


class Lane(Generic[_S]):
    """One replica's sockets and queue, in either transport (which adds how it waits)."""

    def __init__(self, feed: ReplicaFeed) -> None:
        self.feed = feed
        self.items: deque[Queued] = deque()
        self.sub: _S | None = None
        self.monitor: _S | None = None
        self.dealer: _S | None = None

    def open(self, ctx: zmq.Context[_S], options: SubscriberOptions) -> None:
        """Open the SUB socket (and its monitor) and connect it to the publisher."""
        sub = ctx.socket(zmq.SUB)
        configure_sub(sub, self.feed.config, options)
        self.monitor = sub.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
        self.sub = sub
        sub.connect(self.feed.config.endpoint)

    def close(self) -> None:
        """Close the sockets, and give back the queue room of the messages still queued."""
        for sock in (self.dealer, self.monitor):
            if sock is not None:
                sock.close(linger=0)
        if self.sub is not None:
            with contextlib.suppress(zmq.ZMQError):
                self.sub.disable_monitor()
            self.sub.close(linger=0)
        self.sub = self.monitor = self.dealer = None
        while self.items:
            self.feed.taken(self.items.popleft()[2])

    def received(self, frames: list[bytes], recorder: Recorder) -> Queued | None:
        """A PUB message off the SUB socket: counted, recorded and admitted to the queue
        (the item the transport appends), or dropped (None: counted, its notes logged)."""
        feed = self.feed
        now = time.time()
        feed.count("messages")
        recorder.write(feed.key, frames, now, "pub")
        size = feed.admit(frames, now)
        if size is None:
            log_notes(feed)
            return None
        return now, frames, size

    def dealer_socket(self, ctx: zmq.Context[_S], options: SubscriberOptions) -> _S:
        """The replica's DEALER to its replay endpoint, connected on first use."""
        if self.dealer is None:
            assert self.feed.config.replay_endpoint is not None
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.MAXMSGSIZE, options.max_message_bytes)
            sock.connect(self.feed.config.replay_endpoint)
            self.dealer = sock
        return self.dealer

    def replay_finished(self, driver: FeedDriver, exchange: ReplayExchange) -> None:
        """Count the replay's outcome; without its end marker, drop the DEALER: late
        replies must not answer the next request."""
        driver.replay_finished(self.feed, exchange)
        if not exchange.ended and self.dealer is not None:
            self.dealer.close(linger=0)
            self.dealer = None


class Transport(ABC):
    """What both subscribers hold alike: their feeds (options, driver, lock, stats), the
    index, the recording, whether the ZMQ context is theirs; and their stats and metrics.

    A transport says whether it is :attr:`running`; ``backoff`` is its wait between
    retries (cut short when it stops).
    """

    def __init__(self, replicas: list[ReplicaEndpoint], index: PrefixIndexBackend | None,
                 on_batch: Callable[[ReceivedBatch], None] | None, record: IO[str] | None,
                 options: SubscriberOptions | None, backoff: Backoff, own_context: bool,
                 changes: dict[str, Any]) -> None:
        self._feeds = FeedSet(replicas, index=index, on_batch=on_batch, options=options,
                              backoff=backoff, **changes)
        #: The options in force (validated).
        self.options: SubscriberOptions = self._feeds.options
        self._driver = self._feeds.driver
        self.index = index
        self._recorder = Recorder(record)
        #: Held while a batch is applied to the index: hold it to read the index from
        #: another thread. Fair: a reader ranking in a loop cannot starve the appliers.
        self.lock: FairLock = self._feeds.lock
        self._own_context = own_context
        self._closed = False

    @property
    @abstractmethod
    def running(self) -> bool:
        """Whether the transport's threads or tasks run."""

    @property
    def record(self) -> IO[str] | None:
        """The recording file (None once a write failed)."""
        return self._recorder.file

    def stats(self) -> SubscriberStats:
        """A snapshot: per replica counters and liveness, totals, queue and index sizes.

        ``{"replicas": {key: {<COUNTERS>…, "decode_errors_by_type", "last_seen",
        "idle_seconds", "idle", "epochs", "index_size", "queued", "queued_bytes",
        "vllm_version", "scheme"}}, "totals": {<COUNTERS>…, "index_size", "queued",
        "queued_bytes"}, "queue_depth", "queue_capacity", "queue_bytes",
        "queue_bytes_capacity", "index": the index's stats() or None, "running"}``.
        """
        return self._feeds.stats(running=self.running)

    def prometheus_text(self) -> str:
        """The counters in Prometheus' text exposition format (names prefixed ``prefixkey_``)."""
        return prometheus_text(self.stats())
