"""Messages name releases ("0.31.0-0.32.0"), never an era's letter.

The scheme eras' letters (docs/eras.md) mean other things elsewhere (multimodal.md's
identifier eras): a user reads a message without either table at hand.
"""

from __future__ import annotations

import re

import pytest

from prefixkey import Hasher, LoRA, Request, UnknownVersionError, UnreproducibleKeysError
from prefixkey.core import ERAS, event_extra_keys, resolve_release
from prefixkey.errors import InvalidRequestError

LETTER = re.compile(r"\beras? [A-Z][0-9]?\b")


def _message(error: BaseException) -> str:
    text = str(error)
    assert not LETTER.search(text), text
    return text


def test_an_era_spans_its_known_releases() -> None:
    spans = {era.name: era.span for era in ERAS}
    assert spans["N"] == "0.31.0-0.32.0" and spans["O"] == "0.33.0"
    assert spans["L"] == "0.19.0-0.23.0" and spans["A"] == "0.7.0"


def test_unreproducible_keys_name_the_releases() -> None:
    with pytest.raises(UnreproducibleKeysError) as info:
        Hasher(block_size=16, hash_algo="sha256", vllm_version="0.20.0")
    assert "vLLM 0.19.0-0.23.0 draws a random NONE_HASH" in _message(info.value)


def test_lookahead_refusal_names_the_releases() -> None:
    with pytest.raises(InvalidRequestError) as info:
        event_extra_keys((), resolve_release("0.31.0").era, lookahead=2)
    assert "vLLM 0.31.0-0.32.0 has no lookahead hashing" in _message(info.value)


def test_lora_int_id_refusal_names_the_releases() -> None:
    hasher = Hasher(block_size=16, hash_algo="sha256", python_hash_seed="0", vllm_version="0.8.5")
    with pytest.raises(InvalidRequestError) as info:
        hasher.block_hashes(Request(list(range(32)), lora=LoRA("sql", "/adapters/sql")))
    assert "is required: vLLM 0.8.5-0.8.5.post1 keys LoRA" in _message(info.value)


def test_a_newer_release_names_the_keys_assumed() -> None:
    with pytest.raises(UnknownVersionError) as info:
        resolve_release("0.40.0")
    assert "to assume the keys of vLLM 0.33.0)" in _message(info.value)
    lenient = resolve_release("0.40.0", strict=False)
    assert "assuming the keys of vLLM 0.33.0" in _message(Exception(*lenient.warnings))
