"""Where a Ray Serve replica publishes its KV events, and how it says so (sans-IO).

Ray Serve routers learn about replicas from the controller: each replica's
``record_routing_stats()`` answer reaches every router as
``RunningReplica.routing_stats``. Ray Serve LLM 2.60's ``LLMServer`` advertises
its engine's KV-event publisher there under ``"kv_event_metadata"``
(``endpoint``, ``replay_endpoint``, ``block_size``, ``dp_rank``) when its
deployment uses Ray's ``KVAwareRouter``; this router reads the same record, so
a replica that advertises for one advertises for both.

A replica may advertise its KV-cache capacity there too, under
``"kv_cache_size_tokens"`` (vLLM's name: its ``cache_config.kv_cache_size_tokens``
once the engine has started, the label of its ``vllm:cache_config_info``
metric): the router passes it to the cost model (``Router.set_cache_tokens``).

Replicas of one deployment share their engine arguments, so replicas on one
node would bind the same port: :func:`replica_kv_events` gives each its own
ports by its node-local rank, with the convention Ray uses for KV-aware
deployments (PUB at ``port_base + rank``, replay at ``port_base + 1000 + rank``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..core._checks import check_int, check_number
from ..errors import InvalidRequestError
from ..fleet import ReplicaEndpoint, ReplicaScheme

__all__ = ["KV_CACHE_SIZE_TOKENS", "KV_EVENT_METADATA", "REPLAY_PORT_OFFSET", "ReplicaKVEvents",
           "cache_tokens_of", "endpoint_of", "replica_kv_events"]

#: The ``routing_stats`` key under which a replica advertises its KV-event publisher.
KV_EVENT_METADATA: Final = "kv_event_metadata"
#: The ``routing_stats`` key under which a replica advertises its KV-cache capacity (tokens).
KV_CACHE_SIZE_TOKENS: Final = "kv_cache_size_tokens"
#: Ray's offset of a replica's replay port above its PUB port.
REPLAY_PORT_OFFSET: Final = 1000


@dataclass(frozen=True, slots=True)
class ReplicaKVEvents:
    """One replica's ``--kv-events-config`` and the ``routing_stats`` record advertising it."""

    #: vLLM's ``KVEventsConfig`` fields (``engine_kwargs["kv_events_config"]``).
    kv_events_config: dict[str, Any]
    #: What ``record_routing_stats()`` returns (merge it into the replica's own stats).
    routing_stats: dict[str, Any]


def _port(value: object, what: str) -> int:
    if type(value) is not int or not 0 < value < 65536:
        raise InvalidRequestError(what, f"must be a TCP port (an int in 1..65535), got {value!r}")
    return value


def replica_kv_events(rank: int, host: str, *, port_base: int = 5557,
                      replay_offset: int = REPLAY_PORT_OFFSET,
                      block_size: int | None = None,
                      kv_cache_size_tokens: int | None = None) -> ReplicaKVEvents:
    """The KV-event publisher of the replica with node-local ``rank`` on ``host``.

    The engine binds every interface (``tcp://*:port``); routers are told
    ``tcp://host:port``. ``block_size`` (the engine's hash block size) is
    advertised when given (Ray's KV-aware router reads it; prefixkey learns
    it from the events); so is ``kv_cache_size_tokens``, the engine's KV-cache
    capacity in tokens (the cost model's cache pressure, :func:`cache_tokens_of`).
    """
    check_int("rank", rank, least=0)
    if not isinstance(host, str) or not host:
        raise InvalidRequestError("host", f"must be a host name or address, got {host!r}")
    pub = _port(port_base + rank if type(port_base) is int else port_base, "port_base")
    replay = _port(pub + replay_offset if type(replay_offset) is int else replay_offset,
                   "replay_offset")
    meta: dict[str, Any] = {"endpoint": f"tcp://{host}:{pub}",
                            "replay_endpoint": f"tcp://{host}:{replay}", "dp_rank": 0}
    if block_size is not None:
        meta["block_size"] = block_size
    stats: dict[str, Any] = {KV_EVENT_METADATA: meta}
    if kv_cache_size_tokens is not None:
        stats[KV_CACHE_SIZE_TOKENS] = kv_cache_size_tokens
        cache_tokens_of(stats)  # refused here, naming the field, rather than by every router
    return ReplicaKVEvents(
        {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"tcp://*:{pub}",
         "replay_endpoint": f"tcp://*:{replay}"},
        stats)


def cache_tokens_of(routing_stats: Mapping[str, Any]) -> float | None:
    """The KV-cache capacity in tokens a replica advertises, or None when it advertises none.

    A value that is not a finite number > 0 raises
    :class:`~prefixkey.errors.InvalidRequestError` naming the field.
    """
    tokens = (routing_stats.get(KV_CACHE_SIZE_TOKENS) if isinstance(routing_stats, Mapping)
              else None)
    if tokens is None:
        return None
    return check_number(KV_CACHE_SIZE_TOKENS, tokens, strict=True)


def endpoint_of(name: str, routing_stats: Mapping[str, Any], *, vllm_version: str | None,
                scheme: ReplicaScheme | None) -> ReplicaEndpoint | None:
    """The publisher a replica advertises, or None while it advertises none.

    A record that is there but malformed raises
    :class:`~prefixkey.errors.InvalidRequestError` naming the field.
    """
    meta = routing_stats.get(KV_EVENT_METADATA) if isinstance(routing_stats, Mapping) else None
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise InvalidRequestError(KV_EVENT_METADATA, f"must be a mapping, got {meta!r}")
    endpoint = meta.get("endpoint")
    if not isinstance(endpoint, str) or not endpoint.startswith("tcp://"):
        raise InvalidRequestError(f"{KV_EVENT_METADATA}.endpoint",
                                  f"must be a tcp:// endpoint, got {endpoint!r}")
    replay = meta.get("replay_endpoint")
    if replay is not None and (not isinstance(replay, str) or not replay.startswith("tcp://")):
        raise InvalidRequestError(f"{KV_EVENT_METADATA}.replay_endpoint",
                                  f"must be a tcp:// endpoint or absent, got {replay!r}")
    dp_rank = check_int(f"{KV_EVENT_METADATA}.dp_rank", meta.get("dp_rank") or 0, least=0)
    # A data-parallel rank's batches carry its rank: the index registers ReplicaId(name, rank).
    return ReplicaEndpoint(name, endpoint, vllm_version=vllm_version, replay_endpoint=replay,
                           scheme=scheme, dp_rank=dp_rank or None)
