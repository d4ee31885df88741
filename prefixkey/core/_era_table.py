"""Era tables: releases grouped into eras, oldest first, each running until the next starts.

Every table of the package (block-key schemes, KV-event wire formats, multimodal
identifiers, render answers) is a tuple of frozen records with ``since`` and
``first_version``. Looking a release up, where an era ends, and the release ranges
messages name ("0.31.0-0.32.0", never an era's letter) are done here, once.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Protocol, TypeVar

from packaging.version import Version

__all__ = ["Dated", "era_at", "era_end", "release_range", "releases_between"]


class Dated(Protocol):
    """An era record: its first release, as written and parsed."""

    @property
    def since(self) -> str: ...

    @property
    def first_version(self) -> Version: ...


_E = TypeVar("_E", bound=Dated)
_first = attrgetter("first_version")


def era_at(eras: Sequence[_E], release: Version) -> _E | None:
    """The era ``release`` belongs to (``eras`` oldest first); None before the first."""
    index = bisect_right(eras, release, key=_first) - 1
    return eras[index] if index >= 0 else None


def era_end(eras: Sequence[_E], era: _E) -> Version | None:
    """Where ``era`` ends: the next era's first release (None for the newest)."""
    later = [e.first_version for e in eras if e.first_version > era.first_version]
    return min(later) if later else None


def releases_between(known: Iterable[str], first: Version, end: Version | None) -> list[Version]:
    """The ``known`` releases in ``[first, end)``, oldest first."""
    return sorted(v for v in map(Version, known) if first <= v and (end is None or v < end))


def release_range(releases: Sequence[Version]) -> str:
    """Releases as messages name them: "0.31.0", or "0.31.0-0.33.0" (oldest to newest)."""
    ordered = sorted(releases)
    return str(ordered[0]) if len(ordered) == 1 else f"{ordered[0]}-{ordered[-1]}"
