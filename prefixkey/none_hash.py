"""NONE_HASH: the parent of a request's first block.

From vLLM 0.29 the engine derives it as ``hash_fn(seed)``: the seed string is
serialized and digested like any block. The seed is ``PYTHONHASHSEED`` when the
engine process has it set (any string, "" included); otherwise a fixed default
for collision-resistant algorithms, and a fresh random string per process for
the others, whose keys nobody else can then reproduce.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .algorithms import HashAlgorithm
from .errors import UnreproducibleKeysError

__all__ = ["NoneHash", "SeedSource", "resolve_none_hash"]

SeedSource = Literal["PYTHONHASHSEED", "default"]


@dataclass(frozen=True, slots=True)
class NoneHash:
    """The first block's parent and where its seed came from."""

    value: bytes
    seed: str
    seed_source: SeedSource


def resolve_none_hash(
    algorithm: HashAlgorithm, python_hash_seed: str | None, *, default_seed: str
) -> NoneHash:
    """NONE_HASH of an engine running ``algorithm`` with ``PYTHONHASHSEED=python_hash_seed``.

    ``python_hash_seed=None`` means the variable is unset.
    """
    if python_hash_seed is not None:
        seed, source = python_hash_seed, "PYTHONHASHSEED"
    elif algorithm.collision_resistant:
        seed, source = default_seed, "default"
    else:
        raise UnreproducibleKeysError(
            f"hash_algo {algorithm.name} without PYTHONHASHSEED: vLLM draws a random "
            "NONE_HASH seed in every engine process, so its keys are random per process "
            "and cannot be reproduced. Start the engines with PYTHONHASHSEED set to a "
            "shared value (and pass it as python_hash_seed), or use sha256/sha256_cbor."
        )
    value = algorithm.digest(algorithm.serializer.dumps(seed))
    return NoneHash(value, seed, source)  # type: ignore[arg-type]
