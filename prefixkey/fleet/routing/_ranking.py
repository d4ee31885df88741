"""A ranking worked out as it is read: what :meth:`Router.rank` returns.

At 1024 replicas most of a full ranking's cost was per candidate: listing
it, its decision, its explanation, a rendezvous digest per tied candidate.
Most callers read the head (the best replica, a few fallbacks), so the
Router reads the index before ``rank`` returns (the ranking never depends on
the index after that) and hands this sequence the groups of candidates in
rank order, each produced when first needed: a group is listed and its ties
put in rendezvous order when it is first reached, and a decision is built
when it is first read. Reading every item gives the same decisions, in the
same order, as building them all at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar, overload

__all__ = ["LazyRanking"]

_T = TypeVar("_T")


class LazyRanking(Sequence[_T], Generic[_T]):
    """The first ``length`` items of a ranking, each built on first read.

    ``groups`` yields the candidates' positions in rank order, one list per
    group of equal keys; a group of several is put in order by ``tie_order``
    (it returns the positions reordered) when reached. ``build(position,
    rank)`` makes the item at ``rank`` (1-based). Equal to any list or
    ranking holding equal items in order. Safe to read from several threads
    (a lock guards the lazy steps).
    """

    __slots__ = ("_build", "_groups", "_items", "_length", "_lock", "_order", "_tie_order")

    def __init__(self, groups: Iterator[list[int]], length: int,
                 tie_order: Callable[[list[int]], list[int]],
                 build: Callable[[int, int], _T]) -> None:
        self._groups = groups
        self._length = length
        self._tie_order = tie_order
        self._build = build
        self._order: list[int] = []
        self._items: list[_T | None] = [None] * length
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> _T: ...
    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...

    def __getitem__(self, index: int | slice) -> _T | list[_T]:
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(self._length))]
        # range's own indexing: negative positions, and IndexError as for a list.
        return self._item(range(self._length)[index])

    def _item(self, i: int) -> _T:
        item = self._items[i]
        if item is not None:
            return item
        with self._lock:
            order = self._order
            while len(order) <= i:
                group = next(self._groups)
                order.extend(self._tie_order(group) if len(group) > 1 else group)
            item = self._items[i]
            if item is None:
                item = self._items[i] = self._build(order[i], i + 1)
        return item

    def __iter__(self) -> Iterator[_T]:
        for i in range(self._length):
            yield self._item(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (LazyRanking, list, tuple)):
            return len(self) == len(other) and all(
                a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to lists: unhashable like them

    def __repr__(self) -> str:
        return repr(list(self))
