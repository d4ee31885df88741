"""PrefixKeyRouter under the real Ray Serve (ray[serve] 2.60.0), end to end on loopback.

One local Ray cluster for the module (2 CPUs, deployments asking none), one
Serve application per index kind: three fake vLLM 0.29 replicas
(tests/gateways/ray_fleet.py) publishing KV events over ZMQ with replay
sockets, behind an ingress that calls them through a deployment handle whose
request router is ``PrefixKeyRouter``, configured as a user configures it. The
router lives in the ingress replica's process; the test reads its counters
through the ingress. Every wait polls with a bound; no assertion is timed.

Skipped with the command that installs Ray when it is absent; under ``CI``
that is a failure. The Redis test starts its own server (tests/redis_servers.py).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    import ray
    from ray import serve
    from ray.serve.config import RequestRouterConfig
    from ray.serve.handle import DeploymentHandle
    from ray_fleet import PORT_BASE, DocReplica, FakeVLLM, Ingress

    from prefixkey.gateways.ray import PrefixKeyRouter
except ImportError as exc:  # each test skips (fails under CI) through the cluster fixture
    _MISSING: str | None = f"needs Ray Serve and pyzmq: pip install -e '.[ray]' ({exc})"
else:
    _MISSING = None
from redis_servers import RedisServer, missing

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TIMEOUT = 60.0
#: The fake replicas' KV-event ports: PUB at base + rank, replay 10 above (tests' range
#: 18800-18849, or PREFIXKEY_RAY_PORT_BASE's 50; each application its own base).
MEMORY_PORTS, REDIS_PORTS = PORT_BASE, PORT_BASE + 20


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    """Listed first where used: without a server the test skips before Ray starts."""
    server = RedisServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    if _MISSING is not None:
        missing(_MISSING)
    # The replicas import ray_fleet and fake_publisher (and this checkout's prefixkey) by name.
    path = [str(HERE), str(HERE.parent), str(ROOT),
            *filter(None, [os.environ.get("PYTHONPATH")])]
    os.environ["PYTHONPATH"] = os.pathsep.join(path)
    # Ray's memory monitor kills workers when the machine (shared with other jobs) runs
    # low; these replicas hold a few MB each: a kill would be the neighbours' doing.
    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    # A new local cluster picks free ports for its GCS and services (never 6379).
    for attempt in range(3):  # Ray gives its raylet a fixed 30 s to register: a busy
        try:                  # machine can miss it once
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.WARNING, object_store_memory=80 * 1024 * 1024)
            break
        except Exception as exc:
            if "timed out during startup" not in str(exc) or attempt == 2:
                raise
            stop: Any = ray.shutdown  # untyped in Ray 2.60
            stop()
    serve.start(proxy_location="Disabled")
    try:
        yield
    finally:
        shutdowns: list[Any] = [serve.shutdown, ray.shutdown]  # untyped in Ray 2.60
        for shutdown in shutdowns:
            shutdown()


def application(port_base: int, **router_kwargs: Any) -> Any:
    """The Serve application, as its users write it: the router is one config field."""
    deployment: Any = serve.deployment  # its overloads do not type a class given directly
    router_config: Any = RequestRouterConfig  # pydantic: typed as taking dicts
    llm = deployment(
        FakeVLLM, name="llm", num_replicas=3, ray_actor_options={"num_cpus": 0},
        request_router_config=router_config(
            request_router_class=PrefixKeyRouter,
            request_router_kwargs={"vllm_version": "0.29.0", **router_kwargs},
            request_routing_stats_period_s=0.2,
        ),
    ).bind(port_base)
    return deployment(Ingress, ray_actor_options={"num_cpus": 0}).bind(llm)


def until(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Fleet:
    """A running application: calls, the router's view, the replicas' handle."""

    def __init__(self, name: str, port_base: int, *, app: Any = None,
                 **router_kwargs: Any) -> None:
        self.name = name
        self.ingress: DeploymentHandle[Any] = serve.run(
            app if app is not None else application(port_base, **router_kwargs), name=name,
            route_prefix=None)
        self.llm = serve.get_deployment_handle("llm", app_name=name)
        self.names: set[str] = set()

    def call(self, prompt: list[int]) -> str:
        answer: dict[str, Any] = self.ingress.remote({"prompt": prompt}).result(
            timeout_s=TIMEOUT)
        return str(answer["replica"])

    def router(self) -> dict[str, Any]:
        stats: list[dict[str, Any]] = self.ingress.routers.remote().result(timeout_s=TIMEOUT)
        (mine,) = [s for s in stats if "llm" in s["deployment"]]
        return mine

    def replicas(self) -> dict[str, int]:
        """Each live replica's name and batch count (asked until all three answered)."""
        seen: dict[str, int] = {}
        deadline = time.monotonic() + TIMEOUT
        while len(seen) < 3:
            assert time.monotonic() < deadline, f"only {seen} answered"
            name, seq = self.llm.published.remote().result(timeout_s=TIMEOUT)
            seen[name] = seq
        return seen

    def wait_subscribed(self) -> None:
        """Every replica has a feed in the router (its routing stats reached the router)."""
        self.call([1, 2, 3])  # builds the ingress's handle, and with it the router
        until("three feeds", lambda: len(self.router()["feeds"]) == 3)

    def wait_applied(self, name: str, batches: int) -> None:
        """The router has applied ``batches`` of replica ``name``'s batches."""
        until(f"{batches} batches of {name}",
              lambda: self.router()["feeds"].get(name, {}).get("batches", 0) >= batches)

    def turn(self, prompt: list[int]) -> str:
        """One call; then wait until its events reached the router (as a next turn would)."""
        name = self.call(prompt)
        self.wait_applied(name, self.batches(name))
        return name

    def batches(self, name: str) -> int:
        for _ in range(30):
            got, seq = self.llm.published.remote().result(timeout_s=TIMEOUT)
            if got == name:
                return int(seq)
        raise AssertionError(f"replica {name} never answered")


def conversation(i: int, turns: int) -> list[list[int]]:
    """A chat as a router sees it: each turn's prompt extends the previous turn's."""
    prompt = [10_000 * (i + 1) + t for t in range(40)]  # system + first user message
    out = [list(prompt)]
    for t in range(1, turns):
        prompt += [20_000 + 100 * t + k for k in range(8)]     # the model's answer
        prompt += [30_000 + 100 * t + k for k in range(24)]    # the next user message
        out.append(list(prompt))
    return out


@pytest.fixture(scope="module")
def memory_fleet(cluster: None) -> Iterator[Fleet]:
    fleet = Fleet("prefixkey-memory", MEMORY_PORTS)
    fleet.wait_subscribed()
    yield fleet
    serve.delete("prefixkey-memory")


def test_multi_turn_conversations_land_on_their_prefix_holders(memory_fleet: Fleet) -> None:
    fleet = memory_fleet
    chats = [conversation(i, 4) for i in range(3)]
    holders = [fleet.turn(chat[0]) for chat in chats]
    before = fleet.router()["counters"]
    for t in range(1, 4):
        for chat, holder in zip(chats, holders, strict=True):
            assert fleet.turn(chat[t]) == holder
    after = fleet.router()["counters"]
    assert after["routed"] - before["routed"] == 9
    assert after["hits"] - before["hits"] == 9  # every later turn hit its prefix
    assert after["unkeyed"] == 0 and after["index_unavailable"] == 0
    # each ranked call was counted in the load when Ray routed it (unless Ray reported it
    # completed first), and released when Ray reported it completed: nothing leaks
    assert (after["counted"] + after["completed_first"]
            - before["counted"] - before["completed_first"]) == 9
    seen: list[dict[str, Any]] = []

    def released() -> bool:
        seen[:] = [fleet.router()]
        return bool(seen[0]["counters"]["released"] == seen[0]["counters"]["counted"])
    try:
        until("every call released", released)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {seen}") from None
    assert all(n == 0 and t == 0.0 for n, t in seen[0]["backlog"].values()), seen


def test_an_event_gap_is_replayed_before_it_costs_a_miss(memory_fleet: Fleet) -> None:
    fleet = memory_fleet
    chat = conversation(7, 3)
    holder = fleet.turn(chat[0])
    # The holder's next batch is lost on PUB; the one after reveals the gap, and the
    # router's feed fetches the lost one from the replica's replay socket.
    for _ in range(30):
        if fleet.llm.skip_events.remote(1, holder).result(timeout_s=TIMEOUT) == holder:
            break
    else:
        raise AssertionError(f"{holder} never answered")
    assert fleet.call(chat[1]) == holder           # its blocks never reached the router
    other = conversation(8, 1)[0]
    gaps_before = fleet.router()["feeds"][holder].get("gaps", 0)
    served = [fleet.call(other)]
    while served[-1] != holder:  # a batch after the lost one, from the same replica
        served.append(fleet.call(conversation(9 + len(served), 1)[0]))
    fleet.wait_applied(holder, fleet.batches(holder))
    feed = fleet.router()["feeds"][holder]
    assert feed["gaps"] == gaps_before + 1 and feed["lost_batches"] == 0
    assert fleet.turn(chat[2]) == holder
    # Turn 3 hit turn 2's blocks, which reached the router only through the replay.
    assert fleet.router()["last_hit_tokens"] == len(chat[1]) // 16 * 16


def test_a_dead_replica_is_routed_around(memory_fleet: Fleet) -> None:
    fleet = memory_fleet
    chat = conversation(20, 4)
    holder = fleet.turn(chat[0])
    assert fleet.turn(chat[1]) == holder
    for _ in range(30):
        name, actor = fleet.llm.actor_name.remote().result(timeout_s=TIMEOUT)
        if name == holder:
            break
    else:
        raise AssertionError(f"{holder} never answered")
    ray.kill(ray.get_actor(actor, namespace="serve"), no_restart=True)
    # The next turn is served (by another replica: a miss); the one after stays there.
    successor = fleet.turn(chat[2])
    assert successor != holder
    assert fleet.turn(chat[3]) == successor
    until("the dead replica's feed closed", lambda: holder not in fleet.router()["feeds"])


def test_a_redis_restart_costs_at_most_a_miss(redis: RedisServer, cluster: None) -> None:
    # registry_max_age 0: a replica's first batch is routed on as soon as it is applied.
    fleet = Fleet("prefixkey-redis", REDIS_PORTS, redis_url=redis.url, registry_max_age=0.0)
    try:
        fleet.wait_subscribed()
        chat = conversation(30, 4)
        holder = fleet.turn(chat[0])
        assert fleet.turn(chat[1]) == holder
        counters = fleet.router()["counters"]
        assert counters["routed"] >= 2 and counters["hits"] >= 1, fleet.router()
        redis.restart()  # no persistence: every entry is gone
        # At most one miss: the next turn goes wherever the fallback sends it, and
        # its blocks' events rebuild the index there; the turn after follows them.
        placed = fleet.turn(chat[2])
        assert fleet.turn(chat[3]) == placed
        if placed != holder:  # the new holder published the whole prefix: a known hit
            assert fleet.router()["last_hit_tokens"] == len(chat[2]) // 16 * 16
    finally:
        serve.delete("prefixkey-redis")


def test_the_config_of_docs_ray_md_routes_by_prefix(cluster: None) -> None:
    """docs/ray.md's snippet, as written, given a vLLM deployment and an ingress."""
    page = (ROOT / "docs" / "ray.md").read_text(encoding="utf-8")
    (snippet,) = [s for s in re.findall(r"```python\n(.*?)```", page, re.DOTALL)
                  if s.startswith("# given: VLLMReplica, Ingress")]
    deployment: Any = serve.deployment
    names: dict[str, Any] = {
        "__name__": "__snippet__",
        "VLLMReplica": deployment(DocReplica, name="llm", ray_actor_options={"num_cpus": 0}),
        "Ingress": deployment(Ingress, ray_actor_options={"num_cpus": 0}),
    }
    exec(compile(snippet, "docs/ray.md", "exec"), names)
    fleet = Fleet("prefixkey-doc", DocReplica.PORTS, app=names["app"])
    try:
        fleet.wait_subscribed()  # the default stats period (10 s): replicas appear within it
        chat = conversation(40, 3)
        holder = fleet.turn(chat[0])
        assert [fleet.turn(chat[1]), fleet.turn(chat[2])] == [holder, holder]
        assert fleet.router()["last_hit_tokens"] == len(chat[1]) // 16 * 16
    finally:
        serve.delete("prefixkey-doc")


class _Standin:
    """What choose_replicas reads of a RunningReplica (no cluster needed)."""

    def __init__(self, name: str) -> None:
        from ray.serve._private.common import DeploymentID, ReplicaID

        self.replica_id = ReplicaID(name, DeploymentID("llm", "unit"))
        self.max_ongoing_requests = 8
        self.routing_stats: dict[str, Any] = {}


def _bare_router(**kwargs: Any) -> Any:
    """A PrefixKeyRouter built as Ray Serve builds one, outside any cluster."""
    if _MISSING is not None:
        missing(_MISSING)
    from ray.serve._private.common import DeploymentHandleSource, DeploymentID

    router = PrefixKeyRouter(deployment_id=DeploymentID(name="llm", app_name="unit"),
                             handle_source=DeploymentHandleSource.UNKNOWN,
                             use_replica_queue_len_cache=True, get_curr_time_s=lambda: 0.0)
    router.initialize_state(**kwargs)
    return router


MODEL = str(ROOT / "tests" / "render" / "models" / "gpt2_bytelevel")


def test_a_release_the_renderer_does_not_reproduce_is_refused_when_the_router_is_built() -> None:
    from prefixkey.render import RenderUnsupportedError

    with pytest.raises(RenderUnsupportedError, match=re.escape("vLLM 0.28.0")):
        _bare_router(render={"model": MODEL, "vllm_version": "0.28.0"})


def test_a_chat_body_is_rendered_and_keyed() -> None:
    import asyncio

    # vLLM 0.29.0: the release Ray Serve LLM 2.60 runs.
    router = _bare_router(render={"model": MODEL, "vllm_version": "0.29.0"})
    from ray.serve._private.request_router.common import PendingRequest

    replicas = [_Standin(n) for n in ("a", "b")]
    for r in replicas:
        router.replica_queue_len_cache.update(r.replica_id, 0)
    meta: Any = type("Meta", (), {"request_id": "r", "multiplexed_model_id": "",
                                  "internal_request_id": "r"})()

    async def choose(body: dict[str, Any]) -> Any:
        pending = PendingRequest(args=[body], kwargs={}, metadata=meta)
        return await router.choose_replicas(replicas, pending)

    order = asyncio.run(choose({"messages": [{"role": "user", "content": "Hello there"}]}))
    assert len(order) == 2 and {g[0].replica_id.unique_id for g in order} == {"a", "b"}
    assert router.counters["routed"] == 1 and router.counters["unkeyed"] == 0
    # A body vLLM answers with a 400 itself: routed by Ray's default order, counted.
    fallback = asyncio.run(choose({"messages": "not a list"}))
    assert isinstance(fallback, list)  # Ray's order over the replicas Ray told it of
    assert router.counters["refused"] == 1 and router.counters["routed"] == 1


def test_where_ray_sent_a_call_counts_as_stored_there() -> None:
    """Ray reports the replica it chose (on_request_routed); the Router's cache pressure,
    which spreads what only shares a system prompt, counts that send."""
    import asyncio

    router = _bare_router()
    from ray.serve._private.request_router.common import PendingRequest

    replicas = [_Standin(n) for n in ("a", "b")]
    for r in replicas:
        router.replica_queue_len_cache.update(r.replica_id, 0)

    def pending(request_id: str) -> Any:
        meta: Any = type("Meta", (), {"request_id": request_id, "multiplexed_model_id": "",
                                      "internal_request_id": request_id})()
        return PendingRequest(args=[{"prompt": list(range(64))}], kwargs={}, metadata=meta)

    async def scenario() -> None:
        first = pending("r1")
        order = await router.choose_replicas(replicas, first)
        chosen = order[-1][0]  # Ray may take a later rank than the first
        router.on_request_routed(first, chosen.replica_id, None)
        assert router._router.pressure(chosen.replica_id.unique_id) == 0.0  # told at the next
        await router.choose_replicas(replicas, pending("r2"))
        assert router._router.pressure(chosen.replica_id.unique_id) == 1.0
        other = next(r for r in replicas if r is not chosen)
        assert router._router.pressure(other.replica_id.unique_id) == 0.0

    asyncio.run(scenario())


def test_the_kv_cache_size_a_replica_advertises_is_the_cost_models_capacity() -> None:
    """``kv_cache_size_tokens`` in a replica's routing stats reaches the Router (absolute
    pressure: Ray's queue counts are its load); a malformed one is counted and ignored, and
    a replica that leaves takes its capacity with it."""
    import asyncio

    router = _bare_router()
    from ray.serve._private.request_router.common import PendingRequest

    replicas = [_Standin(n) for n in ("a", "b", "c")]
    replicas[0].routing_stats = {"kv_cache_size_tokens": 1000}
    replicas[1].routing_stats = {"kv_cache_size_tokens": 3000}
    replicas[2].routing_stats = {"kv_cache_size_tokens": "3000"}  # a label's text: refused
    router._sync_feeds(replicas)
    assert router.counters["bad_metadata"] == 1
    for r in replicas:
        router.replica_queue_len_cache.update(r.replica_id, 0)
    meta: Any = type("Meta", (), {"request_id": "r1", "multiplexed_model_id": "",
                                  "internal_request_id": "r1"})()

    async def scenario() -> None:
        pending = PendingRequest(args=[{"prompt": list(range(600))}], kwargs={}, metadata=meta)
        await router.choose_replicas(replicas[:1], pending)  # only a: it goes there
        router.on_request_routed(pending, replicas[0].replica_id, None)
        await router.choose_replicas(replicas[:2], pending)  # the send is counted here
    asyncio.run(scenario())
    # 600 tokens on a, of a 1,000-token cache; c counts the mean given (2,000)
    assert router._router.pressure("a") == pytest.approx(0.6)
    router._sync_feeds(replicas[1:])  # a left: the fleet's capacity is b's and c's now
    assert "a" not in {rid.name for rid in router._router.replicas}
    assert router._router._pressure._capacity_sum == 3000.0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
