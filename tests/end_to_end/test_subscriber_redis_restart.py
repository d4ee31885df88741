"""A publisher restart while Redis is down: the restart's index clear is retried, never skipped.

On a publisher restart the subscriber clears the replica's entries
(``remove_replica``, then ``register`` again). Both are index calls: with the
index's redis-server killed they raise ``IndexUnavailableError``, and the
clear is retried with the batches' backoff (``apply_retries``) until Redis is
back, resuming where it failed; one that runs out of ``retry_seconds`` is
counted (``restart_errors``) and the message that revealed the restart is
still applied (or counted in ``apply_errors``), never silently skipped. Any
other exception handling a message is counted in ``handling_errors``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_publisher import FakePublisher
from redis_servers import redis_module, redis_server
from subscribers import AnySubscriber
from test_subscriber import (
    encode_batch,
    hello,
    publishers,  # noqa: F401 (a fixture)
    wait,
)
from test_subscriber_redis import VERSION, gpu_a_keys, gpu_a_publisher, gpu_stored

from prefixkey.fleet import (
    PrefixIndex,
    RedisPrefixIndex,
    ReplicaId,
)
from prefixkey.fleet.feed._feed import ReplicaFeed


def _restart_publisher(context: Any, made: list[FakePublisher],
                       pub: FakePublisher) -> FakePublisher:
    """The publisher process restarts: a new socket on the same port, seq from 0."""
    pub.close()
    made.remove(pub)
    pub2 = FakePublisher(context, VERSION, port=pub.port)
    made.append(pub2)
    return pub2


def test_a_restart_clear_during_an_outage_is_retried_until_redis_is_back(
        ctx: Any, publishers: list[FakePublisher],  # noqa: F811
        make: Callable[..., AnySubscriber]) -> None:
    redis_module()
    with redis_server() as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=0.3, namespace="restart")
        pub, endpoint = gpu_a_publisher(ctx, publishers)
        with make([endpoint], index=index, context=ctx, retry_seconds=30.0) as sub:
            hello(sub, [(pub, "gpu-a", pub.publish(
                encode_batch(VERSION, 1.0, [gpu_stored(1, 2)]), send=False))])
            assert gpu_a_keys(index) == {1, 2}
            server.kill()
            pub = _restart_publisher(ctx, publishers, pub)
            hello(sub, [(pub, "gpu-a", pub.publish(
                encode_batch(VERSION, 2.0, [gpu_stored(3, 4)]), send=False))], key="restarts")
            wait(sub, lambda s: s["replicas"]["gpu-a"]["apply_retries"] >= 2, "retries")
            assert sub.stats()["replicas"]["gpu-a"]["batches"] == 1  # waiting, not skipped
            server.restart()  # empty: no persistence
            wait(sub, lambda s: s["replicas"]["gpu-a"]["batches"] == 2, "the new epoch's batch")
            a = sub.stats()["replicas"]["gpu-a"]
            assert a["restarts"] == 1
            assert a["restart_errors"] == a["apply_errors"] == a["handling_errors"] == 0
            # Registered again after the clear (the epoch and the clear), then applied once.
            assert set(index.replicas()) == {ReplicaId("gpu-a")}
            assert gpu_a_keys(index) == {3, 4}
            assert index.stats()["batches"] == 1 and index.stats()["stores"] == 2


def test_a_restart_clear_that_runs_out_of_retries_is_counted(
        ctx: Any, publishers: list[FakePublisher],  # noqa: F811
        make: Callable[..., AnySubscriber]) -> None:
    redis_module()
    with redis_server() as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=0.2, namespace="restart")
        pub, endpoint = gpu_a_publisher(ctx, publishers)
        with make([endpoint], index=index, context=ctx, retry_seconds=0.5) as sub:
            hello(sub, [(pub, "gpu-a", pub.publish(
                encode_batch(VERSION, 1.0, [gpu_stored(1)]), send=False))])
            server.kill()
            pub = _restart_publisher(ctx, publishers, pub)
            hello(sub, [(pub, "gpu-a", pub.publish(
                encode_batch(VERSION, 2.0, [gpu_stored(2)]), send=False))], key="restarts")
            # The clear gives up, then the message itself is tried and counted: not dropped.
            wait(sub, lambda s: s["replicas"]["gpu-a"]["apply_errors"] == 1, "the give-up")
            a = sub.stats()["replicas"]["gpu-a"]
            assert a["restart_errors"] == 1 and a["apply_retries"] >= 2
            assert a["handling_errors"] == 0 and a["batches"] == 1


def test_an_unexpected_error_handling_a_message_is_counted(
        ctx: Any, publishers: list[FakePublisher],  # noqa: F811
        make: Callable[..., AnySubscriber],
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: ReplicaFeed, frames: list[bytes], recv_time: float) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(ReplicaFeed, "accept", broken)
    pub, endpoint = gpu_a_publisher(ctx, publishers)
    with make([endpoint], index=PrefixIndex(), context=ctx) as sub:
        hello(sub, [(pub, "gpu-a", pub.publish(
            encode_batch(VERSION, 1.0, [gpu_stored(1)]), send=False))], key="handling_errors")
        a = sub.stats()["replicas"]["gpu-a"]
        assert a["handling_errors"] >= 1 and a["batches"] == 0
