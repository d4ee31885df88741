"""Event builders shared by the index tests (tests/units/test_index*.py)."""

from __future__ import annotations

from typing import Any

from prefixkey.events import BlockRemoved, BlockStored, EventBatch, EventHash
from prefixkey.fleet import ReplicaId

G, C, S = frozenset({"GPU"}), frozenset({"CPU"}), frozenset({"STORAGE"})


def stored(*keys: EventHash, medium: str | None = None, group: int | None = None) -> BlockStored:
    return BlockStored(tuple(keys), None, (), 16, medium=medium, group_idx=group)


def removed(*keys: EventHash, medium: str | None = None, group: int | None = None) -> BlockRemoved:
    return BlockRemoved(tuple(keys), medium=medium, group_idx=group)


def batch(*events: Any, ts: float = 1.0, rank: int | None = None) -> EventBatch:
    return EventBatch(ts, tuple(events), rank)


def held(index: Any, replica: str | ReplicaId = "a") -> set[Any]:
    """``(group, key, media)`` entries the index holds for ``replica``."""
    return set(index.entries(replica))
