"""The decoder's msgspec path (the ``events-fast`` extra) against the reference path.

:mod:`prefixkey.events._msgspec` decodes a payload in C when msgspec accepts
it and encodes it back to the same bytes, and leaves everything else to the
pure-Python path. It must be unobservable: on the payloads harvested from
real vLLM wheels of every era (which it must all take), on mutations of them
as the fuzz targets make them, and on hand-made hostile payloads, ``_ops``
(what ``PrefixIndex.ingest`` applies) and ``decode`` give the same ops and
events, warnings, ignored counts and typed errors (type, field, event index,
message) as the reference path, event by event, field by field.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import tracemalloc
from typing import Any

import msgpack
import pytest
from fuzzing import decode_outcome, harvested_payloads, mutate_payload, reference_decode

from prefixkey.events import (
    WIRE_ERAS,
    DecodeLimits,
    EventDecoder,
    wire_era,
)
from prefixkey.events._layouts import op_of

pytest.importorskip("msgspec", reason="the msgspec path needs the events-fast extra")

ERAS = [era.since for era in WIRE_ERAS]
PAYLOADS = harvested_payloads()
ALL = [p for payloads in PAYLOADS.values() for p in payloads]
MUTATIONS = 1500


def _reference_ops(decoder: EventDecoder, payload: bytes) -> tuple[Any, ...]:
    decoded = reference_decode(decoder, payload)
    batch = decoded.batch
    return (batch.ts, batch.data_parallel_rank, list(map(op_of, batch.events)),
            decoded.warnings)


def _ops(decoder: EventDecoder, payload: bytes) -> tuple[Any, ...]:
    return decoder.ops(payload)


def _same(version: str, payload: bytes, limits: DecodeLimits | None = None) -> bool:
    """Assert the msgspec path is unobservable on ``payload``; whether it took it."""
    fast = EventDecoder(version, limits=limits)._fast
    assert fast is not None
    taken = fast.ops(payload) is not None
    assert taken == (fast.events(payload) is not None)
    for decode, reference in ((_ops, _reference_ops), (EventDecoder.decode, reference_decode)):
        slow = EventDecoder(version, limits=limits)
        slow._fast = None
        got = decode_outcome(decode, EventDecoder(version, limits=limits), payload)
        assert got == decode_outcome(reference, slow, payload), payload
        if taken:  # what it takes the reference accepts, with nothing to report
            assert got[0] == "ok" and got[2] == {}
    return taken


@pytest.mark.parametrize("version", ERAS)
def test_the_msgspec_path_takes_every_harvested_payload(version: str) -> None:
    # Real vLLM's msgspec encoder wrote these: the era's schema must describe them exactly.
    assert PAYLOADS[version]
    assert all(_same(version, p) for p in PAYLOADS[version])


@pytest.mark.parametrize("version", ERAS)
def test_the_msgspec_path_decodes_mutations_as_the_reference_path(version: str) -> None:
    rng = random.Random(f"msgspec/{version}")
    own = PAYLOADS[version]
    taken = 0
    for _ in range(MUTATIONS):
        base = rng.choice(own) if rng.random() < 0.8 else rng.choice(ALL)
        taken += _same(version, mutate_payload(rng, base, ALL))
    assert 0 < taken < MUTATIONS  # both ways were exercised


def _event(**changes: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "BlockStored", "block_hashes": [1, 2**64 - 1], "parent_block_hash": None,
        "token_ids": list(range(2, 34)), "block_size": 16, "lora_id": None, "medium": "GPU",
        "lora_name": None, "group_idx": 0}
    event.update(changes)
    # In vLLM's order (the tag, then the declared fields), unknown keys last.
    order = ["type", *wire_era("0.31.0")[0].block_stored_fields]
    ordered = sorted(event, key=lambda k: order.index(k) if k in order else len(order))
    return {k: event[k] for k in ordered if event[k] is not _DROP}


_DROP = object()


def _map_batch(*events: Any, ts: Any = 1.5, rank: Any = 0, tail: tuple[Any, ...] = ()) -> bytes:
    return bytes(msgpack.packb([ts, list(events), rank, *tail], use_bin_type=True))


def _dup(key: str, value: Any) -> bytes:
    """A 0.31 batch of one BlockStored whose map repeats ``key`` (msgpack cannot pack that)."""
    entries = [*_event().items(), (key, value)]
    body = bytes([0x80 + len(entries)]) + b"".join(
        msgpack.packb(k) + msgpack.packb(v, use_bin_type=True) for k, v in entries)
    return b"\x93\xcb" + struct.pack(">d", 1.5) + b"\x91" + body + b"\x00"


MAP_HOSTILE: dict[str, bytes] = {
    "canonical": _map_batch(_event()),
    "removed and cleared": _map_batch(
        _event(), {"type": "BlockRemoved", "block_hashes": [1], "medium": "GPU", "group_idx": 0},
        {"type": "AllBlocksCleared"}),
    "bytes hashes": _map_batch(_event(block_hashes=[b"\x01" * 32], parent_block_hash=b"\x02")),
    "a duplicate key": _dup("medium", "CPU"),
    "a duplicate hashes key": _dup("block_hashes", [5]),
    "an explicit nil optional": _map_batch(_event(session_id=None)),
    "an unknown key": _map_batch(_event(zzz=1)),
    "keys out of order": _map_batch({"block_hashes": [1], "type": "BlockRemoved",
                                     "medium": "GPU"}),
    "an int ts": _map_batch(_event(), ts=2),
    "a NaN ts": _map_batch(_event(), ts=float("nan")),
    "an inf ts": _map_batch(_event(), ts=float("inf")),
    "a float32 ts": b"\x93\xca" + struct.pack(">f", 1.5) + b"\x90\x00",
    "a bool token id": _map_batch(_event(token_ids=[True, 3])),
    "a float token id": _map_batch(_event(token_ids=[3.0])),
    "a bool block_size": _map_batch(_event(block_size=True)),
    "a float block_size": _map_batch(_event(block_size=16.0)),
    "a str hash": _map_batch(_event(block_hashes=["1"])),
    "a nil hash": _map_batch(_event(block_hashes=[None])),
    "a missing required field": _map_batch(_event(lora_name=_DROP)),
    "an unknown tag": _map_batch(_event(type="BlockMoved")),
    "a nil rank": _map_batch(_event(), rank=None),
    "a bool rank": _map_batch(_event(), rank=True),
    "a trailing batch field": _map_batch(_event(), tail=(1,)),
    "events as an array event": _map_batch(["BlockRemoved", [1], "GPU"]),
    "trailing bytes": _map_batch(_event()) + b"\x00",
    "truncated": _map_batch(_event())[:-3],
    "an ext value": _map_batch(_event()).replace(b"\xa3GPU", b"\xd4\x01\x02\x00\x00", 1),
    "a huge array head": b"\x93\xcb" + struct.pack(">d", 1.5) + b"\xdd\xff\xff\xff\xff\x01",
    "a huge str head": _map_batch(_event()).replace(b"\xa3GPU", b"\xdb\xff\xff\xff\xff", 1),
    "a huge map head": b"\x93\xcb" + struct.pack(">d", 1.5) + b"\x91\xdf\xff\xff\xff\xff",
    "not UTF-8": _map_batch(_event()).replace(b"\xa3GPU", b"\xa3G\xffU", 1),
    "a UTF-8 surrogate": _map_batch(_event()).replace(b"\xa3GPU", b"\xa3\xed\xa0\x80", 1),
    "a str8 head for a short str": _map_batch(_event()).replace(b"\xa3GPU", b"\xd9\x03GPU", 1),
    "a uint64 head for a small int": _map_batch(_event(block_size=200)).replace(
        b"\xcc\xc8", b"\xcf" + (200).to_bytes(8, "big"), 1),
    "a token-id array past the decoder's scan bound": _map_batch(
        _event(token_ids=list(range(70_000)))),
    "extra keys": _map_batch(_event(extra_keys=[["lora", ["mm", 3], b"\x01"], None])),
    "extra keys with a map": _map_batch(_event(extra_keys=[[{"a": 1}]])),
    "extra keys with NaN": _map_batch(_event(extra_keys=[[float("nan")]])),
    "extra keys with a float": _map_batch(_event(extra_keys=[[1.5]])),
    "extra keys as a str": _map_batch(_event(extra_keys="x")),
    "extra keys with a str entry": _map_batch(_event(extra_keys=["x"])),
    "extra keys nested deep": _map_batch(_event(extra_keys=[[[[[[[["deep"]]]]]]]])),
    "extra keys not UTF-8": _map_batch(_event(extra_keys=[["GPU"]])).replace(
        b"\x91\xa3GPU", b"\x91\xa3G\xffU", 1),
    "extra keys with an ext": _map_batch(_event(extra_keys=[["GPU"]])).replace(
        b"\x91\xa3GPU", b"\x91\xd4\x01\x02", 1),
    "extra keys with a huge head": _map_batch(_event(extra_keys=[["GPU"]])).replace(
        b"\x91\xa3GPU", b"\x91\xdd\xff\xff\xff\xff", 1),
    "an explicit nil extra keys": _map_batch(_event(extra_keys=None)),
    "ownership as a str": _map_batch({"type": "BlockRemoved", "block_hashes": [1],
                                      "medium": "GPU", "ownership": "x"}),
    "ownership as an int": _map_batch({"type": "BlockRemoved", "block_hashes": [1],
                                       "medium": "GPU", "ownership": 1}),
}


@pytest.mark.parametrize("case", list(MAP_HOSTILE))
def test_hostile_map_payloads_decode_as_the_reference_path(case: str) -> None:
    taken = _same("0.31.0", MAP_HOSTILE[case])
    # vLLM's own forms are taken; every other form goes to the reference path.
    assert taken == (case in {
        "canonical", "removed and cleared", "bytes hashes", "a nil rank", "extra keys",
        "a token-id array past the decoder's scan bound",
        "extra keys with a float", "an explicit nil extra keys", "ownership as a str"}), case


def _array_event(*tail: Any) -> list[Any]:
    # 0.22's BlockStored, all 11 fields as vLLM's array-like structs write them.
    return ["BlockStored", [1, 2], None, [5, 6, 7], 16, None, "GPU", None, *tail]


ARRAY_HOSTILE: dict[str, Any] = {
    "canonical": [1.5, [_array_event(None, 0, None, None)], 0],
    "trailing defaults omitted": [1.5, [_array_event(None, 0)], 0],
    "a trailing field": [1.5, [_array_event(None, 0, None, None, 9)], 0],
    "a missing required field": [1.5, [_array_event()[:-1]], 0],
    "a bool lora id": [1.5, [["BlockStored", [1], None, [5], 16, True, "GPU", None, None, 0,
                              None, None]], 0],
    "a map event": [1.5, [{"type": "AllBlocksCleared"}], 0],
    "cleared with a field": [1.5, [["AllBlocksCleared", 1]], 0],
    "no rank": [1.5, [["AllBlocksCleared"]]],
}


@pytest.mark.parametrize("case", list(ARRAY_HOSTILE))
def test_hostile_array_payloads_decode_as_the_reference_path(case: str) -> None:
    payload = bytes(msgpack.packb(ARRAY_HOSTILE[case], use_bin_type=True))
    assert _same("0.22.0", payload) == (case == "canonical"), case


def test_no_payload_is_tried_past_the_bounds_it_cannot_check() -> None:
    payload = MAP_HOSTILE["canonical"]
    # A token-id array longer than max_array_len: the reference path's PayloadTooLargeError.
    tight = DecodeLimits(max_array_len=8)
    assert EventDecoder("0.31.0", limits=tight)._fast.max_bytes == 8  # type: ignore[union-attr]
    assert not _same("0.31.0", payload, tight)
    # Maps bounded below an event's keys: never tried.
    assert EventDecoder("0.31.0", limits=DecodeLimits(max_map_len=8))._fast.max_bytes == 0  # type: ignore[union-attr]
    assert not _same("0.31.0", payload, DecodeLimits(max_map_len=8))
    assert not _same("0.31.0", payload, DecodeLimits(max_containers=16))
    # Not bytes: the reference path's checks.
    decoder = EventDecoder("0.31.0")
    assert decoder.ops(bytearray(payload)) == decoder.ops(payload)  # type: ignore[arg-type]


def test_a_huge_announced_length_allocates_nothing() -> None:
    decoder = EventDecoder("0.31.0")
    fast = decoder._fast
    assert fast is not None
    heads = [b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff",
             b"\xc6\xff\xff\xff\xff"]
    for head in heads:
        for payload in (b"\x93\xcb" + struct.pack(">d", 1.5) + head + b"\x01" * 64,
                        MAP_HOSTILE["extra keys"].replace(b"\x93\xa4lora", b"\x93" + head, 1)):
            tracemalloc.start()
            try:
                assert fast.ops(payload) is None and fast.events(payload) is None
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert peak < 64 * 1024, (head, peak)


@pytest.mark.parametrize("closed", [False, True], ids=["never closed", "closed"])
def test_the_largest_payload_tried_stays_within_the_decoders_memory_bound(closed: bool) -> None:
    # A BlockStored whose token ids fill the payload up to the largest size tried, as ints
    # that are not cached objects: the pure-Python path's costliest shape (docs/events.md,
    # "Bounds": ~40 bytes per payload byte); the C path must not cost more before it answers.
    fast = EventDecoder("0.31.0")._fast
    assert fast is not None
    head = (b"\x93\xcb" + struct.pack(">d", 1.5) + b"\x91\x89\xa4type\xabBlockStored"
            b"\xacblock_hashes\x90\xb1parent_block_hash\xc0\xa9token_ids")
    tail = (b"\xaablock_size\x10\xa7lora_id\xc0\xa6medium\xa3GPU\xa9lora_name\xc0"
            b"\xa9group_idx\x00\x00")
    unit = b"\xcd\x01\x2c"  # 300
    n = (fast.max_bytes - len(head) - 5 - len(tail)) // len(unit)
    payload = head + b"\xdd" + struct.pack(">I", n + (not closed)) + unit * n + tail
    assert fast.max_bytes - len(unit) < len(payload) <= fast.max_bytes
    tracemalloc.start()
    try:
        taken = fast.ops(payload) is not None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert taken == closed
    assert peak < 40 * len(payload)


def test_without_msgspec_the_decoder_is_unchanged() -> None:
    code = (
        "import sys; sys.modules['msgspec'] = None\n"
        "import msgpack\n"
        "from prefixkey.events import EventDecoder\n"
        "d = EventDecoder('0.31.0')\n"
        "p = msgpack.packb([1.5, [{'type': 'AllBlocksCleared'}], 0])\n"
        "print(d._fast, tuple(d.ops(p)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split(maxsplit=1)
    assert out == ["None", "(1.5, 0, [(2, (), None, None)], ())\n"]


def test_importing_the_events_package_does_not_load_msgspec() -> None:
    code = ("import sys; import prefixkey.events; print('msgspec' in sys.modules); "
            "prefixkey.events.EventDecoder('0.31.0'); print('msgspec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]
