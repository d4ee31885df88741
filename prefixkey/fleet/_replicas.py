"""A replica's identity and key scheme: who sends events, and how it keys its blocks.

:class:`ReplicaScheme` says how a replica computes and publishes its block
keys (hasher, int or bytes, KV-cache groups); the index
(:mod:`prefixkey.fleet.index._memory`) and every backend look keys up through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal, NamedTuple, cast

from ..core import ERAS, BlockHash, Hasher, block_hash_to_int64, group_block_hashes
from ..core._keys import digests_to_int64
from ..errors import InvalidRequestError, PrefixKeyError
from ..events import EventHash

#: KV-cache group kinds a prefix hit can be computed for (every block must hit).
_SUPPORTED_KINDS: Final = frozenset({"full_attention"})


class UnsupportedLayoutError(PrefixKeyError, ValueError):
    """A KV-cache layout whose prefix hits prefixkey cannot compute exactly."""

    field = "groups"


class UnknownReplicaError(PrefixKeyError, KeyError):
    """A replica that is not registered with the index."""

    field = "replica"


class ReplicaId(NamedTuple):
    """A replica's identity: its name and its data-parallel rank."""

    name: str
    dp_rank: int = 0

    def __str__(self) -> str:
        """The replica's label: its name, ``name#dpN`` for ranks > 0 (:meth:`parse` reads it)."""
        return self.name if self.dp_rank == 0 else f"{self.name}#dp{self.dp_rank}"

    @classmethod
    def parse(cls, label: str) -> ReplicaId:
        """The replica a label names: ``"gpu-a#dp1"`` → rank 1; anything else is a name."""
        base, sep, rank = label.rpartition("#dp")
        if sep and base and rank.isascii() and rank.isdigit():
            return cls(base, int(rank))
        return cls(label)


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """One KV-cache group: its block size (a multiple of the hash block size) and kind."""

    block_size: int
    kind: str = "full_attention"


@dataclass(frozen=True)
class ReplicaScheme:
    """How a replica keys and publishes its blocks.

    ``groups`` lists the KV-cache groups (event ``group_idx`` order); empty
    means one full-attention group with the hasher's block size. A group's
    block size must be a multiple of ``hasher.block_size``; only
    full-attention groups are supported (sliding-window and Mamba groups keep
    sparse blocks, so "every block of the prefix is cached" is not their hit
    rule): other layouts raise :class:`UnsupportedLayoutError`.
    """

    hasher: Hasher
    publishes: Literal["int", "bytes"] = "int"
    groups: tuple[GroupSpec, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.hasher, Hasher):
            raise InvalidRequestError("hasher", f"must be a Hasher, got {self.hasher!r}")
        if self.publishes not in ("int", "bytes"):
            raise InvalidRequestError(
                "publishes", f"must be 'int' or 'bytes', got {self.publishes!r}"
            )
        if self.hasher.era.hash_type == "int" and self.publishes == "bytes":
            raise InvalidRequestError(
                "publishes", f"vLLM {self.hasher.vllm_version} keys are ints and publishes ints"
            )
        groups = tuple(self.groups) or (GroupSpec(self.hasher.block_size),)
        era = self.hasher.era
        for i, group in enumerate(groups):
            if not isinstance(group, GroupSpec):
                raise InvalidRequestError(
                    "groups", f"must be GroupSpec, got {group!r}", position=i
                )
            if group.kind not in _SUPPORTED_KINDS:
                raise UnsupportedLayoutError(
                    f"groups[{i}]: kind {group.kind!r} is not supported (only full-attention "
                    "groups: a sliding-window or Mamba group's hit is not a full prefix)"
                )
            bs = group.block_size
            if type(bs) is not int or bs < 1 or bs % self.hasher.block_size:
                raise UnsupportedLayoutError(
                    f"groups[{i}]: block size {bs!r} is not a multiple of the hash block "
                    f"size {self.hasher.block_size}"
                )
            if bs != self.hasher.block_size and era.group_keys == "none":
                first = next(e.since for e in ERAS if e.group_keys != "none")
                raise UnsupportedLayoutError(
                    f"groups[{i}]: vLLM {self.hasher.vllm_version} has no coarser-group keys "
                    f"(hash block size = group block size before {first})"
                )
        object.__setattr__(self, "groups", groups)

    @property
    def hash_key(self) -> tuple[object, ...]:
        """Schemes with equal ``hash_key`` compute the same fine keys for a request."""
        h = self.hasher
        engine = id(h) if h.algorithm.engine_bound else None
        return (h.vllm_version, h.algorithm.name, h.none_hash.value, h.block_size, h.lookahead,
                engine)

    @property
    def key(self) -> tuple[object, ...]:
        """Schemes with equal ``key`` look up the same published keys."""
        return (*self.hash_key, self.publishes, self.groups)

    def publish(self, block_hash: BlockHash) -> EventHash:
        """A key in the form this replica's events carry it."""
        if self.publishes == "int" and isinstance(block_hash, bytes):
            return block_hash_to_int64(block_hash)
        return block_hash

    def group_keys(self, fine: list[BlockHash], *,
                   digests: bool = False) -> tuple[tuple[EventHash, ...], ...]:
        """Per group, the published keys of its blocks, from the request's fine keys.

        ``digests``: ``fine`` is this scheme's hasher's own output (every bytes
        key one digest long), converted to event ints in one pass.
        """
        out: list[tuple[EventHash, ...]] = []
        hash_bs = self.hasher.block_size
        # Event ints are the low 64 bits: a concatenation's are its last key's.
        concat = self.publishes == "bytes" and self.hasher.era.group_keys == "concatenated"
        bulk = digests and self.publishes == "int" and bool(fine) and type(fine[0]) is bytes
        for group in self.groups:
            keys = fine if group.block_size == hash_bs else group_block_hashes(
                fine, hash_bs, group.block_size, concatenate=concat)
            if bulk:
                out.append(tuple(digests_to_int64(
                    cast("list[bytes]", keys), self.hasher.algorithm.digest_size)))
            else:
                out.append(tuple(map(self.publish, keys)))
        return tuple(out)


def as_replica_id(replica: ReplicaId | str | tuple[str, int]) -> ReplicaId:
    """A replica given as a ReplicaId, a name (rank 0) or a (name, rank) pair."""
    if isinstance(replica, ReplicaId):
        return replica
    if isinstance(replica, str):
        return ReplicaId(replica)
    if isinstance(replica, tuple) and len(replica) == 2:
        return ReplicaId(*replica)
    raise InvalidRequestError("replica", f"must be a ReplicaId or a name, got {replica!r}")
