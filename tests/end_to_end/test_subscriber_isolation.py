"""One replica's faults cost that replica only; readers never starve the appliers.

Each fault of issue 13 against both subscribers on loopback: a replay endpoint
that never answers, a seq of 2**62+5, invented data-parallel ranks, and a reader
that ranks in a loop under the index lock. The bounds themselves (bytes queued,
seq jumps) are also checked sans-IO.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_publisher import FakePublisher  # noqa: E402
from subscribers import AnySubscriber  # noqa: E402
from test_subscriber import (  # noqa: E402
    BLOCK,
    TIMEOUT,
    encode_batch,
    hasher,
    hello,
    stored,
    wait,
)

from prefixkey import Request  # noqa: E402
from prefixkey.events import StreamSequence  # noqa: E402
from prefixkey.fleet import (  # noqa: E402
    AsyncSubscriber,
    PrefixIndex,
    ReplicaEndpoint,
    ReplicaScheme,
    Router,
    Subscriber,
)
from prefixkey.fleet.feed._feed_set import FeedSet  # noqa: E402

V = "0.31.0"


def block_batch(scheme: ReplicaScheme, i: int, rank: int = 0) -> bytes:
    """Batch ``i``: one BlockStored of a block of its own (a chain start)."""
    return encode_batch(V, float(i), [stored(scheme, Request(list(range(i * BLOCK,
                                                                         (i + 1) * BLOCK))))],
                        rank)


def publish_paced(sub: AnySubscriber, pub: FakePublisher, name: str, payloads: list[bytes],
                  ahead: int = 200) -> None:
    """Publish in order, at most ``ahead`` batches beyond what ``name`` applied (no PUB drops)."""
    for i, payload in enumerate(payloads):
        if i >= ahead:
            def caught_up(s: Mapping[str, Any], i: int = i) -> bool:
                return bool(s["replicas"][name]["batches"] > i - ahead)
            wait(sub, caught_up, f"batch {i}")
        pub.publish(payload)


class DeadReplay:
    """A ROUTER that takes replay requests and never answers (a hung replica)."""

    def __init__(self, ctx: Any) -> None:
        self.router = ctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        port = self.router.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{port}"

    def close(self) -> None:
        self.router.close(0)


def test_dead_replay_endpoint_stalls_only_its_replica(
    ctx: Any, make: Callable[..., AnySubscriber]
) -> None:
    good, bad = FakePublisher(ctx, V), FakePublisher(ctx, V)
    dead = DeadReplay(ctx)
    scheme = ReplicaScheme(hasher(V))
    index = PrefixIndex()
    replicas = [ReplicaEndpoint("good", good.endpoint, V, scheme=scheme),
                ReplicaEndpoint("bad", bad.endpoint, V, replay_endpoint=dead.endpoint,
                                scheme=scheme)]
    try:
        # The bad replica's replay waits far longer than this test may take.
        with make(replicas, index=index, context=ctx, replay_timeout=10 * TIMEOUT) as sub:
            hello(sub, [(good, "good", good.publish(block_batch(scheme, 0), send=False)),
                        (bad, "bad", bad.publish(encode_batch(V, 0.0, []), send=False))])
            bad.publish(encode_batch(V, 1.0, []), send=False)  # lost: a gap
            bad.publish(encode_batch(V, 2.0, []))
            wait(sub, lambda s: s["replicas"]["bad"]["replay_requests"] == 1, "the stuck replay")
            publish_paced(sub, good, "good", [block_batch(scheme, i) for i in range(1, 300)])
            wait(sub, lambda s: s["replicas"]["good"]["batches"] == 300, "every good batch")
            stats = sub.stats()["replicas"]
            assert stats["bad"]["replay_failures"] == stats["bad"]["replay_completed"] == 0
            assert stats["good"]["index_size"] == 300
            assert stats["good"]["lost_batches"] == stats["good"]["gaps"] == 0
    finally:
        for p in (good, bad):
            p.close()
        dead.close()


def test_bogus_seq_is_a_restart_not_the_new_normal(
    ctx: Any, make: Callable[..., AnySubscriber]
) -> None:
    pub = FakePublisher(ctx, V)
    scheme = ReplicaScheme(hasher(V))
    index = PrefixIndex()
    try:
        with make([ReplicaEndpoint("a", pub.endpoint, V, scheme=scheme)], index=index,
                  context=ctx) as sub:
            hello(sub, [(pub, "a", pub.publish(block_batch(scheme, 0), send=False))])
            pub.publish(block_batch(scheme, 1))
            pub.send([b"", (2**62 + 5).to_bytes(8, "big"), encode_batch(V, 9.0, [])])
            wait(sub, lambda s: s["replicas"]["a"]["seq_jumps"] == 1, "the jump")
            pub.publish(block_batch(scheme, 2))  # the real stream goes on: seq 2
            pub.publish(block_batch(scheme, 3), send=False)  # seq 3 lost
            pub.publish(block_batch(scheme, 4))
            wait(sub, lambda s: s["replicas"]["a"]["batches"] == 5, "the stream after the jump")
            a = sub.stats()["replicas"]["a"]
            # The jump and the return to the real numbering: two epochs, each clearing.
            assert (a["seq_jumps"], a["restarts"], a["epochs"]) == (1, 2, 2)
            # Gap detection still works: seq 3 is one missing batch, not 4.6e18.
            assert (a["gaps"], a["missing_batches"], a["lost_batches"]) == (2, 3, 3)
            assert a["index_size"] == 2  # seq 2 and 4, after the last clear
    finally:
        pub.close()


def test_an_oversized_frame_costs_only_its_connection(
    ctx: Any, make: Callable[..., AnySubscriber]
) -> None:
    big, good = FakePublisher(ctx, V), FakePublisher(ctx, V)
    scheme = ReplicaScheme(hasher(V))
    index = PrefixIndex()
    replicas = [ReplicaEndpoint("big", big.endpoint, V, scheme=scheme),
                ReplicaEndpoint("good", good.endpoint, V, scheme=scheme)]
    try:
        with make(replicas, index=index, context=ctx, max_message_bytes=64 * 1024) as sub:
            hello(sub, [(big, "big", big.publish(block_batch(scheme, 0), send=False)),
                        (good, "good", good.publish(block_batch(scheme, 0), send=False))])
            big.publish(b"\x00" * (1024 * 1024))  # libzmq refuses it and drops the connection
            wait(sub, lambda s: s["replicas"]["big"]["disconnects"] >= 1, "the refusal")
            publish_paced(sub, good, "good", [block_batch(scheme, i) for i in range(1, 50)])
            wait(sub, lambda s: s["replicas"]["good"]["batches"] == 50, "the good batches")
            # The big publisher's next message arrives on the new connection (a gap: seq 1).
            hello(sub, [(big, "big", big.publish(block_batch(scheme, 2), send=False))], at_least=2)
            stats = sub.stats()["replicas"]
            assert stats["big"]["decode_errors"] == 0 and stats["big"]["gaps"] == 1
            assert stats["good"]["disconnects"] == 0 and stats["good"]["lost_batches"] == 0
    finally:
        for p in (big, good):
            p.close()


def test_invented_ranks_are_bounded(ctx: Any, make: Callable[..., AnySubscriber]) -> None:
    pub = FakePublisher(ctx, V)
    scheme = ReplicaScheme(hasher(V))
    index = PrefixIndex()
    try:
        with make([ReplicaEndpoint("a", pub.endpoint, V, scheme=scheme)], index=index,
                  context=ctx, max_ranks=4) as sub:
            hello(sub, [(pub, "a", pub.publish(block_batch(scheme, 0), send=False))])
            for rank in range(1, 100):
                pub.publish(block_batch(scheme, rank, rank))
            wait(sub, lambda s: s["replicas"]["a"]["rank_overflows"] == 96, "the overflows")
            assert sub.stats()["replicas"]["a"]["batches"] == 4
            with sub.lock:
                assert sorted(r.dp_rank for r in index.replicas()) == [0, 1, 2, 3]
    finally:
        pub.close()


def test_a_reader_spinning_on_rank_does_not_starve_apply(
    ctx: Any, make: Callable[..., AnySubscriber]
) -> None:
    pub = FakePublisher(ctx, V)
    scheme = ReplicaScheme(hasher(V))
    index = PrefixIndex()
    router = Router(index)
    request = Request(list(range(64 * BLOCK)))
    stop = threading.Event()
    reads = 0

    def spin() -> None:  # a router ranking as fast as it can, never pausing outside the lock
        nonlocal reads
        while not stop.is_set():
            with sub.lock:
                router.route(request)
                reads += 1

    try:
        with make([ReplicaEndpoint("a", pub.endpoint, V, scheme=scheme)], index=index,
                  context=ctx) as sub:
            hello(sub, [(pub, "a", pub.publish(block_batch(scheme, 0), send=False))])
            reader = threading.Thread(target=spin, daemon=True)
            reader.start()
            try:
                publish_paced(sub, pub, "a", [block_batch(scheme, i) for i in range(1, 1000)])
                wait(sub, lambda s: s["replicas"]["a"]["batches"] == 1000, "every batch")
            finally:
                stop.set()
                reader.join(TIMEOUT)
            assert reads > 0
            assert sub.stats()["replicas"]["a"]["index_size"] == 1000
    finally:
        pub.close()


def test_ranking_on_the_event_loop_while_batches_apply(ctx: Any) -> None:
    """An asyncio handler ranks on the loop (no lock needed) while the subscriber applies."""
    pub = FakePublisher(ctx, V)
    scheme = ReplicaScheme(hasher(V))
    index = PrefixIndex()
    router = Router(index)
    request = Request([*range(10 * BLOCK), 1])

    def prefix_batch(i: int) -> bytes:  # the request's first i + 1 blocks
        return encode_batch(V, float(i), [stored(scheme, Request(range((i + 1) * BLOCK)))])

    async def main() -> tuple[int, int]:
        async with AsyncSubscriber([ReplicaEndpoint("a", pub.endpoint, V, scheme=scheme)],
                                   index=index, context=ctx) as sub:
            first = pub.publish(prefix_batch(0), send=False)
            while sub.stats()["replicas"]["a"]["batches"] < 1:  # slow joiner
                pub.send(first)
                await sub.wait_until(lambda s: s["replicas"]["a"]["batches"] >= 1, 0.05)
            reads = 0
            for i in range(1, 10):
                pub.publish(prefix_batch(i))
            deadline = time.monotonic() + TIMEOUT
            while sub.stats()["replicas"]["a"]["batches"] < 10:
                assert time.monotonic() < deadline, sub.stats()
                router.route(request)  # between two batches, never inside one
                reads += 1
                await asyncio.sleep(0)
            return router.route(request)[0].hit_tokens, reads

    try:
        hit, reads = asyncio.run(main())
    finally:
        pub.close()
    assert reads > 0
    assert hit == 10 * BLOCK


# ----------------------------------------------------------------------------- sans-IO bounds


def test_queue_bound_counts_bytes() -> None:
    feeds = FeedSet([ReplicaEndpoint("a", "tcp://127.0.0.1:1")], index=None, on_batch=None,
                    queue_size=100, queue_bytes=1000, restart_policy="clear", catch_up=True,
                    max_jump=10, max_ranks=1, learn_schemes=False)
    feed = feeds.feeds[0]
    assert feed.admit([b"", b"s" * 8, b"x" * 592]) == 600
    assert feed.admit([b"", b"s" * 8, b"x" * 592]) is None  # 1200 bytes > 1000
    assert feed.admit([b"x" * 400]) == 400
    assert feed.counters["dropped"] == 1 and feed.queued_bytes == 1000
    feed.taken(600)
    assert feed.admit([b"x" * 600]) == 600


def test_stream_sequence_bounds_jumps_and_missing_ranges() -> None:
    s = StreamSequence(max_jump=100)
    assert s.observe(0, 0).kind == "first"
    assert s.observe(50, 1) == ("gap", (1, 50))
    assert s.observe(2**62 + 5, 2) == ("jump", None)
    assert s.epoch == 1 and s.expected == 2**62 + 6 and s.open_gaps() == ()
    # The old numbering resumes: a restart whose missing range is bounded by max_jump.
    assert s.observe(51, 3) == ("restart", (0, 51))
    assert s.observe(52, 4).kind == "next"
    late = StreamSequence(max_jump=100)
    assert late.observe(2**62, 0) == ("first", (2**62 - 100, 2**62))
    edge = StreamSequence(max_jump=100)
    edge.observe(0, 0)
    assert edge.observe(101, 1) == ("gap", (1, 101))  # 100 missing: still a gap
    assert edge.observe(203, 2) == ("jump", None)  # 101 missing: a jump


def test_the_index_lock_is_handed_to_the_longest_waiter() -> None:
    """What starved the worker: a releasing reader took the lock back before the waiter.

    With ``threading.RLock`` the reader below wins (it holds the GIL when it
    releases); the subscriber's lock hands over to the queued worker instead.
    """
    sub = Subscriber([ReplicaEndpoint("a", "tcp://127.0.0.1:1")])
    lock = sub.lock
    order: list[str] = []
    queued = threading.Event()

    def worker() -> None:
        queued.set()
        with lock:
            order.append("worker")

    try:
        lock.acquire()
        thread = threading.Thread(target=worker, daemon=True)
        thread.start()
        assert queued.wait(TIMEOUT)
        # Not a sleep: on a loaded machine the worker may take longer to reach acquire().
        deadline = time.monotonic() + TIMEOUT
        while not lock._waiters:  # the worker is queued in acquire()
            assert time.monotonic() < deadline, "the worker never queued for the lock"
            time.sleep(0.001)
        lock.release()
        with lock:  # the reader's next turn
            order.append("reader")
        thread.join(TIMEOUT)
        assert order == ["worker", "reader"]
        with lock, lock:  # reentrant, like the RLock it replaces
            pass
    finally:
        sub.close()
