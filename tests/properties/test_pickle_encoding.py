"""prefixkey.core._pickle_encoding against CPython's own ``pickle.dumps(obj, protocol=5)``.

The reference object is built the way vLLM's engine core holds it: the tag
strings are shared literals (one object per tag, as in vLLM's source), and
every data string (LoRA name and path, mm identifier, salt) is its own object,
decoded by msgpack from the front end. CPython hands back its shared singleton
for ``""`` and one-character Latin-1 strings whatever decoded them, so those
back-reference in the reference pickle exactly as they do in the engine.
"""

from __future__ import annotations

import hashlib
import pickle
import pickletools
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xxhash import xxh3_128_digest

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
    (out,) = pe.chain(parent, encoded_tokens, range(0, 1), n, [tail], lambda b: b)
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
# Property tests: random blocks against pickle.dumps.


@given(parent=parent_st, tokens=st.data(), spec=extra_spec_st)
def test_encode_block_matches_pickle(parent: bytes, tokens: st.DataObject, spec: Any) -> None:
    n = tokens.draw(block_len_st, label="block length")
    toks = tokens.draw(st.lists(tokens_st, min_size=n, max_size=n), label="tokens")
    ours, ref = build(spec)
    assert_same(ours_block(parent, toks, ours), ref_block(parent, toks, ref))


@settings(max_examples=8)
@given(
    parent=parent_st,
    n=st.integers(9500, 20000),
    base=st.sampled_from([2**31, 2**40, 2**63, 2**64]),
    spec=extra_spec_st,
    data=st.data(),
)
def test_large_blocks_split_into_frames_like_pickle(
    parent: bytes, n: int, base: int, spec: Any, data: st.DataObject
) -> None:
    # Tokens >= 2**31 take 7+ bytes each: 9500+ of them overflow a 64 KiB frame.
    step = data.draw(st.integers(0, 1000), label="step")
    toks = [base + (i * step) % 100_000 for i in range(n)]
    ours, ref = build(spec)
    out = ours_block(parent, toks, ours)
    expected = ref_block(parent, toks, ref)
    assert len(expected) > 64 * 1024
    assert expected.count(b"\x95") >= 1
    assert_same(out, expected)


@settings(max_examples=25)
@given(
    parent=parent_st,
    lengths=st.lists(st.integers(1, 12000), min_size=1, max_size=3),
    spec=extra_spec_st,
)
def test_blocks_near_frame_target_match_pickle(
    parent: bytes, lengths: list[int], spec: Any
) -> None:
    # Small token opcodes, but long blocks: frames end inside the token tuple.
    toks = [(i * 7919) % 70000 for i in range(sum(lengths) * 3)]
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
    ("spec annotated example", (("lora", "ad", "/p"), ("mm", "abc", 3), ("cache_salt", "s"))),
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
        for tokens in ([1], [1, 2], [1, 2, 3], list(range(1, 17)), [2**31] * 9500)
    ],
)
@pytest.mark.parametrize("parent_size", [16, 32])
def test_identity_and_framing_table(spec: Any, tokens: list[int], parent_size: int) -> None:
    parent = bytes(range(parent_size))
    ours, ref = build(spec)
    assert_same(ours_block(parent, tokens, ours), ref_block(parent, tokens, ref))


def test_annotated_example_from_spec_is_139_bytes() -> None:
    none_hash = bytes.fromhex(
        "066b1e8987e027138e98701c46128929378935f9b6cd1549105ae6b4f0d71198"
    )
    ours, _ = build((("lora", "ad", "/p"), ("mm", "abc", 3), ("cache_salt", "s")))
    out = ours_block(none_hash, list(range(1, 17)), ours)
    assert len(out) == 139
    assert out[:11] == bytes.fromhex("8005958000000000000000")
    assert out[-5:] == bytes.fromhex("879487942e")


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


def test_repeated_tails_are_reusable_across_blocks() -> None:
    # The hasher caches a tail and reuses it for many blocks and parents.
    ours, ref = build((("lora", "a", "a"), ("mm", "b", -1)))
    tail = pe.encode_extra_keys_tail(ours)
    blocks = [(bytes(32), [5] * 4), (b"\x01" * 16, [2**40] * 12000), (b"\x02" * 32, [9])]
    for parent, toks in blocks:
        expected = ref_block(parent, toks, ref)
        assert serialize_block(parent, pe.encode_tokens(toks), tail) == expected


# --------------------------------------------------------------------------
# Ints: every opcode boundary, as a token and as an mm offset.

INT_CASES: list[tuple[int, bytes]] = [
    (0, b"K"), (1, b"K"), (255, b"K"),
    (256, b"M"), (65535, b"M"),
    (65536, b"J"), (2**31 - 1, b"J"),
    (-1, b"J"), (-255, b"J"), (-256, b"J"), (-65536, b"J"), (-(2**31), b"J"),
    (2**31, b"\x8a"), (2**32, b"\x8a"), (-(2**31) - 1, b"\x8a"),
    (2**63 - 1, b"\x8a"), (2**63, b"\x8a"), (-(2**63), b"\x8a"), (-(2**63) - 1, b"\x8a"),
    (2**64 - 1, b"\x8a"), (2**64, b"\x8a"), (-(2**64), b"\x8a"),
    (-(2**39), b"\x8a"), (-(2**39) - 1, b"\x8a"), (2**39 - 1, b"\x8a"),
    (-128 * 2**32, b"\x8a"), (-129 * 2**32, b"\x8a"),
    (2**2031, b"\x8a"), (2**2038, b"\x8a"),        # 255-byte LONG1 payload
    (2**2039 - 1, b"\x8a"), (-(2**2039), b"\x8a"),  # still 255 bytes (two's complement)
    (2**2039, b"\x8b"), (-(2**2039) - 1, b"\x8b"),  # 256 bytes: LONG4
    (2**3000, b"\x8b"), (-(2**3000), b"\x8b"),
]


def _op(pickled: bytes) -> bytes:
    """The single opcode of a one-value pickle (without PROTO, FRAME, STOP)."""
    assert pickled[:2] == b"\x80\x05"
    body = pickled[2:]
    if body[:1] == b"\x95":
        assert int.from_bytes(body[1:9], "little") == len(body) - 9
        body = body[9:]
    assert body.endswith(b".")
    return body[:-1]


@pytest.mark.parametrize(
    ("value", "opcode"), INT_CASES, ids=[f"{v:#x}"[:24] for v, _ in INT_CASES]
)
def test_int_opcode_table(value: int, opcode: bytes) -> None:
    encoded = pe.dumps(value)
    assert encoded == pickle.dumps(value, protocol=5)
    op = _op(encoded)
    assert op[:1] == opcode
    if opcode == b"\x8a":
        assert op[1] == len(op) - 2 <= 255
    if opcode == b"\x8b":
        assert int.from_bytes(op[1:5], "little") == len(op) - 5 >= 256
    assert pickle.loads(encoded) == value
    # The same int inside a block: as a token (ids are non-negative) and as an offset.
    ours, ref = build((("mm", "img", value),))
    toks = [abs(value), 1, abs(value)]
    assert_same(ours_block(bytes(32), toks, ours), ref_block(bytes(32), toks, ref))


@given(st.one_of(st.integers(), st.integers(-(2**3000), 2**3000)))
def test_dumps_of_any_int_matches_pickle(value: int) -> None:
    assert pe.dumps(value) == pickle.dumps(value, protocol=5)




@pytest.mark.parametrize("digest_name", ["sha256", "xxh3_128"])
@given(
    parent=st.binary(min_size=32, max_size=32),
    size=st.integers(1, 6),
    tokens=st.lists(tokens_st, max_size=40),
    spec=extra_spec_st,
)
def test_chain_matches_pickle_chain(
    digest_name: str, parent: bytes, size: int, tokens: list[int], spec: Any
) -> None:
    digest = (lambda b: hashlib.sha256(b).digest()) if digest_name == "sha256" else xxh3_128_digest
    # The parent is a digest (NONE_HASH is one too): as long as every later parent.
    parent = parent[: len(digest(b""))]
    ours, ref = build(spec)
    expected, p = [], parent
    for s in range(0, len(tokens) - size + 1, size):
        p = digest(pickle.dumps((p, tuple(tokens[s : s + size]), ref), protocol=5))
        expected.append(p)
    starts = range(0, len(tokens) - size + 1, size)
    got = pe.chain(wire_bytes(parent), pe.encode_tokens(tokens), starts, size,
                   [pe.encode_extra_keys_tail(fresh_bytes(ours))] * len(starts), digest)
    assert got == expected


# --------------------------------------------------------------------------
# dumps of NONE_HASH seeds and other plain values.

SEEDS = [
    "", "0", "1", "42", "vllm-none-hash", "a", "é", "ÿ", "☃", "\x00", "\udcff",
    "x" * 255, "x" * 256, "é" * 128, "x" * 65530, "x" * 65535, "x" * 65536, "x" * 70000,
    "tenant-a", "🙂",
]


@pytest.mark.parametrize("seed", SEEDS, ids=[repr(s)[:20] + f"-{len(s)}" for s in SEEDS])
def test_dumps_of_seed_strings(seed: str) -> None:
    assert pe.dumps(seed) == pickle.dumps(seed, protocol=5)


@pytest.mark.parametrize(
    "value",
    [
        None, b"", b"a", bytes(32), bytes(255), bytes(256), bytes(70000), (), (1,), (1, 2),
        (1, 2, 3), (1, 2, 3, 4), ((),), (None, None), ("a", "a"), ("ab", "ab"),
    ],
    ids=repr,
)
def test_dumps_of_plain_values(value: Any) -> None:
    # dumps serializes NONE_HASH seeds and plain values: exactly pickle.dumps.
    assert pe.dumps(value) == pickle.dumps(value, protocol=5)
    assert pickle.loads(pe.dumps(value)) == value


@given(st.text(max_size=300))
def test_dumps_of_any_text_matches_pickle(text: str) -> None:
    assert pe.dumps(text) == pickle.dumps(text, protocol=5)


def test_tags_are_plain_strings_to_callers() -> None:
    assert (LORA_TAG, MM_TAG, CACHE_SALT_TAG, PROMPT_EMBEDS_TAG) == (
        "lora", "mm", "cache_salt", "prompt_embeds")
    for tag in (LORA_TAG, MM_TAG, CACHE_SALT_TAG, PROMPT_EMBEDS_TAG):
        assert isinstance(tag, str)
        assert hash(tag) == hash(str(tag))
        assert pe.dumps(tag) == pickle.dumps(str(tag), protocol=5)
