"""prefixkey.core._cbor_encoding against ``cbor2.dumps(obj, canonical=True)``.

CBOR has no object identity, so tags and data strings can be anything equal.
"""

from __future__ import annotations

from typing import Any

import cbor2
import pytest
from block_chains import DIGESTS, block_starts, reference_chain
from hypothesis import given, settings
from hypothesis import strategies as st

from prefixkey.core import CACHE_SALT_TAG, LORA_TAG, MM_TAG, PROMPT_EMBEDS_TAG
from prefixkey.core import _cbor_encoding as ce
from prefixkey.core._request import checked_token_ids

PK_TAGS = {"lora": LORA_TAG, "mm": MM_TAG, "cache_salt": CACHE_SALT_TAG,
           "prompt_embeds": PROMPT_EMBEDS_TAG}


def ref_dumps(obj: Any) -> bytes:
    return cbor2.dumps(obj, canonical=True)


def build(spec: tuple[tuple[Any, ...], ...] | None) -> tuple[Any, Any]:
    if spec is None:
        return None, None
    ours = tuple((PK_TAGS[tag], *rest) for tag, *rest in spec)
    return ours, tuple(tuple(k) for k in spec)


def stream_of(tokens: list[int], block_size: int) -> ce.TokenStream:
    """The tokens as the hasher encodes them: with their words when the check returns them."""
    return ce.encode_tokens(tokens, checked_token_ids(tokens)[1], block_size)


def ours_block(parent: bytes, tokens: list[int], extra: Any) -> bytes:
    """The serialized block tuple: ``chain`` with the identity as digest returns it."""
    encoded, tail = stream_of(tokens, len(tokens)), ce.encode_extra_keys_tail(extra)
    [out] = ce.chain(parent, encoded, range(0, 1), len(tokens), [tail], lambda b: b)
    assert isinstance(out, bytes)
    return out


# --------------------------------------------------------------------------
# Heads and ints.

HEAD_BOUNDARIES = [
    0, 1, 23, 24, 25, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63, 2**64 - 1,
]
INT_CASES: list[tuple[int, int]] = [
    # (value, expected first byte)
    (0, 0x00), (23, 0x17), (24, 0x18), (255, 0x18), (256, 0x19), (65535, 0x19),
    (65536, 0x1A), (2**32 - 1, 0x1A), (2**32, 0x1B), (2**64 - 1, 0x1B),
    (2**64, 0xC2), (2**70, 0xC2), (2**2048, 0xC2),
    (-1, 0x20), (-24, 0x37), (-25, 0x38), (-256, 0x38), (-257, 0x39), (-65536, 0x39),
    (-65537, 0x3A), (-(2**32), 0x3A), (-(2**32) - 1, 0x3B), (-(2**64), 0x3B),
    (-(2**64) - 1, 0xC3), (-(2**70), 0xC3), (-(2**2048), 0xC3),
]


@pytest.mark.parametrize(("value", "first"), INT_CASES, ids=[str(v)[:24] for v, _ in INT_CASES])
def test_encode_int_table(value: int, first: int) -> None:
    encoded = ce.encode_int(value)
    assert encoded[0] == first
    assert encoded == ref_dumps(value)
    assert ce.dumps(value) == ref_dumps(value)
    assert cbor2.loads(encoded) == value


@given(st.one_of(st.integers(-(2**70), 2**70), st.integers(), st.sampled_from(HEAD_BOUNDARIES)))
def test_encode_int_matches_cbor2(value: int) -> None:
    assert ce.encode_int(value) == ref_dumps(value)


SMALL_IDS = st.one_of(
    st.integers(0, 2**31 - 1), st.sampled_from([b for b in HEAD_BOUNDARIES if b < 2**31])
)
TOKEN_IDS = st.lists(
    st.one_of(st.integers(0, 2**70), st.integers(0, 2**32 - 1),
              st.sampled_from([b for b in HEAD_BOUNDARIES if b >= 0])),
    max_size=60,
)


def check_stream(stream: ce.TokenStream, tokens: list[int], size: int) -> None:
    """Each full block is its ids' CBOR items (the array body cbor2 writes); the rest pend."""
    assert len(stream) == len(tokens)
    full = len(tokens) // size * size
    assert stream.blocks == [
        ref_dumps(tuple(tokens[s : s + size]))[len(ce._head(4, size)):]
        for s in range(0, full, size)
    ]
    assert bytes(stream) == b"".join(ce.encode_int(t) for t in tokens)


@pytest.mark.parametrize("with_words", [True, False], ids=["words", "per-token"])
@given(tokens=st.one_of(TOKEN_IDS, st.lists(SMALL_IDS, max_size=60)), size=st.integers(1, 9))
def test_token_stream_blocks_are_cbor_items(
    with_words: bool, tokens: list[int], size: int
) -> None:
    # Ids below 2**31 come with their words (the C-speed path); larger ones without.
    words = checked_token_ids(tokens)[1] if with_words else None
    check_stream(ce.encode_tokens(tokens, words, size), tokens, size)


CHUNKS = st.one_of(TOKEN_IDS, st.lists(SMALL_IDS, max_size=60))


@given(CHUNKS, st.lists(CHUNKS, max_size=6), st.integers(1, 9))
def test_token_stream_extends_like_one_stream(
    first: list[int], more: list[list[int]], size: int
) -> None:
    stream = stream_of(first, size)
    for chunk in more:
        stream = ce.extend_tokens(stream, chunk, checked_token_ids(chunk)[1])
    whole = [t for chunk in [first, *more] for t in chunk]
    check_stream(stream, whole, size)


@given(st.lists(SMALL_IDS, min_size=1, max_size=40), st.integers(1, 9))
def test_token_stream_one_id_at_a_time(tokens: list[int], size: int) -> None:
    # Decode-time appends: the partial block's records carry over to the next append.
    stream = stream_of([], size)
    for t in tokens:
        stream = ce.extend_tokens(stream, [t], checked_token_ids([t])[1])
    check_stream(stream, tokens, size)


@pytest.mark.parametrize("size", [1, 16, 64, 1000])
def test_token_stream_of_a_long_prompt_matches_cbor2(size: int) -> None:
    # Long enough for every width class many times over, in the C-speed path.
    tokens = [(i * 2654435761) % (2**31) >> (i % 4) * 8 for i in range(20000)]
    assert checked_token_ids(tokens)[1] is not None
    check_stream(stream_of(tokens, size), tokens, size)


# --------------------------------------------------------------------------
# Strings, bytes, arrays at every head length.

LENGTHS = [0, 1, 23, 24, 255, 256, 65535, 65536]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("unit", ["a", "é", "☃", "🙂"])
def test_text_lengths(n: int, unit: str) -> None:
    text = unit * n
    assert ce.dumps(text) == ref_dumps(text)
    assert ce.dumps(PK_TAGS["mm"]) == ref_dumps("mm")


@pytest.mark.parametrize("n", LENGTHS)
def test_byte_string_lengths(n: int) -> None:
    data = bytes(i % 251 for i in range(n))
    assert ce.dumps(data) == ref_dumps(data)


@pytest.mark.parametrize("n", [*LENGTHS[1:], 70000])
def test_token_array_lengths(n: int) -> None:
    tokens = [(i * 7919) % 2**20 for i in range(n)]
    parent = bytes(32)
    assert ours_block(parent, tokens, None) == ref_dumps((parent, tuple(tokens), None))


@pytest.mark.parametrize(
    "value",
    [None, (), (None,), ((),), (1, -1, "x", b"y", None), tuple(range(24)), ("",), (b"",)],
    ids=repr,
)
def test_dumps_of_plain_values(value: Any) -> None:
    assert ce.dumps(value) == ref_dumps(value)


SEEDS = ["", "0", "vllm-none-hash", "a", "é", "☃", "x" * 23, "x" * 24, "x" * 256, "x" * 65536]


@pytest.mark.parametrize("seed", SEEDS, ids=[f"{s[:10]!r}-{len(s)}" for s in SEEDS])
def test_dumps_of_seed_strings(seed: str) -> None:
    assert ce.dumps(seed) == ref_dumps(seed)


# --------------------------------------------------------------------------
# Random blocks of the hashed shape.

tokens_st = st.one_of(
    st.sampled_from([*HEAD_BOUNDARIES, 2**64, 2**65 + 3, 2**200]),
    st.integers(0, 2**17),
    st.integers(0, 2**70),
)
text_st = st.one_of(
    st.sampled_from(["", "a", "é", "☃", "x" * 23, "x" * 24, "x" * 255, "x" * 256,
                     "y" * 65535, "z" * 65536]),
    st.text(max_size=30),
)
offset_st = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, -24, -25, -256, -257, -65537, -(2**64), -(2**64) - 1]),
    st.integers(-300, 300),
)
extra_key_st = st.one_of(
    st.tuples(st.just("lora"), text_st, st.one_of(st.none(), text_st)),
    st.tuples(st.just("mm"), text_st, offset_st),
    st.tuples(st.just("cache_salt"), text_st),
    st.tuples(st.just("prompt_embeds"), st.binary(min_size=32, max_size=32)),
)
extra_spec_st = st.one_of(st.none(), st.lists(extra_key_st, min_size=1, max_size=6).map(tuple))
parent_st = st.one_of(st.binary(min_size=16, max_size=16), st.binary(min_size=32, max_size=32))


@given(
    parent=parent_st,
    tokens=st.one_of(
        st.lists(tokens_st, min_size=1, max_size=4),
        st.lists(tokens_st, min_size=5, max_size=300),
    ),
    spec=extra_spec_st,
)
def test_encode_block_matches_cbor2(parent: bytes, tokens: list[int], spec: Any) -> None:
    ours, ref = build(spec)
    expected = ref_dumps((parent, tuple(tokens), ref))
    assert ours_block(parent, tokens, ours) == expected
    assert ce.dumps((parent, tuple(tokens), ours)) == expected


@pytest.mark.parametrize("digest_name", list(DIGESTS))
@given(
    parent=st.binary(min_size=32, max_size=32),
    size=st.integers(1, 6),
    tokens=st.lists(tokens_st, max_size=40),
    spec=extra_spec_st,
)
def test_chain_matches_cbor2_chain(
    digest_name: str, parent: bytes, size: int, tokens: list[int], spec: Any
) -> None:
    digest = DIGESTS[digest_name]
    # The parent is a digest (NONE_HASH is one too): as long as every later parent.
    parent = parent[: len(digest(b""))]
    ours, ref = build(spec)
    expected = reference_chain(parent, tokens, size, ref, ref_dumps, digest)
    starts = block_starts(len(tokens), size)
    got = ce.chain(parent, stream_of(tokens, size), starts, size,
                   [ce.encode_extra_keys_tail(ours)] * len(starts), digest)
    assert got == expected


@settings(max_examples=5)
@given(parent=parent_st, n=st.integers(9500, 20000), spec=extra_spec_st)
def test_large_blocks_match_cbor2(parent: bytes, n: int, spec: Any) -> None:
    tokens = [2**31 + i for i in range(n)]
    ours, ref = build(spec)
    assert ours_block(parent, tokens, ours) == ref_dumps((parent, tuple(tokens), ref))


def test_block_encoded_by_hand() -> None:
    # RFC 8949 by hand: array(3) [bytes(32) parent, array(16) of small ints, array(3) [
    # ["lora", "ad", "/p"], ["mm", "abc", 3], ["cache_salt", "s"]]].
    parent = bytes(range(32))
    ours, _ = build((("lora", "ad", "/p"), ("mm", "abc", 3), ("cache_salt", "s")))
    out = ours_block(parent, list(range(1, 17)), ours)
    expected = (
        "835820" + parent.hex() + "90" + "".join(f"{i:02x}" for i in range(1, 17))
        + "83" + "83646c6f7261626164622f70" + "83626d6d6361626303" + "826a63616368655f73616c746173"
    )
    assert out.hex() == expected


def test_extra_keys_tail_of_none_is_null() -> None:
    assert ce.encode_extra_keys_tail(None) == b"\xf6"
    assert ce.encode_extra_keys_tail((("mm", "a", -1),)) == ref_dumps((("mm", "a", -1),))
