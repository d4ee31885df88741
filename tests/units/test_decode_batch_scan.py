"""The decoder's fast path types a whole batch's hashes and token ids in one scan.

Through a list of their types up to ``_SCAN`` elements, counted one by one
past it (no list of millions): both ways must accept and reject exactly what
the reference path (``EventDecoder._event``, field by field) does, digest
bytes hashes included, and name the first failing element.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from prefixkey.errors import PrefixKeyError
from prefixkey.events import DecodedBatch, EventBatch, EventDecoder, EventFieldError
from prefixkey.events._layouts import _SCAN

V = "0.31.0"


def _pure(version: str) -> EventDecoder:
    """A decoder without the msgspec path (tests/fuzz/test_decode_msgspec.py tests that)."""
    decoder = EventDecoder(version)
    decoder._fast = None
    return decoder


def _payload(per_event: int, hashes: list[Any], tokens_at: dict[tuple[int, int], Any]) -> bytes:
    """Two BlockStored events of ``per_event`` token ids each (some replaced)."""
    events = []
    for e in range(2):
        tokens: list[Any] = [7 + j % 1000 for j in range(per_event)]
        for (at_event, at), value in tokens_at.items():
            if at_event == e:
                tokens[at] = value
        events.append({"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": None,
                       "token_ids": tokens, "block_size": 16, "lora_id": None, "medium": "GPU",
                       "lora_name": None, "group_idx": 0})
    return bytes(msgpack.packb([1.0, events, 0], use_bin_type=True))


def _reference(payload: bytes) -> DecodedBatch:
    decoder = EventDecoder(V)
    warnings: list[str] = []
    ts, events, rank = decoder._batch(payload, warnings)
    decoded = tuple(decoder._event(i, raw, warnings) for i, raw in enumerate(events))
    return DecodedBatch(EventBatch(ts, decoded, rank), tuple(warnings))


def _outcome(decode: Any, payload: bytes) -> tuple[Any, ...]:
    try:
        return ("ok", decode(payload))
    except PrefixKeyError as exc:
        return ("error", type(exc), getattr(exc, "field", None), str(exc))


# Below the list's bound, and past it (two events of 40k ids: counted one by one).
SIZES = [64, _SCAN // 2 + 1]
CASES: dict[str, tuple[list[Any], dict[tuple[int, int], Any]]] = {
    "int hashes": ([1, 2, 3], {}),
    "bytes hashes": ([b"\x01" * 32, b"\x02" * 32], {}),
    "mixed hashes": ([1, b"\x02" * 32], {}),
    "a bool token id, last": ([1, 2], {(1, -1): True}),
    "a bool token id, first": ([1, 2], {(0, 0): False}),
    "a bytes token id with bytes hashes": ([b"\x01" * 32], {(1, 5): b"\x00"}),
    "a float token id": ([1], {(0, 3): 1.5}),
    "a str hash": (["x"], {}),
    "a bool hash": ([True, 2], {}),
}


@pytest.mark.parametrize("per_event", SIZES, ids=["listed", "counted"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_batch_scan_decides_as_the_reference_path(case: str, per_event: int) -> None:
    hashes, replaced = CASES[case]
    tokens_at = {(e, at % per_event): v for (e, at), v in replaced.items()}
    payload = _payload(per_event, hashes, tokens_at)
    got = _outcome(_pure(V).decode, payload)
    assert got == _outcome(_reference, payload)
    assert (got[0] == "ok") == (not replaced and case.endswith("hashes"))


def test_the_first_failing_token_id_is_named_past_the_list_bound() -> None:
    per_event = _SCAN // 2 + 1
    payload = _payload(per_event, [1], {(1, per_event - 1): True, (1, 9): True})
    with pytest.raises(EventFieldError) as info:
        _pure(V).decode(payload)
    assert info.value.field == "events[1].token_ids[9]" and info.value.event_index == 1
