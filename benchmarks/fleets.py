"""A benchmark fleet's index: each replica holds a random prefix of a request's keys
plus random filler blocks (bench_gateways.py and bench_rank_top1.py rank over it)."""

from __future__ import annotations

import random

from prefixkey.events import BlockStored, EventBatch, EventHash
from prefixkey.fleet import PrefixIndexBackend, ReplicaScheme


def fill(index: PrefixIndexBackend, scheme: ReplicaScheme, block_size: int, replicas: int,
         keys: list[EventHash], filler: int, rng: random.Random,
         holders: int | None = None) -> list[str]:
    """Register replicas ``r0``… in ``index`` and store their blocks; return their names.
    Only the first ``holders`` hold a prefix of ``keys`` (every replica when None)."""
    names = [f"r{i}" for i in range(replicas)]
    for i, name in enumerate(names):
        rid = index.register(name, scheme)
        held = keys[:rng.randrange(len(keys) + 1)] if holders is None or i < holders else []
        extra: list[EventHash] = [rng.getrandbits(63) for _ in range(filler)]
        for chain in (held, extra):
            for start in range(0, len(chain), 256):  # batches of vLLM's size
                part = tuple(chain[start:start + 256])
                if part:
                    index.apply(rid, EventBatch(1.0, (BlockStored(
                        part, chain[start - 1] if start else None, (), block_size),)))
    return names
