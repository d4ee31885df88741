"""The load PrefixKeyRouter gives its Router over a call's life, driven as Ray Serve drives it.

No cluster: the router is built as Ray Serve builds it and called on an
asyncio loop (as benchmarks/bench_gateway_ray.py does), with Ray's own hooks
called in Ray 2.60's order (``ray/serve/_private/router.py``): a send is
``on_send_request`` (Ray's count of the replica's ongoing requests + 1), then
``on_request_routed`` once the replica accepted; every outcome (an answer, a
stream's end, a failure, a cancellation) is ``on_request_completed``, then
Ray's count - 1. The router counts what it sent in prefill tokens (a
PrefillBacklog) and adds the ongoing requests Ray counts beyond its own at the
Router's running mean prefill.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="needs Ray Serve: pip install -e '.[ray]'")

from ray.serve._private.common import (  # noqa: E402
    DeploymentHandleSource,
    DeploymentID,
    ReplicaID,
)
from ray_requests import FakeReplica, pending_request  # noqa: E402

from prefixkey.gateways.ray import PrefixKeyRouter  # noqa: E402

DEPLOYMENT = DeploymentID(name="llm", app_name="load")


def _pending(call: str, tokens: int) -> Any:
    return pending_request(call, [1000 + (hash(call) % 1000) * 100 + i for i in range(tokens)])


class _Ray:
    """Ray Serve's side of one handle: its router, its replicas, its queue-length cache."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()  # one loop, as a handle's router has
        self.router = PrefixKeyRouter(
            deployment_id=DEPLOYMENT, handle_source=DeploymentHandleSource.UNKNOWN,
            use_replica_queue_len_cache=True, get_curr_time_s=lambda: 0.0)
        self.router.initialize_state(vllm_version="0.29.0")
        self.replicas = [FakeReplica(ReplicaID(f"r{i}", DEPLOYMENT)) for i in range(2)]
        for r in self.replicas:
            self.router.replica_queue_len_cache.update(r.replica_id, 0)
        self.where: dict[str, ReplicaID] = {}

    def send(self, call: str, tokens: int, *, accepted: bool = True,
             fast: bool = False) -> None:
        async def chosen() -> tuple[Any, Any]:
            pending = _pending(call, tokens)  # its future belongs to the loop
            choose: Any = self.router.choose_replicas
            return pending, await choose(self.replicas, pending)
        pending, order = self.loop.run_until_complete(chosen())
        if not accepted:  # every rank refused it: Ray asks again later (not here)
            return
        rid = order[0][0].replica_id
        self.router.on_send_request(rid)
        if fast:  # answered before Ray read the replica's acceptance: reported first
            self.router.on_request_completed(rid, call)
            self.router.decrement_queue_len_cache(rid)
        self.router.on_request_routed(pending, rid, None)
        if not fast:
            self.where[call] = rid

    def complete(self, call: str) -> None:
        rid = self.where.pop(call)
        self.router.on_request_completed(rid, call)
        self.router.decrement_queue_len_cache(rid)

    def others(self, replica: int, ongoing: int) -> None:
        """A replica reports its ongoing requests (``on_new_queue_len_info``), other
        routers' included."""
        self.router.on_new_queue_len_info(self.replicas[replica].replica_id, ongoing)

    def loads(self) -> dict[str, float]:
        """What the Router reads for each replica at the next ranking (of a 100-token call)."""
        loads_of: Any = self.router._loads_of
        got = self.loop.run_until_complete(loads_of(self.replicas, 100))
        return {rid.name: load for rid, load in got.items()}


# Steps: ("send", call, tokens), ("refused", call, tokens), ("fast", call, tokens): Ray
# reports it completed before it reports it routed, ("complete", call),
# ("others", replica index, Ray's ongoing count). Expected: each replica's load,
# where "c1" stands for the replica that took call c1 (its tokens), the other 0.
_LIFE = [
    pytest.param([("send", "c1", 320)], {"c1": 320.0}, id="sent: its prefill counts whole"),
    pytest.param([("send", "c1", 320), ("complete", "c1")], {"c1": 0.0},
                 id="completed (answer, stream end, failure, cancel): released"),
    pytest.param([("refused", "c1", 320)], {}, id="never routed: never counted"),
    pytest.param([("fast", "c1", 320)], {}, id="completed before reported routed: not counted"),
    pytest.param([("fast", "c1", 320), ("send", "c2", 320)], {"c2": 320.0},
                 id="a fast one leaves the next counted"),
    pytest.param([("send", "c1", 320), ("send", "c2", 320), ("complete", "c1"),
                  ("complete", "c2")], {"c1": 0.0, "c2": 0.0},
                 id="two calls, both released: nothing leaks"),
]


@pytest.mark.parametrize(("steps", "expected"), _LIFE)
def test_the_load_over_a_calls_life(steps: list[tuple[Any, ...]],
                                    expected: dict[str, float]) -> None:
    ray_ = _Ray()
    taken: dict[str, str] = {}
    for step in steps:
        if step[0] == "send":
            ray_.send(step[1], step[2])
            taken[step[1]] = ray_.where[step[1]].unique_id
        elif step[0] == "refused":
            ray_.send(step[1], step[2], accepted=False)
        elif step[0] == "fast":
            ray_.send(step[1], step[2], fast=True)
        else:
            ray_.complete(step[1])
    loads = ray_.loads()
    want = {r.replica_id.unique_id: 0.0 for r in ray_.replicas}
    for call, load in expected.items():
        want[taken[call]] += load
    assert loads == pytest.approx(want)
    counters = ray_.router.counters
    assert counters["counted"] + counters["completed_first"] == sum(
        1 for step in steps if step[0] in ("send", "fast"))
    stats = ray_.router.stats()["backlog"]
    assert sum(n for n, _ in stats.values()) == sum(1 for v in expected.values() if v)
    ray_.loop.close()


def test_other_routers_requests_count_at_the_mean_prefill() -> None:
    """Ray's count of a replica's ongoing requests includes other routers' sends: those
    beyond this router's own count at the Router's running mean prefill (tokens)."""
    ray_ = _Ray()
    ray_.send("c1", 320)
    mine = ray_.where["c1"]
    index = next(i for i, r in enumerate(ray_.replicas) if r.replica_id == mine)
    other = 1 - index
    mean = ray_.router._router.mean_prefill_tokens
    assert mean > 0
    ray_.others(index, 3)   # this router's one and two others'
    ray_.others(other, 1)   # one of another router's
    loads = ray_.loads()
    assert loads[mine.unique_id] == pytest.approx(320.0 + 2 * mean)
    assert loads[ray_.replicas[other].replica_id.unique_id] == pytest.approx(mean)
    ray_.complete("c1")
    ray_.others(index, 0)
    ray_.others(other, 0)
    assert ray_.loads() == {r.replica_id.unique_id: 0.0 for r in ray_.replicas}
    ray_.loop.close()
