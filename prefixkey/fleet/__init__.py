"""Replicas: which holds which blocks, and where to route a request.

Three rooms: :mod:`.index` (the backend contract, in memory and on Redis),
:mod:`.routing` (the Router, its decisions and predictions) and :mod:`.feed`
(the live KV-event feed, its two transports and scheme learning); this façade
keeps the names routers use.

:class:`PrefixIndex` (in memory) and :class:`RedisPrefixIndex` (shared, extra
``redis``) implement :class:`PrefixIndexBackend`; :class:`Router` ranks
replicas by the longest prefix they hold over any :class:`RoutingIndex`
(one ``leading_runs`` call per request); :class:`PredictedIndex` adds the
keys of the requests a router sent, for fleets without KV events.
:class:`Subscriber` (threads) and :class:`AsyncSubscriber` (asyncio) feed an
index from live ZMQ publishers, learning a replica's scheme from its events
when none is configured; :class:`LoRAPaths` follows a replica's adapters. The
subscribers need pyzmq (extra ``zmq``) and are imported on first use of their
names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import feed
from .feed import (
    AmbiguousSchemeWarning,
    FairLock,
    FleetWarning,
    LoRAPathChangedWarning,
    LoRAPaths,
    LoRAPollError,
    ReceivedBatch,
    ReplicaEndpoint,
    SchemeNotLearnedWarning,
    SubscriberOptions,
    data_parallel_endpoints,
    fetch_lora_paths,
    offset_endpoint,
)
from .index import (
    GroupSpec,
    IndexFullError,
    IndexStats,
    IndexUnavailableError,
    Ingested,
    PrefixIndex,
    PrefixIndexBackend,
    RedisPrefixIndex,
    RegistrationConflictError,
    ReplicaId,
    ReplicaScheme,
    RoutingIndex,
    RunsAnswer,
    RunsGroup,
    RunsQuery,
    RunsResult,
    UnknownReplicaError,
    UnsupportedLayoutError,
    as_replica_id,
    scheme_from_spec,
    scheme_spec,
)
from .routing import (
    COUNTERS,
    DEFAULT_TIER_WEIGHTS,
    PREDICTED,
    PREDICTION_COUNTERS,
    Evidence,
    LoadFn,
    LoadUnit,
    PredictedIndex,
    Predictions,
    PredictionStats,
    PrefillBacklog,
    PreparedRequest,
    ReplicaStats,
    RouteDecision,
    Router,
    RouterMetrics,
    SchemeKeys,
    SubscriberStats,
    predictions_prometheus_text,
    prometheus_text,
    rendezvous_weight,
)

if TYPE_CHECKING:
    from .feed import AsyncSubscriber, Subscriber, SubscriberStateError


def __getattr__(name: str) -> Any:
    # The transports need pyzmq (extra `zmq`): the feed loads them on first use.
    if name in ("AsyncSubscriber", "Subscriber", "SubscriberStateError"):
        return getattr(feed, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "COUNTERS",
    "DEFAULT_TIER_WEIGHTS",
    "PREDICTED",
    "PREDICTION_COUNTERS",
    "AmbiguousSchemeWarning",
    "AsyncSubscriber",
    "Evidence",
    "FairLock",
    "FleetWarning",
    "GroupSpec",
    "IndexFullError",
    "IndexStats",
    "IndexUnavailableError",
    "Ingested",
    "LoRAPathChangedWarning",
    "LoRAPaths",
    "LoRAPollError",
    "LoadFn",
    "LoadUnit",
    "PredictedIndex",
    "PredictionStats",
    "Predictions",
    "PrefillBacklog",
    "PrefixIndex",
    "PrefixIndexBackend",
    "PreparedRequest",
    "ReceivedBatch",
    "RedisPrefixIndex",
    "RegistrationConflictError",
    "ReplicaEndpoint",
    "ReplicaId",
    "ReplicaScheme",
    "ReplicaStats",
    "RouteDecision",
    "Router",
    "RouterMetrics",
    "RoutingIndex",
    "RunsAnswer",
    "RunsGroup",
    "RunsQuery",
    "RunsResult",
    "SchemeKeys",
    "SchemeNotLearnedWarning",
    "Subscriber",
    "SubscriberOptions",
    "SubscriberStateError",
    "SubscriberStats",
    "UnknownReplicaError",
    "UnsupportedLayoutError",
    "as_replica_id",
    "data_parallel_endpoints",
    "fetch_lora_paths",
    "offset_endpoint",
    "predictions_prometheus_text",
    "prometheus_text",
    "rendezvous_weight",
    "scheme_from_spec",
    "scheme_spec",
]
