"""Hypothesis properties of Hasher / RequestBlockHasher, for all four algorithms.

Besides the structural properties (split independence, prefix stability,
chaining), every request is checked against a from-scratch reference of the
0.31 closed form (spec §3.9) built on the real ``pickle.dumps`` / ``cbor2``
with engine-shaped object identity.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import replace
from typing import Any

import cbor2
import msgpack
import pytest
import xxhash
from hypothesis import assume, given
from hypothesis import strategies as st

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

ALGOS = ["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"]
SEEDS = {"sha256": None, "sha256_cbor": None, "xxhash": "0", "xxhash_cbor": "0"}


def make_hasher(algo: str, block_size: int, seed: str | None = None) -> Hasher:
    return Hasher(block_size=block_size, hash_algo=algo,
                  python_hash_seed=seed if seed is not None else SEEDS[algo])


# --------------------------------------------------------------------------
# Reference: spec §3.9, on the real serializers.


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
    h = lambda obj: digest(ser(obj)).digest()  # noqa: E731
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
        assert salted.extra_keys[0][-1 if req.prompt_embeds is None else -2] == (
            "cache_salt", salt)
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
    for key in make_hasher(algo, bs).block_hashes(req):
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
# Table checks of the same properties on the spec's vectors (§3.8).

SPEC_ROWS: list[tuple[str, str | None, dict[str, Any], str, str]] = [
    ("sha256", None, {}, "7b255da405e1d722823892e4fef187b4d8ac78215d7f0dd2137bb037547f4caf",
     "8e717becdc2054b7a3223b7b844f462c0db0ac86287b752b16d077ad0843c577"),
    ("sha256_cbor", None, {}, "cd7c51bc5a8fc8643f383a2b9e01522fba7473c669e9270c7b0bf7bf7fd01682",
     "2533ea50426b36e9e4d68296cac6bce8cf602e46957d0fe40b368b33d87bf3bf"),
    ("xxhash", "0", {}, "6ba7d7fc1608e5f0a4612b1b0c87458f", "dbd92304eaa08219c5cf8f4ce18166b6"),
    ("xxhash_cbor", "0", {}, "c2d7a75070fc6d6b0c3fb0af456c1009",
     "93add93233ea572fb2e2b1685bac6f8d"),
    ("sha256", None, {"cache_salt": "tenant-a"},
     "67b47fff1fdd4b5d223a715393ac45d1f1159748b35948c1cc5af6f21812adb0",
     "c95bea24a5e5b77ca1ef0ac100eaf16646db162490a5668ca214b8232315c4d9"),
    ("sha256", None, {"lora": LoRA("sql-adapter", "/models/sql")},
     "55d8be3775c0f1f9090eead060b4dbd675f4638c8429e2983162a4959c44fad4",
     "5ca95c2fb6f81e7aec1f0365c7844f1d447a1e31dce4953d54d3736ccd949aab"),
    ("sha256", None, {"mm_items": [MMItem("f" * 64, 5, 20)]},
     "6da45e0ac43623a627c57dad289433e6105664f0184989261f955ed1e7f8ef51",
     "95c9cabe143a2c167f5f8cf8d422228568c8876ffa57baf4c25248f74a133438"),
    ("sha256", None, {"lora": LoRA("sql-adapter", "/models/sql"), "cache_salt": "tenant-a",
                      "mm_items": [MMItem("f" * 64, 5, 20)]},
     "70a754744b7fb96fa8ef5e9e28c31b4bebeb72426c3b4c864bb8587c0d211967",
     "ed6f422ddee8b2a85ceec335b54689cf459f07ef860078f5b6cb99e37b3ec827"),
]


@pytest.mark.parametrize(("algo", "seed", "features", "block0", "block1"), SPEC_ROWS)
@pytest.mark.parametrize("split", [None, 0, 1, 15, 16, 17, 33, 40])
def test_spec_vectors_at_every_split(
    algo: str, seed: str | None, features: dict[str, Any], block0: str, block1: str,
    split: int | None,
) -> None:
    tokens = list(range(1, 41))
    expected = [block0, block1]
    if split is None:
        got = block_hashes(tokens, block_size=16, hash_algo=algo, python_hash_seed=seed,
                           **features)
        assert [h.hex() for h in got] == expected
        return
    floor = max((m.end for m in features.get("mm_items", [])), default=0)
    hasher = Hasher(block_size=16, hash_algo=algo, python_hash_seed=seed)
    state = hasher.start(Request(tokens[: max(split, floor)], **features))
    for t in tokens[max(split, floor):]:
        state.append([t])
    assert [h.hex() for h in state.block_hashes] == expected


def test_spec_decode_window_example() -> None:
    # §1.6: A@33+2, B@36+2, prompt 40 then decode to 64: block 32-47 names both.
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
