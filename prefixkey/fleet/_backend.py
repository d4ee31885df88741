"""What a prefix-index backend offers: the protocol the Router reads, and the full one.

:class:`RoutingIndex` is all :class:`~prefixkey.fleet.Router` needs: the
registered replicas and their schemes, the medium bits, and
:meth:`~RoutingIndex.leading_runs`, which answers "the longest run of these
keys per candidate" for every scheme and group of one request in **one
call** (one walk in memory, one round trip to Redis). The backend walks the
keys itself, so the Router's cost does not depend on where the index lives.
:class:`PrefixIndexBackend` adds event ingestion and the read-out methods the
in-memory :class:`~prefixkey.fleet.PrefixIndex` and the shared
:class:`~prefixkey.fleet.RedisPrefixIndex` both implement (the contract suite
runs on both).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import PrefixKeyError
from ..events import EventBatch, EventHash
from ._index import ReplicaId, ReplicaScheme, Run

__all__ = [
    "IndexUnavailableError",
    "PrefixIndexBackend",
    "RoutingIndex",
    "RunsQuery",
    "RunsResult",
]


class IndexUnavailableError(PrefixKeyError, ConnectionError):
    """The index's store did not answer in time (down, restarting, unreachable).

    Raised within the backend's bounded timeouts, never after blocking; the
    operation was not applied (or, for a batch cut in chunks, is completed
    exactly once by calling :meth:`~PrefixIndexBackend.apply` again with the
    same batch). Callers can retry.
    """

    field = "index"


@dataclass(frozen=True, slots=True)
class RunsQuery:
    """The candidates sharing one scheme, and the request's published keys under it.

    ``groups`` holds, per KV-cache group (event ``group_idx`` order), the keys
    as :meth:`ReplicaScheme.group_keys` computes them under ``scheme``.
    """

    scheme: ReplicaScheme
    replicas: tuple[ReplicaId, ...]
    groups: tuple[tuple[EventHash, ...], ...]


#: Per candidate of a query: its run per group, or the scheme it was re-registered
#: with since the caller read it (the keys must be computed again under it).
RunsResult = tuple[Run, ...] | ReplicaScheme


@runtime_checkable
class RoutingIndex(Protocol):
    """What :class:`~prefixkey.fleet.Router` reads from an index."""

    def replicas(self) -> dict[ReplicaId, ReplicaScheme]: ...
    def medium_bits(self) -> dict[str, int]: ...
    def leading_runs(self, queries: Sequence[RunsQuery], media: int) -> list[list[RunsResult]]:
        """Per query, per candidate, its leading run of the keys of each group.

        ``media`` is a bitmask of :meth:`medium_bits`: a key held only on other
        media ends the run. Runs are run-length encoded ``(mask, count)``
        segments (see :meth:`~prefixkey.fleet.PrefixIndex.longest_runs`). A
        replica removed since the caller read :meth:`replicas` holds nothing.
        """
        ...


@runtime_checkable
class PrefixIndexBackend(RoutingIndex, Protocol):
    """A prefix index: event ingestion, and what the Router and the tools read."""

    def register(self, replica: ReplicaId | str, scheme: ReplicaScheme) -> ReplicaId: ...
    def remove_replica(self, replica: ReplicaId | str) -> int: ...
    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme: ...
    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None: ...
    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]: ...
    def media(self, replica: ReplicaId | str, key: EventHash,
              group: int = 0) -> frozenset[str]: ...
    def entries(self, replica: ReplicaId | str
                ) -> Iterator[tuple[int, EventHash, frozenset[str]]]: ...
    def replica_size(self, replica: ReplicaId | str) -> int: ...
    def __len__(self) -> int: ...
    def stats(self) -> dict[str, int]: ...
