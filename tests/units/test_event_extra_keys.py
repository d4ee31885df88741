"""Published (untagged) extra keys back to the hashed (tagged) form."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from prefixkey import LoRA, MMItem, Request
from prefixkey.core import event_extra_keys, resolve_release
from prefixkey.core._extra_keys import ExtraKeysBuilder
from prefixkey.events import (
    UNKNOWN,
    AmbiguousExtraKeysError,
    BlockKeyCandidates,
    BlockStored,
    EventDecoder,
    ExtraKeysConversionError,
    ExtraKeysNotPublishedError,
    MissingLoRAPathError,
    event_extra_keys_to_typed,
    typed_extra_keys_of,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"
DIGEST = hashlib.sha256(b"embeds").digest()


def _resolved(result: tuple[BlockKeyCandidates, ...]) -> list[object]:
    return [c.resolve() for c in result]


@pytest.mark.parametrize(
    "request_",
    [
        Request(list(range(48)), lora=LoRA("sql", "/adapters/sql"), cache_salt="s1",
                mm_items=[MMItem("img-a", 3, 20), MMItem("img-b", 30, 4)]),
        Request(list(range(48)), cache_salt="salt", mm_items=[MMItem("img-a", 0, 40)]),
        Request(list(range(48)), lora=LoRA("sql", "/p")),
        Request(list(range(48)), mm_items=[MMItem("x", 17, 2)]),
    ],
)
def test_round_trip_through_the_published_form(request_: Request) -> None:
    """prefixkey's own 0.31 keys, published as vLLM publishes them, come back exactly."""
    era = resolve_release("0.31.0").era
    builder = ExtraKeysBuilder(request_, era, 16)
    hashed = [builder.block(s, s + 16) for s in range(0, 48, 16)]
    published = [event_extra_keys(k, era) for k in hashed]
    lora = request_.lora
    result = event_extra_keys_to_typed(
        published, vllm_version="0.31.0", lora_name=lora.name if lora else None,
        lora_path={lora.name: lora.path or ""} if lora else None, starts_request=True)
    assert _resolved(result) == hashed
    # Without the event's lora_name, later blocks still tell whether there is an adapter.
    inferred = event_extra_keys_to_typed(
        published, vllm_version="0.31.0", lora_path=lora.path if lora else None,
        starts_request=True)
    assert _resolved(inferred) == hashed


def test_ambiguous_leading_string_gives_both_readings() -> None:
    result = event_extra_keys_to_typed([("abc",)], vllm_version="0.31.0", lora_path="/a")
    (block,) = result
    assert block.ambiguous
    assert block.candidates == ((("lora", "abc", "/a"),), (("cache_salt", "abc"),))
    with pytest.raises(AmbiguousExtraKeysError) as info:
        block.resolve()
    assert info.value.field == "extra_keys[0]"
    # The event's lora_name decides.
    assert _resolved(event_extra_keys_to_typed(
        [("abc",)], vllm_version="0.31.0", lora_name=None)) == [(("cache_salt", "abc"),)]
    assert _resolved(event_extra_keys_to_typed(
        [("abc",)], vllm_version="0.31.0", lora_name="abc", lora_path="/a",
    )) == [(("lora", "abc", "/a"),)]
    # Two strings: adapter then salt.
    assert _resolved(event_extra_keys_to_typed(
        [("abc", "s")], vllm_version="0.31.0", lora_path="/a",
    )) == [(("lora", "abc", "/a"), ("cache_salt", "s"))]
    # Not the request's first block: a string can only be the adapter.
    assert _resolved(event_extra_keys_to_typed(
        [("abc",)], vllm_version="0.31.0", lora_path="/a", starts_request=False,
    )) == [(("lora", "abc", "/a"),)]


def test_errors() -> None:
    with pytest.raises(MissingLoRAPathError) as info:
        event_extra_keys_to_typed([("sql",)], vllm_version="0.31.0", lora_name="sql",
                                  lora_path={"other": "/o"})
    assert info.value.block == 0
    with pytest.raises(ExtraKeysNotPublishedError):
        event_extra_keys_to_typed([None], vllm_version="0.14.0")
    with pytest.raises(ExtraKeysConversionError, match="adapter is 'sql'"):
        event_extra_keys_to_typed([("x",)], vllm_version="0.31.0", lora_name="sql",
                                  lora_path="/p")
    with pytest.raises(ExtraKeysConversionError, match="not an untagged key"):
        event_extra_keys_to_typed([(1.5,)], vllm_version="0.31.0", lora_name=None)
    with pytest.raises(ExtraKeysConversionError, match="outside the request's first block"):
        event_extra_keys_to_typed([None, ("salt",)], vllm_version="0.31.0", lora_name=None)
    with pytest.raises(ExtraKeysConversionError, match="lookahead"):
        event_extra_keys_to_typed([None], vllm_version="0.33.0", lora_name=None,
                                  lookahead_token_ids=[])


def test_hashed_eras_publish_the_hashed_tuple() -> None:
    keys = [("sql", ("img", 0), "salt"), None]
    assert _resolved(event_extra_keys_to_typed(keys, vllm_version="0.20.0")) == keys
    assert _resolved(event_extra_keys_to_typed(
        [["sql", "img"]], vllm_version="0.17.0")) == [("sql", "img")]
    assert event_extra_keys_to_typed(None, vllm_version="0.31.0") == ()


def test_embeds_mm_and_lookahead() -> None:
    result = event_extra_keys_to_typed(
        [(("img", -3), "s", DIGEST), None], vllm_version="0.33.0", lora_name=None,
        starts_request=True, lookahead_token_ids=[[7, 8], [9, 10]])
    assert _resolved(result) == [
        ((("mm", "img", -3), ("cache_salt", "s"), ("prompt_embeds", DIGEST)), 7, 8),
        (None, 9, 10),
    ]


def _fixture_events(name: str) -> tuple[object, ...]:
    line = next(x for x in map(json.loads, (FIXTURES / "0.33.0.jsonl").read_text().splitlines())
                if x["name"] == name)
    return EventDecoder("0.33.0").decode_batch(bytes.fromhex(line["payload_hex"])).events


def test_typed_extra_keys_of_decoded_fixture_events() -> None:
    event = _fixture_events("mixed")[1]
    assert isinstance(event, BlockStored) and event.parent_block_hash is None
    digest = hashlib.sha256(b"embeds-block-0").digest()
    assert _resolved(typed_extra_keys_of(event, vllm_version="0.33.0")) == [
        (("mm", "mmhash-a", 3), ("cache_salt", "salt-2"), ("prompt_embeds", digest)), None]
    # This synthetic wire sample has a parent yet a salt: reported, not guessed.
    event = _fixture_events("optional_fields_set")[0]
    assert isinstance(event, BlockStored) and event.parent_block_hash is not None
    with pytest.raises(ExtraKeysConversionError, match="outside the request's first block"):
        typed_extra_keys_of(event, vllm_version="0.33.0",
                            lora_path={"sql-adapter": "/adapters/sql"})
    assert repr(UNKNOWN) == "UNKNOWN"


def test_typed_extra_keys_of_request_start() -> None:
    event = BlockStored((1, 2), None, tuple(range(32)), 16, lora_name="sql",
                        extra_keys=(("sql", ("img", 0), "s"), ("sql",)))
    assert _resolved(typed_extra_keys_of(event, vllm_version="0.31.0", lora_path="/p")) == [
        (("lora", "sql", "/p"), ("mm", "img", 0), ("cache_salt", "s")),
        (("lora", "sql", "/p"),),
    ]
