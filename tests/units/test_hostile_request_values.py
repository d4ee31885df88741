"""Request values that escaped the error tree (found by tests/fuzz).

A ``python_hash_seed`` holding a lone surrogate raised UnicodeEncodeError
from the CBOR encoder while NONE_HASH was derived. No engine can have one: its
Python refuses to start unless PYTHONHASHSEED is an integer or "random". A
version string with a part of over 4300 digits raised ValueError from int().
"""

from __future__ import annotations

import pytest

from prefixkey import Hasher
from prefixkey.errors import InvalidRequestError, UnknownVersionError
from prefixkey.jsonl import parse_json_line, parse_request


@pytest.mark.parametrize("algo", ["sha256", "sha256_cbor", "xxhash_cbor"])
def test_lone_surrogate_seed(algo: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Hasher(block_size=1, hash_algo=algo, python_hash_seed="0\ud800",
               vllm_version="0.13.0")
    assert info.value.field == "python_hash_seed"


def test_lone_surrogate_seed_in_a_request_line() -> None:
    line = (b'{"vllm_version": "0.13.0", "hash_algo": "xxhash_cbor", '
            b'"python_hash_seed": "\\u00fc\\ud800", "block_size": 1, "token_ids": [0]}')
    with pytest.raises(InvalidRequestError) as info:
        parse_request(parse_json_line(line))
    assert info.value.field == "python_hash_seed"


def test_version_with_a_part_too_long_for_int() -> None:
    # packaging's int() of a release part of over 4300 digits raised ValueError.
    with pytest.raises(UnknownVersionError) as info:
        Hasher(block_size=1, vllm_version="0.13." + "1" * 5000)
    assert info.value.field == "vllm_version"
