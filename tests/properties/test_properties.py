"""Hypothesis properties of Hasher / RequestBlockHasher, for all four algorithms.

Besides the structural properties (split independence, prefix stability,
chaining), every request is checked against a from-scratch reference of vLLM 0.31's
block key, ``digest(serialize((parent, tuple(block_tokens), extra_keys)))``,
built on the real ``pickle.dumps`` / ``cbor2`` with engine-shaped object
identity; the table at the end replays vLLM's own keys.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import replace
from typing import Any, cast

import cbor2
import msgpack
import pytest
import xxhash
from hypothesis import assume, given
from hypothesis import strategies as st
from vector_records import vector_record

from prefixkey import (
    Hasher,
    LoRA,
    MMItem,
    PromptEmbeds,
    Request,
    block_hash_to_int64,
    block_hashes,
    event_extra_keys,
    group_block_hashes,
)
from prefixkey.core import BlockHash
from prefixkey.jsonl import parse_request

ALGOS = ["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"]
SEEDS = {"sha256": None, "sha256_cbor": None, "xxhash": "0", "xxhash_cbor": "0"}


def make_hasher(algo: str, block_size: int, seed: str | None = None) -> Hasher:
    return Hasher(block_size=block_size, hash_algo=algo,
                  python_hash_seed=seed if seed is not None else SEEDS[algo])


def _bytes(keys: list[BlockHash]) -> list[bytes]:
    """Keys of these algorithms are digests (``BlockHash`` also covers builtin hash() ints)."""
    assert all(isinstance(k, bytes) for k in keys)
    return cast("list[bytes]", keys)


# --------------------------------------------------------------------------
# Reference: vLLM 0.31's block key, on the real serializers.


def _wire(s: Any) -> Any:
    return msgpack.unpackb(msgpack.packb(s)) if isinstance(s, str) else s


def reference_keys(req: Request, block_size: int, algo: str, seed: str | None) -> list[bytes]:
    if algo.endswith("_cbor"):
        def ser(obj: Any) -> bytes:
            return cbor2.dumps(obj, canonical=True)
    else:
        def ser(obj: Any) -> bytes:
            return pickle.dumps(obj, protocol=5)
    digest = hashlib.sha256 if algo.startswith("sha256") else xxhash.xxh3_128

    def h(obj: Any) -> bytes:
        return digest(ser(obj)).digest()

    parent = h(_wire(seed if seed is not None else "vllm-none-hash"))
    tokens = list(req.token_ids)
    out = []
    for s in range(0, len(tokens) - block_size + 1, block_size):
        e = s + block_size
        ek: list[tuple[Any, ...]] = []
        if req.lora is not None:
            ek.append(("lora", _wire(req.lora.name), _wire(req.lora.path)))
        ek += [("mm", _wire(m.identifier), m.offset - s)
               for m in req.mm_items if m.offset < e and m.end > s]
        if s == 0 and req.cache_salt:
            ek.append(("cache_salt", _wire(req.cache_salt)))
        if req.prompt_embeds is not None:
            pe = req.prompt_embeds
            raw = pe.data[s * pe.row_size: e * pe.row_size]
            ek.append(("prompt_embeds", hashlib.sha256(raw).digest()))
        parent = h((parent, tuple(tokens[s:e]), tuple(ek) if ek else None))
        out.append(parent)
    return out


# --------------------------------------------------------------------------
# Strategies.

ident_st = st.one_of(st.sampled_from(["", "a", "é", "☃", "f" * 64, "img", "x" * 300]),
                     st.text(max_size=8))
token_st = st.one_of(st.integers(0, 300), st.integers(0, 2**17),
                     st.sampled_from([65535, 65536, 2**31, 2**64]))


@st.composite
def requests(draw: st.DrawFn, *, features: bool = True) -> tuple[Request, int, int]:
    """(request, block_size, prompt floor): tokens from the floor on carry no mm/embeds."""
    block_size = draw(st.integers(1, 8), label="block_size")
    n = draw(st.integers(0, 60), label="num_tokens")
    tokens = draw(st.lists(token_st, min_size=n, max_size=n), label="tokens")
    if not features:
        return Request(tokens), block_size, 0
    lora = draw(st.one_of(st.none(), st.builds(LoRA, ident_st, st.one_of(st.none(), ident_st))))
    salt = draw(st.one_of(st.none(), ident_st), label="salt")
    items = []
    pos = 0
    for _ in range(draw(st.integers(0, 4), label="num_items")):
        gap = draw(st.integers(0, 10))
        length = draw(st.integers(1, 12))
        if pos + gap + length > n:
            break
        items.append(MMItem(draw(ident_st), pos + gap, length))
        pos += gap + length
    embeds = None
    if draw(st.booleans(), label="embeds") and n:
        rows = draw(st.integers(1, n), label="rows")
        hidden = draw(st.integers(1, 3))
        data = draw(st.binary(min_size=rows * hidden * 2, max_size=rows * hidden * 2))
        embeds = PromptEmbeds(data, "float16", (rows, hidden))
        pos = max(pos, rows)
    req = Request(tokens, lora=lora, cache_salt=salt, mm_items=items, prompt_embeds=embeds)
    return req, block_size, pos


algo_st = st.sampled_from(ALGOS)


# --------------------------------------------------------------------------
# Properties.


@given(algo=algo_st, case=requests(), data=st.data())
def test_one_shot_equals_reference_and_incremental(
    algo: str, case: tuple[Request, int, int], data: st.DataObject
) -> None:
    req, bs, _ = case
    hasher = make_hasher(algo, bs)
    one_shot = hasher.start(req)
    n = len(req.token_ids)
    assert len(one_shot.block_hashes) == n // bs
    assert len(one_shot.extra_keys) == n // bs
    assert one_shot.block_hashes == reference_keys(req, bs, algo, SEEDS[algo])
    assert hasher.block_hashes(req) == one_shot.block_hashes

    # Start with any prefix (a streaming prompt may start before its items),
    # then append the rest in random chunks.
    p = data.draw(st.integers(0, n), label="prefix")
    state = hasher.start(replace(req, token_ids=list(req.token_ids[:p])))
    returned = list(state.block_hashes)
    rest = list(req.token_ids[p:])
    while rest:
        k = data.draw(st.integers(1, len(rest)), label="chunk")
        before = len(state.block_hashes)
        new = state.append(rest[:k])
        assert new == state.block_hashes[before:]
        returned += new
        rest = rest[k:]
        assert state.num_tokens == n - len(rest)
    assert state.block_hashes == one_shot.block_hashes
    assert state.extra_keys == one_shot.extra_keys
    assert returned == one_shot.block_hashes


@given(algo=algo_st, case=requests(), data=st.data())
def test_single_token_appends_equal_one_shot(
    algo: str, case: tuple[Request, int, int], data: st.DataObject
) -> None:
    req, bs, floor = case
    hasher = make_hasher(algo, bs)
    state = hasher.start(replace(req, token_ids=list(req.token_ids[:floor])))
    for t in req.token_ids[floor:]:
        state.append(t)  # a bare int is accepted too
    assert state.block_hashes == hasher.block_hashes(req)


@given(algo=algo_st, case=requests())
def test_incremental_state_does_not_follow_the_callers_list(
    algo: str, case: tuple[Request, int, int]
) -> None:
    # Request does not copy its ids, but start() does: a caller that goes on
    # using its list (here: appending the same tokens to it) changes nothing.
    req, bs, floor = case
    hasher = make_hasher(algo, bs)
    ids = list(req.token_ids[:floor])
    state = hasher.start(replace(req, token_ids=ids))
    for t in req.token_ids[floor:]:
        ids.append(t)
        if ids[0:1]:
            ids[0] += 1
        state.append([t])
    assert state.block_hashes == hasher.block_hashes(req)


@given(algo=algo_st, case=requests(), data=st.data())
def test_keys_of_a_prefix_are_a_prefix(
    algo: str, case: tuple[Request, int, int], data: st.DataObject
) -> None:
    req, bs, floor = case
    hasher = make_hasher(algo, bs)
    full = hasher.start(req)
    m = data.draw(st.integers(floor, len(req.token_ids)), label="prefix length")
    part = hasher.start(replace(req, token_ids=list(req.token_ids[:m])))
    assert part.block_hashes == full.block_hashes[: m // bs]
    assert part.extra_keys == full.extra_keys[: m // bs]


@given(algo=algo_st, case=requests(), data=st.data())
def test_changing_one_token_changes_its_block_and_all_later(
    algo: str, case: tuple[Request, int, int], data: st.DataObject
) -> None:
    req, bs, _ = case
    n = len(req.token_ids)
    assume(n >= bs)
    i = data.draw(st.integers(0, n - 1), label="position")
    tokens = list(req.token_ids)
    tokens[i] = tokens[i] + data.draw(st.integers(1, 2**20), label="delta")
    hasher = make_hasher(algo, bs)
    before = hasher.block_hashes(req)
    after = hasher.block_hashes(replace(req, token_ids=tokens))
    b = i // bs
    assert after[:b] == before[:b]
    for j in range(b, len(before)):
        assert after[j] != before[j], j
    assert len(set(before) | set(after[b:])) == len(before) + len(after) - b


@given(algo=algo_st, case=requests(), salt=st.text(min_size=1, max_size=20))
def test_salt_changes_every_key(algo: str, case: tuple[Request, int, int], salt: str) -> None:
    req, bs, _ = case
    assume(not req.cache_salt)
    hasher = make_hasher(algo, bs)
    plain = hasher.start(req)
    salted = hasher.start(replace(req, cache_salt=salt))
    assert all(a != b for a, b in zip(plain.block_hashes, salted.block_hashes, strict=True))
    if salted.extra_keys:
        first = salted.extra_keys[0]
        assert first is not None
        assert first[-1 if req.prompt_embeds is None else -2] == ("cache_salt", salt)
        # Only block 0 carries it; later blocks differ through the chain alone.
        assert salted.extra_keys[1:] == plain.extra_keys[1:]


@given(algo=algo_st, case=requests())
def test_empty_salt_equals_no_salt(algo: str, case: tuple[Request, int, int]) -> None:
    req, bs, _ = case
    hasher = make_hasher(algo, bs)
    none = hasher.start(replace(req, cache_salt=None))
    empty = hasher.start(replace(req, cache_salt=""))
    assert empty.block_hashes == none.block_hashes
    assert empty.extra_keys == none.extra_keys


@given(algo=algo_st, case=requests(), name=ident_st, path=st.one_of(st.none(), ident_st))
def test_lora_changes_every_key(
    algo: str, case: tuple[Request, int, int], name: str, path: str | None
) -> None:
    req, bs, _ = case
    base = replace(req, lora=None)
    hasher = make_hasher(algo, bs)
    plain = hasher.start(base)
    adapted = hasher.start(replace(base, lora=LoRA(name, path)))
    assert all(a != b for a, b in zip(plain.block_hashes, adapted.block_hashes, strict=True))
    for keys in adapted.extra_keys:
        assert keys is not None
        assert keys[0] == ("lora", name, path)


@given(algo=algo_st, case=requests(features=False), data=st.data())
def test_mm_item_changes_keys_from_its_first_block_on(
    algo: str, case: tuple[Request, int, int], data: st.DataObject
) -> None:
    req, bs, _ = case
    n = len(req.token_ids)
    assume(n >= 1)
    offset = data.draw(st.integers(0, n - 1), label="offset")
    length = data.draw(st.integers(1, n - offset), label="length")
    ident = data.draw(ident_st, label="identifier")
    hasher = make_hasher(algo, bs)
    plain = hasher.start(req)
    with_mm = hasher.start(replace(req, mm_items=[MMItem(ident, offset, length)]))
    first = offset // bs
    assert with_mm.block_hashes[:first] == plain.block_hashes[:first]
    later = zip(plain.block_hashes[first:], with_mm.block_hashes[first:], strict=True)
    assert all(a != b for a, b in later)
    for j, keys in enumerate(with_mm.extra_keys):
        s, e = j * bs, (j + 1) * bs
        if offset < e and offset + length > s:
            assert keys == (("mm", ident, offset - s),)
        else:
            assert keys is None


@given(algo=algo_st, case=requests())
def test_event_int_is_low_64_bits_big_endian(algo: str, case: tuple[Request, int, int]) -> None:
    req, bs, _ = case
    for key in _bytes(make_hasher(algo, bs).block_hashes(req)):
        value = block_hash_to_int64(key)
        assert value == int.from_bytes(key[-8:], "big")
        assert 0 <= value < 2**64
        assert len(key) == (16 if algo.startswith("xxhash") else 32)


@given(algo=algo_st, case=requests(), k=st.integers(1, 6))
def test_group_block_hashes_pick_every_kth_fine_key(
    algo: str, case: tuple[Request, int, int], k: int
) -> None:
    req, bs, _ = case
    fine = make_hasher(algo, bs).block_hashes(req)
    coarse = group_block_hashes(fine, bs, k * bs)
    assert len(coarse) == len(fine) // k
    for j, key in enumerate(coarse):
        assert key == fine[(j + 1) * k - 1]


@given(algo=algo_st, case=requests())
def test_event_extra_keys_drop_the_tags(algo: str, case: tuple[Request, int, int]) -> None:
    req, bs, _ = case
    hasher = make_hasher(algo, bs)
    for keys in hasher.start(req).extra_keys:
        event = event_extra_keys(keys, hasher.era)
        if keys is None:
            assert event is None
            continue
        assert event is not None
        assert len(event) == len(keys)
        for key, ev in zip(keys, event, strict=True):
            assert ev == (key[1:] if key[0] == "mm" else key[1])


@given(algo=algo_st, case=requests(), seed=st.text(max_size=10))
def test_seed_changes_every_key_and_is_used_verbatim(
    algo: str, case: tuple[Request, int, int], seed: str
) -> None:
    req, bs, _ = case
    hasher = make_hasher(algo, bs, seed)
    assert hasher.block_hashes(req) == reference_keys(req, bs, algo, seed)
    assume(seed != SEEDS[algo] and seed != "vllm-none-hash")
    other = make_hasher(algo, bs)
    pairs = zip(hasher.block_hashes(req), other.block_hashes(req), strict=True)
    assert all(a != b for a, b in pairs)


# --------------------------------------------------------------------------
# vLLM 0.31.0's own keys (tests/vectors/0.31.0.jsonl) for one request of each
# algorithm and feature, with the prompt cut anywhere and the rest appended.

SPLIT_RECORDS = [
    "prefixkey-00006/sha256", "prefixkey-00006/sha256_cbor", "prefixkey-00006/xxhash",
    "prefixkey-00006/xxhash_cbor",
    "prefixkey-00054/sha256",  # cache_salt
    "prefixkey-00040/sha256",  # lora
    "prefixkey-00059/sha256",  # mm_items
    "prefixkey-00092/sha256",  # all three, PYTHONHASHSEED unset
]


@pytest.mark.parametrize("record_id", SPLIT_RECORDS)
def test_vector_keys_at_every_split(record_id: str) -> None:
    record = vector_record("0.31.0", record_id)
    expected = record["result"]["block_hashes"]
    job = parse_request({**record["case"], "vllm_version": record["version"]})
    hasher, tokens = job.hasher, job.token_ids
    request = replace(job.request, token_ids=tokens)  # the job's starts at its first call
    assert len(expected) >= 2
    assert [h.hex() for h in _bytes(hasher.block_hashes(request))] == expected
    size, case = hasher.block_size, record["case"]
    one_call = block_hashes(
        tokens, block_size=size, hash_algo=case["hash_algo"],
        python_hash_seed=case["python_hash_seed"], vllm_version=record["version"],
        lora=request.lora, cache_salt=request.cache_salt, mm_items=request.mm_items,
    )
    assert [h.hex() for h in _bytes(one_call)] == expected
    floor = max((m.end for m in request.mm_items), default=0)  # items sit in the prompt
    for split in sorted({0, 1, size - 1, size, size + 1, 2 * size + 1, len(tokens)}):
        state = hasher.start(replace(request, token_ids=tokens[: max(split, floor)]))
        for t in tokens[max(split, floor):]:
            state.append([t])
        assert [h.hex() for h in _bytes(state.block_hashes)] == expected, split


def test_decode_block_names_the_items_of_the_prompt_tail() -> None:
    # A@33+2, B@36+2, prompt 40 then decode to 64: block 32-47 names both (vLLM 0.31+).
    tokens = list(range(64))
    items = [MMItem("A", 33, 2), MMItem("B", 36, 2)]
    hasher = Hasher(block_size=16)
    state = hasher.start(Request(tokens[:40], mm_items=items))
    state.append(tokens[40:])
    assert state.extra_keys[2] == (("mm", "A", 1), ("mm", "B", 4))
    assert state.block_hashes == hasher.block_hashes(Request(tokens, mm_items=items))


def test_prompt_embeds_blocks_past_the_prompt_digest_empty() -> None:
    embeds = PromptEmbeds(bytes(range(24)), "float32", (3, 2))
    hasher = Hasher(block_size=2)
    state = hasher.start(Request([0, 0, 0], prompt_embeds=embeds))
    state.append([7, 8, 9])
    empty = hashlib.sha256(b"").digest()
    assert state.extra_keys[0] == (("prompt_embeds", hashlib.sha256(bytes(range(16))).digest()),)
    second = hashlib.sha256(bytes(range(16, 24))).digest()
    assert state.extra_keys[1] == (("prompt_embeds", second),)
    assert state.extra_keys[2] == (("prompt_embeds", empty),)
