"""The leading-run walk: a request's keys, once, over an inverted index's holder sets.

A holder set is an int whose bit ``i`` stands for the replica in slot ``i``.
Walking a request's keys narrows the set of candidates still matching and
stops when it is empty; what the walk records is where each candidate's run
ended, as *masks of candidates* (one per change of the holder set), never
one entry per candidate. A :class:`SlotMembers` turns a mask back into
replicas only when a ranking reads that group, so ranking 1024 replicas costs
the keys walked and the groups read, not the fleet.

Sans-IO and pure: the walk reads plain dicts.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate, compress, count, groupby, repeat, takewhile
from operator import and_, ne, neg, xor
from typing import NamedTuple, TypeVar, overload

from ...events import EventHash
from .._replicas import ReplicaId

__all__ = ["OrderedGroups", "PrefixWalk", "Run", "SlotMembers", "bits_of", "mark", "members_of",
           "prefix_ands", "runs_back", "runs_in_table", "walk"]

#: A leading run, run-length encoded: ``(media mask, number of keys)`` segments.
Run = tuple[tuple[int, int], ...]

#: Per slot, the replica registered in it (None: free), as of one walk.
Slots = Sequence[ReplicaId | None]

_BINARY = bytes.maketrans(b"01", b"\x00\x01")


class SlotMembers(Sequence[ReplicaId]):
    """The replicas of a holder-set mask (and ``extra`` ones), listed on first read.

    ``slots`` is the index's slot table when the mask was taken: a snapshot,
    so a later registration cannot change who the members are. Listing is in
    C (the mask's binary digits select from ``slots``): slot order.
    """

    __slots__ = ("_extra", "_listed", "_mask", "_slots")

    def __init__(self, mask: int, slots: Slots, extra: Sequence[ReplicaId] = ()) -> None:
        self._mask = mask
        self._slots = slots
        self._extra = extra
        self._listed: list[ReplicaId] | None = None

    def _list(self) -> list[ReplicaId]:
        listed = self._listed
        if listed is None:
            listed = members_of(self._mask, self._slots)
            listed += self._extra
            self._listed = listed
        return listed

    def __len__(self) -> int:
        return self._mask.bit_count() + len(self._extra)

    @overload
    def __getitem__(self, index: int) -> ReplicaId: ...
    @overload
    def __getitem__(self, index: slice) -> list[ReplicaId]: ...

    def __getitem__(self, index: int | slice) -> ReplicaId | list[ReplicaId]:
        return self._list()[index]

    def __iter__(self) -> Iterator[ReplicaId]:
        return iter(self._list())

    def __repr__(self) -> str:
        return f"SlotMembers({self._list()!r})"


def members_of(mask: int, slots: Slots) -> list[ReplicaId]:
    """The replicas of a holder-set mask, in slot order (``slots`` as of its walk)."""
    if not mask & (mask - 1):  # one replica (or none): most groups of a varied fleet
        return [slots[mask.bit_length() - 1]] if mask else []  # type: ignore[list-item]
    count = mask.bit_count()
    if count <= 8 or count * 16 < mask.bit_length():  # a few: bit by bit, no generator
        listed: list[ReplicaId] = []
        while mask:
            low = mask & -mask
            listed.append(slots[low.bit_length() - 1])  # type: ignore[arg-type]
            mask ^= low
        return listed
    # Byte i of the reversed binary digits is bit i: a selector per slot, in C.
    digits = format(mask, "b").encode().translate(_BINARY)[::-1]
    return list(compress(slots, digits))  # type: ignore[arg-type]


#: ``(keys walked, mask)``: the candidates of ``mask`` ran exactly that many keys.
Ends = list[tuple[int, int]]


def walk(holders: Mapping[EventHash, int], keys: Sequence[EventHash], alive: int) -> Ends:
    """Where the runs of ``alive``'s candidates end in ``keys`` (one medium's holder sets).

    In walk order, so run lengths strictly increase; the last entry is the
    candidates still matching at the end (omitted when there are none).
    """
    ends: Ends = []
    walked = 0
    # Consecutive keys mostly have equal holder sets (a prefix shared by the same
    # replicas): groupby walks each run of them in C, Python sees only the changes.
    for held, same in groupby(map(holders.get, keys)):
        if held is None:
            break
        still = alive & held
        if still != alive:
            ends.append((walked, alive ^ still))
            alive = still
            if not alive:
                return ends
            if len(ends) == _DENSE_AFTER and walked < 2 * _DENSE_AFTER:
                # Changes at most keys (many replicas, each its own run length): the
                # rest of the walk in C, where a Python step per change costs more.
                walked += len(list(same))
                ends += _dense_walk(holders, keys[walked:], walked, alive)
                return ends
        walked += len(list(same))
    if alive:
        ends.append((walked, alive))
    return ends


#: After this many changes of the holder set within twice as many keys, :func:`walk`
#: finishes in C (:func:`_dense_walk`): at 1024 replicas nearly every key changes it.
_DENSE_AFTER = 16


def prefix_ands(holders: Mapping[EventHash, int], keys: Sequence[EventHash],
                alive: int) -> list[int]:
    """The candidates of ``alive`` still matching after each key, in C: entry ``i`` is
    those holding the first ``i`` keys (entry 0 is ``alive``), while not empty (a key
    held by none of them, or missing, ends it). A candidate's run is the last entry
    holding its bit; the entries only lose bits, so as ints they never increase."""
    return list(takewhile(bool, accumulate(map(holders.get, keys, repeat(0)), and_,
                                           initial=alive)))


def runs_back(ands: Sequence[int]) -> Iterator[tuple[int, int]]:
    """:func:`walk`'s ends from :func:`prefix_ands`, longest run first: ``(keys walked,
    mask)``. A step per end: a run of equal entries is passed by a binary search (in C)."""
    i = len(ands) - 1
    if i < 0:
        return
    held, after = ands[i], 0
    while True:
        # The first entry equal to ``held`` (non-increasing: bisect on their negations).
        first = bisect_left(ands, -held, 0, i, key=neg) if i and ands[i - 1] == held else i
        yield i, held ^ after
        if not first:
            return
        i, after = first - 1, held
        held = ands[i]


class PrefixWalk(NamedTuple):
    """A one-medium walk kept as its :func:`prefix_ands`: a ranking that needs only the
    longest runs reads them from the end (:func:`runs_back`), and :meth:`groups` is the
    :class:`OrderedGroups` the same walk answers otherwise."""

    ands: list[int]
    medium: int
    slots: Slots
    extra: Sequence[ReplicaId]

    def groups(self) -> OrderedGroups:
        ends = list(runs_back(self.ands))
        ends.reverse()
        return OrderedGroups(ends, self.medium, self.slots, self.extra)


def _dense_walk(holders: Mapping[EventHash, int], keys: Sequence[EventHash], walked: int,
                alive: int) -> Ends:
    """:func:`walk`'s ends over ``keys`` (the rest of a walk that has passed ``walked``
    keys, ``alive`` still matching), in C: the running AND of the holder sets
    (:func:`prefix_ands`), then the ends where it changes. Each key costs an AND and a
    comparison; no Python step per change."""
    # acc[i]: the candidates still matching after i more keys (acc[0] = alive, never 0).
    acc = prefix_ands(holders, keys, alive)
    after = acc[1:]
    changed = list(map(ne, acc, after))
    ends = list(zip(compress(count(walked), changed),
                    map(xor, compress(acc, changed), compress(after, changed)), strict=True))
    ends.append((walked + len(acc) - 1, acc[-1]))
    return ends


class OrderedGroups(Sequence[tuple[tuple[Run, ...], SlotMembers]]):
    """A one-medium walk's ends as answer groups, longest run first, each built on read.

    ``extra`` (candidates the index does not know) join the empty run.
    """

    __slots__ = ("_ends", "_extra", "_medium", "_slots")

    def __init__(self, ends: Ends, medium: int, slots: Slots,
                 extra: Sequence[ReplicaId] = ()) -> None:
        if extra and (not ends or ends[0][0]):
            ends = [(0, 0), *ends]
        self._ends = ends
        self._medium = medium
        self._slots = slots
        self._extra = extra

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def walked(self) -> tuple[Ends, int, Slots]:
        """The walk itself: its ends (walk order: the last group is read first), the
        medium bit of every run, and the slot table its masks index. A ranking reads
        the groups from it without a group object each; the candidates not known to
        the index (``extra``) are the caller's to add (they hold nothing)."""
        return self._ends, self._medium, self._slots

    def _group(self, i: int) -> tuple[tuple[Run, ...], SlotMembers]:
        walked, mask = self._ends[-1 - i]
        if walked:
            return ((((self._medium, walked),),), SlotMembers(mask, self._slots))
        return (((),), SlotMembers(mask, self._slots, self._extra))

    @overload
    def __getitem__(self, index: int) -> tuple[tuple[Run, ...], SlotMembers]: ...
    @overload
    def __getitem__(
        self, index: slice) -> list[tuple[tuple[Run, ...], SlotMembers]]: ...

    def __getitem__(self, index: int | slice) -> (tuple[tuple[Run, ...], SlotMembers]
                                                  | list[tuple[tuple[Run, ...], SlotMembers]]):
        if isinstance(index, slice):
            return [self._group(i) for i in range(*index.indices(len(self._ends)))]
        return self._group(range(len(self._ends))[index])

    def __iter__(self) -> Iterator[tuple[tuple[Run, ...], SlotMembers]]:
        return map(self._group, range(len(self._ends)))


_T = TypeVar("_T")


def mark(mask: int, value: _T, out: dict[int, _T]) -> None:
    """Note ``value`` for each replica bit of ``mask``."""
    while mask:
        low = mask & -mask
        out[low] = value
        mask ^= low


def bits_of(mask: int) -> Iterator[int]:
    """The single-bit masks of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low
        mask ^= low


def runs_over_media(bits: Sequence[int], alive: int,
                    maps: Sequence[tuple[int, Mapping[EventHash, int]]],
                    keys: Sequence[EventHash]) -> dict[int, Run]:
    """Per replica bit of ``bits``, its run when several media are in use.

    A replica's segment changes with the mask of the media holding its keys.
    """
    runs: dict[int, list[tuple[int, int]]] = {b: [] for b in bits}
    opened: dict[int, tuple[int, int]] = {}  # replica bit -> (mask, start) of its segment
    last = [0] * len(maps)
    i = 0
    for i, key in enumerate(keys):
        now = [holders.get(key, 0) & alive for _, holders in maps]
        held = 0
        for b in now:
            held |= b
        ended = alive & ~held
        changed = 0
        for b, before in zip(now, last, strict=True):
            changed |= b ^ before
        changed &= held
        for rbit in bits_of(ended | changed) if ended | changed else ():
            seg = opened.pop(rbit, None)
            if seg is not None:
                runs[rbit].append((seg[0], i - seg[1]))
            if rbit & held:
                mask = 0
                for (mbit, _), b in zip(maps, now, strict=True):
                    if b & rbit:
                        mask |= mbit
                opened[rbit] = (mask, i)
        alive, last = held, now
        if not alive:
            break
    else:
        i = len(keys)
    for rbit, (mask, first) in opened.items():
        runs[rbit].append((mask, i - first))
    return {b: tuple(run) for b, run in runs.items()}


def runs_in_table(table: Mapping[EventHash, int], keys: Sequence[EventHash], media: int) -> Run:
    """A leading run for one replica, from its own table (key -> media mask)."""
    run: list[tuple[int, int]] = []
    for key in keys:
        mask = table.get(key, 0) & media
        if not mask:
            break
        if run and run[-1][0] == mask:
            run[-1] = (mask, run[-1][1] + 1)
        else:
            run.append((mask, 1))
    return tuple(run)
