"""prefixkey.core._builtin_hash against CPython 3.12's own hash().

The expected values were printed by CPython 3.12.1 run with each
PYTHONHASHSEED (``PYTHONHASHSEED=s python3.12 -c "print(hash(v))"``); the
golden vectors of vLLM 0.7-0.10.1 (builtin algorithm, run under 3.12) cover
the tuples vLLM hashes.
"""

from __future__ import annotations

from typing import Any

import pytest

from prefixkey.core._builtin_hash import python_hash_for
from prefixkey.errors import InvalidRequestError, UnreproducibleKeysError

VALUES: list[Any] = [None, "None", "", "a", "é", "☃", "😀x", (1, 2, 3), -1, 2**61,
                     -(2**64), (None,), b"abc"]
CPYTHON_312: dict[str, list[int]] = {
    "0": [4238894112, 6326007198132564125, 0, 4644417185603328019, 6047309291227476195,
          5658562226297181912, -8926728262118538918, 529344067295497451, -2, 1, -8,
          9181102132670838864, -4594863902769663758],
    "1": [4238894112, 2874508438445787839, 0, -3012895188637184397, 8133168473585362875,
          -925107638723722366, 8904275969526274476, 529344067295497451, -2, 1, -8,
          9181102132670838864, -4667308735975688587],
    "12345": [4238894112, 4570654030854168938, 0, -8961251314296359281, 6247654839523334371,
              -2341138707766660504, -5581016787913457232, 529344067295497451, -2, 1, -8,
              9181102132670838864, 2962436275791859092],
}


@pytest.mark.parametrize("seed", sorted(CPYTHON_312))
@pytest.mark.parametrize("index", range(len(VALUES)))
def test_matches_cpython_312(seed: str, index: int) -> None:
    assert python_hash_for("3.12", seed)(VALUES[index]) == CPYTHON_312[seed][index]


def test_without_a_seed_only_strings_and_bytes_are_refused() -> None:
    hash_ = python_hash_for("3.13", None)
    assert hash_((None, (1, 2), 2**70)) == python_hash_for("3.12", "7")((None, (1, 2), 2**70))
    assert hash_("") == 0  # the empty string hashes to 0 under any key
    for value in ("None", b"x", (1, "a")):
        with pytest.raises(UnreproducibleKeysError):
            hash_(value)


@pytest.mark.parametrize(
    ("engine_python", "seed", "error"),
    [(None, "0", UnreproducibleKeysError), ("3.11", "0", UnreproducibleKeysError),
     ("2.7", "0", UnreproducibleKeysError), ("3", "0", UnreproducibleKeysError),
     ("x.y", "0", InvalidRequestError), ("3.12", "-1", InvalidRequestError),
     ("3.12", "4294967296", InvalidRequestError), ("3.12", "0x10", InvalidRequestError)],
)
def test_refusals(engine_python: str | None, seed: str, error: type) -> None:
    with pytest.raises(error):
        python_hash_for(engine_python, seed)
