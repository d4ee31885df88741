"""The event decoder's cost is bounded by its input (issue 14, item 2).

A payload as large as the default decoder accepts, of the shapes that cost
the most memory per byte, must decode or fail with a typed error within 2 GiB.
Each runs in a subprocess whose address space is limited to 2 GiB (the
``bounded`` fixture), so a decoder that allocates past the bound gets a
MemoryError there instead of taking the machine with it. Their CPU time is
measured, as a ratio to msgpack's unpack, by benchmarks/bench_decode_budget.py
(a timed assertion here would fail on a loaded machine, not on a slow decoder).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgpack
import pytest
from decode_budget import DECODE_CHILD

from prefixkey.events import BlockRemoved, DecodeLimits, EventDecoder, PayloadTooLargeError

GiB = 1024**3

Bounded = Callable[..., dict[str, Any]]


def _decode_in_child(bounded: Bounded, shape: str, size: int,
                     max_payload: int) -> dict[str, Any]:
    outcome = bounded(DECODE_CHILD, address_space=2 * GiB,
                      stdin=json.dumps([shape, size, max_payload, False]))
    assert outcome["peak_rss"] < 2 * GiB, outcome
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
