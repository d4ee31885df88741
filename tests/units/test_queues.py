"""The Router's queues: kept in load order through sets, adds and decay."""

from __future__ import annotations

import random

import pytest

from prefixkey.fleet import ReplicaId
from prefixkey.fleet.routing._queues import Queues


def test_queues_stay_in_load_order() -> None:
    rng = random.Random(0)
    queues = Queues()
    truth: dict[ReplicaId, float] = {}
    for step in range(2000):
        rid = ReplicaId(f"r{rng.randrange(50)}")
        if step % 7 == 0:
            queues.decay(0.9)
            truth = {r: v * 0.9 for r, v in truth.items()}
        elif step % 3 == 0:
            queues.add(rid, 10.0)
            truth[rid] = truth.get(rid, 0.0) + 10.0
        else:
            value = float(rng.randrange(100))
            queues.set(rid, value)
            truth[rid] = value
    got = list(queues.ascending())
    assert [r for _, r in got] == sorted(truth, key=lambda r: (truth[r], r))
    assert [v for v, _ in got] == pytest.approx(sorted(truth.values()))
    assert queues.minimum() == pytest.approx(min(truth.values()))
    assert queues.get(ReplicaId("nobody")) == 0.0


def test_decay_renormalises_without_changing_the_order() -> None:
    queues = Queues()
    queues.set(ReplicaId("a"), 1.0)
    queues.set(ReplicaId("b"), 2.0)
    for _ in range(400):
        queues.decay(0.5)
    queues.set(ReplicaId("c"), 1.0)
    assert [r.name for _, r in queues.ascending()] == ["a", "b", "c"]
    assert queues.get(ReplicaId("c")) == pytest.approx(1.0)


def test_ensure_tracks_new_replicas_at_zero() -> None:
    queues = Queues()
    queues.set(ReplicaId("a"), 5.0)
    queues.ensure([ReplicaId("a"), ReplicaId("b")])
    assert [(v, r.name) for v, r in queues.ascending()] == [(0.0, "b"), (5.0, "a")]
    assert len(queues) == 2 and ReplicaId("b") in queues


def test_total_follows_sets_decays_and_renormalising() -> None:
    """The sum the Router's utilization reads (the mean queue) without a pass over the fleet."""
    queues = Queues()
    assert queues.total() == 0.0
    a, b = ReplicaId("a"), ReplicaId("b")
    queues.set(a, 30.0)
    queues.set(b, 10.0)
    queues.add(a, 5.0)
    assert queues.total() == pytest.approx(45.0)
    queues.decay(0.5)
    assert queues.total() == pytest.approx(22.5)
    for _ in range(600):  # past the renormalising scale
        queues.decay(0.5)
    queues.set(b, 4.0)
    assert queues.total() == pytest.approx(4.0)
    assert Queues.of([(a, 1.5), (b, 2.5)]).total() == 4.0
