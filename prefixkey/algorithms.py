"""vLLM's prefix-caching hash algorithms: a serializer paired with a digest.

Each algorithm is a frozen record, looked up by the name vLLM uses for
``--prefix-caching-hash-algo``. The serializer modules encode the hashed
tuple; the digest turns the bytes into the block hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import xxhash

from . import cbor_encoding, pickle_encoding

__all__ = ["ALGORITHMS", "CBOR", "PICKLE", "HashAlgorithm", "Serializer"]


@dataclass(frozen=True, slots=True)
class Serializer:
    """How a serialization format encodes the hashed block tuple."""

    name: str
    #: Per-token encodings of a token id list.
    encode_tokens: Callable[[Sequence[int]], list[bytes]]
    #: The encoded extra keys, as handed to ``encode_block``.
    encode_extra_keys_tail: Callable[[tuple[Any, ...] | None], Any]
    #: ``(parent, encoded tokens of one block, tail) -> serialized tuple``.
    encode_block: Callable[[bytes, Sequence[bytes], Any], bytes]
    #: Serialize one plain value (the NONE_HASH seed string).
    dumps: Callable[[Any], bytes]


PICKLE: Final = Serializer(
    "pickle",
    pickle_encoding.encode_tokens,
    pickle_encoding.encode_extra_keys_tail,
    pickle_encoding.encode_block,
    pickle_encoding.dumps,
)
CBOR: Final = Serializer(
    "cbor",
    cbor_encoding.encode_tokens,
    cbor_encoding.encode_extra_keys_tail,
    cbor_encoding.encode_block,
    cbor_encoding.dumps,
)


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


@dataclass(frozen=True, slots=True)
class HashAlgorithm:
    """One value of vLLM's ``--prefix-caching-hash-algo``."""

    name: str
    serializer: Serializer
    digest: Callable[[bytes], bytes]
    digest_size: int
    #: vLLM keeps a secret random NONE_HASH seed for algorithms that are not
    #: collision resistant (xxhash*) unless PYTHONHASHSEED is set.
    collision_resistant: bool


ALGORITHMS: Final[dict[str, HashAlgorithm]] = {
    a.name: a
    for a in (
        HashAlgorithm("sha256", PICKLE, _sha256, 32, True),
        HashAlgorithm("sha256_cbor", CBOR, _sha256, 32, True),
        HashAlgorithm("xxhash", PICKLE, xxhash.xxh3_128_digest, 16, False),
        HashAlgorithm("xxhash_cbor", CBOR, xxhash.xxh3_128_digest, 16, False),
    )
}

