"""Replicas: which holds which blocks, and where to route a request.

:class:`PrefixIndex` (in memory) and :class:`RedisPrefixIndex` (shared, extra
``redis``) implement :class:`PrefixIndexBackend`; :class:`Router` ranks
replicas by the longest prefix they hold; :class:`PredictedIndex` adds the
keys of the requests a router sent, for fleets without KV events.
:class:`Subscriber` feeds an index from live ZMQ publishers; it needs pyzmq
(extra ``zmq``) and is imported on first use of its names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
from ._metrics import COUNTERS, prometheus_text
from ._predictions import (
    PREDICTED,
    PREDICTION_COUNTERS,
    Evidence,
    PredictedIndex,
    Predictions,
    evidence,
    predictions_prometheus_text,
)
from ._redis import (
    IndexSnapshot,
    PrefixIndexBackend,
    RedisPrefixIndex,
    RegistrationConflictError,
    route,
    scheme_from_spec,
    scheme_spec,
)
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
    "COUNTERS",
    "DEFAULT_MEDIUM",
    "DEFAULT_TIER_WEIGHTS",
    "PREDICTED",
    "PREDICTION_COUNTERS",
    "Evidence",
    "GroupSpec",
    "IndexSnapshot",
    "LoadFn",
    "PredictedIndex",
    "Predictions",
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
    "SchemeKeys",
    "Subscriber",
    "SubscriberStateError",
    "UnknownReplicaError",
    "UnsupportedLayoutError",
    "affinity_digest",
    "as_replica_id",
    "data_parallel_endpoints",
    "evidence",
    "offset_endpoint",
    "predictions_prometheus_text",
    "prometheus_text",
    "rendezvous_weight",
    "route",
    "scheme_from_spec",
    "scheme_spec",
]
