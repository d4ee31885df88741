"""Routing: where to send a request, given what the index says each replica holds.

:class:`Router` ranks replicas by the longest prefix they hold (tier weights, load,
rendezvous fallback) from one ``leading_runs`` call per request over any
:class:`~prefixkey.fleet.index.RoutingIndex`; :class:`PreparedRequest` holds a
request's keys per scheme; :class:`PredictedIndex` adds the keys of the requests a
router sent, for fleets without KV events; :class:`RouterMetrics` counts decisions.
"""

from ._backlog import PrefillBacklog
from ._metrics import (
    COUNTERS,
    ReplicaCounters,
    ReplicaStats,
    RouterMetrics,
    SubscriberStats,
    prometheus_text,
)
from ._predictions import (
    PREDICTION_COUNTERS,
    PredictedIndex,
    Predictions,
    PredictionStats,
    predictions_prometheus_text,
)
from ._prepared import PreparedRequest, SchemeKeys, affinity_digest, rendezvous_weight
from ._router import (
    DEFAULT_TIER_WEIGHTS,
    PREDICTED,
    Evidence,
    LoadFn,
    LoadUnit,
    RouteDecision,
    Router,
)

__all__ = [
    "COUNTERS",
    "DEFAULT_TIER_WEIGHTS",
    "PREDICTED",
    "PREDICTION_COUNTERS",
    "Evidence",
    "LoadFn",
    "LoadUnit",
    "PredictedIndex",
    "PredictionStats",
    "Predictions",
    "PrefillBacklog",
    "PreparedRequest",
    "ReplicaCounters",
    "ReplicaStats",
    "RouteDecision",
    "Router",
    "RouterMetrics",
    "SchemeKeys",
    "SubscriberStats",
    "affinity_digest",
    "predictions_prometheus_text",
    "prometheus_text",
    "rendezvous_weight",
]
