"""The Redis fault model: no silent over-report after any fault Redis itself can have.

Each test runs its own redis-server (tests/redis_servers.py) and feeds the same
events to a RedisPrefixIndex and to an in-memory PrefixIndex. After the fault
and recovery, every ``(group, key, medium)`` the Redis index reports for a
replica must be one the in-memory index holds (an under-report is allowed: a
re-sync drops entries; an over-report sends requests to replicas for blocks
they evicted), and the fault must be typed or counted:

* restart from an older RDB snapshot, from an older AOF, failover to a replica
  that missed writes (``resets_after_restart``, ``restarts_detected``);
* a full server under ``noeviction`` (``IndexFullError``; a batch given up makes
  the next one re-sync the replica: ``resyncs``), and a server that does not answer
  past the client's timeout (paused) likewise;
* structure keys deleted or evicted (``resets_after_missing_keys``);
* churn of clears, re-registrations and removals: holder fields, LRU members
  and bytes stay within the bound docs/fleet.md gives in ``max_entries``.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from redis_servers import RedisServer, redis_module, redis_server

from prefixkey import Hasher, PrefixKeyError
from prefixkey.events import AllBlocksCleared, BlockRemoved, BlockStored, EventBatch, EventHash
from prefixkey.fleet import (
    IndexFullError,
    IndexUnavailableError,
    PrefixIndex,
    RedisPrefixIndex,
    ReplicaScheme,
    Router,
    RunsQuery,
    UnknownReplicaError,
)

H16 = Hasher(block_size=16, python_hash_seed="0")
SCHEME = ReplicaScheme(H16)
NS = "{prefixkey}"
T = TypeVar("T")


def stored(*keys: EventHash, medium: str | None = None, group: int | None = None) -> BlockStored:
    return BlockStored(tuple(keys), None, (), 16, medium=medium, group_idx=group)


def removed(*keys: EventHash, medium: str | None = None) -> BlockRemoved:
    return BlockRemoved(tuple(keys), medium=medium)


class Twin:
    """A Redis index and an in-memory one fed the same events."""

    def __init__(self, url: str, **kw: Any) -> None:
        self.redis = RedisPrefixIndex.from_url(url, timeout=2.0, **kw)
        self.memory = PrefixIndex(max_entries=kw.get("max_entries", 10_000_000))
        self.names: list[str] = []
        self.keys: set[tuple[int, EventHash]] = set()  # every (group, key) stored
        self.ts = 0.0

    def register(self, name: str, scheme: ReplicaScheme = SCHEME) -> None:
        retrying(lambda: self.redis.register(name, scheme))
        self.memory.register(name, scheme)
        if name not in self.names:
            self.names.append(name)

    def apply(self, name: str, *events: Any) -> None:
        self.ts += 1
        b = EventBatch(self.ts, events)
        self.keys |= {(e.group_idx or 0, k) for e in events if isinstance(e, BlockStored)
                      for k in e.block_hashes}
        self.memory.apply(name, b)
        retrying(lambda: self.redis.apply(name, b))

    def held(self, index: Any, name: str) -> set[tuple[int, EventHash, str]]:
        try:
            return {(g, k, m) for g, k, media in index.entries(name) for m in media}
        except UnknownReplicaError:  # its registration was evicted too: it holds nothing
            return set()

    def ranked(self, index: Any) -> dict[str, set[tuple[int, EventHash, str]]]:
        """Per replica, the ``(group, key, medium)`` a ranking finds it holding: each
        stored key asked alone (a holder token the LRUs no longer name shows here)."""
        names = {bit: name for name, bit in index.medium_bits().items()}
        every = sum(names)
        out: dict[str, set[tuple[int, EventHash, str]]] = {n: set() for n in self.names}
        by_scheme: dict[Any, list[Any]] = {}
        for rid, scheme in index.replicas().items():
            by_scheme.setdefault(scheme, []).append(rid)
        queries = []
        for scheme, rids in by_scheme.items():
            for g, k in sorted(self.keys, key=repr):
                if isinstance(k, bytes) is (scheme.publishes == "int"):
                    continue
                groups = tuple((k,) if x == g else () for x in range(g + 1))
                queries.append(RunsQuery(scheme, tuple(rids), groups))
        for q, answer in zip(queries, index.leading_runs(queries, every), strict=True):
            g = len(q.groups) - 1
            key = q.groups[g][0]
            for rid, runs in answer.by_replica().items():
                if isinstance(runs, ReplicaScheme) or not runs[g]:
                    continue
                (mask, _), = runs[g]
                out.setdefault(rid.name, set()).update(
                    (g, key, name) for bit, name in names.items() if mask & bit)
        return out

    def over_reported(self) -> dict[str, set[tuple[int, EventHash, str]]]:
        """Per replica, what Redis reports (read out or ranked) that it does not hold."""
        out = {}
        ranked = self.ranked(self.redis)
        for name in self.names:
            truth = self.held(self.memory, name)
            extra = (self.held(self.redis, name) | ranked.get(name, set())) - truth
            if extra:
                out[name] = extra
        return out

    def routes_no_better(self, tokens: list[int]) -> None:
        """Redis never promises a longer hit than the replica truly holds."""
        truth = {d.replica: d.hit_tokens for d in Router(self.memory).route(tokens)}
        for d in Router(self.redis).route(tokens):
            assert d.hit_tokens <= truth.get(d.replica, 0), d


def retrying(fn: Callable[[], T]) -> T:
    """``fn()``, again after IndexUnavailableError (a client's first call after a
    restart finds its connection closed): a few times, as the subscriber does."""
    for _ in range(5):
        try:
            return fn()
        except IndexUnavailableError:
            time.sleep(0.05)
    return fn()


def fault_stats(index: RedisPrefixIndex) -> dict[str, int]:
    stats = cast("Mapping[str, int]", index.stats())  # read by name
    return {k: stats.get(k, 0) for k in ("resets_after_restart", "resets_after_missing_keys",
                                         "resyncs")}


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with redis_server() as s:
        yield s


def test_restart_from_an_older_rdb_snapshot(server: RedisServer) -> None:
    """The issue's case: store 111, SAVE, remove 111, store 222, kill -9, restart, store 333."""
    twin = Twin(server.url)
    twin.register("a")
    twin.apply("a", stored(111))
    redis_module().Redis.from_url(server.url).save()
    twin.apply("a", removed(111))
    twin.apply("a", stored(222))
    server.restart()  # SIGKILL, then the server loads the snapshot: 111 held, 222 not
    # a process that only reads the counters sees the reset too (not the snapshot's size)
    reader = RedisPrefixIndex.from_url(server.url, timeout=2.0)
    counted = retrying(reader.stats)
    assert (counted["size"], counted.get("resets_after_restart", 0)) == (0, 1)
    assert len(reader) == reader.replica_size("a") == 0
    twin.apply("a", stored(333))
    assert twin.over_reported() == {}
    assert twin.held(twin.redis, "a") == {(0, 333, "GPU")}  # 222 lost: an under-report
    assert twin.redis.restarts_detected == 1
    assert fault_stats(twin.redis)["resets_after_restart"] == 1
    # a router that only ranks sees the reset too
    ranker = RedisPrefixIndex.from_url(server.url, timeout=2.0)
    assert {k for _, k, _ in ranker.entries("a")} == {333}


def test_restart_from_an_older_aof(tmp_path: Path) -> None:
    with redis_server("--appendonly", "yes", "--appendfsync", "always") as server:
        twin = Twin(server.url)
        for name in ("a", "b"):
            twin.register(name)
        twin.apply("a", stored(*range(1, 50)))
        twin.apply("b", stored(*range(1, 20), medium="CPU"))
        old = tmp_path / "aof"
        shutil.copytree(Path(server.dir) / "appendonlydir", old)
        twin.apply("a", removed(*range(10, 50)))
        twin.apply("b", AllBlocksCleared())
        server.kill()
        shutil.rmtree(Path(server.dir) / "appendonlydir")
        shutil.copytree(old, Path(server.dir) / "appendonlydir")
        server.start()  # the older AOF: a holds 10..49 again, b its CPU blocks
        twin.apply("a", stored(7, 8, 9))
        assert twin.over_reported() == {}
        twin.routes_no_better(list(range(16 * 12)))
        assert fault_stats(twin.redis)["resets_after_restart"] == 1


def test_failover_to_a_replica_that_missed_writes() -> None:
    with redis_server() as primary, redis_server() as replica:
        twin = Twin(primary.url)
        twin.register("a")
        twin.apply("a", stored(*range(1, 30)))
        follower = redis_module().Redis.from_url(replica.url)
        follower.replicaof("127.0.0.1", primary.port)
        deadline = time.monotonic() + 20
        while follower.info("replication").get("master_link_status") != "up" or \
                follower.dbsize() < redis_module().Redis.from_url(primary.url).dbsize():
            assert time.monotonic() < deadline, "the replica never synced"
            time.sleep(0.05)
        follower.replicaof("NO", "ONE")  # the link breaks: writes after it are lost...
        twin.apply("a", removed(*range(1, 30)))  # ...as an async replica loses its last ones
        primary.kill()
        promoted = Twin(replica.url)  # the routers now talk to the promoted replica
        promoted.memory, promoted.names = twin.memory, twin.names
        promoted.register("a")
        promoted.apply("a", stored(100))
        assert promoted.over_reported() == {}
        assert fault_stats(promoted.redis)["resets_after_restart"] == 1


def _full(client: Any) -> None:
    """The server out of memory under noeviction: every write that needs memory refused."""
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)
    with pytest.raises(redis_module().exceptions.OutOfMemoryError):
        client.set("junk", b"x")


def test_noeviction_full_is_typed_retried_then_resynced(server: RedisServer) -> None:
    twin = Twin(server.url)
    twin.register("a")
    twin.register("b")
    twin.apply("a", stored(*range(1, 112)))
    twin.apply("b", stored(*range(1, 10)))
    admin = redis_module().Redis.from_url(server.url)
    _full(admin)
    gone = EventBatch(100.0, (removed(*range(1, 112)),))
    twin.memory.apply("a", gone)
    with pytest.raises(IndexFullError) as info:
        twin.redis.apply("a", gone)
    assert isinstance(info.value, IndexUnavailableError) and info.value.field == "index"
    # a retry while still full fails the same way, typed; rankings keep answering
    with pytest.raises(IndexFullError):
        twin.redis.apply("a", gone)
    assert Router(twin.redis).route(list(range(64)))
    assert twin.redis.stats()["size"] == 111 + 9  # read-outs too (nothing written)
    # the subscriber gives the batch up; memory is freed; the next batch re-syncs a
    admin.config_set("maxmemory", 0)
    twin.apply("a", stored(500))
    assert twin.over_reported() == {}
    assert twin.held(twin.redis, "a") == {(0, 500, "GPU")}
    assert fault_stats(twin.redis)["resyncs"] == 1
    assert twin.held(twin.redis, "b") == twin.held(twin.memory, "b")  # b untouched


def test_noeviction_full_then_the_same_batch_retried_applies_once(server: RedisServer) -> None:
    twin = Twin(server.url)
    twin.register("a")
    twin.apply("a", stored(*range(1, 112)))
    admin = redis_module().Redis.from_url(server.url)
    _full(admin)
    gone = EventBatch(100.0, (removed(*range(1, 112)), stored(7)))
    twin.memory.apply("a", gone)
    with pytest.raises(IndexFullError):
        twin.redis.apply("a", gone)
    admin.config_set("maxmemory", 0)
    twin.redis.apply("a", gone)  # what the subscriber's retry does: no re-sync needed
    assert twin.held(twin.redis, "a") == twin.held(twin.memory, "a") == {(0, 7, "GPU")}
    assert fault_stats(twin.redis)["resyncs"] == 0



def test_an_outage_longer_than_the_retries_then_the_replica_resyncs(server: RedisServer) -> None:
    """A server that does not answer (paused) past the client's timeout: the batch removing
    keys is given up (typed); the replica's next batch clears it first, so the removed
    keys are not reported held whether the paused call ran or not."""
    twin = Twin(server.url)
    twin.register("a")
    twin.register("b")
    twin.apply("a", stored(*range(1, 40)))
    twin.apply("b", stored(*range(1, 10)))
    gone = EventBatch(100.0, (removed(*range(1, 40)),))
    twin.memory.apply("a", gone)
    admin = redis_module().Redis.from_url(server.url)
    admin.execute_command("CLIENT", "PAUSE", 4000, "WRITE")  # past the 2 s timeout
    with pytest.raises(IndexUnavailableError):
        twin.redis.apply("a", gone)
    admin.execute_command("CLIENT", "UNPAUSE")
    twin.apply("a", stored(500))  # another batch: the one that failed was given up
    assert twin.over_reported() == {}
    assert twin.held(twin.redis, "a") == {(0, 500, "GPU")}
    assert fault_stats(twin.redis)["resyncs"] == 1
    assert twin.held(twin.redis, "b") == twin.held(twin.memory, "b")  # b untouched

def _setup(twin: Twin) -> None:
    twin.register("a")
    twin.register("b", ReplicaScheme(H16, publishes="bytes"))
    twin.register("c")
    twin.apply("a", stored(*range(1, 20)), stored(*range(100, 120), medium="CPU"))
    twin.apply("a", AllBlocksCleared(), stored(*range(1, 10)), stored(5, 6, group=1))
    twin.apply("b", stored(*(bytes([i]) * 32 for i in range(1, 9))))
    twin.apply("c", stored(*range(1, 15), group=1), stored(*range(1, 12)))
    twin.register("c", ReplicaScheme(Hasher(block_size=16, vllm_version="0.30.0")))
    twin.apply("c", stored(*range(1, 5)))
    for n in range(9):  # keys 1..6 held by 10 replicas or more: interned holder sets
        twin.register(f"e{n}")
        twin.apply(f"e{n}", stored(*range(1, 7)))


_STRUCTURE = ["epoch", "run", "reg", "slot", "gen", "media", "nextslot"]
_DATA = ["h:0", "h:1", "sets", "refs", "groups", "dead", "stats", "inflight", "lastts",
         "s:*:lru", "s:*:clock"]


@pytest.mark.parametrize("key", _STRUCTURE + _DATA)
def test_deleting_any_namespace_key_never_over_reports(server: RedisServer, key: str) -> None:
    twin = Twin(server.url)
    _setup(twin)
    admin = redis_module().Redis.from_url(server.url)
    doomed = [k for k in admin.keys(f"{NS}:{key}")]
    assert doomed or key in ("dead",), f"{key} does not exist in this setup"
    if doomed:
        admin.delete(*doomed)
    # what comes next: a medium first seen since (CPU), removes, a new replica (a new
    # slot), stores in another group, a clear
    twin.apply("a", stored(*range(200, 230), medium="CPU"), removed(*range(1, 5)))
    twin.apply("a", stored(*range(1, 3)))
    twin.register("d")
    twin.apply("d", stored(*range(1, 40)))
    twin.apply("c", removed(1, 2), stored(*range(40, 60), group=1))
    twin.apply("b", AllBlocksCleared(), stored(b"\x09" * 32))
    assert twin.over_reported() == {}
    twin.routes_no_better(list(range(16 * 40)))
    stats = fault_stats(twin.redis)
    assert stats["resets_after_missing_keys"] == (1 if key in _STRUCTURE[:1] + _STRUCTURE[2:]
                                                  else 0)
    if key == "run":  # the server's run id lost: treated as a restart
        assert stats["resets_after_restart"] == 1


def test_allkeys_lru_eviction_never_over_reports(server: RedisServer) -> None:
    """Whatever the server evicts, typed failures at most and no over-report after."""
    twin = Twin(server.url)
    _setup(twin)
    admin = redis_module().Redis.from_url(server.url)
    admin.config_set("maxmemory-policy", "allkeys-lru")
    admin.config_set("maxmemory", int(admin.info("memory")["used_memory"]) + 200_000)
    refused = 0
    for n in range(100):
        admin.set(f"junk:{n}", b"x" * 20_000)  # evicts: junk and namespace keys alike
        try:  # a batch given up (typed) leaves the replica to be cleared by its next one
            twin.apply("a", removed(n + 1), stored(n + 300))
            if n % 10 == 0:
                twin.register(f"r{n}")
        except PrefixKeyError:
            refused += 1
    assert refused < 100
    admin.config_set("maxmemory", 0)
    twin.apply("a", stored(*range(1, 30)))
    assert twin.over_reported() == {}
    twin.routes_no_better(list(range(16 * 30)))


def _fields(admin: Any) -> int:
    return sum(int(admin.hlen(k)) for k in admin.keys(f"{NS}:h:*"))


def _lru_members(admin: Any) -> int:
    """Entries named by every slot's LRU, live and dead (a dead one lists keys to reap)."""
    return sum(int(admin.zcard(k)) for k in admin.keys(f"{NS}:s:*:lru"))


def _namespace_bytes(admin: Any) -> int:
    return sum(int(admin.memory_usage(k) or 0) for k in admin.keys(f"{NS}:*"))


#: docs/fleet.md, "Memory": what a namespace may hold per entry its replicas may hold
#: (174 bytes measured at 1M entries, benchmarks/INDEX_BACKENDS.md), with dead entries
#: at most as many as live ones; and the few small keys every namespace has.
BYTES_PER_ENTRY = 256
NAMESPACE_BYTES = 16_384


@pytest.mark.parametrize("churn", ["clear", "reregister", "remove"])
def test_churn_keeps_the_namespace_within_its_bound(server: RedisServer, churn: str) -> None:
    """Clears, re-registrations and removals: after every batch, holder fields and the
    LRUs' members stay within 2 * max_entries per replica, bytes within the documented
    bound (before, dead fields grew with every cycle: 460k after 5,000 batches)."""
    bound, names = 500, ("a", "b")
    twin = Twin(server.url, max_entries=bound, sweep_every=0)
    for name in names:
        twin.register(name)
    admin = redis_module().Redis.from_url(server.url)
    other = ReplicaScheme(Hasher(block_size=16, vllm_version="0.30.0"))
    most = {"fields": 0, "lru members": 0, "bytes": 0}

    def sample() -> None:
        for what, n in (("fields", _fields(admin)), ("lru members", _lru_members(admin)),
                        ("bytes", _namespace_bytes(admin))):
            most[what] = max(most[what], n)

    for cycle in range(10):  # ranking every key stored after (over_reported) stays quick
        for r, name in enumerate(names):  # distinct keys per replica: no field is shared
            base = (2 * cycle + r) * 10_000
            for step in range(5):  # 5 batches of 100 new keys: the replica reaches its bound
                twin.apply(name, stored(*range(base + 100 * step, base + 100 * step + 100)))
                sample()
            if churn == "clear":
                twin.apply(name, AllBlocksCleared())
            elif churn == "reregister":
                twin.register(name, other if cycle % 2 == 0 else SCHEME)
            else:  # the replica goes; it (or its successor) comes back under the same name
                retrying(functools.partial(twin.redis.remove_replica, name))
                twin.memory.remove_replica(name)
                twin.register(name)
            sample()
    entries = len(names) * bound
    assert most["fields"] <= 2 * entries, most
    assert most["lru members"] <= 2 * entries, most
    assert most["bytes"] <= 2 * entries * BYTES_PER_ENTRY + NAMESPACE_BYTES, most
    assert twin.over_reported() == {}


def test_one_big_clear_is_reaped_by_later_applies(server: RedisServer) -> None:
    twin = Twin(server.url, sweep_every=0)
    twin.register("a")
    twin.apply("a", stored(*range(20_000)))
    twin.apply("a", AllBlocksCleared())
    admin = redis_module().Redis.from_url(server.url)
    for n in range(320):  # small batches: each reaps 64 + 2 per block
        twin.apply("a", stored(10**6 + n))
    assert _fields(admin) == 320
    assert twin.held(twin.redis, "a") == twin.held(twin.memory, "a")
