"""What a prefix-index backend offers: the protocol the Router reads, and the full one.

:class:`RoutingIndex` is all :class:`~prefixkey.fleet.Router` needs: the
registered replicas and their schemes, the medium bits, and
:meth:`~RoutingIndex.leading_runs`, which answers "the longest run of these
keys per candidate" for every scheme and group of one request in **one
call** (one walk in memory, one round trip to Redis). The backend walks the
keys itself, so the Router's cost does not depend on where the index lives.
The answer groups the candidates by equal runs (:class:`RunsAnswer`): what a
ranking costs is then per distinct run, and per candidate only for those read.
:class:`PrefixIndexBackend` adds event ingestion (``apply`` of an
:class:`~prefixkey.events.EventBatch`, ``apply_ops`` of what
:meth:`~prefixkey.events.EventDecoder.ops` decodes) and the read-out methods the
in-memory :class:`~prefixkey.fleet.PrefixIndex` and the shared
:class:`~prefixkey.fleet.RedisPrefixIndex` both implement (the contract suite
runs on both).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import (
    Annotated,
    Final,
    Protocol,
    TypedDict,
    get_type_hints,
    runtime_checkable,
)

from ...errors import PrefixKeyError
from ...events import DecodedOps, EventBatch, EventHash
from .._replicas import ReplicaId, ReplicaScheme
from ._walk import Run

__all__ = [
    "INDEX_COUNTERS",
    "INDEX_GAUGES",
    "IndexCounters",
    "IndexFullError",
    "IndexStats",
    "IndexUnavailableError",
    "PrefixIndexBackend",
    "RedisIndexStats",
    "RoutingIndex",
    "RunsAnswer",
    "RunsGroup",
    "RunsQuery",
    "RunsResult",
    "field_help",
]


class IndexCounters(TypedDict):
    """The counters every backend's :meth:`~PrefixIndexBackend.stats` reports (the
    contract: in memory and on Redis alike), each with what it counts."""

    batches: Annotated[int, "batches applied"]
    events: Annotated[int, "events in applied batches"]
    stores: Annotated[int, "block keys stored (held anew, or on a new medium)"]
    refreshes: Annotated[int, (
        "block keys stored again on a medium already holding them (recency renewed)")]
    removes: Annotated[int, "block keys removed"]
    removes_missing: Annotated[int, "removals of block keys not held"]
    clears: Annotated[int, "AllBlocksCleared events applied"]
    evictions: Annotated[int, "entries evicted to stay within max_entries"]
    unknown_replica_batches: Annotated[int, "batches of replicas not registered (dropped)"]
    unknown_replica_events: Annotated[int, "events in batches of replicas not registered"]
    hash_type_mismatches: Annotated[int, (
        "block keys of the wrong type for the replica's scheme (dropped)")]
    out_of_order_batches: Annotated[int, (
        "batches with a timestamp older than the replica's newest")]


class IndexStats(IndexCounters):
    """What every backend's :meth:`~PrefixIndexBackend.stats` returns: the counters and
    the gauges (``max_entries`` bounds the whole index in memory, each replica on Redis)."""

    size: Annotated[int, "entries held"]
    max_entries: Annotated[int, "the entry bound"]
    replicas: Annotated[int, "registered replicas"]


class _RedisFaultCounters(TypedDict, total=False):
    # total=False, not NotRequired: under ``from __future__ import annotations`` Python
    # 3.11 does not see NotRequired (the keys would read as required at run time).
    resyncs: int
    resets_after_restart: int
    resets_after_missing_keys: int


class RedisIndexStats(IndexStats, _RedisFaultCounters):
    """:class:`IndexStats` of the shared Redis index, and its fault counters once
    non-zero: ``resyncs`` (replicas cleared because a batch was given up),
    ``resets_after_restart`` and ``resets_after_missing_keys`` (namespace entries
    dropped; see :mod:`._redis_namespace`)."""


def field_help(typed: type) -> dict[str, str]:
    """The help text of each field of a TypedDict whose fields are ``Annotated[int, help]``:
    the counters' tables (index, subscriber, predictions) are read from their TypedDicts."""
    hints = get_type_hints(typed, include_extras=True)
    return {name: hint.__metadata__[0] for name, hint in hints.items()}


#: The counters every backend's :meth:`~PrefixIndexBackend.stats` reports, with what
#: each counts, read from :class:`IndexCounters` (the one place they are written).
INDEX_COUNTERS: Final[Mapping[str, str]] = field_help(IndexCounters)
#: The gauges every backend's :meth:`~PrefixIndexBackend.stats` reports beside them.
INDEX_GAUGES: Final[Mapping[str, str]] = {
    name: text for name, text in field_help(IndexStats).items() if name not in INDEX_COUNTERS}


class IndexUnavailableError(PrefixKeyError, ConnectionError):
    """The index's store did not answer in time (down, restarting, unreachable).

    Raised within the backend's bounded timeouts, never after blocking; the
    operation was not applied (or, for a batch cut in chunks, is completed
    exactly once by calling :meth:`~PrefixIndexBackend.apply` again with the
    same batch). Callers can retry.
    """

    field = "index"
    #: True when the store may have carried the operation out after all (a write that
    #: timed out once sent, e.g. a paused server resuming): its outcome is unknown.
    maybe_applied: bool = False


class IndexFullError(IndexUnavailableError):
    """The index's store refused a write for lack of memory (Redis ``maxmemory``).

    Nothing of the operation was written. Retried as any
    :class:`IndexUnavailableError` (the subscriber waits and sends the batch
    again); a batch given up meanwhile makes the replica's next batch clear
    its entries first (counted in ``resyncs``), so no stale entry survives.
    """


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

#: Candidates of one query with an equal answer: that answer, and the candidates
#: (a sequence that may be built on first read; its length is known at once).
RunsGroup = tuple[RunsResult, Sequence[ReplicaId]]


@dataclass(frozen=True, slots=True)
class RunsAnswer:
    """One query's answer: every candidate of the query in exactly one group.

    ``ordered`` promises the order a ranking needs without scoring a group
    not read: every group's answer is a run per group of one KV-cache group,
    each one segment ``((mask, n),)`` (or empty) with one ``mask`` for all,
    and ``n`` strictly decreasing along ``groups``. ``groups`` may itself be
    built as it is read.
    """

    groups: Sequence[RunsGroup]
    ordered: bool = False

    @classmethod
    def of_candidates(cls, replicas: Sequence[ReplicaId],
                      results: Sequence[RunsResult]) -> RunsAnswer:
        """The answer of per-candidate results (``results[i]`` is ``replicas[i]``'s)."""
        groups: dict[RunsResult, list[ReplicaId]] = {}
        for rid, result in zip(replicas, results, strict=True):
            members = groups.get(result)
            if members is None:
                groups[result] = [rid]
            else:
                members.append(rid)
        return cls(list(groups.items()))

    def by_replica(self) -> dict[ReplicaId, RunsResult]:
        """Each candidate's result (every member of every group read)."""
        out: dict[ReplicaId, RunsResult] = {}
        for result, members in self.groups:
            out.update(zip(members, repeat(result)))
        return out


@runtime_checkable
class RoutingIndex(Protocol):
    """What :class:`~prefixkey.fleet.Router` reads from an index."""

    def replicas(self) -> Mapping[ReplicaId, ReplicaScheme]:
        """The registered replicas and their schemes.

        A backend may return the same object while they are unchanged, and
        must then never change it in place: the Router keeps what it works out
        from it per object.
        """
        ...
    def medium_bits(self) -> dict[str, int]: ...
    def leading_runs(self, queries: Sequence[RunsQuery], media: int) -> list[RunsAnswer]:
        """Per query, its candidates' leading runs of the keys of each group, grouped.

        ``media`` is a bitmask of :meth:`medium_bits`: a key held only on other
        media ends the run. Runs are run-length encoded ``(mask, count)``
        segments (see :meth:`~prefixkey.fleet.PrefixIndex.longest_runs`). A
        replica removed since the caller read :meth:`replicas` holds nothing.
        The answer must not change with the index after it is returned.
        """
        ...


@runtime_checkable
class PrefixIndexBackend(RoutingIndex, Protocol):
    """A prefix index: event ingestion, and what the Router and the tools read."""

    def register(self, replica: ReplicaId | str, scheme: ReplicaScheme) -> ReplicaId: ...
    def remove_replica(self, replica: ReplicaId | str) -> int: ...
    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme: ...
    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None: ...
    def apply_ops(self, replica: ReplicaId | str, decoded: DecodedOps) -> None:
        """:meth:`apply` of a payload as :meth:`~prefixkey.events.EventDecoder.ops` decodes
        it: the same entries and counters as ``apply`` of its batch, without the event
        objects. The one path the subscribers feed every backend through."""
        ...
    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]: ...
    def media(self, replica: ReplicaId | str, key: EventHash,
              group: int = 0) -> frozenset[str]: ...
    def entries(self, replica: ReplicaId | str
                ) -> Iterator[tuple[int, EventHash, frozenset[str]]]: ...
    def replica_size(self, replica: ReplicaId | str) -> int: ...
    def __len__(self) -> int: ...
    def stats(self) -> IndexStats:
        """Every :data:`INDEX_COUNTERS` counter and :data:`INDEX_GAUGES` gauge (a backend
        may add its own, as Redis its fault counters: :class:`RedisIndexStats`)."""
        ...
