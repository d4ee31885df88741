"""The pickle algorithms' object identity, and ``chain``'s blocks, against the engine's.

prefixkey pickles with CPython's own ``pickle.dumps(obj, protocol=5)``, so
what can differ from vLLM is the objects it pickles: pickle's memo writes a
back-reference when the *same object* appears twice in one dump. The
reference object is built the way vLLM's engine core holds it: the tag
strings are shared literals (one object per tag, as in vLLM's source), and
every data string (LoRA name and path, mm identifier, salt) is its own object,
decoded by msgpack from the front end. CPython hands back its shared singleton
for ``""`` and one-character Latin-1 strings whatever decoded them, so those
back-reference in the reference pickle exactly as they do in the engine.
"""

from __future__ import annotations

import pickle
import pickletools
from functools import partial
from typing import Any

import msgpack
import pytest
from block_chains import DIGESTS, block_starts, reference_chain
from hypothesis import given
from hypothesis import strategies as st

from prefixkey.core import CACHE_SALT_TAG, LORA_TAG, MM_TAG, PROMPT_EMBEDS_TAG
from prefixkey.core import _pickle_encoding as pe
from prefixkey.core._extra_keys import engine_string

# --------------------------------------------------------------------------
# Building the prefixkey input and the engine-shaped reference side by side.

#: The engine's tags: one shared plain-str object each (literals are interned).
REF_TAGS: dict[str, str] = {
    "lora": "lora",
    "mm": "mm",
    "cache_salt": "cache_salt",
    "prompt_embeds": "prompt_embeds",
}
PK_TAGS: dict[str, str] = {
    "lora": LORA_TAG,
    "mm": MM_TAG,
    "cache_salt": CACHE_SALT_TAG,
    "prompt_embeds": PROMPT_EMBEDS_TAG,
}


def wire_str(s: str) -> str:
    """A data string as the engine core receives it: freshly msgpack-decoded."""
    out = msgpack.unpackb(msgpack.packb(s))
    assert out == s
    assert type(out) is str
    return out


def wire_bytes(b: bytes) -> bytes:
    """A bytes value as its own object (for 32-byte digests, never shared)."""
    return bytes(bytearray(b))


def build(spec: tuple[tuple[Any, ...], ...] | None) -> tuple[Any, Any]:
    """(prefixkey extra keys, engine-shaped reference extra keys) from a spec.

    The spec holds plain values and shares its string objects freely; prefixkey
    gets its tags and every data string through ``engine_string``, as its
    ExtraKeysBuilder does; the reference gets shared plain tags and fresh data
    strings decoded by msgpack.
    """
    if spec is None:
        return None, None
    ours, ref = [], []
    for key in spec:
        tag, *rest = key
        ours.append((PK_TAGS[tag], *(engine_string(v) if isinstance(v, str) else v
                                     for v in rest)))
        ref_rest = [
            wire_str(v) if isinstance(v, str) else wire_bytes(v) if isinstance(v, bytes) else v
            for v in rest
        ]
        ref.append((REF_TAGS[tag], *ref_rest))
    return tuple(ours), tuple(ref)


def ours_block(parent: bytes, tokens: list[int], extra: Any) -> bytes:
    return serialize_block(wire_bytes(parent), pe.encode_tokens(tokens),
                           pe.encode_extra_keys_tail(fresh_bytes(extra)))


def fresh_bytes(extra: Any) -> Any:
    """Bytes (the parent, embedding digests) are fresh digest objects in the engine
    and in prefixkey's hasher alike: hand the encoder fresh objects too."""
    if extra is None:
        return None
    return tuple(
        tuple(wire_bytes(v) if isinstance(v, bytes) else v for v in key) for key in extra
    )


def serialize_block(parent: bytes, encoded_tokens: Any, tail: Any) -> bytes:
    """The serialized block tuple: ``chain`` with the identity as digest returns it."""
    n = len(encoded_tokens)
    [out] = pe.chain(parent, encoded_tokens, range(0, 1), n, [tail], lambda b: b)
    assert isinstance(out, bytes)
    return out


def ref_block(parent: bytes, tokens: list[int], ref_extra: Any) -> bytes:
    return pickle.dumps((wire_bytes(parent), tuple(tokens), ref_extra), protocol=5)


def assert_same(ours: bytes, ref: bytes) -> None:
    if ours != ref:  # pragma: no cover - failure diagnostics only
        pairs = enumerate(zip(ours, ref, strict=False))
        i = next((i for i, (a, b) in pairs if a != b), min(len(ours), len(ref)))
        lo, hi = max(0, i - 16), i + 16
        pytest.fail(
            f"pickle differs at byte {i} (ours {len(ours)} bytes, pickle {len(ref)} bytes): "
            f"ours {ours[lo:hi].hex()} vs pickle {ref[lo:hi].hex()}"
        )
    assert ours == ref


# --------------------------------------------------------------------------
# Strategies.

TOKEN_BOUNDARIES = [
    0, 1, 127, 128, 255, 256, 257, 65535, 65536, 65537,
    (1 << 18) - 1, 1 << 18,  # prefixkey's lookup-table edge
    2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1, 2**64,
    2**127, 2**2031, 2**2039, 2**3000,  # LONG1 max and LONG4
]
tokens_st = st.one_of(
    st.sampled_from(TOKEN_BOUNDARIES),
    st.integers(0, 2**17),
    st.integers(0, 2**70),
    st.integers(0, 2**2100),
)
block_len_st = st.one_of(st.sampled_from([1, 2, 3, 4]), st.integers(5, 300))
parent_st = st.one_of(st.binary(min_size=16, max_size=16), st.binary(min_size=32, max_size=32))

SPECIAL_STRINGS = [
    "", "a", "é", "ÿ", "\x00", "☃", "ab", "mm", "lora", "cache_salt",
    "x" * 255, "x" * 256, "é" * 128, "☃" * 86,  # 255/256/258 UTF-8 bytes
    "y" * 65535, "z" * 65536, "w" * 70000,     # around the 64 KiB frame target
]
data_str_st = st.one_of(st.sampled_from(SPECIAL_STRINGS), st.text(max_size=12))
offset_st = st.one_of(
    st.sampled_from([0, 1, -1, 255, 256, -256, -257, 65536, -65537, 2**31 - 1, -(2**31),
                     2**31, -(2**31) - 1]),
    st.integers(-(2**20), 2**20),
)
extra_key_st = st.one_of(
    st.tuples(st.just("lora"), data_str_st, st.one_of(st.none(), data_str_st)),
    st.tuples(st.just("mm"), data_str_st, offset_st),
    st.tuples(st.just("cache_salt"), data_str_st),
    st.tuples(st.just("prompt_embeds"), st.binary(min_size=32, max_size=32)),
)
extra_spec_st = st.one_of(st.none(), st.lists(extra_key_st, min_size=1, max_size=6).map(tuple))


# --------------------------------------------------------------------------
# Property tests: random extra keys, pickled in a block, against the engine's.


@given(parent=parent_st, tokens=st.data(), spec=extra_spec_st)
def test_encode_block_matches_pickle(parent: bytes, tokens: st.DataObject, spec: Any) -> None:
    n = tokens.draw(block_len_st, label="block length")
    toks = tokens.draw(st.lists(tokens_st, min_size=n, max_size=n), label="tokens")
    ours, ref = build(spec)
    assert_same(ours_block(parent, toks, ours), ref_block(parent, toks, ref))


# --------------------------------------------------------------------------
# Table tests: exact shapes that matter for object identity and framing.

BIG = "q" * 70000

IDENTITY_CASES: list[tuple[str, Any]] = [
    ("none", None),
    ("lora only", (("lora", "sql-adapter", "/models/sql"),)),
    ("lora name == path (separate objects in the engine)", (("lora", "ad", "ad"),)),
    ("lora one-char name == path (singleton back-reference)", (("lora", "a", "a"),)),
    ("lora latin-1 one-char name == path", (("lora", "é", "é"),)),
    ("lora non-latin-1 one-char name == path (no back-reference)", (("lora", "☃", "☃"),)),
    ("lora empty name and path (singleton)", (("lora", "", ""),)),
    ("lora path None", (("lora", "x", None),)),
    ("two mm items: second tag back-references", (("mm", "abc", 3), ("mm", "abc", 9))),
    ("two mm items same one-char id", (("mm", "x", 0), ("mm", "x", 5))),
    ("mm negative offset", (("mm", "f" * 64, -8),)),
    ("lora s with salt s", (("lora", "s", "/p"), ("cache_salt", "s"))),
    ("salt equal to a tag text", (("cache_salt", "mm"), ("mm", "cache_salt", 1))),
    ("lora, mm and salt", (("lora", "ad", "/p"), ("mm", "abc", 3), ("cache_salt", "s"))),
    ("prompt embeds digest", (("prompt_embeds", bytes(range(32))),)),
    ("two prompt embeds tags", (("prompt_embeds", bytes(32)), ("prompt_embeds", bytes(32)))),
    ("everything", (
        ("lora", "n", "n"), ("mm", "n", -3), ("mm", "n", 4), ("cache_salt", "n"),
        ("prompt_embeds", b"\xff" * 32),
    )),
    ("255-byte identifier", (("mm", "i" * 255, 0),)),
    ("256-byte identifier", (("mm", "i" * 256, 0),)),
    ("large salt outside frames", (("cache_salt", BIG),)),
    ("large salt then back-reference", (("cache_salt", BIG), ("mm", "a", 0), ("mm", "a", 1))),
    ("two large strings", (("lora", BIG, BIG + "p"),)),
]


@pytest.mark.parametrize(
    ("spec", "tokens"),
    [
        pytest.param(spec, tokens, id=f"{name}-{len(tokens)}tok")
        for name, spec in IDENTITY_CASES
        for tokens in ([1, 2, 3], [2**31] * 9500)  # a block within one frame, and over 64 KiB
    ],
)
@pytest.mark.parametrize("parent_size", [16, 32])
def test_identity_table(spec: Any, tokens: list[int], parent_size: int) -> None:
    parent = bytes(range(parent_size))
    ours, ref = build(spec)
    assert_same(ours_block(parent, tokens, ours), ref_block(parent, tokens, ref))


def test_back_reference_beyond_memo_index_255_uses_long_binget() -> None:
    # 130 mm items fill the memo past 255; then a latin-1 singleton and a tag repeat.
    spec = (
        *(("mm", f"id{i}", i) for i in range(130)),
        ("lora", "é", "é"),
        ("lora", "n2", "p2"),
        ("cache_salt", "é"),
    )
    ours, ref = build(spec)
    expected = ref_block(bytes(32), [1, 2, 3], ref)
    ops = {op.name for op, _, _ in pickletools.genops(expected)}
    assert "LONG_BINGET" in ops
    assert_same(ours_block(bytes(32), [1, 2, 3], ours), expected)


@pytest.mark.parametrize("digest_name", list(DIGESTS))
@given(
    parent=st.binary(min_size=32, max_size=32),
    size=st.integers(1, 6),
    tokens=st.lists(tokens_st, max_size=40),
    spec=extra_spec_st,
)
def test_chain_matches_pickle_chain(
    digest_name: str, parent: bytes, size: int, tokens: list[int], spec: Any
) -> None:
    digest = DIGESTS[digest_name]
    # The parent is a digest (NONE_HASH is one too): as long as every later parent.
    parent = parent[: len(digest(b""))]
    ours, ref = build(spec)
    expected = reference_chain(parent, tokens, size, ref, partial(pickle.dumps, protocol=5),
                               digest)
    starts = block_starts(len(tokens), size)
    got = pe.chain(wire_bytes(parent), pe.encode_tokens(tokens), starts, size,
                   [pe.encode_extra_keys_tail(fresh_bytes(ours))] * len(starts), digest)
    assert got == expected


def test_tags_are_plain_strings_to_callers() -> None:
    assert (LORA_TAG, MM_TAG, CACHE_SALT_TAG, PROMPT_EMBEDS_TAG) == (
        "lora", "mm", "cache_salt", "prompt_embeds")
    for tag in (LORA_TAG, MM_TAG, CACHE_SALT_TAG, PROMPT_EMBEDS_TAG):
        assert isinstance(tag, str)
        assert hash(tag) == hash(str(tag))
        assert pe.dumps(tag) == pickle.dumps(str(tag), protocol=5)
