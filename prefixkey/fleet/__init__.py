"""Replicas: which holds which blocks, and where to route a request.

:class:`PrefixIndex` (in memory) and :class:`RedisPrefixIndex` (shared, extra
``redis``) implement :class:`PrefixIndexBackend`; :class:`Router` ranks
replicas by the longest prefix they hold over any :class:`RoutingIndex`
(one ``leading_runs`` call per request). :class:`Subscriber` feeds an index
from live ZMQ publishers; it needs pyzmq (extra ``zmq``) and is imported on
first use of its names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._backend import (
    IndexUnavailableError,
    PrefixIndexBackend,
    RoutingIndex,
    RunsQuery,
    RunsResult,
)
from ._index import (
    DEFAULT_MEDIUM,
    GroupSpec,
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    UnknownReplicaError,
    UnsupportedLayoutError,
    as_replica_id,
)
from ._metrics import COUNTERS, RouterMetrics, prometheus_text
from ._redis import CHUNK_BLOCKS, RedisPrefixIndex, RegistrationConflictError
from ._redis_codec import scheme_from_spec, scheme_spec
from ._routing import (
    DEFAULT_TIER_WEIGHTS,
    LoadFn,
    PreparedRequest,
    RouteDecision,
    Router,
    SchemeKeys,
    affinity_digest,
    rendezvous_weight,
)

if TYPE_CHECKING:
    from ._subscriber import (
        ReceivedBatch,
        ReplicaEndpoint,
        Subscriber,
        SubscriberStateError,
        data_parallel_endpoints,
        offset_endpoint,
    )

_LAZY = {
    "ReceivedBatch": "_subscriber",
    "ReplicaEndpoint": "_subscriber",
    "Subscriber": "_subscriber",
    "SubscriberStateError": "_subscriber",
    "data_parallel_endpoints": "_subscriber",
    "offset_endpoint": "_subscriber",
}


def __getattr__(name: str) -> Any:
    # The subscriber needs pyzmq (extra `zmq`): imported on first use only.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CHUNK_BLOCKS",
    "COUNTERS",
    "DEFAULT_MEDIUM",
    "DEFAULT_TIER_WEIGHTS",
    "GroupSpec",
    "IndexUnavailableError",
    "LoadFn",
    "PrefixIndex",
    "PrefixIndexBackend",
    "PreparedRequest",
    "ReceivedBatch",
    "RedisPrefixIndex",
    "RegistrationConflictError",
    "ReplicaEndpoint",
    "ReplicaId",
    "ReplicaScheme",
    "RouteDecision",
    "Router",
    "RouterMetrics",
    "RoutingIndex",
    "RunsQuery",
    "RunsResult",
    "SchemeKeys",
    "Subscriber",
    "SubscriberStateError",
    "UnknownReplicaError",
    "UnsupportedLayoutError",
    "affinity_digest",
    "as_replica_id",
    "data_parallel_endpoints",
    "offset_endpoint",
    "prometheus_text",
    "rendezvous_weight",
    "scheme_from_spec",
    "scheme_spec",
]
