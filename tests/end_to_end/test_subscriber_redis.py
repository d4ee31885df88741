"""Both subscribers feeding a RedisPrefixIndex while its redis-server is killed and restarted.

The publisher is the subscriber suite's vLLM-like fake
(tests/end_to_end/test_subscriber.py); the server is this test's own
(tests/redis_servers.py, no persistence). What must hold: a batch that meets
an outage is retried with backoff until Redis is back (``apply_retries``),
then applied once, with the replica's registration re-established from the
namespace epoch, never dropped; a retry budget that runs out counts the batch
in ``apply_errors``; ``stop()`` cuts a retry short; the asyncio subscriber
feeds a backend that does I/O from a worker thread, so its loop keeps running
during the outage.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_publisher import FakePublisher
from redis_servers import redis_module, redis_server
from subscribers import AnySubscriber, LoopSubscriber
from test_subscriber import (
    TIMEOUT,
    encode_batch,
    hello,
    publishers,  # noqa: F401 (a fixture)
    wait,
)

from prefixkey import Hasher
from prefixkey.events import BlockRemoved, BlockStored, DecodedOps
from prefixkey.fleet import (
    PredictedIndex,
    RedisPrefixIndex,
    ReplicaEndpoint,
    ReplicaId,
    ReplicaScheme,
    Subscriber,
)

BLOCK = 16
VERSION = "0.31.0"
SCHEME = ReplicaScheme(Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version=VERSION))


def gpu_stored(*keys: int) -> BlockStored:
    return BlockStored(keys, None, (), BLOCK, medium="GPU")


def gpu_a_keys(index: RedisPrefixIndex) -> set[Any]:
    return {k for _, k, _ in index.entries("gpu-a")}


def gpu_a_publisher(ctx: Any, made: list[FakePublisher]
                    ) -> tuple[FakePublisher, ReplicaEndpoint]:
    """A publisher (added to ``made``, the ``publishers`` fixture that closes it) and
    replica gpu-a's endpoint on it."""
    pub = FakePublisher(ctx, VERSION)
    made.append(pub)
    return pub, ReplicaEndpoint("gpu-a", pub.endpoint, VERSION, scheme=SCHEME)


def unsent(pub: FakePublisher, *events: Any) -> list[bytes]:
    """A batch of ``events`` published but not sent (replayable): its frames."""
    return pub.publish(encode_batch(VERSION, time.time(), events), send=False)


class _ThreadRecordingIndex(RedisPrefixIndex):
    """Records the threads its batches are applied from (retries included)."""

    threads: set[int]

    def apply_ops(self, replica: ReplicaId | str, decoded: DecodedOps) -> None:
        self.threads.add(threading.get_ident())
        super().apply_ops(replica, decoded)


async def _thread_ident() -> int:
    return threading.get_ident()


def test_an_outage_is_retried_until_redis_is_back(
        ctx: Any, publishers: list[FakePublisher],  # noqa: F811
        make: Callable[..., AnySubscriber]) -> None:
    redis_module()
    with redis_server() as server:
        index = _ThreadRecordingIndex.from_url(server.url, timeout=0.3, namespace="sub")
        assert isinstance(index, _ThreadRecordingIndex)
        index.threads = set()
        pub, endpoint = gpu_a_publisher(ctx, publishers)

        with make([endpoint], index=index, context=ctx, retry_seconds=30.0) as sub:
            hello(sub, [(pub, "gpu-a", unsent(pub, gpu_stored(1, 2)))])
            assert gpu_a_keys(index) == {1, 2}
            server.kill()
            pub.send(unsent(pub, gpu_stored(3, 4)))
            wait(sub, lambda s: s["replicas"]["gpu-a"]["apply_retries"] >= 2, "retries")
            if isinstance(sub, LoopSubscriber):  # the loop is not the one waiting on Redis
                # Which thread called the index, not how fast the loop answered: a loaded
                # machine may delay the loop for reasons that are not Redis.
                loop_thread = asyncio.run_coroutine_threadsafe(_thread_ident(),
                                                               sub.loop).result(TIMEOUT)
                assert index.threads and loop_thread not in index.threads
            stats = sub.stats()  # no Redis: the stats still answer
            assert stats["index"] is None and stats["replicas"]["gpu-a"]["batches"] == 1
            server.restart()  # empty: no persistence
            wait(sub, lambda s: s["replicas"]["gpu-a"]["batches"] == 2, "the retried batch")
            assert sub.stats()["replicas"]["gpu-a"]["apply_errors"] == 0
            # The registration came back with the epoch; the batch applied once, after it.
            assert index.restarts_detected == 1
            assert set(index.replicas()) == {ReplicaId("gpu-a")}
            assert gpu_a_keys(index) == {3, 4}
            assert index.stats()["batches"] == 1 and index.stats()["stores"] == 2


def test_a_retry_budget_that_runs_out_counts_an_apply_error(
        ctx: Any, publishers: list[FakePublisher]) -> None:  # noqa: F811
    redis_module()
    with redis_server() as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=0.2, namespace="sub")
        pub, endpoint = gpu_a_publisher(ctx, publishers)

        with Subscriber([endpoint], index=index, context=ctx, retry_seconds=0.5) as sub:
            hello(sub, [(pub, "gpu-a", unsent(pub))])
            server.kill()
            pub.send(unsent(pub, gpu_stored(5)))
            wait(sub, lambda s: s["replicas"]["gpu-a"]["apply_errors"] == 1, "the give-up")
            assert sub.stats()["replicas"]["gpu-a"]["apply_retries"] >= 1
            assert sub.stats()["replicas"]["gpu-a"]["batches"] == 1  # the hello only


def test_a_full_redis_is_retried_given_up_then_the_replica_resyncs(
        ctx: Any, publishers: list[FakePublisher],  # noqa: F811
        make: Callable[..., AnySubscriber]) -> None:
    """noeviction at maxmemory: the batch of removes is retried (IndexFullError is an
    IndexUnavailableError), given up, and the replica's next batch clears it first, so
    none of the 111 removed keys stays held."""
    redis = redis_module()
    with redis_server() as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=1.0, namespace="sub")
        admin = redis.Redis.from_url(server.url)
        pub, endpoint = gpu_a_publisher(ctx, publishers)

        with make([endpoint], index=index, context=ctx, retry_seconds=0.5) as sub:
            hello(sub, [(pub, "gpu-a", unsent(pub, gpu_stored(*range(1, 112))))])
            assert gpu_a_keys(index) == set(range(1, 112))
            admin.config_set("maxmemory-policy", "noeviction")
            admin.config_set("maxmemory", 1)
            pub.send(unsent(pub, BlockRemoved(tuple(range(1, 112)), medium="GPU")))
            wait(sub, lambda s: s["replicas"]["gpu-a"]["apply_errors"] == 1, "the give-up")
            assert sub.stats()["replicas"]["gpu-a"]["apply_retries"] >= 1
            admin.config_set("maxmemory", 0)  # memory freed
            batches = sub.stats()["replicas"]["gpu-a"]["batches"]
            pub.send(unsent(pub, gpu_stored(500)))
            wait(sub, lambda s: s["replicas"]["gpu-a"]["batches"] == batches + 1, "the next")
            assert gpu_a_keys(index) == {500}
            assert index.stats()["resyncs"] == 1


def test_stop_cuts_a_retry_short(
        ctx: Any, publishers: list[FakePublisher],  # noqa: F811
        make: Callable[..., AnySubscriber]) -> None:
    redis_module()
    with redis_server() as server:
        # A PredictedIndex over Redis: fed like any backend, and typed as one.
        index = PredictedIndex(RedisPrefixIndex.from_url(server.url, timeout=0.2,
                                                         namespace="sub"))
        pub, endpoint = gpu_a_publisher(ctx, publishers)

        sub = make([endpoint], index=index, context=ctx, retry_seconds=60.0)
        with sub:
            hello(sub, [(pub, "gpu-a", unsent(pub, gpu_stored(7)))])
            assert index.predictions.is_confirmed("gpu-a")
            server.kill()
            pub.send(unsent(pub, gpu_stored(8)))
            wait(sub, lambda s: s["replicas"]["gpu-a"]["apply_retries"] >= 1, "a retry")
            started = time.monotonic()
        assert time.monotonic() - started < 5.0  # not the 60 s budget
        assert not sub.running
