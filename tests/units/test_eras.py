"""Era rules that the golden vectors cannot show: refusals, warnings, resolution.

Every expected key below comes from vLLM's own vectors (tests/vectors/test_vectors.py
checks them wholesale); this file checks the behaviour around them.
"""

from __future__ import annotations

from typing import Any

import pytest
from vector_records import vector_record

from prefixkey import Hasher, LoRA, MMItem, PromptEmbeds, Request, resolve_release
from prefixkey.core import ERAS, KNOWN_RELEASES
from prefixkey.errors import InvalidRequestError, UnknownAlgorithmError, UnreproducibleKeysError

TOKENS = list(range(1, 41))


@pytest.mark.parametrize(
    ("version", "era"),
    [
        ("0.7.0", "A"), ("0.7.1", "B"), ("0.7.2", "C"), ("0.7.3", "D"), ("0.8.2", "D"),
        ("0.8.3", "E"), ("0.8.4", "E"), ("0.8.5", "F"), ("0.8.5.post1", "F"),
        ("0.9.0", "G"), ("0.9.0.1", "G"), ("0.9.2", "G"), ("0.10.0", "H"), ("0.10.1", "H1"),
        ("0.10.1.1", "H1"), ("0.10.2", "I"), ("0.11.0", "I"), ("0.11.1", "J"),
        ("0.11.2", "J"), ("0.12.0", "J1"), ("0.16.0", "J1"), ("0.17.0", "K"), ("0.18.1", "K"),
        ("0.19.0", "L"), ("0.23.0", "L"), ("0.24.0", "L1"), ("0.28.0", "L1"),
        ("0.29.0", "M"), ("0.30.0", "M"), ("0.31.0", "N"), ("0.32.0", "N"), ("0.33.0", "O"),
        ("0.31.1.dev5+g1a2b.cu128", "N"), ("0.19.0rc1", "L"), ("0.9.0.1", "G"),
    ],
)
def test_every_release_maps_to_its_era(version: str, era: str) -> None:
    assert resolve_release(version).era.name == era


def test_every_known_release_resolves_and_eras_are_ordered() -> None:
    for version in KNOWN_RELEASES:
        assert resolve_release(version).warnings == ()
    firsts = [era.first_version for era in ERAS]
    assert firsts == sorted(firsts)
    assert len({era.name for era in ERAS}) == len(ERAS)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        # Random NONE_HASH: unset seed before 0.29, set seed in 0.8.3-0.8.4, xxhash unset.
        ({"vllm_version": "0.28.0"}, UnreproducibleKeysError),
        ({"vllm_version": "0.10.2", "hash_algo": "sha256_cbor"}, UnreproducibleKeysError),
        ({"vllm_version": "0.9.0", "hash_algo": "sha256"}, UnreproducibleKeysError),
        ({"vllm_version": "0.8.3", "hash_algo": "sha256", "python_hash_seed": "0"},
         UnreproducibleKeysError),
        ({"vllm_version": "0.30.0", "hash_algo": "xxhash"}, UnreproducibleKeysError),
        # builtin hash(): the engine's CPython decides.
        ({"vllm_version": "0.9.0", "python_hash_seed": "0"}, UnreproducibleKeysError),
        ({"vllm_version": "0.9.0", "python_hash_seed": "0", "engine_python": "3.11"},
         UnreproducibleKeysError),
        ({"vllm_version": "0.9.0", "python_hash_seed": "seed", "engine_python": "3.12"},
         InvalidRequestError),
        ({"vllm_version": "0.9.0", "python_hash_seed": "0", "engine_python": "three"},
         InvalidRequestError),
        # Algorithms by release.
        ({"vllm_version": "0.12.0", "hash_algo": "xxhash", "python_hash_seed": "0"},
         UnknownAlgorithmError),
        ({"vllm_version": "0.8.2", "hash_algo": "sha256"}, UnknownAlgorithmError),
        ({"vllm_version": "0.9.2", "hash_algo": "sha256_cbor_64bit"}, UnknownAlgorithmError),
        ({"vllm_version": "0.10.2", "hash_algo": "builtin"}, UnknownAlgorithmError),
        ({"vllm_version": "0.31.0", "hash_algo": "sha256_cbor_64bit"}, UnknownAlgorithmError),
        # Lookahead exists from 0.33.
        ({"vllm_version": "0.32.0", "lookahead": 1}, InvalidRequestError),
        ({"vllm_version": "0.33.0", "lookahead": -1}, InvalidRequestError),
    ],
)
def test_configurations_that_are_refused(kwargs: dict[str, Any], error: type) -> None:
    with pytest.raises(error) as info:
        Hasher(block_size=16, **kwargs)
    if error is UnreproducibleKeysError:
        assert "PYTHONHASHSEED" in str(info.value) or "CPython" in str(info.value)


def test_builtin_hash_with_unset_seed_refuses_only_string_hashes() -> None:
    # 0.7.1 chains from None: token-only keys need no seed on CPython 3.12 ...
    hasher = Hasher(block_size=16, vllm_version="0.7.1", engine_python="3.12")
    assert len(hasher.block_hashes(TOKENS)) == 2
    # ... but a multimodal identifier is a string, hashed with a random key.
    with pytest.raises(UnreproducibleKeysError):
        hasher.block_hashes(Request(TOKENS, mm_items=[MMItem("img", 3, 4)]))
    # 0.7.2 chains from hash("None"): every key needs the seed.
    with pytest.raises(UnreproducibleKeysError):
        Hasher(block_size=16, vllm_version="0.7.2", engine_python="3.12")


def test_int_eras_key_by_lora_int_id() -> None:
    hasher = Hasher(block_size=16, vllm_version="0.10.2", python_hash_seed="0")
    with pytest.raises(InvalidRequestError) as info:
        hasher.block_hashes(Request(TOKENS, lora=LoRA("sql", "/p")))
    assert info.value.field == "lora.int_id"
    with_id = hasher.block_hashes(Request(TOKENS, lora=LoRA("sql", "/p", int_id=3)))
    renamed = hasher.block_hashes(Request(TOKENS, lora=LoRA("other", "/q", int_id=3)))
    assert with_id == renamed  # only the id is keyed in 0.10.2-0.11.0


@pytest.mark.parametrize(
    ("version", "feature", "request_kwargs"),
    [
        ("0.7.2", "lora", {"lora": LoRA("sql", "/p", int_id=1)}),
        ("0.8.2", "cache_salt", {"cache_salt": "tenant"}),
        ("0.11.0", "prompt_embeds",
         {"prompt_embeds": PromptEmbeds(bytes(4 * 40 * 2), "float32", (40, 2))}),
    ],
)
def test_features_a_release_does_not_key_are_warned_about(
    version: str, feature: str, request_kwargs: dict[str, Any]
) -> None:
    hasher = Hasher(block_size=16, vllm_version=version, python_hash_seed="0",
                    engine_python="3.12")
    state = hasher.start(Request(TOKENS, **request_kwargs))
    assert state.block_hashes == hasher.block_hashes(TOKENS)
    assert len(state.warnings) == 1
    assert feature in state.warnings[0]


def test_seed_sources() -> None:
    assert Hasher(block_size=16).none_hash.seed_source == "default"
    assert Hasher(block_size=16, python_hash_seed="").none_hash.seed_source == "PYTHONHASHSEED"
    old = Hasher(block_size=16, vllm_version="0.8.3", hash_algo="sha256")
    assert old.none_hash.seed_source == "constant"
    # vLLM 0.8.3's own NONE_HASH with PYTHONHASHSEED unset (sha256 of pickle(None)).
    unset = vector_record("0.8.3", "prefixkey-00032/sha256")
    assert unset["case"]["python_hash_seed"] is None
    assert old.none_hash.value == int(unset["result"]["none_hash"], 16)
    first = Hasher(block_size=16, vllm_version="0.7.0", engine_python="3.12")
    assert first.none_hash.value is None
    assert first.none_hash.seed_source == "none"


def test_lookahead_keys_wait_for_lookahead_tokens() -> None:
    plain = Hasher(block_size=4, vllm_version="0.33.0")
    ahead = Hasher(block_size=4, vllm_version="0.33.0", lookahead=2)
    tokens = list(range(1, 11))  # 2 full blocks; only the first has 2 tokens after it
    assert len(plain.block_hashes(tokens)) == 2
    state = ahead.start(Request(tokens))
    assert len(state.block_hashes) == 2
    assert state.extra_keys[0] == (None, 5, 6)
    assert state.block_hashes[0] != plain.block_hashes(tokens)[0]
    assert len(ahead.start(Request(tokens[:9])).block_hashes) == 1


def test_the_era_table_in_the_docs_is_current() -> None:
    from pathlib import Path

    table = (Path(__file__).resolve().parents[2] / "docs" / "eras.md").read_text()
    for era in ERAS:
        assert f"| {era.name} | {era.since}" in table
        assert era.changes in table
