"""Subscribers: a flooding replica's turns are bounded in time (issue 23, item 12c).

A ``recv`` of a message already queued completes without suspending, so a replica
whose socket never runs dry keeps the loop as long as its receive task does not
give it back. Turns were counted in messages (the receive task yielded every 64,
each worker after every batch): under a flood of cheap messages a healthy
replica's worker applied one batch per 64 of the flood's, and its backlog grew
(healthy p50 8.4 s in the issue). Turns are now bounded in time (2 ms): here a
clock that moves 1 ms per reading makes that exact, and the sockets are stand-ins
whose ``recv`` never suspends (the flood's never runs dry), so what is counted
is the loop's scheduling alone: how many flood messages were received while the
healthy replica's backlog drained. The threaded receiver's turn is bounded the
same way (it took up to 1,000 messages of one socket in a row).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from prefixkey import Hasher, Request
from prefixkey.events import BlockStored, EventBatch, encode_batch
from prefixkey.fleet import (
    AsyncSubscriber,
    PrefixIndex,
    ReceivedBatch,
    ReplicaEndpoint,
    ReplicaScheme,
)
from prefixkey.fleet.feed import _async_subscriber

V = "0.31.0"
SCHEME = ReplicaScheme(Hasher(block_size=16, vllm_version=V, python_hash_seed="0"))
BACKLOG = 100  # the healthy replica's batches, all queued at once


def payload(i: int) -> bytes:
    keys = SCHEME.hasher.block_hashes(Request(range(i * 16, (i + 1) * 16)))
    event = BlockStored(tuple(SCHEME.publish(k) for k in keys), None, (), 16)
    return encode_batch(EventBatch(float(i), (event,)), V)


SMALL = payload(10**6)  # one of the flood's messages


class Socket:
    """A SUB socket whose queued messages are received without suspending."""

    def __init__(self, messages: Iterator[list[bytes]]) -> None:
        self.messages = messages
        self.received = 0

    async def recv_multipart(self) -> list[bytes]:
        for frames in self.messages:
            self.received += 1
            return frames
        await asyncio.Event().wait()  # ran dry: wait for ever
        raise AssertionError("unreachable")


def frames(seq: int, body: bytes) -> list[bytes]:
    return [b"", seq.to_bytes(8, "big"), body]


def test_a_flood_does_not_slow_a_healthy_replicas_backlog(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    readings = itertools.count()
    clock = SimpleNamespace(monotonic=lambda: next(readings) / 1000, time=time.time)
    monkeypatch.setattr(_async_subscriber, "time", clock)  # 1 ms per reading
    healthy = Socket(frames(i, payload(i)) for i in range(BACKLOG))
    hostile = Socket(frames(i, SMALL) for i in itertools.count())
    done = asyncio.Event()
    flood_at_done: list[int] = []

    def on_batch(batch: ReceivedBatch) -> None:
        if batch.replica == "healthy" and batch.seq == BACKLOG - 1:
            flood_at_done.append(hostile.received)
            done.set()
        elif hostile.received > 100 * BACKLOG:  # the backlog starved: stop
            done.set()

    async def main() -> None:
        sub = AsyncSubscriber([ReplicaEndpoint(n, "tcp://127.0.0.1:9", V, scheme=SCHEME)
                               for n in ("healthy", "hostile")],
                              index=PrefixIndex(), on_batch=on_batch, queue_size=10**6)
        tasks = []
        for lane, sock in zip(sub._lanes, (healthy, hostile), strict=True):
            lane.sub = sock  # type: ignore[assignment]
            tasks += [asyncio.create_task(sub._receive(lane)),
                      asyncio.create_task(sub._work(lane))]
        await done.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(asyncio.wait_for(main(), 60))
    assert flood_at_done, f"healthy backlog not drained after {hostile.received} flood messages"
    # About as many of the flood's messages as the healthy replica's (turns of equal time);
    # with 64-message turns it was 64 per healthy batch.
    assert flood_at_done[0] <= 4 * BACKLOG, flood_at_done


class BlockingSocket:
    """A SUB socket of the threaded receiver whose flood never runs dry."""

    def __init__(self) -> None:
        self.received = 0

    def recv_multipart(self, flags: int = 0) -> list[bytes]:
        self.received += 1
        return frames(self.received, SMALL)


def test_the_threaded_receiver_serves_a_flooding_socket_one_turn(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The threaded receiver takes a socket's messages for 2 ms, then serves the others
    (it took up to 1,000 in a row: a healthy replica's message waited behind them)."""
    from prefixkey.fleet import Subscriber
    from prefixkey.fleet.feed import _subscriber

    readings = itertools.count()
    clock = SimpleNamespace(monotonic=lambda: next(readings) / 1000, time=time.time)
    monkeypatch.setattr(_subscriber, "time", clock)  # 1 ms per reading
    sub = Subscriber([ReplicaEndpoint("hostile", "tcp://127.0.0.1:9", V, scheme=SCHEME)],
                     index=PrefixIndex(), queue_size=10**6)
    sock = BlockingSocket()
    sub._drain_sub(sub._workers[0], sock)  # type: ignore[arg-type]
    assert sock.received <= 3, sock.received
