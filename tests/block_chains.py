"""The engine's chain of block keys over any serializer, for the encoders' property tests.

vLLM hashes block ``i`` as ``digest(dumps((parent, tokens_i, extra_keys)))``, the
parent being the previous block's key; tests/properties/test_cbor_encoding.py
and test_pickle_encoding.py check ``chain`` against this with their reference
``dumps`` (cbor2, pickle).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from xxhash import xxh3_128_digest

#: The digests the chain tests run with, by vLLM's name.
DIGESTS: dict[str, Callable[[bytes], bytes]] = {
    "sha256": lambda b: hashlib.sha256(b).digest(),
    "xxh3_128": xxh3_128_digest,
}


def block_starts(n_tokens: int, block_size: int) -> range:
    """Where each full block starts (a partial last block is never hashed)."""
    return range(0, n_tokens - block_size + 1, block_size)


def reference_chain(parent: bytes, tokens: list[int], block_size: int, extra: Any,
                    dumps: Callable[[Any], bytes], digest: Callable[[bytes], bytes]
                    ) -> list[bytes]:
    """Each full block's key, chained from ``parent``, as the engine computes it."""
    keys, p = [], parent
    for s in block_starts(len(tokens), block_size):
        p = digest(dumps((p, tuple(tokens[s : s + block_size]), extra)))
        keys.append(p)
    return keys
