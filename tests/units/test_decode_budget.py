"""The event decoder's cost is bounded by its input (issue 14, item 2).

A payload as large as the default decoder accepts, of the shapes that cost
the most memory per byte, must decode or fail with a typed error within 2 GiB
and 5 s of CPU. Each runs in a subprocess whose address space is limited to
2 GiB (the ``bounded`` fixture), so a decoder that allocates past the bound
gets a MemoryError there instead of taking the machine with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgpack
import pytest

from prefixkey.events import BlockRemoved, DecodeLimits, EventDecoder, PayloadTooLargeError

GiB = 1024**3

# The child builds the payload itself (the parent never holds it), decodes it
# and prints what happened as one JSON line.
_CHILD = r"""
import json, struct, time
import msgpack
from prefixkey.events import DecodeLimits, EventDecoder

shape, size, max_payload = json.load(sys.stdin)
head = b"\x92\xcb" + struct.pack(">d", 1.0)           # [ts, events]

def flood(unit, closed):
    # Arrays of `unit`, as long as max_array_len allows, up to `size` bytes.
    per, left, chunks = 4 * 1024**2 - 1, size - len(head) - 5, []
    while left > 5 + len(unit):
        n = min(per, (left - 5) // len(unit))
        # An open array announces one element more than it has: none completes.
        chunks.append(b"\xdd" + struct.pack(">I", n + (not closed)) + unit * n)
        left -= len(chunks[-1])
    if not closed:
        return head + b"".join(chunks)
    return head + b"\xdd" + struct.pack(">I", len(chunks)) + b"".join(chunks)

def long_field(name):
    # BlockStored events whose `name` holds 4 Mi 1-byte ints (in one array per
    # block for extra_keys): the validation's cost, not msgpack's.
    event = {"type": "BlockStored", "block_hashes": [1], "parent_block_hash": None,
             "token_ids": [1] * 16, "block_size": 16, "lora_id": None, "medium": "GPU",
             "lora_name": None}
    event.pop(name, None)
    head_ = msgpack.packb(event)
    ints = b"\xdd" + struct.pack(">I", 4 * 1024**2 - 1) + b"\x01" * (4 * 1024**2 - 1)
    value = b"\x91" + ints if name == "extra_keys" else ints
    one = bytes([head_[0] + 1]) + head_[1:] + msgpack.packb(name) + value
    count = (size - 32) // len(one)
    return head + b"\xdd" + struct.pack(">I", count) + one * count

def vllm_shaped():
    # BlockStored events as vLLM 0.31 publishes them, 16 blocks of 16 tokens each.
    event = {"type": "BlockStored", "block_hashes": [2**63 + i for i in range(16)],
             "parent_block_hash": None, "token_ids": [1000 + i for i in range(256)],
             "block_size": 16, "lora_id": None, "medium": "GPU", "lora_name": None,
             "group_idx": 0}
    one = len(msgpack.packb(event))
    return msgpack.packb([1.0, [event] * ((size - 16) // one), 0])

payload = {
    "empty maps": lambda: flood(b"\x80", True),
    "one-entry maps": lambda: flood(b"\x81\xa0\xc0", True),
    "one-element arrays": lambda: flood(b"\x91\xc0", True),
    "negative fixints in open arrays": lambda: flood(b"\xe0", False),
    "vLLM-shaped events": vllm_shaped,
    "long token_ids": lambda: long_field("token_ids"),
    "long block_hashes": lambda: long_field("block_hashes"),
    "long extra keys": lambda: long_field("extra_keys"),
}[shape]()
decoder = EventDecoder("0.31.0", limits=DecodeLimits(max_payload_bytes=max_payload))
start = time.process_time()
try:
    batch = decoder.decode_batch(payload)
    outcome = {"events": len(batch.events)}
except Exception as exc:
    outcome = {"error": type(exc).__name__, "message": str(exc)}
outcome["cpu_s"] = time.process_time() - start
outcome["size"] = len(payload)
outcome["peak_rss"] = peak_rss()
print(json.dumps(outcome))
"""

Bounded = Callable[..., dict[str, Any]]


def _decode_in_child(bounded: Bounded, shape: str, size: int,
                     max_payload: int) -> dict[str, Any]:
    outcome = bounded(_CHILD, address_space=2 * GiB,
                      stdin=json.dumps([shape, size, max_payload]))
    assert outcome["peak_rss"] < 2 * GiB, outcome
    assert outcome["cpu_s"] < 5, outcome
    return outcome


DEFAULT_MAX = DecodeLimits().max_payload_bytes


@pytest.mark.parametrize("shape", ["empty maps", "one-entry maps", "one-element arrays"])
def test_a_container_flood_of_the_maximum_size_fails_on_the_budget(
        bounded: Bounded, shape: str) -> None:
    outcome = _decode_in_child(bounded, shape, DEFAULT_MAX, DEFAULT_MAX)
    assert outcome["size"] > DEFAULT_MAX * 0.99
    assert outcome["error"] == "PayloadTooLargeError", outcome
    assert "max_containers" in outcome["message"]


def test_the_issues_60_mb_of_empty_maps_fails_on_the_budget_under_a_64_mib_limit(
        bounded: Bounded) -> None:
    # The issue's payload, decoded with the old default limit: it took 7.5 GB and 73 s.
    outcome = _decode_in_child(bounded, "empty maps", 60_000_000, 64 * 1024**2)
    assert outcome["error"] == "PayloadTooLargeError", outcome
    assert "max_containers" in outcome["message"]


def test_the_issues_60_mb_payload_is_over_the_default_size() -> None:
    # Refused on its length, before msgpack sees a byte.
    with pytest.raises(PayloadTooLargeError, match="max_payload_bytes"):
        EventDecoder("0.31.0").decode(bytes(60_000_000))


def test_open_arrays_of_1_byte_ints_fail_within_the_bound(bounded: Bounded) -> None:
    # No hook sees an array that never completes: the payload size alone bounds
    # this flood, the costliest per byte (a 32-byte int object per byte).
    outcome = _decode_in_child(bounded, "negative fixints in open arrays", DEFAULT_MAX,
                               DEFAULT_MAX)
    assert outcome["size"] > DEFAULT_MAX * 0.99
    assert outcome["error"] == "MalformedPayloadError", outcome


def test_a_vllm_shaped_payload_of_the_maximum_size_decodes_within_the_bound(
        bounded: Bounded) -> None:
    outcome = _decode_in_child(bounded, "vLLM-shaped events", DEFAULT_MAX, DEFAULT_MAX)
    assert outcome["size"] > DEFAULT_MAX * 0.99
    assert outcome.get("events", 0) > 10_000, outcome


@pytest.mark.parametrize("field", ["token_ids", "block_hashes", "extra keys"])
def test_fields_of_millions_of_ints_decode_within_the_bound(bounded: Bounded,
                                                            field: str) -> None:
    # Checked item by item in Python, 4 Mi ints took a second per event.
    outcome = _decode_in_child(bounded, f"long {field}", DEFAULT_MAX, DEFAULT_MAX)
    assert outcome["size"] > DEFAULT_MAX * 0.8
    assert outcome.get("events", 0) >= 7, outcome


# ----------------------------------------------------------------------------- the count

# [ts, [{type, block_hashes: [h], medium}], rank]: the batch and events arrays,
# the event map and its 3 entries, the block_hashes array.
_BATCH = msgpack.packb(
    [1.0, [{"type": "BlockRemoved", "block_hashes": [7], "medium": "GPU"}], 0])
_CONTAINERS = 7


def test_the_budget_counts_arrays_maps_and_map_entries() -> None:
    fits = EventDecoder("0.31.0", limits=DecodeLimits(max_containers=_CONTAINERS))
    assert fits.decode_batch(_BATCH).events == (BlockRemoved(block_hashes=(7,), medium="GPU"),)
    short = EventDecoder("0.31.0", limits=DecodeLimits(max_containers=_CONTAINERS - 1))
    with pytest.raises(PayloadTooLargeError, match=rf"max_containers \({_CONTAINERS - 1}\)"):
        short.decode_batch(_BATCH)


def test_the_budget_is_per_payload() -> None:
    decoder = EventDecoder("0.31.0", limits=DecodeLimits(max_containers=_CONTAINERS))
    for _ in range(3):
        assert len(decoder.decode_batch(_BATCH).events) == 1
