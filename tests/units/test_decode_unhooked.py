"""The decoder's two unpack paths agree (issue 12, item 5).

A payload no larger than ``DecodeLimits.max_containers`` bytes cannot hold
more containers than that, so it is unpacked without the counting hooks; a
larger one with them. The same bytes must decode to the same values and
errors either way, maps kept as their pairs (duplicates included).
"""

from __future__ import annotations

import random
from typing import Any

import msgpack
import pytest

from prefixkey.events import DecodeLimits, EventDecodeError, EventDecoder

_STORED = {"type": "BlockStored", "block_hashes": [1, 2], "parent_block_hash": None,
           "token_ids": list(range(32)), "block_size": 16, "lora_id": None,
           "medium": "GPU", "lora_name": None, "group_idx": 0}


def _payloads() -> list[bytes]:
    rng = random.Random(12)
    out = [msgpack.packb([1.0, [_STORED, {"type": "AllBlocksCleared"}], 0]),
           msgpack.packb([1.0, [{**_STORED, "token_ids": [True, 2]}], 0]),
           msgpack.packb([1.0, [{**_STORED, "extra_keys": [[["h", 1]], None]}], None]),
           # A map with a duplicate key, written by hand: its pairs must survive.
           b"\x93\xcb?\xf0\x00\x00\x00\x00\x00\x00\x91\x82\xa4type\xa4type\xa4type"
           b"\xa4type\x00"]
    for _ in range(20):
        events = [{**_STORED, "block_hashes": [rng.getrandbits(64) for _ in range(4)],
                   "token_ids": [rng.randrange(9) for _ in range(64)]}
                  for _ in range(rng.randrange(1, 6))]
        out.append(msgpack.packb([rng.random(), events, rng.choice([0, 1, None])]))
    return out


def _outcome(decoder: EventDecoder, payload: bytes) -> Any:
    try:
        return decoder._unpack(payload), decoder.decode(payload)
    except EventDecodeError as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("payload", _payloads())
def test_hooked_and_unhooked_unpacks_agree(payload: bytes) -> None:
    unhooked = EventDecoder("0.31.0")
    unhooked._fast = None  # the pure-Python path, as the hooked decoder's (too small for msgspec)
    # One container less than the payload's bytes: the hooks run, and (vLLM's
    # payloads holding far fewer containers than bytes) do not fire.
    hooked = EventDecoder("0.31.0", limits=DecodeLimits(max_containers=len(payload) - 1))
    assert len(payload) <= unhooked.limits.max_containers
    assert _outcome(hooked, payload) == _outcome(unhooked, payload)


def test_duplicate_keys_survive_the_unhooked_unpack() -> None:
    payload = _payloads()[3]
    assert EventDecoder("0.31.0")._unpack(payload)[1][0] == [("type", "type"), ("type", "type")]
