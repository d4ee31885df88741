"""More of issue 21's rules written once (beside test_rules_once.py): the JSON encoding
of keys and values, the bounded-number check, the cache-salt rule, the index counters.

The source scans fail when a hand-written copy of a rule comes back; the behaviour tests
pin what the one copy does, where the copies used to differ.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import pytest

import prefixkey.events
import prefixkey.events._recording as recording
import prefixkey.jsonl
from prefixkey import Hasher, Request
from prefixkey.core import check_api_rules
from prefixkey.core._api_rules import CACHE_SALT_FORBIDDEN, CACHE_SALT_MAX_CHARS
from prefixkey.core._checks import check_int, check_number, int_refusal, number_refusal
from prefixkey.errors import InvalidRequestError
from prefixkey.events import BlockStored, EventBatch, batch_to_json
from prefixkey.fleet import PrefixIndex, ReplicaScheme, Router, prometheus_text
from prefixkey.fleet.index import INDEX_COUNTERS
from prefixkey.jsonl import hash_to_json, parse_request, run_job, value_to_json

PACKAGE: Final = Path(prefixkey.jsonl.__file__).resolve().parent


def _sources(*, skip: frozenset[str] = frozenset()) -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text(encoding="utf-8")
            for p in sorted(PACKAGE.rglob("*.py"))
            if str(p.relative_to(PACKAGE)) not in skip and "_hf_facts" not in p.name}


# -- one JSON encoding of keys and values ------------------------------------------

def test_one_json_encoding_shared_by_results_and_events() -> None:
    assert vars(recording)["hash_to_json"] is hash_to_json
    assert vars(recording)["value_to_json"] is value_to_json
    for gone in ("hash_hex", "to_json_value"):
        assert not hasattr(prefixkey.jsonl, gone)
    for moved in ("hash_to_json", "value_to_json"):
        assert moved not in prefixkey.events.__all__


@pytest.mark.parametrize(("value", "kwargs", "expected"), [
    (bytes([0, 255]), {}, "00ff"),
    (bytes([0, 255]), {"hex_ints": True}, "00ff"),
    (bytes([0, 255]), {"tagged": True}, {"hex": "00ff"}),
    (-255, {}, -255),
    (-255, {"hex_ints": True}, "-ff"),
    (2**64 - 1, {"tagged": True}, {"int": 2**64 - 1}),
    (None, {"hex_ints": True}, None),
])
def test_hash_forms(value: Any, kwargs: dict[str, bool], expected: Any) -> None:
    assert hash_to_json(value, **kwargs) == expected


def test_values_lists_as_tuples_bytes_tagged() -> None:
    # The results' copy left lists as they were (bytes inside a list stayed bytes).
    assert value_to_json([b"\x01", ("x", [b"\x02"])]) == [{"hex": "01"}, ["x", [{"hex": "02"}]]]


def test_results_and_events_write_a_key_alike() -> None:
    hasher = Hasher(block_size=4, python_hash_seed="0")
    keys = hasher.block_hashes(Request(list(range(8))))
    result = run_job(parse_request({"block_size": 4, "python_hash_seed": "0",
                                    "token_ids": list(range(8))}))
    event = BlockStored(tuple(keys), None, tuple(range(8)), 4)
    written = batch_to_json(EventBatch(1.0, (event,)))["events"][0]["block_hashes"]
    assert result["block_hashes"] == written == [hash_to_json(k) for k in keys]


# -- one bounded-number check ------------------------------------------------------

#: Hand-written int/number bound checks, as they were written before the one helper.
_HAND_WRITTEN: Final = re.compile(
    r"must be (an int )?>= ?\{|must be (an int )?[>]=? ?\d+[^\"']*got \{"
    r"|must be a finite number [<>]|must be a positive finite number|must be > 0 seconds")
#: The one place the checks are written.
_ELSEWHERE: Final = frozenset({"core/_checks.py"})


def test_no_hand_written_bound_check_remains() -> None:
    found = [f"{name}:{source[:m.start()].count(chr(10)) + 1}: {m.group(0)}"
             for name, source in _sources(skip=_ELSEWHERE).items()
             for m in _HAND_WRITTEN.finditer(source)]
    assert found == []


@pytest.mark.parametrize(("value", "kwargs", "refusal"), [
    (1, {}, None),
    (0, {}, "must be an int >= 1, got 0"),
    (True, {}, "must be an int >= 1, got True"),
    (2.0, {}, "must be an int >= 1, got 2.0"),
    ("3", {}, "must be an int >= 1, got '3'"),
    (None, {}, "must be an int >= 1, got None"),
    (None, {"optional": True}, None),
    (0, {"optional": True}, "must be an int >= 1 or None, got 0"),
    (0, {"least": 0}, None),
    (-1, {"least": 0}, "must be an int >= 0, got -1"),
])
def test_int_refusal(value: object, kwargs: dict[str, Any], refusal: str | None) -> None:
    assert int_refusal(value, **kwargs) == refusal
    if refusal is None:
        assert check_int("n", value, **kwargs) == value
    else:
        with pytest.raises(InvalidRequestError, match=re.escape(refusal)) as info:
            check_int("n", value, **kwargs)
        assert info.value.field == "n"


@pytest.mark.parametrize(("value", "strict", "ok"), [
    (0, False, True), (0, True, False), (0.5, True, True), (-0.1, False, False),
    (float("inf"), False, False), (float("nan"), False, False), (True, False, False),
    ("1", False, False),
])
def test_number_refusal(value: object, strict: bool, ok: bool) -> None:
    assert (number_refusal(value, strict=strict) is None) is ok
    if ok:
        assert check_number("x", value, strict=strict) == float(value)  # type: ignore[arg-type]
    else:
        with pytest.raises(InvalidRequestError, match="must be a finite number"):
            check_number("x", value, strict=strict)


def test_checks_that_let_bools_and_strings_through_before() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    assert hypothesis is not None
    from prefixkey.testing import ForeignImplementation, OracleError
    from prefixkey.testing.strategies import request_objects, token_ids

    with pytest.raises(InvalidRequestError, match="got True"):  # True < 1 is False
        request_objects(block_size=True)
    with pytest.raises(InvalidRequestError, match="max_id"):  # "x" < 0: a TypeError
        token_ids(max_id="x")  # type: ignore[arg-type]
    with pytest.raises(OracleError, match="timeout must be a finite number > 0, got inf"):
        ForeignImplementation(["true"], timeout=float("inf"))
    with pytest.raises(OracleError, match="max_line_bytes must be an int >= 1, got True"):
        ForeignImplementation(["true"], max_line_bytes=True)


def test_router_load_refusal_names_the_replica() -> None:
    index = PrefixIndex()
    index.register("a", ReplicaScheme(Hasher(block_size=4, python_hash_seed="0")))
    router = Router(index, load=lambda rid: -1.0)
    with pytest.raises(InvalidRequestError, match=r"for a: must be a finite number >= 0, got -1"):
        router.rank(router.prepare(Request(list(range(8)))))


# -- the cache-salt rule, once ----------------------------------------------------------

def test_the_salt_rule_is_written_once() -> None:
    pattern = re.compile(r"frozenset\(\"@/|\"@/\\\\|len\(salt\) > \d")
    found = [name for name, source in _sources(skip=frozenset({"core/_api_rules.py"})).items()
             if pattern.search(source)]
    assert found == []


@pytest.mark.parametrize("release", ["0.29.0", "0.31.0"])
@pytest.mark.parametrize("salt", [
    "x" * CACHE_SALT_MAX_CHARS, "x" * (CACHE_SALT_MAX_CHARS + 1), "x" * 1024, "x" * 1025,
    *(f"a{c}b" for c in CACHE_SALT_FORBIDDEN), "tenant-a",
])
def test_renderer_and_api_rules_refuse_the_same_salts(salt: str, release: str) -> None:
    pytest.importorskip("jinja2")
    from prefixkey.render._eras import render_era
    from prefixkey.render._errors import RenderRequestError
    from prefixkey.render._fields import _cache_salt

    try:
        check_api_rules(Request([1, 2], cache_salt=salt), release)
        api_ok = True
    except InvalidRequestError:
        api_ok = False
    try:
        _cache_salt({"cache_salt": salt}, render_era(release).cache_salt)
        render_ok = True
    except RenderRequestError:
        render_ok = False
    assert api_ok is render_ok


# -- the index counters, in the backend contract -------------------------------------------

def test_prometheus_exports_every_contract_counter() -> None:
    index = PrefixIndex()
    text = prometheus_text({"replicas": {}, "queue_depth": 0, "queue_capacity": 0,
                            "index": index.stats()})
    for name in INDEX_COUNTERS:
        assert f"prefixkey_index_{name}_total 0" in text


# -- typed stats (item 7) ---------------------------------------------------------------------

def test_subscriber_stats_are_the_typed_dicts_they_declare() -> None:
    from prefixkey.fleet import ReplicaEndpoint, ReplicaStats, SubscriberStats
    from prefixkey.fleet.feed._feed_set import FeedSet
    from prefixkey.fleet.routing import COUNTERS, ReplicaCounters

    index = PrefixIndex()
    feeds = FeedSet([ReplicaEndpoint("a", "tcp://127.0.0.1:1", "0.31.0")], index=index)
    stats = feeds.stats(running=False)
    assert set(stats) == SubscriberStats.__required_keys__
    assert set(stats["replicas"]["a"]) == ReplicaStats.__required_keys__
    assert list(COUNTERS) == list(ReplicaCounters.__annotations__)  # one list, in order
    assert set(stats["totals"]) == {*COUNTERS, "index_size", "queued", "queued_bytes"}
    assert stats["index"] == index.stats()


# -- one copy of the transports' shared pieces, and of the index's slot machinery -----------

def test_both_transports_share_one_lane_and_one_transport() -> None:
    """The threaded and asyncio subscribers keep a replica's sockets and queue in one
    Lane, and their state, stats and metrics in one Transport (so both offer ``record``)."""
    import io

    from prefixkey.fleet import ReplicaEndpoint
    from prefixkey.fleet.feed import AsyncSubscriber, Subscriber
    from prefixkey.fleet.feed._async_subscriber import _Lane
    from prefixkey.fleet.feed._subscriber import _Worker
    from prefixkey.fleet.feed._zmq import Lane, Transport

    assert issubclass(_Worker, Lane) and issubclass(_Lane, Lane)
    assert issubclass(Subscriber, Transport) and issubclass(AsyncSubscriber, Transport)
    sources = {name: (PACKAGE / "fleet" / "feed" / name).read_text("utf-8")
               for name in ("_subscriber.py", "_async_subscriber.py")}
    for name, text in sources.items():  # the shared pieces are not written again
        for copy in ("socket(zmq.DEALER)", "socket(zmq.SUB)", "disable_monitor",
                     'count("handling_errors")', "EVENT_CONNECTED", "FeedSet("):
            assert copy not in text, (name, copy)
    file = io.StringIO()
    replicas = [ReplicaEndpoint("a", "tcp://127.0.0.1:1", "0.31.0")]
    sub = AsyncSubscriber(replicas, index=PrefixIndex(), record=file)
    assert sub.record is file and set(sub.stats()["replicas"]) == {"a"}


def test_predictions_keep_their_entries_in_the_index_tables() -> None:
    """Predictions reuse the index's slots, tables and eviction choice (index/_tables.py),
    not a second copy: a freed slot is taken again first, as in the index."""
    from prefixkey.fleet import Predictions, ReplicaId
    from prefixkey.fleet.index._tables import Entries

    source = (PACKAGE / "fleet" / "routing" / "_predictions.py").read_text("utf-8")
    assert "OrderedDict" not in source and "_free_slots" not in source
    predictions, index = Predictions(max_entries=3), PrefixIndex()
    for name in ("a", "b", "c"):
        predictions.record(name, [[1]])
        index.register(name, ReplicaScheme(Hasher(block_size=16)))
    predictions.forget("a")
    index.remove_replica("a")
    predictions.record("d", [[1]])
    index.register("d", ReplicaScheme(Hasher(block_size=16)))
    states = predictions._replicas  # the slots are the point
    assert all(isinstance(s, Entries) for s in states.values())
    assert states[ReplicaId("d")].slot == index._replicas[ReplicaId("d")].slot == 0


def test_a_look_at_the_oldest_entry_copies_a_table_only_once_holes_outnumber_keys() -> None:
    """Predictions look at each table's oldest entry on every record (expiry): a refreshed
    table must not be copied on every look, only after as many deletions as keys."""
    from prefixkey.fleet.index._tables import Table

    table: Table[float] = Table()
    table.keys.update((k, float(k)) for k in range(4000))
    for k in range(2000):  # refreshed: deleted and stored again, last
        del table.keys[k]
        table.deleted += 1
        table.keys[k] = 5000.0 + k
    before = table.keys
    assert table.oldest_value() == 2000.0 and table.keys is before  # 2,000 holes, 4,000 keys
    assert table.oldest_keys(2) == [2000, 2001] and table.keys is not before  # eviction's rule
    for k in range(2000, 4001):  # 2,001 deletions since that copy, 1,999 keys left
        del table.keys[k % 4000]
        table.deleted += 1
    kept = table.keys
    assert table.oldest_value() == 5001.0 and table.keys is not kept  # more holes than keys
    assert table.deleted == 0 and list(table.keys) == list(range(1, 2000))
