"""KV-event decoding: real wire fixtures, eras, bad input, tolerance, framing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgpack
import pytest

from prefixkey.errors import PrefixKeyError, UnknownVersionError
from prefixkey.events import (
    END_SEQ,
    WIRE_ERAS,
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    DecodeLimits,
    EventBatch,
    EventDecodeError,
    EventDecoder,
    EventFieldError,
    EventFramingError,
    MalformedPayloadError,
    MissingEventFieldError,
    PayloadTooLargeError,
    ReplayEnd,
    UnknownEventTypeError,
    batch_to_json,
    replay_request,
    split_message,
    wire_era,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"
FIXTURE_LINES = [
    json.loads(line)
    for path in sorted(FIXTURES.glob("*.jsonl"))
    for line in path.read_text().splitlines()
]
METAS = [json.loads(p.read_text()) for p in sorted(FIXTURES.glob("*.meta.json"))]


def test_fixtures_cover_every_wire_era() -> None:
    versions = {line["version"] for line in FIXTURE_LINES}
    assert {era.since for era in WIRE_ERAS} <= versions
    assert len(FIXTURE_LINES) >= 4 * len(WIRE_ERAS)


@pytest.mark.parametrize(
    "line", FIXTURE_LINES, ids=[f"{x['version']}-{x['name']}" for x in FIXTURE_LINES]
)
def test_fixture_decodes_to_expected(line: dict[str, Any]) -> None:
    decoded = EventDecoder(line["version"]).decode(bytes.fromhex(line["payload_hex"]))
    assert decoded.warnings == ()
    assert batch_to_json(decoded.batch, tagged_hashes=True) == line["expected"]


@pytest.mark.parametrize("meta", METAS, ids=[m["version"] for m in METAS])
def test_wire_eras_match_the_real_structs(meta: dict[str, Any]) -> None:
    era, _ = wire_era(meta["version"])
    structs = meta["structs"]
    assert era.block_stored_fields == tuple(structs["BlockStored"]["fields"])
    assert era.block_stored_required == structs["BlockStored"]["required"]
    assert era.block_removed_fields == tuple(structs["BlockRemoved"]["fields"])
    assert era.block_removed_required == structs["BlockRemoved"]["required"]
    assert (era.event_encoding == "array") == structs["BlockStored"]["array_like"]
    assert era.batch_has_dp_rank == ("data_parallel_rank" in structs["KVEventBatch"]["fields"])
    assert structs["KVEventBatch"]["array_like"]


def test_hash_types_as_published() -> None:
    lines = [x for x in FIXTURE_LINES if x["version"] == "0.31.0"]
    by_name = {x["name"]: x for x in lines}
    decoder = EventDecoder("0.31.0")
    minimal = decoder.decode_batch(bytes.fromhex(by_name["int_hashes_minimal"]["payload_hex"]))
    stored = minimal.events[0]
    assert isinstance(stored, BlockStored)
    assert stored.block_hashes == (123456789, 2**64 - 1, -(2**63))
    full = decoder.decode_batch(bytes.fromhex(by_name["optional_fields_set"]["payload_hex"]))
    stored = full.events[0]
    assert isinstance(stored, BlockStored)
    assert all(isinstance(h, bytes) and len(h) == 32 for h in stored.block_hashes)
    assert stored.extra_keys == (("sql-adapter", ("mmhash-a", 3), "salt-1"),
                                 ("sql-adapter", ("mmhash-a", -13)))
    assert full.data_parallel_rank == 3


@pytest.mark.parametrize(
    ("version", "since"),
    [("0.9.0.1", "0.9.0"), ("0.9.2", "0.9.1"), ("0.10.1.1", "0.9.1"), ("0.13.0", "0.10.2"),
     ("0.16.0", "0.14.0"), ("0.19.1", "0.17.0"), ("0.23.0", "0.22.0"), ("0.25.1", "0.24.0"),
     ("0.28.0", "0.26.0"), ("0.32.0", "0.31.0"), ("0.31.1.dev5+g1a2b.cu128", "0.31.0"),
     ("0.33.0rc1", "0.33.0")],
)
def test_wire_era_lookup(version: str, since: str) -> None:
    assert wire_era(version)[0].since == since


def test_versions_without_events_or_unknown() -> None:
    with pytest.raises(UnknownVersionError, match=r"0\.9\.0"):
        EventDecoder("0.8.5")
    with pytest.raises(UnknownVersionError):
        EventDecoder("not-a-version")
    with pytest.raises(UnknownVersionError):
        EventDecoder("0.99.0")
    lenient = EventDecoder("0.99.0", strict=False)
    assert lenient.era is WIRE_ERAS[-1] and lenient.version_warnings


def _array_stored(*fields: Any) -> list[Any]:
    return ["BlockStored", *fields]


STORED_0_14 = [[1, 2], None, list(range(32)), 16, None, "GPU", None]
STORED_MAP = {"type": "BlockStored", "block_hashes": [1], "parent_block_hash": None,
              "token_ids": list(range(16)), "block_size": 16, "lora_id": None,
              "medium": "GPU", "lora_name": None}


def _pack(value: Any) -> bytes:
    return bytes(msgpack.packb(value, use_bin_type=True))


def _map_batch(**changes: Any) -> bytes:
    event = {**STORED_MAP, **changes}
    return _pack([1.0, [{k: v for k, v in event.items() if v is not _DROP}], 0])


_DROP = object()

# (case id, version, payload, error type, field, event_index)
BAD: list[tuple[str, str, bytes, type[EventDecodeError], str | None, int | None]] = [
    ("truncated", "0.14.0", _pack([1.0, [_array_stored(*STORED_0_14)], 0])[:-3],
     MalformedPayloadError, None, None),
    ("invalid_byte", "0.14.0", b"\xc1", MalformedPayloadError, None, None),
    ("trailing_bytes", "0.14.0", _pack([1.0, [], 0]) + b"\x00", MalformedPayloadError, None,
     None),
    ("empty", "0.14.0", b"", MalformedPayloadError, None, None),
    ("not_a_list", "0.14.0", _pack({"ts": 1.0}), EventFieldError, "batch", None),
    ("int_batch", "0.14.0", _pack(7), EventFieldError, "batch", None),
    ("no_events", "0.14.0", _pack([1.0]), MissingEventFieldError, "events", None),
    ("ts_str", "0.14.0", _pack(["now", [], 0]), EventFieldError, "ts", None),
    ("events_map", "0.14.0", _pack([1.0, {"a": 1}, 0]), EventFieldError, "events", None),
    ("rank_str", "0.14.0", _pack([1.0, [], "0"]), EventFieldError, "data_parallel_rank", None),
    ("unknown_tag", "0.14.0", _pack([1.0, [["BlockMoved", [1]]], 0]), UnknownEventTypeError,
     "events[0].type", 0),
    ("tag_int", "0.14.0", _pack([1.0, [[3, [1]]], 0]), UnknownEventTypeError, "events[0].type",
     0),
    ("empty_event", "0.14.0", _pack([1.0, [[]], 0]), MissingEventFieldError, "events[0].type", 0),
    ("missing_lora_name", "0.14.0",
     _pack([1.0, [["AllBlocksCleared"], _array_stored(*STORED_0_14[:6])], 0]),
     MissingEventFieldError, "events[1].lora_name", 1),
    ("missing_medium_removed", "0.10.2", _pack([1.0, [["BlockRemoved", [1]]], 0]),
     MissingEventFieldError, "events[0].medium", 0),
    ("hashes_str", "0.14.0", _pack([1.0, [_array_stored("ab", *STORED_0_14[1:])], 0]),
     EventFieldError, "events[0].block_hashes", 0),
    ("hash_float", "0.14.0", _pack([1.0, [_array_stored([1, 2.5], *STORED_0_14[1:])], 0]),
     EventFieldError, "events[0].block_hashes[1]", 0),
    ("parent_str", "0.14.0", _pack([1.0, [_array_stored([1], "p", *STORED_0_14[2:])], 0]),
     EventFieldError, "events[0].parent_block_hash", 0),
    ("token_bool", "0.14.0",
     _pack([1.0, [_array_stored([1], None, [1, True], *STORED_0_14[3:])], 0]),
     EventFieldError, "events[0].token_ids[1]", 0),
    ("block_size_nil", "0.14.0",
     _pack([1.0, [_array_stored([1], None, [1], None, *STORED_0_14[4:])], 0]),
     EventFieldError, "events[0].block_size", 0),
    ("medium_int", "0.14.0", _pack([1.0, [_array_stored(*STORED_0_14[:5], 5, None)], 0]),
     EventFieldError, "events[0].medium", 0),
    ("map_in_array_era", "0.23.0", _map_batch(), EventFieldError, "events[0]", 0),
    ("array_in_map_era", "0.24.0", _pack([1.0, [_array_stored(*STORED_0_14)], 0]),
     EventFieldError, "events[0]", 0),
    ("map_missing_required", "0.31.0", _map_batch(lora_name=_DROP), MissingEventFieldError,
     "events[0].lora_name", 0),
    ("map_missing_type", "0.31.0", _map_batch(type=_DROP), MissingEventFieldError,
     "events[0].type", 0),
    ("map_unknown_type", "0.31.0", _map_batch(type="BlockEvicted"), UnknownEventTypeError,
     "events[0].type", 0),
    ("map_int_key", "0.31.0", _pack([1.0, [{1: 2}], 0]), MalformedPayloadError, None, None),
    ("extra_keys_str", "0.31.0", _map_batch(extra_keys="x"), EventFieldError,
     "events[0].extra_keys", 0),
    ("extra_key_entry_int", "0.31.0", _map_batch(extra_keys=[5]), EventFieldError,
     "events[0].extra_keys[0]", 0),
    ("extra_key_map", "0.31.0", _map_batch(extra_keys=[[{"a": 1}]]), EventFieldError,
     "events[0].extra_keys[0][0]", 0),
    ("extra_key_deep", "0.31.0", _map_batch(extra_keys=[[[[[[[["x"]]]]]]]]),
     PayloadTooLargeError, None, 0),
    ("lookahead_bad", "0.33.0", _map_batch(lookahead_token_ids=[[1, "a"]]), EventFieldError,
     "events[0].lookahead_token_ids[0]", 0),
    ("group_idx_str", "0.31.0", _map_batch(group_idx="1"), EventFieldError,
     "events[0].group_idx", 0),
    ("absurd_array32", "0.31.0", b"\x93\xcb" + b"\0" * 8 + b"\xdd\xff\xff\xff\xff",
     PayloadTooLargeError, None, None),
    # msgpack checks a str32 length against the bytes left: "incomplete input".
    ("absurd_str32", "0.31.0", b"\x93\xcb" + b"\0" * 8 + b"\xdb\x7f\xff\xff\xff",
     MalformedPayloadError, None, None),
    ("absurd_map32", "0.31.0", b"\x93\xcb" + b"\0" * 8 + b"\x91\xdf\xff\xff\xff\xff",
     PayloadTooLargeError, None, None),
    ("deep_nesting", "0.31.0", b"\x91" * 5000, PayloadTooLargeError, None, None),
    ("ext_type", "0.31.0", _pack([1.0, [], msgpack.ExtType(5, b"x")]), MalformedPayloadError,
     None, None),
    ("invalid_utf8", "0.31.0", b"\x93\xcb" + b"\0" * 8 + b"\x91\x91\xa2\xff\xfe\x00",
     MalformedPayloadError, None, None),
]


def _duplicate_key_payload() -> bytes:
    head = _pack([1.0, [None], 0])[:-2]  # [ts, [ then the event, then the rank
    event = b"\x82" + _pack("type") + _pack("AllBlocksCleared") + _pack("type") + _pack("x")
    return head + event + _pack(0)


BAD.append(("duplicate_key", "0.31.0", _duplicate_key_payload(), EventFieldError,
            "events[0]", 0))


@pytest.mark.parametrize(("case", "version", "payload", "error", "field", "index"), BAD,
                         ids=[b[0] for b in BAD])
def test_bad_input_raises_typed_errors(
    case: str, version: str, payload: bytes, error: type[EventDecodeError], field: str | None,
    index: int | None,
) -> None:
    with pytest.raises(error) as info:
        EventDecoder(version).decode_batch(payload)
    exc = info.value
    assert isinstance(exc, PrefixKeyError) and isinstance(exc, ValueError)
    if field is not None:
        assert exc.field == field
    assert exc.event_index == index


def test_payload_size_limit() -> None:
    decoder = EventDecoder("0.31.0", limits=DecodeLimits(max_payload_bytes=10))
    with pytest.raises(PayloadTooLargeError, match="max_payload_bytes"):
        decoder.decode_batch(_map_batch())
    small = EventDecoder("0.31.0", limits=DecodeLimits(max_array_len=8))
    with pytest.raises(PayloadTooLargeError):
        small.decode_batch(_map_batch())  # 16 token ids
    with pytest.raises(EventFieldError):
        EventDecoder("0.31.0").decode_batch("not bytes")  # type: ignore[arg-type]


def test_tolerates_trailing_fields_and_unknown_keys() -> None:
    decoder = EventDecoder("0.14.0")
    payload = _pack([2.0, [_array_stored(*STORED_0_14, ["ek"], 3),
                           ["BlockRemoved", [1], "GPU", 0], ["AllBlocksCleared", 9]], 5, "x"])
    decoded = decoder.decode(payload)
    assert decoded.batch == EventBatch(2.0, (
        BlockStored((1, 2), None, tuple(range(32)), 16, None, "GPU", None),
        BlockRemoved((1,), "GPU"), AllBlocksCleared()), 5)
    assert len(decoded.warnings) == 4
    assert decoder.ignored == {"BlockStored[+trailing]": 1, "BlockRemoved[+trailing]": 1,
                               "AllBlocksCleared[+trailing]": 1, "batch[+trailing]": 1}
    decoder = EventDecoder("0.31.0")
    decoded = decoder.decode(_map_batch(lookahead_token_ids=[[1, 2]], future_field={"a": 1}))
    stored = decoded.batch.events[0]
    assert isinstance(stored, BlockStored) and stored.lookahead_token_ids is None
    assert "future_field, lookahead_token_ids" in decoded.warnings[0]
    assert decoder.ignored["BlockStored.future_field"] == 1


def test_optional_fields_and_old_batches() -> None:
    # 0.9.0: [ts, events]; a shorter array-like event omitting trailing optionals is accepted.
    old = EventDecoder("0.9.0").decode(_pack([1.5, [["BlockStored", [-5], None, [1], 1, None]]]))
    assert old.batch.data_parallel_rank is None and old.warnings == ()
    short = EventDecoder("0.22.0").decode_batch(_pack([1.0, [_array_stored(*STORED_0_14)], 0]))
    stored = short.events[0]
    assert isinstance(stored, BlockStored) and stored.group_idx is None
    assert EventDecoder("0.24.0").decode_batch(_pack([1, [], None])).ts == 1.0


def _frames(topic: bytes = b"kv", seq: int = 7) -> list[bytes]:
    return [topic, seq.to_bytes(8, "big"), _map_batch()]


def test_decode_message() -> None:
    decoder = EventDecoder("0.31.0")
    topic, seq, batch = decoder.decode_message(_frames())
    assert (topic, seq, len(batch.events)) == ("kv", 7, 1)
    assert decoder.decode_message(_frames(b"", 2**64 - 1)).seq == 2**64 - 1
    assert split_message(_frames()) == ("kv", 7, _map_batch())


@pytest.mark.parametrize(
    ("frames", "field"),
    [([b"kv", b"\0" * 8], None), ([b"kv", b"\0" * 4, b"\x90"], "seq"),
     ([b"\xff", b"\0" * 8, b"\x90"], "topic"), ([b"a", b"b", b"c", b"d"], None)],
)
def test_decode_message_framing_errors(frames: list[bytes], field: str | None) -> None:
    with pytest.raises(EventFramingError) as info:
        EventDecoder("0.31.0").decode_message(frames)
    assert info.value.field == field


def test_replay_framing_before_0_26() -> None:
    decoder = EventDecoder("0.25.1")
    seq = (3).to_bytes(8, "big")
    payload = _map_batch()
    for frames in ([seq, payload], [b"", seq, payload]):
        reply = decoder.decode_replay_reply(frames)
        assert not isinstance(reply, ReplayEnd)
        assert (reply.topic, reply.seq) == ("", 3)
    assert decoder.split_replay_reply([seq, payload]) == ("", 3, payload)
    assert decoder.decode_replay_reply([END_SEQ, b""]) == ReplayEnd()
    assert decoder.decode_replay_reply([b"", END_SEQ, b""]) == ReplayEnd()
    with pytest.raises(EventFramingError):
        decoder.decode_replay_reply([b"kv", seq, payload, b"x"])


def test_replay_framing_from_0_26() -> None:
    decoder = EventDecoder("0.26.0")
    seq = (9).to_bytes(8, "big")
    for frames in ([b"kv", seq, _map_batch()], [b"", b"kv", seq, _map_batch()]):
        reply = decoder.decode_replay_reply(frames)
        assert not isinstance(reply, ReplayEnd)
        assert (reply.topic, reply.seq) == ("kv", 9)
    assert decoder.decode_replay_reply([b"", END_SEQ, b""]) == ReplayEnd("")
    assert decoder.decode_replay_reply([b"", b"", END_SEQ, b""]) == ReplayEnd("")
    with pytest.raises(EventFramingError, match="3 frames"):
        decoder.decode_replay_reply([seq, _map_batch()])
    assert replay_request(9) == seq
