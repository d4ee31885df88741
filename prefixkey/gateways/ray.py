"""Ray Serve LLM: a request router on prefixkey's exact block keys (extra ``ray``).

Drop it into a vLLM deployment's config::

    from ray.serve.config import RequestRouterConfig
    from prefixkey.gateways.ray import PrefixKeyRouter

    config = RequestRouterConfig(request_router_class=PrefixKeyRouter,
                                 request_router_kwargs={"vllm_version": "0.29.0"})

Each replica advertises its KV-event publisher in its routing stats
(:func:`replica_kv_events`, :func:`serve_replica_kv_events`). docs/ray.md
has the whole setup; :mod:`._ray_router` the design. Needs the ``ray`` extra
(``ray[serve]``, pinned, and pyzmq); the ``redis`` extra for a shared index.
"""

from __future__ import annotations

from .._extras import needs_extra
from ._ray_keys import TOKEN_IDS_KWARG, CallBody, call_body, token_request
from ._ray_replicas import (
    KV_CACHE_SIZE_TOKENS,
    KV_EVENT_METADATA,
    REPLAY_PORT_OFFSET,
    ReplicaKVEvents,
    cache_tokens_of,
    endpoint_of,
    replica_kv_events,
)

with needs_extra("ray", "prefixkey.gateways.ray"):
    from ._ray_router import COUNTERS, PrefixKeyRouter, router_stats
    from ._ray_serve import serve_replica_kv_events

__all__ = [
    "COUNTERS",
    "KV_CACHE_SIZE_TOKENS",
    "KV_EVENT_METADATA",
    "REPLAY_PORT_OFFSET",
    "TOKEN_IDS_KWARG",
    "CallBody",
    "PrefixKeyRouter",
    "ReplicaKVEvents",
    "cache_tokens_of",
    "call_body",
    "endpoint_of",
    "replica_kv_events",
    "router_stats",
    "serve_replica_kv_events",
    "token_request",
]
