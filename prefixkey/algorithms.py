"""vLLM's prefix-caching hash algorithms: a serializer paired with a digest.

Each algorithm is a frozen record, looked up by the name vLLM uses for
``--prefix-caching-hash-algo``. The serializer modules encode the hashed
tuple and run the key chain; the digest turns the bytes into the block hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import xxhash

from . import cbor_encoding, pickle_encoding

__all__ = ["ALGORITHMS", "CBOR", "PICKLE", "HashAlgorithm", "Serializer"]


@dataclass(frozen=True, slots=True)
class Serializer:
    """How a serialization format encodes the hashed block tuple.

    ``encode_tokens`` prepares a request's token ids once (into a container with
    ``len`` and ``extend``, which later appends go through), ``encode_extra_keys_tail``
    one block's extra keys, and ``chain`` computes a run of keys:
    ``chain(parent, tokens, starts, size, tails, digest)``, one tail per start.
    """

    name: str
    encode_tokens: Callable[[Sequence[int]], Any]
    encode_extra_keys_tail: Callable[[tuple[Any, ...] | None], Any]
    chain: Callable[
        [bytes, Any, range, int, Iterable[Any], Callable[[bytes], bytes]], list[bytes]
    ]
    #: Serialize one plain value (the NONE_HASH seed string).
    dumps: Callable[[Any], bytes]


PICKLE: Final = Serializer(
    "pickle",
    pickle_encoding.encode_tokens,
    pickle_encoding.encode_extra_keys_tail,
    pickle_encoding.chain,
    pickle_encoding.dumps,
)
CBOR: Final = Serializer(
    "cbor",
    cbor_encoding.encode_tokens,
    cbor_encoding.encode_extra_keys_tail,
    cbor_encoding.chain,
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
