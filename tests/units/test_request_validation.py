"""Typed errors for invalid requests and configurations, table-driven."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from vector_records import vector_record

from prefixkey import (
    Hasher,
    InvalidRequestError,
    LoRA,
    MMItem,
    PrefixKeyError,
    PromptEmbeds,
    Request,
    UnknownAlgorithmError,
    UnknownVersionError,
    UnreproducibleKeysError,
    block_hash_with_group_id,
    check_api_rules,
    group_block_hashes,
    resolve_release,
)
from prefixkey.core import BlockHash
from prefixkey.core._request import checked_token_ids

#: vLLM's own sha256 keys for 20 tokens, block size 7, PYTHONHASHSEED unset.
SEED_UNSET_RECORD = "prefixkey-00032/sha256"


def reproduces(hasher: Hasher, release: str) -> bool:
    """``hasher`` gives release's keys for :data:`SEED_UNSET_RECORD` (block size 7)."""
    record = vector_record(release, SEED_UNSET_RECORD)
    expected = [bytes.fromhex(h) for h in record["result"]["block_hashes"]]
    return hasher.block_hashes(record["case"]["token_ids"]) == expected

# --------------------------------------------------------------------------
# Token ids.


class MyInt(int):
    pass


class Index:
    """Not an int, though ``operator.index`` (and so ``array``) would take it."""

    def __index__(self) -> int:
        return 3


TOKEN_CASES: list[tuple[list[Any], int, str]] = [
    ([True], 0, "bool"),
    ([1, 2, False], 2, "bool"),
    ([1.0], 0, "float"),
    ([1, 2, 3, 4.5], 3, "float"),
    (["1"], 0, "str"),
    ([1, "x", 2], 1, "str"),
    ([1, None], 1, "NoneType"),
    ([MyInt(5)], 0, "MyInt"),
    ([1, Index()], 1, "Index"),
    ([[1]], 0, "list"),
    # Three bools (1 marshal byte each) and two big ints (11 each) are as long as five
    # small ints: the fast path checks every record, not only the length.
    ([2**40, True, True, True, 2**40, 7], 1, "bool"),
    # b"" marshals to five bytes too ("s" and a zero length): the record's type byte tells.
    ([1, b"", 2], 1, "bytes"),
]


@pytest.mark.parametrize(("tokens", "position", "words"), TOKEN_CASES)
def test_bad_token_ids_report_their_position(tokens: list[Any], position: int, words: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Hasher(block_size=1).block_hashes(tokens)
    assert info.value.field == "token_ids"
    assert info.value.position == position
    assert words in str(info.value)
    assert f"token_ids[{position}]" in str(info.value)


@pytest.mark.parametrize(("tokens", "position", "words"), TOKEN_CASES)
@pytest.mark.parametrize("prefix", [0, 3, 17])
def test_bad_appended_token_ids_report_absolute_position(
    tokens: list[Any], position: int, words: str, prefix: int
) -> None:
    state = Hasher(block_size=4).start(Request(list(range(prefix))))
    before = list(state.block_hashes)
    with pytest.raises(InvalidRequestError) as info:
        state.append(tokens)
    assert info.value.field == "token_ids"
    assert info.value.position == prefix + position
    # A rejected append leaves the state untouched.
    assert state.block_hashes == before
    assert state.num_tokens == prefix


WORDS_CASES: list[tuple[Any, bool]] = [
    # (valid token ids, whether the check returns their words: the C-speed path)
    ([], True),
    ([0, 1, 23, 24, 255, 256, 65535, 65536, 2**24, 2**31 - 1], True),
    ((7, 8, 9), True),
    (range(1000), True),
    (array("I", [5, 2**32 - 1 >> 1]), True),
    ([2**31], False),
    ([1, 2, 2**64 + 5], False),
    (array("Q", [2**40]), False),
    # vLLM's engine core hashes negative ids (its API server refuses them from 0.28 on).
    ([-1], False),
    ([2**31 - 1, -(2**31)], False),
    ([5] * 100 + [-(2**70)], False),
]


@pytest.mark.parametrize(("tokens", "fast"), WORDS_CASES)
def test_token_words_are_marshal_int32_records(tokens: Any, fast: bool) -> None:
    words = checked_token_ids(tokens)[1]
    if not fast:
        assert words is None
        return
    assert words is not None
    assert len(words) == 5 + 5 * len(tokens)
    records = [words[5 + 5 * i : 10 + 5 * i] for i in range(len(tokens))]
    assert records == [b"i" + t.to_bytes(4, "little") for t in tokens]


@given(st.lists(st.one_of(
    st.integers(-(2**33), 2**65), st.booleans(), st.floats(), st.none(), st.text(max_size=3),
    st.integers(0, 2**31 - 1),
), max_size=12))
def test_token_words_accepts_exactly_ints(tokens: list[Any]) -> None:
    valid = all(type(t) is int for t in tokens)
    if not valid:
        with pytest.raises(InvalidRequestError):
            checked_token_ids(tokens)[1]
        return
    words = checked_token_ids(tokens)[1]
    assert (words is not None) == all(0 <= t < 2**31 for t in tokens)


@pytest.mark.parametrize("tokens", ["1234", b"1234", 1234, {1, 2}, None])
def test_token_ids_must_be_a_sequence(tokens: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Request(tokens)
    assert info.value.field == "token_ids"


# --------------------------------------------------------------------------
# Hasher configuration.


@pytest.mark.parametrize("block_size", [0, -1, True, False, 1.5, 16.0, "16", None])
def test_bad_block_size(block_size: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Hasher(block_size=block_size)
    assert info.value.field == "block_size"
    assert info.value.position is None


@pytest.mark.parametrize("seed", [0, 1.0, b"0", True])
def test_python_hash_seed_must_be_a_string(seed: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Hasher(block_size=16, python_hash_seed=seed)
    assert info.value.field == "python_hash_seed"


@pytest.mark.parametrize(
    "version", ["0.6.6", "0.5.0", "0.1", "banana", "", "0.31.0-final-x", "0.34.0", "1.0.0",
                "0.33.1"],
)
def test_unknown_versions_strict(version: str) -> None:
    with pytest.raises(UnknownVersionError) as info:
        Hasher(block_size=16, vllm_version=version)
    assert version in str(info.value)
    with pytest.raises(UnknownVersionError):
        resolve_release(version)


@pytest.mark.parametrize("version", ["0.34.0", "0.40.0", "1.0.0", "0.33.1rc1"])
def test_lenient_newer_release_warns(version: str) -> None:
    hasher = Hasher(block_size=7, vllm_version=version, strict=False)
    assert hasher.era.name == "O"
    assert hasher.vllm_version == version
    assert len(hasher.warnings) == 1
    assert version in hasher.warnings[0]
    assert reproduces(hasher, "0.33.0")  # the newest known release


@pytest.mark.parametrize("version", ["0.6.6", "banana"])
def test_lenient_still_rejects_old_and_malformed(version: str) -> None:
    with pytest.raises(UnknownVersionError):
        Hasher(block_size=16, vllm_version=version, strict=False)


@pytest.mark.parametrize(
    "version",
    ["0.31.0", "0.31.0rc1", "0.31.1.dev5+g1a2b.cu128", "0.32.0", "0.32.0.post1", "0.31.0+cpu",
     "v0.31.0", "0.32.0rc2"],
)
def test_version_forms_resolve_to_era_n(version: str) -> None:
    release = resolve_release(version)
    assert release.era.name == "N"
    assert release.warnings == ()
    hasher = Hasher(block_size=7, vllm_version=version)
    assert hasher.warnings == ()
    assert reproduces(hasher, "0.31.0")


@pytest.mark.parametrize("algo", ["md5", "builtin", "sha256_cbor_64bit", "SHA256", "", "xxh3"])
def test_unknown_algorithm(algo: str) -> None:
    with pytest.raises(UnknownAlgorithmError) as info:
        Hasher(block_size=16, hash_algo=algo)
    assert repr(algo) in str(info.value)


@pytest.mark.parametrize("algo", ["xxhash", "xxhash_cbor"])
def test_xxhash_without_seed_is_unreproducible(algo: str) -> None:
    with pytest.raises(UnreproducibleKeysError) as info:
        Hasher(block_size=16, hash_algo=algo)
    assert "PYTHONHASHSEED" in str(info.value)
    # Any set seed, even "", makes the keys reproducible.
    assert Hasher(block_size=16, hash_algo=algo, python_hash_seed="").none_hash.seed == ""


@pytest.mark.parametrize(
    ("error", "bases"),
    [
        (InvalidRequestError, (PrefixKeyError, ValueError)),
        (UnknownVersionError, (PrefixKeyError, ValueError)),
        (UnknownAlgorithmError, (PrefixKeyError, ValueError)),
        (UnreproducibleKeysError, (PrefixKeyError,)),
        (PrefixKeyError, (Exception,)),
    ],
)
def test_error_hierarchy(error: type[Exception], bases: tuple[type[Exception], ...]) -> None:
    for base in bases:
        assert issubclass(error, base)


RAISERS: list[tuple[Callable[[], object], type[PrefixKeyError]]] = [
    (lambda: Hasher(block_size=0), InvalidRequestError),
    (lambda: Hasher(block_size=1, vllm_version="0.6.6"), UnknownVersionError),
    (lambda: Hasher(block_size=1, hash_algo="md5"), UnknownAlgorithmError),
    (lambda: Hasher(block_size=1, hash_algo="xxhash"), UnreproducibleKeysError),
    (lambda: MMItem("x", -1, 1), InvalidRequestError),
    (lambda: PromptEmbeds(b"", "int8", (0, 0)), InvalidRequestError),
]


@pytest.mark.parametrize(("make", "error"), RAISERS)
def test_every_error_is_caught_by_prefixkeyerror(
    make: Callable[[], object], error: type[PrefixKeyError]
) -> None:
    with pytest.raises(PrefixKeyError) as info:
        make()
    assert type(info.value) is error


# --------------------------------------------------------------------------
# Multimodal items.


def _hash(request: Request) -> list[BlockHash]:
    """One-shot hashing, which requires items and embedding rows inside the tokens."""
    return Hasher(block_size=4).block_hashes(request)


MM_CASES: list[tuple[str, Callable[[], object], str]] = [
    ("unsorted",
     lambda: Request(list(range(20)), mm_items=[MMItem("a", 10, 2), MMItem("b", 2, 2)]),
     "mm_items[1].offset"),
    ("overlapping",
     lambda: Request(list(range(20)), mm_items=[MMItem("a", 2, 5), MMItem("b", 6, 2)]),
     "mm_items[1].offset"),
    ("same offset",
     lambda: Request(list(range(20)), mm_items=[MMItem("a", 2, 1), MMItem("b", 2, 1)]),
     "mm_items[1].offset"),
    ("third overlaps second",
     lambda: Request(list(range(30)),
                     mm_items=[MMItem("a", 0, 2), MMItem("b", 5, 5), MMItem("c", 9, 1)]),
     "mm_items[2].offset"),
    ("past the end", lambda: _hash(Request(list(range(20)), mm_items=[MMItem("a", 15, 6)])),
     "mm_items[0]"),
    ("starts at the end", lambda: _hash(Request(list(range(20)), mm_items=[MMItem("a", 20, 1)])),
     "mm_items[0]"),
    ("no tokens", lambda: _hash(Request([], mm_items=[MMItem("a", 0, 1)])), "mm_items[0]"),
    ("second outside",
     lambda: _hash(Request([1, 2, 3], mm_items=[MMItem("a", 0, 1), MMItem("b", 2, 2)])),
     "mm_items[1]"),
    ("mm_items None", lambda: Request([1, 2], mm_items=None), "mm_items"),  # type: ignore[arg-type]
    ("mm_items an int", lambda: Request([1, 2], mm_items=5), "mm_items"),  # type: ignore[arg-type]
    ("mm_items a str", lambda: Request([1, 2], mm_items="ab"), "mm_items"),  # type: ignore[arg-type]
    ("negative offset", lambda: MMItem("a", -1, 2), "mm_items.offset"),
    ("zero length", lambda: MMItem("a", 0, 0), "mm_items.length"),
    ("negative length", lambda: MMItem("a", 0, -3), "mm_items.length"),
    ("bool offset", lambda: MMItem("a", True, 2), "mm_items.offset"),
    ("float length", lambda: MMItem("a", 0, 2.0), "mm_items.length"),  # type: ignore[arg-type]
    ("int identifier", lambda: MMItem(5, 0, 1), "mm_items.identifier"),  # type: ignore[arg-type]
    ("bytes identifier", lambda: MMItem(b"abc", 0, 1), "mm_items.identifier"),  # type: ignore[arg-type]
    ("None identifier", lambda: MMItem(None, 0, 1), "mm_items.identifier"),  # type: ignore[arg-type]
    ("lone surrogate identifier", lambda: MMItem("ab\ud800", 0, 1), "mm_items.identifier"),
]


@pytest.mark.parametrize(("make", "field"), [(m, f) for _, m, f in MM_CASES],
                         ids=[name for name, _, _ in MM_CASES])
def test_bad_mm_items(make: Callable[[], object], field: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        make()
    assert info.value.field == field


def test_mm_item_that_is_not_an_mmitem() -> None:
    with pytest.raises(InvalidRequestError) as info:
        Request([1, 2, 3], mm_items=[MMItem("a", 0, 1), ("b", 1, 1)])  # type: ignore[list-item]
    assert info.value.field == "mm_items"
    assert info.value.position == 1


@pytest.mark.parametrize(
    "items",
    [
        [MMItem("a", 0, 20)],
        [MMItem("a", 0, 1), MMItem("b", 1, 1)],  # touching is fine
        [MMItem("a", 19, 1)],
        [MMItem("a", 2, 3), MMItem("a", 5, 3), MMItem("a", 18, 2)],
    ],
)
def test_good_mm_items_are_accepted(items: list[MMItem]) -> None:
    keys = Hasher(block_size=4).start(Request(list(range(20)), mm_items=items)).extra_keys
    assert sum(1 for k in keys if k is not None for key in k if key[0] == "mm") >= len(items)


# --------------------------------------------------------------------------
# Strings: lone surrogates and types.

STRING_CASES: list[tuple[str, Callable[[], object], str]] = [
    ("lora name surrogate", lambda: LoRA("\udc80", "/p"), "lora.name"),
    ("lora path surrogate", lambda: LoRA("n", "/p\ud800"), "lora.path"),
    ("lora name int", lambda: LoRA(3, "/p"), "lora.name"),  # type: ignore[arg-type]
    ("lora path bytes", lambda: LoRA("n", b"/p"), "lora.path"),  # type: ignore[arg-type]
    ("lora int_id negative", lambda: LoRA("n", "/p", -1), "lora.int_id"),
    ("lora int_id bool", lambda: LoRA("n", "/p", True), "lora.int_id"),
    ("salt surrogate", lambda: Request([1], cache_salt="s\udfff"), "cache_salt"),
    ("salt int", lambda: Request([1], cache_salt=5), "cache_salt"),  # type: ignore[arg-type]
    ("lora not a LoRA", lambda: Request([1], lora=("n", "/p")), "lora"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("make", "field"), [(m, f) for _, m, f in STRING_CASES],
                         ids=[name for name, _, _ in STRING_CASES])
def test_bad_strings(make: Callable[[], object], field: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        make()
    assert info.value.field == field


# --------------------------------------------------------------------------
# Prompt embeddings.

EMBED_CASES: list[tuple[str, Callable[[], object], str]] = [
    ("too few bytes", lambda: PromptEmbeds(bytes(7), "float32", (1, 2)), "prompt_embeds.data"),
    ("too many bytes", lambda: PromptEmbeds(bytes(9), "float32", (1, 2)), "prompt_embeds.data"),
    ("float16 count", lambda: PromptEmbeds(bytes(8), "float16", (1, 2)), "prompt_embeds.data"),
    ("bytearray data", lambda: PromptEmbeds(bytearray(8), "float32", (1, 2)),  # type: ignore[arg-type]
     "prompt_embeds.data"),
    ("unknown dtype", lambda: PromptEmbeds(bytes(8), "int32", (1, 2)), "prompt_embeds.dtype"),
    ("torch-style dtype", lambda: PromptEmbeds(bytes(8), "torch.float32", (1, 2)),
     "prompt_embeds.dtype"),
    ("1-D shape", lambda: PromptEmbeds(bytes(8), "float32", (2,)), "prompt_embeds.shape"),  # type: ignore[arg-type]
    ("3-D shape", lambda: PromptEmbeds(bytes(8), "float32", (1, 1, 2)), "prompt_embeds.shape"),  # type: ignore[arg-type]
    ("negative dim", lambda: PromptEmbeds(bytes(0), "float32", (-1, 2)), "prompt_embeds.shape"),
    ("float dim", lambda: PromptEmbeds(bytes(8), "float32", (1.0, 2)), "prompt_embeds.shape"),  # type: ignore[arg-type]
    ("bool dim", lambda: PromptEmbeds(bytes(8), "float32", (True, 2)), "prompt_embeds.shape"),
    ("list shape", lambda: PromptEmbeds(bytes(8), "float32", [1, 2]), "prompt_embeds.shape"),  # type: ignore[arg-type]
    ("rows > tokens",
     lambda: _hash(Request([0, 0], prompt_embeds=PromptEmbeds(bytes(12), "float32", (3, 1)))),
     "prompt_embeds.shape"),
    ("not PromptEmbeds", lambda: Request([0], prompt_embeds=b"\x00" * 4), "prompt_embeds"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("make", "field"), [(m, f) for _, m, f in EMBED_CASES],
                         ids=[name for name, _, _ in EMBED_CASES])
def test_bad_prompt_embeds(make: Callable[[], object], field: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        make()
    assert info.value.field == field


def test_streaming_prompt_may_start_before_its_items() -> None:
    # Incremental hashing may begin before the prompt is complete.
    tokens = list(range(40))
    items = [MMItem("a", 10, 4), MMItem("b", 30, 5)]
    embeds = PromptEmbeds(bytes(range(140)), "float32", (35, 1))
    full = Request(tokens, mm_items=items, prompt_embeds=embeds)
    hasher = Hasher(block_size=8)
    state = hasher.start(Request(tokens[:5], mm_items=items, prompt_embeds=embeds))
    assert state.block_hashes == []
    state.append(tokens[5:])
    assert state.block_hashes == hasher.block_hashes(full)
    assert state.extra_keys == hasher.start(full).extra_keys


def test_embeds_rows_equal_to_tokens_is_fine() -> None:
    embeds = PromptEmbeds(bytes(12), "float32", (3, 1))
    assert len(Hasher(block_size=1).block_hashes(Request([0, 0, 0], prompt_embeds=embeds))) == 3


# --------------------------------------------------------------------------
# The API server's rules (opt-in).

FORBIDDEN = ["@", "/", "\\", "\x00"]


@pytest.mark.parametrize("char", FORBIDDEN, ids=["at", "slash", "backslash", "nul"])
@pytest.mark.parametrize("position", [0, 3, 127])
def test_salt_forbidden_characters(char: str, position: int) -> None:
    salt = "s" * position + char + "t" * (127 - position)
    assert len(salt) == 128
    request = Request([1, 2], cache_salt=salt)
    with pytest.raises(InvalidRequestError) as info:
        check_api_rules(request)
    assert info.value.field == "cache_salt"
    assert info.value.position == position
    assert len(Hasher(block_size=1).block_hashes(request)) == 2  # the engine hashes it anyway


def test_salt_first_forbidden_character_is_reported() -> None:
    with pytest.raises(InvalidRequestError) as info:
        check_api_rules(Request([1], cache_salt="ab/c@d"))
    assert info.value.position == 2


@pytest.mark.parametrize(
    ("salt", "field_ok"),
    [("", False), ("s" * 129, False), ("é" * 129, False), ("s" * 128, True), ("é" * 128, True),
     ("tenant-a", True), (None, True), ("☃:tenant", True)],
    ids=["empty", "129", "129-latin1", "128", "128-latin1", "tenant", "none", "snowman"],
)
def test_salt_length_and_emptiness(salt: str | None, field_ok: bool) -> None:
    request = Request([1], cache_salt=salt)
    if field_ok:
        check_api_rules(request)
        return
    with pytest.raises(InvalidRequestError) as info:
        check_api_rules(request)
    assert info.value.field == "cache_salt"
    assert info.value.position is None


@pytest.mark.parametrize("path", ["", None])
def test_lora_path_must_be_non_empty(path: str | None) -> None:
    request = Request([1], lora=LoRA("adapter", path))
    with pytest.raises(InvalidRequestError) as info:
        check_api_rules(request)
    assert info.value.field == "lora.path"
    # The engine core itself still hashes it.
    assert len(Hasher(block_size=1).block_hashes(request)) == 1


def test_lora_int_id_zero_is_an_api_rule() -> None:
    # vLLM before 0.11 keyed a LoRA int id of 0; 0.11+ LoRARequest rejects it.
    request = Request([1], lora=LoRA("adapter", "/a", int_id=0))
    with pytest.raises(InvalidRequestError) as info:
        check_api_rules(request)
    assert info.value.field == "lora.int_id"
    old = Hasher(block_size=1, vllm_version="0.10.2", python_hash_seed="0")
    assert old.start(request).extra_keys == [(0,)]


def test_api_rules_accept_a_normal_request() -> None:
    request = Request([1], lora=LoRA("adapter", "/a"), cache_salt="tenant-a",
                      mm_items=[MMItem("i", 0, 1)])
    check_api_rules(request)
    assert request.cache_salt == "tenant-a"


# --------------------------------------------------------------------------
# Key helpers.


@pytest.mark.parametrize("size", [0, 8, 24, 17, 16.0, True])
def test_group_block_size_must_be_a_multiple(size: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        group_block_hashes([b"x" * 32] * 4, 16, size)
    assert info.value.field == "group_block_size"


@pytest.mark.parametrize(("group_id", "ok"), [(0, True), (1, True), (2**32 - 1, True),
                                              (-1, False), (2**32, False), (True, False)])
def test_block_hash_with_group_id(group_id: Any, ok: bool) -> None:
    key = bytes(range(32))
    if ok:
        assert block_hash_with_group_id(key, group_id) == key + group_id.to_bytes(4, "big")
        return
    with pytest.raises(InvalidRequestError) as info:
        block_hash_with_group_id(key, group_id)
    assert info.value.field == "group_id"
