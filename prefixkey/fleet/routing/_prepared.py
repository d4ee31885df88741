"""A request hashed for routing: its keys per scheme, and its rendezvous weights (sans-IO).

:meth:`Router.prepare <prefixkey.fleet.Router.prepare>` hashes a request
once per distinct scheme among the candidates into a :class:`PreparedRequest`;
:meth:`PreparedRequest.add_keys` takes keys computed elsewhere. Each scheme's
keys carry the request's *affinity* (its first block key, or a digest of a
prompt shorter than a block), on which :func:`rendezvous_weight` orders
candidates that tie, and all of them when none holds a block.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from xxhash import xxh3_64_intdigest

from ...core import BlockHash, Request
from ...core._checks import check_int
from ...errors import InvalidRequestError
from ...events import EventHash
from .._replicas import ReplicaId, ReplicaScheme

__all__ = [
    "PreparedRequest",
    "SchemeKeys",
    "affinity_digest",
    "affinity_of_key",
    "rendezvous_seed",
    "rendezvous_weight",
    "rendezvous_weights",
]


def affinity_digest(request: Request) -> bytes:
    """A digest of a request's tokens and extra keys (LoRA, salt, mm items).

    The rendezvous key of a prompt too short to have a block key.
    """
    h = hashlib.blake2b(digest_size=16)
    h.update(len(request.token_ids).to_bytes(8, "big"))
    for t in request.token_ids:
        # Ids outside uint64 (negative ones reach the engine core before 0.28) as text.
        h.update(t.to_bytes(8, "big") if 0 <= t < 1 << 64 else str(t).encode())
    if request.lora is not None:
        h.update(b"\x01lora" + request.lora.name.encode() + b"\x00" +
                 (request.lora.path or "").encode())
    if request.cache_salt is not None:
        h.update(b"\x02salt" + request.cache_salt.encode())
    for item in request.mm_items:
        h.update(b"\x03mm" + f"{item.identifier}@{item.offset}+{item.length}".encode())
    return h.digest()


def rendezvous_weight(affinity: bytes, replica: ReplicaId) -> float:
    """Highest-random-weight hashing: the weight of ``replica`` for ``affinity``.

    The 64-bit xxh3 of the replica, seeded with the xxh3 of ``affinity``, as
    a float: the Router computes and sorts a tie's weights in C, tens of
    nanoseconds each (:func:`rendezvous_weights`).
    """
    return rendezvous_weights((replica,), (rendezvous_seed(affinity),))[0]


def rendezvous_seed(affinity: bytes) -> int:
    """The seed of :func:`rendezvous_weight` for ``affinity``."""
    return xxh3_64_intdigest(affinity)


def rendezvous_weights(replicas: Iterable[ReplicaId], seeds: Iterable[int]) -> list[float]:
    """:func:`rendezvous_weight` of each replica under its seed, in C."""
    return list(map(float, map(xxh3_64_intdigest, map(_SUFFIXES.__getitem__, replicas), seeds)))


class _Suffixes(dict[ReplicaId, bytes]):
    """Each replica's rendezvous input, made on first use (a plain dict read in C after)."""

    def __missing__(self, replica: ReplicaId) -> bytes:
        if len(self) >= 1 << 16:  # bounded: replicas come and go
            self.clear()
        suffix = self[replica] = (b"\x00" + replica.name.encode() + b"\x00"
                                  + str(replica.dp_rank).encode())
        return suffix


_SUFFIXES: Final = _Suffixes()


def affinity_of_key(key: BlockHash | EventHash) -> bytes:
    """A block key as a rendezvous affinity (its bytes; an int as signed big-endian bytes)."""
    if isinstance(key, bytes):
        return key
    return key.to_bytes((key.bit_length() + 8) // 8 + 1, "big", signed=True)


@dataclass(frozen=True, slots=True)
class SchemeKeys:
    """A request's published keys under one scheme: per group, and its rendezvous key."""

    groups: tuple[tuple[EventHash, ...], ...]
    affinity: bytes


class PreparedRequest:
    """A request hashed for routing: its length and its keys per scheme.

    Built by :meth:`Router.prepare`, or by hand from keys computed elsewhere
    with :meth:`add_keys`. ``request`` (optional) lets :meth:`Router.rank`
    hash schemes that were not prepared.
    """

    __slots__ = ("_last", "_schemes", "hash_seconds", "num_tokens", "request")

    def __init__(self, num_tokens: int, request: Request | None = None) -> None:
        self.num_tokens = check_int("num_tokens", num_tokens, least=0)
        self.request = request
        self.hash_seconds = 0.0
        self._schemes: dict[tuple[object, ...], SchemeKeys] = {}
        #: The scheme object last recorded and its keys: a ranking asks again for the
        #: scheme it prepared, found by identity (a scheme's key is a tuple, built and
        #: hashed on each read, GroupSpecs and all).
        self._last: tuple[ReplicaScheme | None, SchemeKeys | None] = (None, None)

    def add_keys(
        self, scheme: ReplicaScheme, block_hashes: Sequence[BlockHash],
        affinity: bytes | None = None,
    ) -> SchemeKeys:
        """Record the request's fine keys under ``scheme`` (as a Hasher returns them)."""
        return self._add(scheme, list(block_hashes), affinity, digests=False)

    def _add(self, scheme: ReplicaScheme, fine: list[BlockHash], affinity: bytes | None, *,
             digests: bool) -> SchemeKeys:
        """:meth:`add_keys` of a list (not copied); ``digests``: ``scheme``'s hasher made it."""
        if affinity is None:
            if fine:
                affinity = affinity_of_key(fine[0])
            elif self.request is not None:
                affinity = affinity_digest(self.request)
            else:
                affinity = self.num_tokens.to_bytes(8, "big")
        keys = SchemeKeys(scheme.group_keys(fine, digests=digests), affinity)
        self._schemes[scheme.key] = keys
        self._last = (scheme, keys)
        return keys

    def keys_for(self, scheme: ReplicaScheme) -> SchemeKeys:
        """The keys under ``scheme``, hashing the request now if they were not prepared."""
        last, keys = self._last
        if last is scheme and keys is not None:
            return keys
        keys = self._schemes.get(scheme.key)
        if keys is not None:
            return keys
        if self.request is None:
            raise InvalidRequestError(
                "block_hashes", f"no keys prepared for the scheme of {scheme.hasher!r}"
            )
        start = time.perf_counter()
        fine = scheme.hasher.block_hashes(self.request)
        keys = self._add(scheme, fine, None, digests=True)
        self.hash_seconds += time.perf_counter() - start
        return keys
