"""vLLM's prefix-caching hash algorithms: a serializer paired with a digest.

Each algorithm is a frozen record, looked up by the name vLLM uses for
``--prefix-caching-hash-algo``. The serializer modules encode the hashed
tuple and run the key chain; the digest turns the bytes into the block hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import xxhash

from ..errors import UnreproducibleKeysError
from . import (
    _builtin_hash as builtin_hash,
)
from . import (
    _cbor_encoding as cbor_encoding,
)
from . import (
    _pickle_encoding as pickle_encoding,
)

__all__ = [
    "ALGORITHMS", "BUILTIN", "CBOR", "FLAT_ALGORITHMS", "INT_ALGORITHMS", "PICKLE",
    "BlockHash", "HashAlgorithm", "Serializer",
]

#: A block key: digest bytes (0.10.2+), or a Python int (0.7.0-0.10.1.1).
BlockHash: TypeAlias = "bytes | int"


@dataclass(frozen=True, slots=True)
class Serializer:
    """How a serialization format encodes the hashed block tuple.

    ``encode_tokens(token_ids, words, block_size)`` prepares a request's checked
    token ids once (into a container with ``len``), ``extend_tokens`` returns
    that container with more ids appended; both take the ids'
    :func:`~prefixkey.core._request.checked_token_ids` when the check returned them.
    ``encode_extra_keys_tail``
    one block's extra keys, and ``chain`` computes a run of keys:
    ``chain(parent, tokens, starts, size, tails, digest)``, one tail per start.
    """

    name: str
    encode_tokens: Callable[[Sequence[int], bytes | None, int], Any]
    extend_tokens: Callable[[Any, Sequence[int], bytes | None], Any]
    encode_extra_keys_tail: Callable[[tuple[Any, ...] | None], Any]
    chain: Callable[[Any, Any, range, int, Iterable[Any], Callable[[Any], Any]], list[Any]]
    #: Serialize one plain value (the NONE_HASH seed string).
    dumps: Callable[[Any], bytes]


PICKLE: Final = Serializer(
    "pickle",
    pickle_encoding.encode_tokens,
    pickle_encoding.extend_tokens,
    pickle_encoding.encode_extra_keys_tail,
    pickle_encoding.chain,
    pickle_encoding.dumps,
)
CBOR: Final = Serializer(
    "cbor",
    cbor_encoding.encode_tokens,
    cbor_encoding.extend_tokens,
    cbor_encoding.encode_extra_keys_tail,
    cbor_encoding.chain,
    cbor_encoding.dumps,
)


#: builtin hash(): the "serialization" is the value itself, hashed by a
#: :class:`~prefixkey.core._builtin_hash.PythonHash` bound per engine.
BUILTIN: Final = Serializer(
    "builtin",
    pickle_encoding.encode_tokens,  # builtin hash() also works on the ids themselves
    pickle_encoding.extend_tokens,
    builtin_hash.extra_keys_tail,
    builtin_hash.chain,
    builtin_hash.dumps,
)
#: vLLM 0.7.0 hashed ``(parent, *tokens)``, without extra keys.
BUILTIN_FLAT: Final = Serializer(
    "builtin_flat",
    pickle_encoding.encode_tokens,
    pickle_encoding.extend_tokens,
    builtin_hash.extra_keys_tail,
    builtin_hash.chain_flat,
    builtin_hash.dumps,
)


def _sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _sha256_int(data: bytes) -> int:
    return int.from_bytes(hashlib.sha256(data).digest(), "big")


def _sha256_low64(data: bytes) -> int:
    return int.from_bytes(hashlib.sha256(data).digest()[-8:], "big")


def _bound_per_engine(data: Any) -> int:
    # The Hasher binds the engine's hash(); this placeholder is all a bare algorithm has.
    raise UnreproducibleKeysError(
        "builtin hash() depends on the engine's CPython and PYTHONHASHSEED: hash with a "
        "Hasher given engine_python"
    )


@dataclass(frozen=True, slots=True)
class HashAlgorithm:
    """One value of vLLM's ``--prefix-caching-hash-algo``."""

    name: str
    serializer: Serializer
    digest: Callable[[Any], BlockHash]
    digest_size: int
    #: vLLM keeps a secret random NONE_HASH seed for algorithms that are not
    #: collision resistant (xxhash*) unless PYTHONHASHSEED is set.
    collision_resistant: bool
    #: builtin hash(): the digest depends on the engine's CPython and seed.
    engine_bound: bool = False


#: The algorithms of the bytes-keyed releases (0.10.2+), by ``--prefix-caching-hash-algo`` name.
ALGORITHMS: Final[dict[str, HashAlgorithm]] = {
    a.name: a
    for a in (
        HashAlgorithm("sha256", PICKLE, _sha256, 32, True),
        HashAlgorithm("sha256_cbor", CBOR, _sha256, 32, True),
        HashAlgorithm("xxhash", PICKLE, xxhash.xxh3_128_digest, 16, False),
        HashAlgorithm("xxhash_cbor", CBOR, xxhash.xxh3_128_digest, 16, False),
    )
}
#: The int-keyed releases (up to 0.10.1.1); "sha256" is the int of the digest.
INT_ALGORITHMS: Final[dict[str, HashAlgorithm]] = {
    a.name: a
    for a in (
        HashAlgorithm("builtin", BUILTIN, _bound_per_engine, 8, False, engine_bound=True),
        HashAlgorithm("sha256", PICKLE, _sha256_int, 32, True),
        HashAlgorithm("sha256_cbor_64bit", CBOR, _sha256_low64, 8, True),
    )
}
#: vLLM 0.7.0.
FLAT_ALGORITHMS: Final[dict[str, HashAlgorithm]] = {
    "builtin": HashAlgorithm("builtin", BUILTIN_FLAT, _bound_per_engine, 8, False,
                             engine_bound=True),
}
