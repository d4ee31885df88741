"""Routing without events: predicted entries (prefixkey.fleet.routing._predictions).

The keys come from the Hasher (checked against vLLM's own code by the golden
vectors); what is tested here is which replica the Router picks and on what
evidence, for each sequence of requests sent, events and clock ticks.
"""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from index_events import batch, removed, stored
from redis_servers import shared_client

from prefixkey import Hasher, Request
from prefixkey.errors import InvalidRequestError
from prefixkey.events import AllBlocksCleared, EventBatch, EventHash
from prefixkey.fleet import (
    PREDICTED,
    PREDICTION_COUNTERS,
    PredictedIndex,
    Predictions,
    PrefixIndex,
    PrefixIndexBackend,
    RedisPrefixIndex,
    ReplicaId,
    ReplicaScheme,
    Router,
    RunsQuery,
    predictions_prometheus_text,
)

BLOCK = 16
H = Hasher(block_size=BLOCK, python_hash_seed="0")
SCHEME = ReplicaScheme(H)
PROMPT = Request(list(range(1000, 1000 + 4 * BLOCK + 1)))  # 4 full blocks, all reusable
TTL, CONFIRMED_TTL = 100.0, 10.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def published(replica_scheme: ReplicaScheme, request: Request) -> tuple[EventHash, ...]:
    """The keys a replica's BlockStored carries for ``request``."""
    return tuple(map(replica_scheme.publish, replica_scheme.hasher.block_hashes(request)))


KEYS = published(SCHEME, PROMPT)


@dataclass
class Fleet:
    clock: Clock
    index: PredictedIndex
    router: Router
    batches: int = 0
    log: list[str] = field(default_factory=list)

    def send(self, replica: str, request: Request = PROMPT) -> None:
        prepared = self.router.prepare(request)
        chosen = next(d for d in self.router.rank(prepared) if d.replica.name == replica)
        self.index.sent(prepared, chosen)

    def events(self, replica: str, *events: Any) -> None:
        self.batches += 1
        self.index.apply(replica, batch(*events, ts=float(self.batches)))


def make_fleet(backend: PrefixIndexBackend, **predictions: Any) -> Fleet:
    clock = Clock()
    index = PredictedIndex(backend, Predictions(ttl_seconds=TTL,
                                                confirmed_ttl_seconds=CONFIRMED_TTL,
                                                clock=clock, **predictions))
    for name in ("a", "b"):
        index.register(name, SCHEME)
    return Fleet(clock, index, router_over(index))


def router_over(index: PredictedIndex, **kwargs: Any) -> Router:
    # Equally idle replicas: the Router's own count of its sends stays out of these scenarios.
    return Router(index, **{"load": lambda r: 0.0, **kwargs})


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> Any:
    if request.param == "memory":
        yield PrefixIndex()
        return
    client = shared_client()
    yield RedisPrefixIndex(client)
    client.flushdb()
    client.close()


Step = Callable[[Fleet], None]


def tick(seconds: float) -> Step:
    def step(f: Fleet) -> None:
        f.clock.now += seconds
    return step


def send(replica: str = "a") -> Step:
    return lambda f: f.send(replica)


def events(*evs: Any, replica: str = "a") -> Step:
    return lambda f: f.events(replica, *evs)


def reregister(seed: str) -> Step:
    def step(f: Fleet) -> None:
        f.index.register("a", ReplicaScheme(Hasher(block_size=BLOCK, python_hash_seed=seed)))
    return step


def remove_and_register() -> Step:
    def step(f: Fleet) -> None:
        f.index.remove_replica("a")
        f.index.register("a", SCHEME)
    return step


FULL = 4 * BLOCK
#: (name, steps, replica a's evidence, a's hit tokens, whether a ranks first)
SCENARIOS: list[tuple[str, list[Step], str, int, bool]] = [
    ("nothing sent, no events", [], "none", 0, False),
    ("sent to a", [send()], "predicted", FULL, True),
    ("sent to b only", [send("b")], "none", 0, False),
    ("sent, TTL not reached", [send(), tick(TTL - 1)], "predicted", FULL, True),
    ("sent, TTL passed", [send(), tick(TTL + 1)], "none", 0, False),
    ("sent again refreshes the age", [send(), tick(TTL - 1), send(), tick(TTL - 1)],
     "predicted", FULL, True),
    ("events store it all", [send(), events(stored(*KEYS))], "confirmed", FULL, True),
    ("events store the head, the tail is predicted",
     [send(), events(stored(*KEYS[:2]))], "predicted", FULL, True),
    ("stored, predictions gone: confirmed stays after the TTL",
     [send(), events(stored(*KEYS)), tick(TTL + 1)], "confirmed", FULL, True),
    ("events remove the first block", [send(), events(removed(KEYS[0]))], "none", 0, False),
    ("events remove the third block", [send(), events(removed(KEYS[2]))],
     "predicted", 2 * BLOCK, True),
    ("removed on CPU only: the prediction goes too",
     [send(), events(removed(KEYS[1], medium="CPU"))], "predicted", BLOCK, True),
    ("events clear the replica", [send(), events(AllBlocksCleared())], "none", 0, False),
    ("clear, then sent again", [send(), events(AllBlocksCleared()), send()],
     "predicted", FULL, True),
    ("a publishing replica: predictions live the confirmed TTL",
     [events(), send(), tick(CONFIRMED_TTL + 1)], "none", 0, False),
    ("a publishing replica, within the confirmed TTL",
     [events(), send(), tick(CONFIRMED_TTL - 1)], "predicted", FULL, True),
    ("events of another replica confirm nothing here",
     [send(), events(stored(*KEYS), replica="b"), tick(CONFIRMED_TTL + 1)],
     "predicted", FULL, False),
    ("digest bytes in an int replica's event confirm it",
     [send(), events(stored(*H.block_hashes(PROMPT)))], "confirmed", FULL, True),
    ("re-registered with another scheme", [send(), reregister("1")], "none", 0, False),
    ("re-registered with the same scheme", [send(), reregister("0")], "predicted", FULL, True),
    ("removed and registered again", [send(), remove_and_register()], "none", 0, False),
]


@pytest.mark.parametrize(("steps", "expected", "hit", "first"),
                         [pytest.param(s, e, h, f, id=n) for n, s, e, h, f in SCENARIOS])
def test_scenarios(backend: PrefixIndexBackend, steps: list[Step], expected: str, hit: int,
                   first: bool) -> None:
    fleet = make_fleet(backend)
    for step in steps:
        step(fleet)
    decisions = fleet.router.route(PROMPT)
    a = next(d for d in decisions if d.replica.name == "a")
    assert (a.evidence, a.hit_tokens) == (expected, hit)
    assert (decisions[0].replica.name == "a") is first
    if expected == "predicted":
        assert PREDICTED in a.media and PREDICTED in a.why


def test_a_predicted_block_weighs_its_tier_weight() -> None:
    fleet = make_fleet(PrefixIndex())
    fleet.send("a")
    fleet.events("b", stored(*KEYS[:1]))
    by_name = {d.replica.name: d for d in fleet.router.route(PROMPT)}
    # a: 4 predicted blocks at 0.5 (other_tier_weight); b: 1 confirmed block at 1.0.
    assert by_name["a"].weighted_hit_tokens == 0.5 * FULL
    assert by_name["b"].weighted_hit_tokens == BLOCK
    assert fleet.router.route(PROMPT)[0].replica.name == "a"
    heavy = router_over(fleet.index, tier_weights={"GPU": 1.0, PREDICTED: 0.2})
    assert heavy.route(PROMPT)[0].replica.name == "b"
    off = router_over(fleet.index, tier_weights={"GPU": 1.0, PREDICTED: 0.0})
    by_name = {d.replica.name: d for d in off.route(PROMPT)}
    assert (by_name["a"].hit_tokens, by_name["a"].evidence) == (0, "none")


def test_the_hit_cap_is_applied_before_the_evidence() -> None:
    """vLLM never reuses a prompt's last token: a predicted last block of an exact prompt is
    not used, so the evidence is the confirmed head's."""
    fleet = make_fleet(PrefixIndex())
    exact = Request(list(PROMPT.token_ids[:2 * BLOCK]))
    keys = published(SCHEME, exact)
    fleet.send("a", exact)
    fleet.events("a", stored(keys[0]))
    a = next(d for d in fleet.router.route(exact) if d.replica.name == "a")
    assert (a.matched_blocks, a.hit_tokens, a.evidence) == ((2,), BLOCK, "confirmed")
    assert a.media == frozenset({"GPU"})


def test_routing_follows_the_requests_sent() -> None:
    """Without events, the second request of a conversation goes where the first went."""
    fleet = make_fleet(PrefixIndex())
    first = fleet.router.route(PROMPT)
    assert first[0].fallback and first[0].evidence == "none"
    prepared = fleet.router.prepare(PROMPT)
    fleet.index.sent(prepared, first[0])
    follow_up = Request([*PROMPT.token_ids, *range(7, 40)])
    again = fleet.router.route(follow_up)
    assert again[0].replica == first[0].replica
    assert again[0].evidence == "predicted" and not again[0].fallback
    fleet.index.sent(fleet.router.prepare(follow_up), again[0])
    stats = fleet.index.predictions.stats()
    assert (stats["sent_none"], stats["sent_predicted"], stats["sent_confirmed"]) == (1, 1, 0)
    assert stats["recorded"] == 4 + 2 and stats["refreshed"] == 4
    metrics = fleet.router.metrics.as_dict()  # two route() calls: a fallback, then a prediction
    assert (metrics["decisions"], metrics["fallbacks"], metrics["predicted"]) == (2, 1, 1)


def test_sent_to_a_replica_without_a_decision() -> None:
    fleet = make_fleet(PrefixIndex())
    fleet.index.sent(fleet.router.prepare(PROMPT), ReplicaId("b"))
    assert fleet.router.route(PROMPT)[0].replica.name == "b"
    assert fleet.index.predictions.stats()["sent_none"] == 0  # no decision: nothing to count


def test_counters_and_metrics() -> None:
    fleet = make_fleet(PrefixIndex(), max_entries_per_replica=3)
    fleet.send("a")  # no hit yet; 4 keys past the cap of 3: the chain's tail goes first
    a = next(d for d in fleet.router.route(PROMPT) if d.replica.name == "a")
    assert a.hit_tokens == 3 * BLOCK
    fleet.events("a", stored(KEYS[0]), removed(KEYS[1]))  # a: k2 predicted only
    fleet.send("b")  # no hit for b
    short = Request(list(PROMPT.token_ids[:2 * BLOCK + 1]))
    fleet.send("b", short)  # a predicted hit; both keys refreshed
    fleet.events("b", AllBlocksCleared())
    fleet.clock.now += CONFIRMED_TTL + 1
    assert fleet.index.predictions.expire() == 1  # a's k2, a publishing replica's
    fleet.send("a")  # a confirmed hit (k0, from the events)
    stats = cast("Mapping[str, int]", fleet.index.predictions.stats())  # read by name
    assert {k: stats[k] for k in PREDICTION_COUNTERS} == {
        "recorded": 12, "refreshed": 2, "confirmed": 1, "removed": 1, "cleared": 3,
        "expired": 1, "evicted": 3, "sent_confirmed": 1, "sent_predicted": 1, "sent_none": 2,
    }
    assert stats["size"] == len(fleet.index.predictions) == 3
    assert stats["confirmed_replicas"] == 2
    text = predictions_prometheus_text(stats)
    assert "prefixkey_predictions_sent_predicted_total 1\n" in text
    assert "# TYPE prefixkey_predictions_size gauge\nprefixkey_predictions_size 3\n" in text


def test_the_chain_tail_is_evicted_first() -> None:
    p = Predictions(max_entries=3)
    p.record("a", [(1, 2)])
    p.record("b", [(10, 11, 12)])
    # Full at 11: a (holding most) loses its tail, 2; at 10, b (now holding most) loses 12.
    assert [k for _, k, _ in p.entries("a")] == [1]
    assert [k for _, k, _ in p.entries("b")] == [11, 10]
    assert p.leading(ReplicaId("b"), 0, (10, 11, 12)) == 2
    assert p.stats()["evicted"] == 2


def test_a_key_recorded_again_is_not_evicted_for_the_new_ones() -> None:
    p = Predictions(max_entries_per_replica=3)
    p.record("a", [(1, 2, 3)])  # tail first: 3 is the least recently recorded
    p.record("a", [(3, 5)])  # 3 again, 5 new: one entry must go, 2 (3 is refreshed)
    assert [k for _, k, _ in p.entries("a")] == [1, 5, 3]
    stats = p.stats()
    assert (stats["recorded"], stats["refreshed"], stats["evicted"]) == (4, 1, 1)
    assert p.leading(ReplicaId("a"), 0, (1, 2, 3)) == 1


def test_a_request_longer_than_the_bound_keeps_its_head() -> None:
    p = Predictions(max_entries_per_replica=3)
    p.record("a", [(1, 2)])
    p.record("b", [(1, 2)])
    p.record("a", [(10, 11, 12, 13, 14)])  # tail first: 1, 2, 14 and 13 evicted in turn
    assert [k for _, k, _ in p.entries("a")] == [12, 11, 10]
    assert p.leading(ReplicaId("a"), 0, (10, 11, 12, 13)) == 3
    assert p.leading(ReplicaId("b"), 0, (1, 2)) == 2  # b's entries untouched
    stats = p.stats()
    assert (stats["recorded"], stats["evicted"], stats["cleared"], stats["size"]) == (9, 4, 0, 5)


def test_a_request_past_the_bound_holding_a_key_recorded_before() -> None:
    """Its own new keys fit the bound, all of them do not (found by the state machine)."""
    p = Predictions(max_entries_per_replica=4)
    p.record("a", [(0,)])
    p.record("a", [(0, 1, 2, 3, 4)])  # tail first: 0 then 4 evicted, 0 recorded again
    assert [k for _, k, _ in p.entries("a")] == [3, 2, 1, 0]
    assert p.replica_size("a") == 4


def test_an_event_medium_named_predicted_is_not_routed_on() -> None:
    """A replica's events cannot pass themselves off as predictions, nor stop routing."""
    fleet = make_fleet(PrefixIndex())
    fleet.events("a", stored(*KEYS, medium=PREDICTED))
    fleet.send("b")
    by_name = {d.replica.name: d for d in fleet.router.route(PROMPT)}
    assert (by_name["a"].hit_tokens, by_name["a"].evidence) == (0, "none")
    assert (by_name["b"].hit_tokens, by_name["b"].evidence) == (FULL, "predicted")
    assert list(fleet.index.medium_bits()).count(PREDICTED) == 1


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"ttl_seconds": 0}, "ttl_seconds"),
    ({"ttl_seconds": float("inf")}, "ttl_seconds"),
    ({"confirmed_ttl_seconds": -1.0}, "confirmed_ttl_seconds"),
    ({"confirmed_ttl_seconds": True}, "confirmed_ttl_seconds"),
    ({"max_entries": 0}, "max_entries"),
    ({"max_entries": 2.5}, "max_entries"),
    ({"max_entries_per_replica": 0}, "max_entries_per_replica"),
])
def test_bad_settings_are_refused(kwargs: dict[str, Any], name: str) -> None:
    with pytest.raises(InvalidRequestError) as err:
        Predictions(**kwargs)
    assert err.value.field == name


def test_a_clock_going_backwards_stands_still() -> None:
    clock = Clock()
    p = Predictions(ttl_seconds=5, clock=clock)
    clock.now = 100.0
    p.record("a", [(1,)])
    clock.now = 0.0  # e.g. a test clock reset: entries neither age nor reorder
    p.record("a", [(2,)])
    assert [(k, t) for _, k, t in p.entries("a")] == [(1, 100.0), (2, 100.0)]
    clock.now = 106.0
    assert p.leading(ReplicaId("a"), 0, (1,)) == 0


def test_memory_is_bounded() -> None:
    """A router sending unique prompts for ever holds at most max_entries predictions."""
    p = Predictions(max_entries=2_000, ttl_seconds=1e9)
    replicas = [ReplicaId(f"r{i}") for i in range(8)]

    def send(rounds: int, start: int) -> None:
        for i in range(start, start + rounds):
            p.record(replicas[i % 8], [tuple(range(i * 64, i * 64 + 64))])

    send(200, 0)  # warm up: the store is full from here on
    tracemalloc.start()
    try:
        send(200, 200)
        after_fill = tracemalloc.get_traced_memory()[0]
        send(2_000, 400)
        after_more = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(p) == 2_000
    sizes = [p.replica_size(r) for r in replicas]
    assert max(sizes) - min(sizes) <= 64  # eviction takes from the replica holding most
    # Ten times more prompts, no more memory (a little slack for allocator noise).
    assert after_more - after_fill < 64 * 1024


# -- model-based: Predictions against a dict of record times --------------------

REPLICA_NAMES = st.sampled_from(["a", "b", "c"])
KEY = st.integers(0, 7)
GROUP_KEYS = st.lists(st.lists(KEY, max_size=5), min_size=1, max_size=2)
MODEL_TTL, MODEL_CONFIRMED_TTL = 10.0, 3.0


class PredictionsMachine(RuleBasedStateMachine):
    """Set semantics per (replica, group, key) with record times; bounded, the store is a
    subset of the model with the same times."""

    @initialize(bound=st.sampled_from([1000, 6]), cap=st.sampled_from([None, 4]))
    def setup(self, bound: int, cap: int | None) -> None:
        self.clock = Clock()
        self.store = Predictions(ttl_seconds=MODEL_TTL, confirmed_ttl_seconds=MODEL_CONFIRMED_TTL,
                                 max_entries=bound, max_entries_per_replica=cap,
                                 clock=self.clock)
        self.model: dict[tuple[str, int, int], float] = {}
        self.confirmed: set[str] = set()

    def _ttl(self, name: str) -> float:
        return MODEL_CONFIRMED_TTL if name in self.confirmed else MODEL_TTL

    def _fresh(self, name: str, t: float) -> bool:
        return t >= self.clock.now - self._ttl(name)

    @rule(name=REPLICA_NAMES, groups=GROUP_KEYS)
    def record(self, name: str, groups: list[list[int]]) -> None:
        self.store.record(name, groups)
        for g, keys in enumerate(groups):
            for k in keys:
                self.model[name, g, k] = self.clock.now

    @rule(seconds=st.sampled_from([0.5, 2.0, 5.0, 11.0]))
    def tick(self, seconds: float) -> None:
        self.clock.now += seconds

    @rule(name=REPLICA_NAMES, keys=st.lists(KEY, max_size=4), group=st.sampled_from([None, 1]),
          kind=st.sampled_from(["stored", "removed", "cleared", "empty"]))
    def observe(self, name: str, keys: list[int], group: int | None, kind: str) -> None:
        ev: Any = {"stored": stored(*keys, group=group), "removed": removed(*keys, group=group),
                   "cleared": AllBlocksCleared()}.get(kind)
        self.store.observe(name, SCHEME, EventBatch(1.0, () if ev is None else (ev,)))
        self.confirmed.add(name)
        if kind == "cleared":
            self.model = {k: t for k, t in self.model.items() if k[0] != name}
        elif ev is not None:
            for k in keys:
                self.model.pop((name, group or 0, k), None)

    @rule(name=REPLICA_NAMES)
    def forget(self, name: str) -> None:
        self.store.forget(name)
        self.confirmed.discard(name)
        self.model = {k: t for k, t in self.model.items() if k[0] != name}

    @rule()
    def expire(self) -> None:
        self.store.expire()

    @rule(name=REPLICA_NAMES, keys=st.lists(KEY, max_size=6), start=st.integers(0, 2))
    def leading(self, name: str, keys: list[int], start: int) -> None:
        got = self.store.leading(ReplicaId(name), 0, keys, start)
        n = 0
        for k in keys[start:]:
            t = self.model.get((name, 0, k))
            if t is None or not self._fresh(name, t):
                break
            n += 1
        if self.store.stats()["evicted"] == 0:
            assert got == n
        else:
            assert got <= n

    @rule(names=st.lists(REPLICA_NAMES, min_size=1, max_size=4), keys=st.lists(KEY, max_size=6),
          data=st.data())
    def leading_runs(self, names: list[str], keys: list[int], data: st.DataObject) -> None:
        """One walk for several candidates, each from its own start (its confirmed run)."""
        starts = [data.draw(st.integers(0, len(keys))) for _ in names]
        got = self.store.leading_runs([ReplicaId(n) for n in names], 0, keys, starts)
        for name, start, n in zip(names, starts, got, strict=True):
            expected = 0
            for k in keys[start:]:
                t = self.model.get((name, 0, k))
                if t is None or not self._fresh(name, t):
                    break
                expected += 1
            assert n == expected or (self.store.stats()["evicted"] > 0 and n <= expected)

    @invariant()
    def matches_model(self) -> None:
        stats = self.store.stats()
        view = {(name, g, k): t for name in ("a", "b", "c")
                for g, k, t in self.store.entries(name)}
        assert view.items() <= self.model.items()  # nothing invented, times as recorded
        fresh = {k: t for k, t in self.model.items() if self._fresh(k[0], t)}
        if stats["evicted"] == 0:
            assert fresh.items() <= view.items()  # nothing fresh lost
        assert stats["size"] == len(self.store) == len(view) <= self.store.max_entries
        cap = self.store.max_entries_per_replica
        for name in ("a", "b", "c"):
            assert self.store.is_confirmed(name) is (name in self.confirmed)
            assert cap is None or self.store.replica_size(name) <= cap
        # Last: a lookup sweeps the replica's expired entries.
        evicted = stats["evicted"] > 0
        for (name, g, k), t in self.model.items():
            one = self.store.leading(ReplicaId(name), g, [k])
            assert one == 0 if not self._fresh(name, t) else (one == 1 or evicted)


TestPredictionsMachine = PredictionsMachine.TestCase


def test_the_wrapper_is_a_backend() -> None:
    """Whatever takes a backend (the Subscriber, the Router) takes the wrapper."""
    assert isinstance(PredictedIndex(PrefixIndex()), PrefixIndexBackend)


@pytest.mark.parametrize("seed", range(6))
def test_predicted_runs_of_a_large_fleet(seed: int) -> None:
    """Every candidate once, with its confirmed run and the predictions that continue it.

    Only the candidates holding predictions are asked for on their own: the
    others keep the backend's groups. Expected runs are worked out one
    candidate at a time from ``longest_runs`` and ``Predictions.leading``.
    """
    rng = random.Random(seed)
    clock = Clock()
    memory = PrefixIndex()
    index = PredictedIndex(memory, Predictions(ttl_seconds=TTL, clock=clock))
    names = [f"r{i}" for i in range(60)]
    for name in names:
        index.register(name, SCHEME)
        held = rng.choice([0, 0, 1, 2, 4])
        if held:
            index.apply(name, batch(stored(*KEYS[:held])))
    sent = rng.sample(names, 7)
    for name in sent:
        index.predictions.record(ReplicaId(name), [KEYS[:rng.randint(1, 4)]])
    rids = tuple(ReplicaId(n) for n in names)
    media = 1 | index.medium_bits()[PREDICTED]
    (answer,) = index.leading_runs([RunsQuery(SCHEME, rids, (KEYS,))], media)
    assert sum(len(members) for _, members in answer.groups) == len(rids)
    base = memory.longest_runs(list(rids), 0, KEYS, 1)
    expected = {}
    for rid, run in zip(rids, base, strict=True):
        start = sum(n for _, n in run)
        more = index.predictions.leading(rid, 0, KEYS, start)
        expected[rid] = ((*run, (index.medium_bits()[PREDICTED], more)) if more else run,)
    assert answer.by_replica() == expected
