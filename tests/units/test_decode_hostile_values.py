"""Payload values that broke the decoder's errors or its JSON form (found by tests/fuzz).

NaN and infinities have no JSON form, so a batch holding one made
``events decode`` write lines that are not JSON. vLLM sends ``time.time()``
as ``ts`` and never puts a float in an extra key.
"""

from __future__ import annotations

import math

import msgpack
import pytest

from prefixkey.events import EventDecoder, EventFieldError, UnknownEventTypeError

STORED = {"type": "BlockStored", "block_hashes": [1], "parent_block_hash": None,
          "token_ids": [1], "block_size": 1, "lora_id": None, "medium": "GPU",
          "lora_name": None}


@pytest.mark.parametrize("ts", [math.nan, math.inf, -math.inf])
def test_non_finite_ts(ts: float) -> None:
    with pytest.raises(EventFieldError) as info:
        EventDecoder("0.31.0").decode(msgpack.packb([ts, [], 0]))
    assert info.value.field == "ts"


@pytest.mark.parametrize("key", [(math.nan,), ("x", (1, math.inf))])
def test_non_finite_float_in_extra_key(key: tuple[object, ...]) -> None:
    payload = msgpack.packb([1.0, [{**STORED, "extra_keys": [key]}], 0])
    with pytest.raises(EventFieldError) as info:
        EventDecoder("0.31.0").decode(payload)
    assert info.value.field is not None
    assert info.value.field.startswith("events[0].extra_keys[0]")
    assert info.value.event_index == 0


def test_finite_floats_still_decode() -> None:
    payload = msgpack.packb([1.5, [{**STORED, "extra_keys": [(0.5, "x")]}], 0])
    batch = EventDecoder("0.31.0").decode(payload).batch
    assert batch.ts == 1.5
    assert batch.events[0].extra_keys == ((0.5, "x"),)  # type: ignore[union-attr]


# An unknown event type is shown in its error by kind when it is not a short
# string: a repr of an array nested 1000 deep (msgpack allows 1024) raised RecursionError.
@pytest.mark.parametrize(("version", "tag", "shown"), [
    ("0.22.0", b"\x91" * 1000 + b"\xc0", "array"),
    ("0.31.0", b"\x91" * 1000 + b"\xc0", "array"),
    ("0.31.0", msgpack.packb("x" * 100_000), "(100000 chars)"),
])
def test_unknown_event_type_shown_briefly(version: str, tag: bytes, shown: str) -> None:
    event = b"\x91" + tag if version == "0.22.0" else b"\x81\xa4type" + tag
    payload = b"\x93\xcb" + msgpack.packb(1.0)[1:] + b"\x91" + event + b"\x00"
    with pytest.raises(UnknownEventTypeError) as info:
        EventDecoder(version).decode(payload)
    assert info.value.field == "events[0].type"
    assert shown in str(info.value)
    assert len(str(info.value)) < 200
