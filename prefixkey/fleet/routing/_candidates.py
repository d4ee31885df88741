"""Which replicas a ranking considers, and under which key scheme each (sans-IO).

A ranking's candidates are the replicas the caller names (by default every
replica the index has registered and every one the Router was given as
``replicas``): the registered ones with their :class:`ReplicaScheme`, the
configured ones not registered yet apart (they hold nothing). The
candidates are then grouped by scheme, so a request is hashed and the index
asked once per distinct scheme. A gateway passes the same healthy candidates
call after call, and the index hands back the same registrations object
until one changes: both answers are kept per that object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from ...errors import InvalidRequestError
from .._replicas import ReplicaId, ReplicaScheme

__all__ = ["Candidates", "replica_id"]

#: Candidate tuples remembered per registrations view (cleared when full).
_MEMO_AT_MOST: Final = 64

#: The candidates grouped by scheme key: each scheme and its replicas.
Grouping = Mapping[tuple[object, ...], tuple[ReplicaScheme, Sequence[ReplicaId]]]


def replica_id(c: ReplicaId | str) -> ReplicaId:
    """A replica as a :class:`ReplicaId` (from itself, a name, or a ``(name, rank)`` tuple)."""
    if type(c) is ReplicaId:
        return c
    if isinstance(c, str):
        return ReplicaId(c)
    if isinstance(c, tuple):
        return ReplicaId(*c)
    raise InvalidRequestError("replicas", f"a replica is a ReplicaId or a name, got {c!r}")


class Candidates:
    """A Router's candidate resolution, with what it keeps per registrations view."""

    __slots__ = ("_by_candidates", "_last_fleet", "_last_grouping", "_last_named", "_last_own")

    def __init__(self) -> None:
        self._last_grouping: tuple[Mapping[ReplicaId, ReplicaScheme], Grouping] | None = None
        self._last_own: tuple[Mapping[ReplicaId, ReplicaScheme],
                              dict[ReplicaId, ReplicaId]] | None = None
        self._last_fleet: tuple[Mapping[ReplicaId, ReplicaScheme],
                                tuple[ReplicaId, ...]] | None = None
        #: :meth:`of` per candidates tuple, for one registrations view and ``replicas``.
        self._by_candidates: tuple[object, object, dict[tuple[object, ...], tuple[
            Mapping[ReplicaId, ReplicaScheme], tuple[ReplicaId, ...]]]] = (None, None, {})
        #: The last named candidates (a copy, of the caller's type) and :meth:`of` of them:
        #: a gateway names the same ones call after call, and comparing two lists of the
        #: same objects is pointer compares in C, where the memo hashes a tuple of them.
        self._last_named: tuple[object, object, object, tuple[
            Mapping[ReplicaId, ReplicaScheme], tuple[ReplicaId, ...]]] | None = None

    def of(
        self, known: Mapping[ReplicaId, ReplicaScheme], replicas: tuple[ReplicaId, ...],
        candidates: Iterable[ReplicaId | str] | None,
    ) -> tuple[Mapping[ReplicaId, ReplicaScheme], tuple[ReplicaId, ...]]:
        """The registered candidates and their schemes, and the configured ones not registered.

        ``known`` is the index's registrations, ``replicas`` the configured
        fleet. Candidates default to every registered replica and every
        configured one; each is listed once.
        """
        if candidates is None:
            if not replicas:
                return known, ()
            last = self._last_fleet
            if last is None or last[0] is not known:
                last = self._last_fleet = (known, tuple(r for r in replicas if r not in known))
            return known, last[1]
        named = self._last_named
        if (named is not None and named[0] is known and named[1] is replicas
                and type(candidates) is type(named[2]) and candidates == named[2]):
            return named[3]
        wanted = candidates if type(candidates) is tuple else tuple(candidates)
        found = self._named(known, replicas, wanted)
        if type(candidates) in (list, tuple):  # copied: the caller may change its list later
            self._last_named = (known, replicas,
                                wanted if type(candidates) is tuple else list(wanted), found)
        return found

    def _named(
        self, known: Mapping[ReplicaId, ReplicaScheme], replicas: tuple[ReplicaId, ...],
        wanted: tuple[ReplicaId | str, ...],
    ) -> tuple[Mapping[ReplicaId, ReplicaScheme], tuple[ReplicaId, ...]]:
        """:meth:`of` the named candidates ``wanted`` (remembered per candidates tuple)."""
        memo = self._by_candidates
        if memo[0] is not known or memo[1] is not replicas:
            memo = self._by_candidates = (known, replicas, {})
        try:
            hit = memo[2].get(wanted)
        except TypeError:  # an unhashable candidate: refused below
            hit = None
        if hit is not None:  # the same mapping object: what is worked out from it is kept
            return hit
        out: dict[ReplicaId, ReplicaScheme] = {}
        extra: dict[ReplicaId, None] = {}
        # The index's own ReplicaId objects: equal ids made from names compare field by
        # field wherever the candidates meet the index (its "every replica" query, the
        # queues' dicts); the same objects compare by identity, in C.
        own = self._own_ids(known)
        for c in wanted:
            rid = replica_id(c)
            scheme = known.get(rid)
            if scheme is not None:
                out[own.get(rid, rid)] = scheme
            elif rid in replicas:
                extra[rid] = None
            else:
                raise InvalidRequestError(
                    "candidates", f"replica {rid} is neither registered nor configured")
        if len(memo[2]) >= _MEMO_AT_MOST:
            memo[2].clear()
        found = memo[2][wanted] = (out, tuple(extra))
        return found

    def _own_ids(self, known: Mapping[ReplicaId, ReplicaScheme]) -> Mapping[ReplicaId, ReplicaId]:
        """Each registered replica's id as the index holds it (kept per registrations view)."""
        last = self._last_own
        if last is None or last[0] is not known:
            last = self._last_own = (known, {rid: rid for rid in known})
        return last[1]

    def grouping(self, schemes: Mapping[ReplicaId, ReplicaScheme]) -> Grouping:
        """The candidates by scheme key (kept per registrations object)."""
        todo: Grouping
        last = self._last_grouping
        if last is not None and last[0] is schemes:  # the index's unchanged registrations
            return last[1]
        if len(set(map(id, schemes.values()))) == 1:  # one shared scheme object
            only = next(iter(schemes.values()))
            todo = {only.key: (only, tuple(schemes))}
        else:
            by_scheme: dict[int, tuple[ReplicaScheme, list[ReplicaId]]] = {}
            for rid, scheme in schemes.items():
                entry = by_scheme.get(id(scheme))  # schemes are usually shared objects
                if entry is None:
                    entry = by_scheme[id(scheme)] = (scheme, [])
                entry[1].append(rid)
            merged: dict[tuple[object, ...], tuple[ReplicaScheme, list[ReplicaId]]] = {}
            for scheme, group in by_scheme.values():
                merged.setdefault(scheme.key, (scheme, []))[1].extend(group)
            todo = merged
        # Kept with the object it was made from: an object still referenced keeps its id.
        self._last_grouping = (schemes, todo)
        return todo
