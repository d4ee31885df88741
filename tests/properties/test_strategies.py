"""prefixkey.testing.strategies: valid values (requests hash, layouts are sound, events decode)."""

from __future__ import annotations

import importlib.metadata
from dataclasses import fields
from itertools import pairwise
from typing import Any

import msgpack
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from prefixkey.core import Hasher, LoRA, MMItem, PromptEmbeds, Request, check_api_rules
from prefixkey.events import (
    WIRE_ERAS,
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    EventDecoder,
)
from prefixkey.jsonl import parse_request, run_job
from prefixkey.testing import strategies as pks

# One release per scheme era (and the default).
ERA_RELEASES = ["0.7.0", "0.7.1", "0.7.2", "0.7.3", "0.8.3", "0.8.5", "0.9.0", "0.10.0",
                "0.10.1", "0.10.2", "0.11.1", "0.12.0", "0.17.0", "0.19.0", "0.24.0",
                "0.29.0", "0.31.0", "0.33.0"]
SMALL = settings(max_examples=15)


@given(pks.token_ids(max_size=20, max_id=70000))
def test_token_ids_are_non_negative_and_bounded(ids: list[int]) -> None:
    assert len(ids) <= 20
    assert all(type(t) is int and 0 <= t <= 70000 for t in ids)


def test_token_ids_reach_width_boundaries() -> None:
    found = find(pks.token_ids(min_size=1), lambda ids: 2**32 in ids)
    assert found == [2**32]
    with pytest.raises(ValueError, match="max_id"):
        pks.token_ids(max_id=-1)


@given(st.integers(0, 40).flatmap(lambda n: st.tuples(st.just(n), pks.mm_layouts(num_tokens=n))))
def test_mm_layouts_are_sorted_disjoint_and_inside(case: tuple[int, list[MMItem]]) -> None:
    n, items = case
    end = 0
    for item in items:
        assert item.offset >= end and item.end <= n
        end = item.end
    Request(list(range(n)), mm_items=items).check_inside(n)


def test_mm_layouts_produce_adjacent_and_spanning_items() -> None:
    adjacent = find(pks.mm_layouts(num_tokens=16),
                    lambda items: any(a.end == b.offset for a, b in pairwise(items)))
    assert len(adjacent) == 2
    spanning = find(pks.mm_layouts(num_tokens=32), lambda items: any(
        i.offset < 16 < i.end for i in items))
    assert spanning


@given(pks.loras(api_valid=True), pks.cache_salts(api_valid=True))
def test_api_valid_loras_and_salts_pass_the_api_rules(lora: LoRA, salt: str) -> None:
    check_api_rules(Request([1, 2], lora=lora, cache_salt=salt))


def test_loras_cover_equal_name_and_path() -> None:
    assert find(pks.loras(), lambda lo: lo.name == lo.path and lo.name != "").name


@given(pks.loras(require_int_id=True))
def test_loras_require_int_id(lora: LoRA) -> None:
    assert lora.int_id is not None


@given(pks.prompt_embeds(dtypes=("bfloat16", "float32")))
def test_prompt_embeds(embeds: PromptEmbeds) -> None:
    assert embeds.dtype in ("bfloat16", "float32")
    assert embeds.num_rows <= 8


@pytest.mark.parametrize("version", ERA_RELEASES)
def test_requests_hash_without_ignored_features(version: str) -> None:
    algo, seed, engine = pks._configs(version)[0]
    hasher = Hasher(block_size=4, hash_algo=algo, python_hash_seed=seed, vllm_version=version,
                    engine_python=engine)

    @SMALL
    @given(pks.requests(vllm_version=version, block_size=4))
    def check(request: Request) -> None:
        request.check_inside(len(request.token_ids))
        state = hasher.start(request)
        assert state.warnings == []  # only features the release keys
        assert len(state.block_hashes) == len(request.token_ids) // 4

    check()


@pytest.mark.parametrize("version", ERA_RELEASES)
def test_request_objects_are_reproducible(version: str) -> None:
    @SMALL
    @given(pks.request_objects(vllm_version=version))
    def check(obj: dict[str, Any]) -> None:
        assert obj["vllm_version"] == version
        result = run_job(parse_request(obj, api_checks=True))
        hashed = obj["hash_calls"][-1] if "hash_calls" in obj else len(obj["token_ids"])
        lookahead = obj.get("lookahead", 0)
        blocks = max(0, hashed - lookahead) // obj["block_size"]
        assert len(result["block_hashes"]) == blocks
        # The one warning a generated request draws: none of its blocks is full.
        assert [w.startswith("no full block:") for w in result["warnings"]] == (
            [] if blocks else [True])

    check()


def test_request_objects_respect_restrictions() -> None:
    @SMALL
    @given(pks.request_objects(features=["cache_salt"], hash_algos=["xxhash"], block_size=16))
    def check(obj: dict[str, Any]) -> None:
        assert obj["hash_algo"] == "xxhash" and obj["block_size"] == 16
        assert not {"lora", "mm_items", "prompt_embeds", "hash_calls"} & set(obj)

    check()
    with pytest.raises(ValueError, match="unknown features"):
        pks.request_objects(features=["nope"])
    assert "lora" not in pks.keyed_features("0.7.2")
    assert "lookahead" in pks.keyed_features("0.33.0")


# --------------------------------------------------------------------------- events


def _encode(batch: EventBatch, version: str) -> bytes:
    """Pack a typed batch the way the release's publisher does (test-only encoder)."""
    decoder = EventDecoder(version)
    era = decoder.era

    def event(ev: Any) -> Any:
        if isinstance(ev, AllBlocksCleared):
            return ["AllBlocksCleared"] if era.event_encoding == "array" else {
                "type": "AllBlocksCleared"}
        tag = type(ev).__name__
        names, required = decoder._fields[tag]
        values = [getattr(ev, name) for name in names]
        if era.event_encoding == "array":
            return [tag, *values]
        return {"type": tag, **{n: v for i, (n, v) in enumerate(zip(names, values, strict=True))
                                if i < required or v is not None}}

    raw = [batch.ts, [event(e) for e in batch.events]]
    if era.batch_has_dp_rank:
        raw.append(batch.data_parallel_rank)
    return bytes(msgpack.packb(raw, use_bin_type=True))


@pytest.mark.parametrize("era", WIRE_ERAS, ids=[e.since for e in WIRE_ERAS])
def test_event_batches_carry_only_the_eras_fields(era: Any) -> None:
    version = era.since

    @SMALL
    @given(pks.event_batches(vllm_version=version))
    def check(batch: EventBatch) -> None:
        for ev in batch.events:
            if isinstance(ev, (BlockStored, BlockRemoved)):
                published = (era.block_stored_fields if isinstance(ev, BlockStored)
                             else era.block_removed_fields)
                for f in fields(ev):
                    if f.name not in published:
                        assert getattr(ev, f.name) is None, f.name
        if not era.batch_has_dp_rank:
            assert batch.data_parallel_rank is None
        decoded = EventDecoder(version).decode(_encode(batch, version))
        assert decoded.warnings == ()
        assert decoded.batch == batch

    check()


# --------------------------------------------------------------------------- registration


def test_from_type_after_the_hook() -> None:
    pks._hypothesis_setup_hook()

    @SMALL
    @given(st.from_type(Request), st.from_type(EventBatch), st.from_type(MMItem),
           st.from_type(BlockStored), st.from_type(BlockRemoved), st.from_type(LoRA),
           st.from_type(PromptEmbeds))
    def check(request: Request, batch: EventBatch, item: MMItem, stored: BlockStored,
              removed: BlockRemoved, lora: LoRA, embeds: PromptEmbeds) -> None:
        assert isinstance(request, Request) and isinstance(batch, EventBatch)
        request.check_inside(len(request.token_ids))
        assert isinstance(item, MMItem) and isinstance(stored, BlockStored)
        assert isinstance(removed, BlockRemoved) and isinstance(lora, LoRA)
        assert isinstance(embeds, PromptEmbeds)

    check()


def test_entry_point_is_declared() -> None:
    points = [e for e in importlib.metadata.entry_points(group="hypothesis")
              if e.value == "prefixkey.testing.strategies:_hypothesis_setup_hook"]
    if not points:
        pytest.skip("prefixkey is installed without its Hypothesis entry point (reinstall)")
    assert points[0].load() is pks._hypothesis_setup_hook
