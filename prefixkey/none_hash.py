"""NONE_HASH: the parent of a request's first block.

With ``PYTHONHASHSEED`` set in the engine process (any string, "" included)
vLLM derives it as ``hash_fn(seed)``: the seed string is serialized and
digested like a block. With it unset, releases before 0.29 draw a random
value per engine process; from 0.29 collision-resistant algorithms use the
fixed seed ``"vllm-none-hash"``, while xxhash keeps a random one. Random
values cannot be reproduced outside that process, so prefixkey refuses them
with an error that says what to set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .algorithms import HashAlgorithm
from .errors import UnreproducibleKeysError
from .schemes import DEFAULT_NONE_HASH_SEED, Era

__all__ = ["NoneHash", "SeedSource", "resolve_none_hash"]

SeedSource = Literal["PYTHONHASHSEED", "default"]


@dataclass(frozen=True, slots=True)
class NoneHash:
    """The first block's parent and where its seed came from."""

    value: bytes
    seed: str
    seed_source: SeedSource


def resolve_none_hash(
    era: Era, algorithm: HashAlgorithm, python_hash_seed: str | None
) -> NoneHash:
    """NONE_HASH of an engine of ``era`` running ``algorithm`` with this PYTHONHASHSEED.

    ``python_hash_seed=None`` means the variable is unset.
    """
    source: SeedSource
    if python_hash_seed is not None:
        seed, source = python_hash_seed, "PYTHONHASHSEED"
    elif era.none_hash == "seed_or_default" and algorithm.collision_resistant:
        seed, source = DEFAULT_NONE_HASH_SEED, "default"
    else:
        if era.none_hash == "seed_or_default":
            why = f"vLLM keeps a secret random NONE_HASH seed for {algorithm.name}"
            fix = "or use sha256/sha256_cbor"
        else:
            why = f"vLLM before 0.29 draws a random NONE_HASH (era {era.name})"
            fix = "or upgrade to vLLM 0.29+ with sha256/sha256_cbor"
        raise UnreproducibleKeysError(
            f"hash_algo {algorithm.name} without PYTHONHASHSEED: {why} in every engine "
            "process, so its keys are random per process and cannot be reproduced. Start "
            "the engines with PYTHONHASHSEED set to a shared value (and pass it as "
            f"python_hash_seed), {fix}."
        )
    value = algorithm.digest(algorithm.serializer.dumps(seed))
    return NoneHash(value, seed, source)
