"""The PrefixKeyRouters of this process, for :func:`router_stats`.

Kept apart from the router's module on purpose: Ray Serve pickles a request
router's module *by value* (``cloudpickle.register_pickle_by_value``), so each
process gets a copy of that module's globals; this module is imported by
reference, so every copy registers here.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol

__all__ = ["register", "router_stats"]


class _Reporting(Protocol):
    def stats(self) -> dict[str, Any]: ...


_ROUTERS: weakref.WeakSet[Any] = weakref.WeakSet()


def register(router: _Reporting) -> None:
    """Count ``router`` among this process's routers (held weakly)."""
    _ROUTERS.add(router)


def router_stats() -> list[dict[str, Any]]:
    """The counters, index size and feeds of every PrefixKeyRouter in this process."""
    return [r.stats() for r in list(_ROUTERS)]
