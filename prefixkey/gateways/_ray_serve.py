"""The replica side: this Serve replica's KV-event publisher, from its replica context."""

from __future__ import annotations

from typing import Any

import ray
from ray import serve

from ._ray_replicas import REPLAY_PORT_OFFSET, ReplicaKVEvents, replica_kv_events

__all__ = ["serve_replica_kv_events"]

#: Untyped in Ray 2.60.
_node_ip_address: Any = ray.util.get_node_ip_address


def serve_replica_kv_events(*, port_base: int = 5557, replay_offset: int = REPLAY_PORT_OFFSET,
                            block_size: int | None = None, host: str | None = None,
                            kv_cache_size_tokens: int | None = None) -> ReplicaKVEvents:
    """:func:`replica_kv_events` for the calling replica: its node-local rank and node address.

    Call it in the replica's constructor: pass ``kv_events_config`` to the
    engine and return ``routing_stats`` from ``record_routing_stats()``.
    """
    rank = serve.get_replica_context().rank.local_rank
    return replica_kv_events(rank, host or _node_ip_address(), port_base=port_base,
                             replay_offset=replay_offset, block_size=block_size,
                             kv_cache_size_tokens=kv_cache_size_tokens)
