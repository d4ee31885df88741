"""RedisPrefixIndex against a real redis-server that is killed and restarted mid-ingest.

Each test starts its own redis-server (tests/redis_servers.py: a free loopback
port, no persistence), so a restart loses the namespace as a crashed
production server without persistence does. What must hold: outages raise
IndexUnavailableError (never redis-py's errors, never a hang past the client's
timeouts), the restart is detected (namespace epoch) and registrations are
re-established, no batch is silently dropped, a huge batch never holds the
server in one call, and a batch whose reply was lost is counted once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from redis_servers import RedisServer, redis_module, redis_server

from prefixkey import Hasher
from prefixkey.events import BlockStored, EventBatch, EventHash
from prefixkey.fleet import (
    IndexUnavailableError,
    PrefixIndex,
    RedisPrefixIndex,
    ReplicaId,
    ReplicaScheme,
    Router,
)

H16 = Hasher(block_size=16, python_hash_seed="0")
SCHEME = ReplicaScheme(H16)


def stored(*keys: EventHash) -> BlockStored:
    return BlockStored(tuple(keys), None, (), 16)


def batch(*events: BlockStored, ts: float = 1.0) -> EventBatch:
    return EventBatch(ts, events)


def _keys(index: Any, name: str) -> set[Any]:
    return {k for _, k, _ in index.entries(name)}


def test_kill_and_restart_mid_ingest() -> None:
    with redis_server() as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=0.5)
        for name in ("a", "b"):
            index.register(name, SCHEME)
        names = ["a", "b"]
        failed: list[int] = []
        for i in range(120):
            if i == 40:
                server.kill()
            if i == 50:
                server.restart()  # empty: no persistence
            try:
                index.apply(names[i % 2], batch(stored(*range(10 * i, 10 * i + 10)), ts=i))
            except IndexUnavailableError as exc:
                assert exc.field == "index"
                failed.append(i)
        assert failed == list(range(40, 50))  # each outage reported, typed
        assert index.restarts_detected == 1
        assert set(index.replicas()) == {ReplicaId("a"), ReplicaId("b")}  # re-established
        stats = index.stats()
        assert stats["unknown_replica_batches"] == 0  # nothing dropped as unknown
        assert stats["batches"] == 70 and stats["stores"] == 700  # every batch since
        assert _keys(index, "a") == {k for i in range(50, 120, 2)
                                     for k in range(10 * i, 10 * i + 10)}


def test_a_second_router_re_establishes_its_own_replicas() -> None:
    with redis_server() as server:
        one = RedisPrefixIndex.from_url(server.url, timeout=0.5)
        two = RedisPrefixIndex.from_url(server.url, timeout=0.5)
        one.register("a", SCHEME)
        two.register("c", ReplicaScheme(H16, publishes="bytes"))
        two.apply("c", batch(stored(b"x" * 32)))
        server.restart()
        one.apply("a", batch(stored(1, 2), ts=2))  # one re-registers what it knows: a
        assert set(one.replicas()) == {ReplicaId("a")}
        two.apply("c", batch(stored(b"y" * 32), ts=3))  # two sees a new epoch: c again
        assert one.restarts_detected == two.restarts_detected == 1
        fresh = RedisPrefixIndex.from_url(server.url, timeout=0.5)
        assert set(fresh.replicas()) == {ReplicaId("a"), ReplicaId("c")}
        assert fresh.scheme("c").publishes == "bytes"
        assert _keys(fresh, "a") == {1, 2} and _keys(fresh, "c") == {b"y" * 32}
        tokens = list(range(40))
        assert Router(fresh).route(tokens)[0].evidence == "none"


def _killing_client(server: RedisServer, timeout: float) -> Any:
    """A real client of ``server`` that kills it just before its ``kill_at``-th script call.

    The kill is a hook between two calls, not a timer: deterministic on a loaded machine.
    """
    redis = redis_module()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    base: Any = redis.Redis

    class KillingClient(base):  # type: ignore[misc]
        kill_at: int | None = None
        calls = 0

        def evalsha(self, *args: Any) -> Any:
            if self.kill_at is not None:
                self.calls += 1
                if self.calls == self.kill_at:
                    server.kill()
            return super().evalsha(*args)

    return KillingClient.from_url(server.url, socket_timeout=timeout,
                                  socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))


def test_kill_during_a_chunked_batch_then_retry_applies_it_once() -> None:
    with redis_server() as server:
        client = _killing_client(server, 0.5)
        index = RedisPrefixIndex(client, chunk_blocks=2_000)
        index.register("a", SCHEME)
        big = batch(stored(*range(100_000)))  # 50 chunks, one script call each
        client.kill_at = 21  # 20 chunks applied, then the server dies
        with pytest.raises(IndexUnavailableError):
            index.apply("a", big)
        assert client.calls == 21  # it died mid-batch, at the 21st call
        client.kill_at = None
        server.start()
        index.apply("a", big)  # the same batch again: re-sent whole in the new epoch
        stats = index.stats()
        assert (stats["batches"], stats["events"], stats["stores"]) == (1, 1, 100_000)
        assert index.replica_size("a") == 100_000 and index.restarts_detected == 1


def _pings_during(server: RedisServer, work: Any) -> tuple[int, list[str]]:
    """Run ``work`` while another client pings: pings answered, and errors seen."""
    redis = redis_module()
    pinger = redis.Redis.from_url(server.url, socket_timeout=10)
    answered, errors = 0, []
    done = threading.Event()

    def run() -> None:
        try:
            work()
        finally:
            done.set()

    thread = threading.Thread(target=run)
    thread.start()
    while not done.is_set():
        try:
            pinger.ping()
            answered += 1
        except redis.exceptions.ResponseError as exc:
            errors.append(str(exc))
    thread.join()
    pinger.close()
    return answered, errors


def test_a_huge_batch_never_holds_the_server_in_one_call() -> None:
    # A server that answers BUSY to others once a script runs past one second.
    with redis_server("--busy-reply-threshold", "1000") as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=5.0)
        index.register("a", SCHEME)
        huge = batch(stored(*range(300_000)))
        answered, errors = _pings_during(server, lambda: index.apply("a", huge))
        assert answered >= 10 and not errors  # other clients served between the 30 chunks
        assert index.stats()["stores"] == 300_000


def test_a_timed_out_chunk_is_counted_once_and_busy_is_not_a_failure() -> None:
    """A reply slower than the client's timeout: the caller retries until it completes.

    One 200k-block chunk outlasts the 50 ms timeout; retries meet BUSY while it
    runs (IndexUnavailableError, not applied yet as far as the caller knows),
    then find the chunk applied: the batch is counted once.
    """
    with redis_server("--busy-reply-threshold", "20") as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=0.05, chunk_blocks=200_000)
        index.register("a", SCHEME)
        big = batch(stored(*range(200_000)))
        attempts = 0
        while True:
            attempts += 1
            try:
                index.apply("a", big)
                break
            except IndexUnavailableError:
                assert attempts < 400, "the index never came back"
                time.sleep(0.05)
        assert attempts > 1  # the first reply was lost to the timeout
        stats = index.stats()
        assert (stats["batches"], stats["stores"], stats["refreshes"]) == (1, 200_000, 0)


def test_memory_and_restarted_redis_agree_after_recovery() -> None:
    """After a restart, what is applied again routes as the in-memory index does."""
    with redis_server() as server:
        shared = RedisPrefixIndex.from_url(server.url, timeout=0.5)
        memory = PrefixIndex()
        tokens = list(range(16 * 10 + 3))
        fine = H16.block_hashes(tokens)
        for index in (shared, memory):
            index.register("a", ReplicaScheme(H16, publishes="bytes"))
            index.register("b", ReplicaScheme(H16, publishes="bytes"))
        shared.apply("a", batch(stored(*fine[:7])))
        server.restart()
        later: list[tuple[str, EventBatch]] = [
            ("a", batch(stored(*fine[:3]), ts=2)), ("b", batch(stored(*fine[:5]), ts=3))]
        for name, b in later:
            shared.apply(name, b)
            memory.apply(name, b)
        assert Router(shared).route(tokens) == Router(memory).route(tokens)


def test_a_router_that_only_ranks_restores_registrations() -> None:
    with redis_server() as server:
        feeder = RedisPrefixIndex.from_url(server.url, timeout=0.5)
        feeder.register("a", SCHEME)
        ranker = RedisPrefixIndex.from_url(server.url, timeout=0.5, registry_max_age=0.0)
        assert set(ranker.replicas()) == {ReplicaId("a")}
        server.restart()
        assert [d.replica for d in Router(ranker).route(list(range(40)))] == [ReplicaId("a")]
        assert ranker.restarts_detected == 1
        feeder.apply("a", batch(stored(5), ts=2))  # feeder adopts the restored namespace
        assert feeder.stats()["unknown_replica_batches"] == 0
        assert _keys(feeder, "a") == {5}
