"""NONE_HASH: the parent of a request's first block, by era.

vLLM 0.7.0-0.7.1 chain from ``None`` itself and 0.7.2-0.8.2 from builtin
``hash("None")``. From 0.8.3 NONE_HASH is derived from ``PYTHONHASHSEED`` (the
raw environment string, "" included) when the engine has it set: SHA-256 of
it (0.8.5-0.9.2), or ``hash_fn(seed)`` with the configured algorithm (0.10+).
With it unset, releases before 0.29 draw a random value per engine process
(0.8.3-0.8.4 inverted the test: unset gives SHA-256 of None, set gives
random); from 0.29 collision-resistant algorithms use the fixed seed
``"vllm-none-hash"``. Random values cannot be reproduced outside that
process, so prefixkey refuses them with an error that says what to set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import UnreproducibleKeysError
from . import _pickle_encoding as pickle_encoding
from ._algorithms import HashAlgorithm
from ._schemes import DEFAULT_NONE_HASH_SEED, ERAS, Era

__all__ = ["NoneHash", "SeedSource", "resolve_none_hash"]

#: Where NONE_HASH comes from: the engine's PYTHONHASHSEED, the default seed
#: of 0.29+, a constant input (``None``, ``"None"``), or no NONE_HASH at all.
SeedSource = Literal["PYTHONHASHSEED", "default", "constant", "none"]


@dataclass(frozen=True, slots=True)
class NoneHash:
    """The first block's parent and what it was derived from."""

    value: bytes | int | None
    seed: str | None
    seed_source: SeedSource


def _random(era: Era, algorithm: HashAlgorithm, when: str, fix: str) -> UnreproducibleKeysError:
    return UnreproducibleKeysError(
        f"hash_algo {algorithm.name} {when}: vLLM {era.span} draws a "
        "random NONE_HASH in every engine process, so its keys are random per process and "
        f"cannot be reproduced. {fix}"
    )


_SET_SEED = (
    "Start the engines with PYTHONHASHSEED set to a shared value (and pass it as "
    "python_hash_seed)"
)


def resolve_none_hash(
    era: Era,
    algorithm: HashAlgorithm,
    python_hash_seed: str | None,
    hash_value: Callable[[Any], Any],
) -> NoneHash:
    """NONE_HASH of an engine of ``era`` running ``algorithm`` with this PYTHONHASHSEED.

    ``python_hash_seed=None`` means the variable is unset; ``hash_value`` is
    the engine's ``hash_fn`` (serialize, then digest).
    """
    seed = python_hash_seed
    rule = era.none_hash
    if rule == "none":
        return NoneHash(None, None, "none")
    if rule == "hash_of_none_string":
        return NoneHash(hash_value("None"), "None", "constant")
    if rule == "sha256_of_none_or_random":
        if seed is not None:
            raise _random(era, algorithm, "with PYTHONHASHSEED set",
                          "0.8.3-0.8.4 inverted the test: unset PYTHONHASHSEED to reproduce them.")
        return NoneHash(_sha256_int(None), None, "constant")
    if seed is not None:
        if rule == "sha256_of_seed_or_random":
            return NoneHash(_sha256_int(seed), seed, "PYTHONHASHSEED")
        return NoneHash(hash_value(seed), seed, "PYTHONHASHSEED")
    if rule == "seed_or_default" and algorithm.collision_resistant:
        return NoneHash(hash_value(DEFAULT_NONE_HASH_SEED), DEFAULT_NONE_HASH_SEED, "default")
    default_since = next(e.since for e in ERAS if e.none_hash == "seed_or_default")
    fix = _SET_SEED + (
        ", or use sha256/sha256_cbor." if rule == "seed_or_default"
        else f", or upgrade to vLLM {default_since}+ with sha256/sha256_cbor."
    )
    raise _random(era, algorithm, "without PYTHONHASHSEED", fix)


def _sha256_int(value: Any) -> int:
    """0.8.3-0.9.2 derive NONE_HASH with the int SHA-256 whatever the algorithm."""
    return int.from_bytes(hashlib.sha256(pickle_encoding.dumps(value)).digest(), "big")
