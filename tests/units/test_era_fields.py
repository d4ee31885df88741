"""Era knowledge lives in the scheme records: each field checked against vLLM, release by release.

Evidence: the golden vectors (``tests/vectors``, vLLM's own keys, extra keys,
published extra keys and group keys) and the KV-event wire fixtures
(``tests/fixtures/events``, encoded by each release's own msgspec classes).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, cast

import pytest

from prefixkey import InvalidRequestError
from prefixkey.core import (
    KNOWN_RELEASES,
    Hasher,
    JobKeys,
    Request,
    event_extra_keys,
    resolve_release,
)
from prefixkey.events import event_extra_keys_to_typed, wire_era
from prefixkey.fleet import GroupSpec, ReplicaScheme, UnsupportedLayoutError
from prefixkey.jsonl import parse_request, value_to_json

TESTS = Path(__file__).resolve().parents[1]
VECTORS = TESTS / "vectors"
FIXTURES = TESTS / "fixtures" / "events"


@cache
def _records(release: str) -> tuple[dict[str, Any], ...]:
    lines = (VECTORS / f"{release}.jsonl").read_text("utf-8").splitlines()
    return tuple(r for r in map(json.loads, lines) if "error" not in r["result"])


def _state(record: dict[str, Any]) -> tuple[Hasher, JobKeys]:
    """The record's request hashed call by call, as vLLM hashed it."""
    case = {**record["case"], "vllm_version": record["version"],
            "engine_python": record["result"].get("python")}
    job = parse_request(case)
    return job.hasher, job.run()


def _keyed_records(release: str) -> Iterator[dict[str, Any]]:
    for record in _records(release):
        if record["result"]["block_hashes"]:
            yield record


@pytest.mark.parametrize("release", KNOWN_RELEASES)
def test_offered_algorithms_are_the_releases(release: str) -> None:
    """The vectors hold a case for every --prefix-caching-hash-algo value the release has."""
    resolved = resolve_release(release)
    harvested = {r["case"]["hash_algo"] for r in _records(release)}
    assert set(resolved.era.offered_algorithms(resolved.release)) == harvested


@pytest.mark.parametrize("release", KNOWN_RELEASES)
def test_published_extra_keys_follow_the_wire(release: str) -> None:
    """A release publishes extra keys iff its BlockStored has the field (0.17.0+)."""
    form = resolve_release(release).era.published_extra_keys
    if resolve_release(release).release < wire_era("0.9.0")[0].first_version:
        assert form == "none"  # no KV events at all
        return
    assert ("extra_keys" in wire_era(release)[0].block_stored_fields) == (form != "none")


@pytest.mark.parametrize("meta", sorted(FIXTURES.glob("*.meta.json")), ids=lambda p: p.name)
def test_published_extra_keys_follow_the_harvested_structs(meta: Path) -> None:
    facts = json.loads(meta.read_text("utf-8"))
    fields = facts["structs"]["BlockStored"]["fields"]
    form = resolve_release(facts["version"]).era.published_extra_keys
    assert ("extra_keys" in fields) == (form != "none")


_PUBLISHING = [v for v in KNOWN_RELEASES if resolve_release(v).era.published_extra_keys != "none"]


@pytest.mark.parametrize("release", _PUBLISHING)
def test_event_extra_keys_are_what_vllm_publishes(release: str) -> None:
    """0.31+: vLLM's own to_event_extra_keys (harvested); 0.17-0.30: the hashed tuples.

    Before 0.31 vLLM's block pool puts generate_block_hash_extra_keys' tuples in
    BlockStored.extra_keys unchanged; the vectors hold those tuples as extra_keys.
    """
    era = resolve_release(release).era
    checked = lookahead_checked = 0
    for record in _keyed_records(release):
        hasher, state = _state(record)
        got = [value_to_json(event_extra_keys(k, era, lookahead=hasher.lookahead))
               for k in state.extra_keys]
        expected = record["result"]["event_extra_keys"]
        if era.published_extra_keys == "hashed":
            assert expected is None  # no to_event_extra_keys to harvest before 0.31
            expected = record["result"]["extra_keys"]
        assert got == expected, record["id"]
        checked += 1
        lookahead_checked += hasher.lookahead > 0
    assert checked
    if era.lookahead:
        assert lookahead_checked  # the (keys, *lookahead tokens) form was exercised


def test_event_extra_keys_before_events_published_them() -> None:
    era = resolve_release("0.16.0").era
    hasher = Hasher(block_size=2, vllm_version="0.16.0", python_hash_seed="0")
    keys = hasher.start(Request([1, 2, 3, 4], cache_salt="s")).extra_keys
    assert keys[0] == ("s",)
    assert [event_extra_keys(k, era) for k in keys] == [None, None]
    with pytest.raises(InvalidRequestError) as info:
        event_extra_keys(keys[0], era, lookahead=1)
    assert info.value.field == "lookahead"


@pytest.mark.parametrize("release", _PUBLISHING)
def test_published_keys_convert_back(release: str) -> None:
    """The events' inverse reads the same era field: published -> hashed is the identity."""
    for record in list(_keyed_records(release))[:40]:
        hasher, state = _state(record)
        if hasher.lookahead or record["case"]["lora"] is not None:
            continue  # lookahead rows and LoRA paths need the event's other fields
        published = [event_extra_keys(k, hasher.era) for k in state.extra_keys]
        typed = event_extra_keys_to_typed(published, vllm_version=release, lora_name=None,
                                          starts_request=True)
        assert [c.resolve() for c in typed] == state.extra_keys, record["id"]


def _group_records() -> Iterator[dict[str, Any]]:
    for release in KNOWN_RELEASES:
        for record in _keyed_records(release):
            if record["result"].get("group_block_hashes"):
                yield record


@pytest.mark.parametrize("release", KNOWN_RELEASES)
def test_coarser_groups_exist_from_their_era(release: str) -> None:
    hasher, _ = _state(next(_keyed_records(release)))  # a configuration vLLM ran
    bs = hasher.block_size
    layout = (GroupSpec(bs), GroupSpec(2 * bs))
    if hasher.era.group_keys == "none":
        with pytest.raises(UnsupportedLayoutError):
            ReplicaScheme(hasher, groups=layout)
        assert not any(r["result"].get("group_block_hashes") for r in _records(release))
    else:
        assert ReplicaScheme(hasher, groups=layout).groups == layout


def test_index_group_keys_are_vllms() -> None:
    """The index's group keys (bytes and int events) against BlockHashListWithBlockSize's."""
    checked = set()
    for record in _group_records():
        hasher, state = _state(record)
        bs = hasher.block_size
        for k, expected in record["result"]["group_block_hashes"].items():
            layout = (GroupSpec(bs), GroupSpec(bs * int(k)))
            as_bytes = ReplicaScheme(hasher, publishes="bytes", groups=layout)
            group = as_bytes.group_keys(state.block_hashes)[1]
            assert [cast(bytes, h).hex() for h in group] == expected
            as_ints = ReplicaScheme(hasher, publishes="int", groups=layout)
            # Event ints are the low 64 bits of the (possibly concatenated) group key.
            assert list(as_ints.group_keys(state.block_hashes)[1]) == [
                int(h[-16:], 16) for h in expected]
        checked.add(hasher.era.group_keys)
    assert checked == {"concatenated", "last"}
