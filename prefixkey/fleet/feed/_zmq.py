"""What both ZMQ transports share: the SUB sockets' options, reconnecting, the recording.

The threaded :class:`~prefixkey.fleet.Subscriber` and the asyncio
:class:`~prefixkey.fleet.AsyncSubscriber` set the same options on their SUB
sockets (:func:`configure_sub`, from :class:`~._options.SubscriberOptions`),
connect afresh on every disconnection (:func:`on_disconnect`), write the same
recording (:class:`Recorder`) and raise the same lifecycle error
(:class:`SubscriberStateError`). Needs pyzmq (extra ``zmq``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import IO, Any

import zmq

from ...errors import PrefixKeyError
from ...events import Via, recording_line
from ._endpoints import ReplicaEndpoint
from ._feed import ReplicaFeed
from ._options import SubscriberOptions

__all__ = ["Recorder", "SubscriberStateError", "configure_sub", "on_disconnect"]

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
