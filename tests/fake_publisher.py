"""vLLM's KV-event publisher on loopback, for the subscriber, gateway and soak suites.

As vLLM's ``ZmqEventPublisher``: a PUB socket sending ``[topic, seq, payload]``,
every message kept for an optional ROUTER replay socket that answers a start
seq with the buffered messages from it and an end marker, in the release's
framing (``replay_carries_topic``). Ports are random unless given (a restart
rebinds the same port).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import zmq

from prefixkey.events import END_SEQ, wire_era

#: How long a publisher given a port retries binding it (seconds): a restarted one waits
#: for its predecessor's socket to let go; 0 fails at once (a caller trying other ports).
REBIND_SECONDS = 8.0


class FakePublisher:
    """vLLM's publisher on loopback: PUB + optional ROUTER replay serviced in a thread."""

    def __init__(self, ctx: Any, version: str, *, topic: str = "", replay: bool = False,
                 port: int | None = None, replay_port: int | None = None,
                 rebind_seconds: float = REBIND_SECONDS) -> None:
        self.version = version
        self.topic = topic.encode()
        self.pub = ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        if port is None:
            port = self.pub.bind_to_random_port("tcp://127.0.0.1")
        else:  # a restart: the old socket's close is asynchronous, retry until the port is free
            deadline = time.monotonic() + rebind_seconds
            while True:
                try:
                    self.pub.bind(f"tcp://127.0.0.1:{port}")
                    break
                except zmq.ZMQError:
                    if time.monotonic() > deadline:
                        self.pub.close(0)
                        raise
                    time.sleep(0.01)
        self.port = port
        self.endpoint = f"tcp://127.0.0.1:{port}"
        self.seq = 0
        self.buffer: list[tuple[int, bytes]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.replay_endpoint: str | None = None
        self.replay_requests: list[int] = []
        self._thread: threading.Thread | None = None
        self.router = None
        if replay:
            router = ctx.socket(zmq.ROUTER)
            router.setsockopt(zmq.LINGER, 0)
            try:
                if replay_port is None:
                    replay_port = router.bind_to_random_port("tcp://127.0.0.1")
                else:
                    router.bind(f"tcp://127.0.0.1:{replay_port}")
            except zmq.ZMQError:
                router.close(0)
                self.pub.close(0)
                raise
            self.replay_port = replay_port
            self.replay_endpoint = f"tcp://127.0.0.1:{replay_port}"
            self.router = router
            self._thread = threading.Thread(target=self._serve, daemon=True)
            self._thread.start()

    def _serve(self) -> None:
        assert self.router is not None
        with_topic = wire_era(self.version)[0].replay_carries_topic
        while not self._stop.is_set():
            if not self.router.poll(20):
                continue
            client, _, start_bytes = self.router.recv_multipart()
            start = int.from_bytes(start_bytes, "big")
            self.replay_requests.append(start)
            with self._lock:
                buffered = [(s, p) for s, p in self.buffer if s >= start]
            for seq, payload in buffered:
                head = [self.topic] if with_topic else []
                self.router.send_multipart([client, b"", *head, seq.to_bytes(8, "big"), payload])
            end = [b"", END_SEQ, b""] if with_topic else [END_SEQ, b""]
            self.router.send_multipart([client, b"", *end])

    def publish(self, payload: bytes, *, send: bool = True) -> list[bytes]:
        with self._lock:  # replicas serving HTTP publish from several threads
            seq = self.seq
            self.seq += 1
            self.buffer.append((seq, payload))
        frames = [self.topic, seq.to_bytes(8, "big"), payload]
        if send:
            self.pub.send_multipart(frames)
        return frames

    def send(self, frames: list[bytes]) -> None:
        self.pub.send_multipart(frames)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        if self.router is not None:
            self.router.close(0)
        self.pub.close(0)
