"""Replicas: which holds which blocks, and where to route a request.

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

from ._backend import (
    IndexUnavailableError,
    PrefixIndexBackend,
    RoutingIndex,
    RunsAnswer,
    RunsGroup,
    RunsQuery,
    RunsResult,
)
from ._index import (
    DEFAULT_MEDIUM,
    GroupSpec,
    Ingested,
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    UnknownReplicaError,
    UnsupportedLayoutError,
    as_replica_id,
)
from ._metrics import COUNTERS, RouterMetrics, prometheus_text
from ._predictions import (
    PREDICTION_COUNTERS,
    PredictedIndex,
    Predictions,
    predictions_prometheus_text,
)
from ._prepared import PreparedRequest, SchemeKeys, affinity_digest, rendezvous_weight
from ._redis import CHUNK_BLOCKS, RedisPrefixIndex, RegistrationConflictError
from ._redis_codec import scheme_from_spec, scheme_spec
from ._routing import DEFAULT_TIER_WEIGHTS, PREDICTED, Evidence, LoadFn, RouteDecision, Router

if TYPE_CHECKING:
    from ._async_subscriber import AsyncSubscriber
    from ._endpoints import (
        ReceivedBatch,
        ReplicaEndpoint,
        data_parallel_endpoints,
        offset_endpoint,
    )
    from ._fair_lock import FairLock
    from ._learning import AmbiguousSchemeWarning, FleetWarning, SchemeNotLearnedWarning
    from ._lora import LoRAPathChangedWarning, LoRAPaths, LoRAPollError, fetch_lora_paths
    from ._subscriber import Subscriber, SubscriberStateError

_LAZY = {
    "AmbiguousSchemeWarning": "_learning",
    "AsyncSubscriber": "_async_subscriber",
    "FairLock": "_fair_lock",
    "FleetWarning": "_learning",
    "LoRAPathChangedWarning": "_lora",
    "LoRAPaths": "_lora",
    "LoRAPollError": "_lora",
    "SchemeNotLearnedWarning": "_learning",
    "fetch_lora_paths": "_lora",
    "ReceivedBatch": "_endpoints",
    "ReplicaEndpoint": "_endpoints",
    "Subscriber": "_subscriber",
    "SubscriberStateError": "_subscriber",
    "data_parallel_endpoints": "_endpoints",
    "offset_endpoint": "_endpoints",
}


#: The lazy modules that need an extra: without it, their names raise MissingExtraError.
_LAZY_EXTRAS = {"_subscriber": "zmq", "_async_subscriber": "zmq"}


def __getattr__(name: str) -> Any:
    # The subscribers need pyzmq (extra `zmq`), and the feed imports prefixkey.analysis
    # (which imports this package): imported on first use only.
    if name in _LAZY:
        import contextlib
        import importlib

        from .._extras import needs_extra

        module = _LAZY[name]
        extra = _LAZY_EXTRAS.get(module)
        with (contextlib.nullcontext() if extra is None
              else needs_extra(extra, f"prefixkey.fleet.{name}")):
            return getattr(importlib.import_module(f".{module}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CHUNK_BLOCKS",
    "COUNTERS",
    "DEFAULT_MEDIUM",
    "DEFAULT_TIER_WEIGHTS",
    "PREDICTED",
    "PREDICTION_COUNTERS",
    "AmbiguousSchemeWarning",
    "AsyncSubscriber",
    "Evidence",
    "FairLock",
    "FleetWarning",
    "GroupSpec",
    "IndexUnavailableError",
    "Ingested",
    "LoRAPathChangedWarning",
    "LoRAPaths",
    "LoRAPollError",
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
    "RouterMetrics",
    "RoutingIndex",
    "RunsAnswer",
    "RunsGroup",
    "RunsQuery",
    "RunsResult",
    "SchemeKeys",
    "SchemeNotLearnedWarning",
    "Subscriber",
    "SubscriberStateError",
    "UnknownReplicaError",
    "UnsupportedLayoutError",
    "affinity_digest",
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
