"""What Ray Serve hands a request router, without a cluster: a replica and a pending request.

tests/gateways/test_ray_load.py and benchmarks/bench_gateway_ray.py call
PrefixKeyRouter's ``choose_replicas`` with these, as Ray 2.60's router does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ray.serve._private.common import ReplicaID
from ray.serve._private.request_router.common import PendingRequest


@dataclass
class FakeReplica:
    """What choose_replicas reads of Ray's RunningReplica."""

    replica_id: ReplicaID
    max_ongoing_requests: int = 64
    routing_stats: Any = None
    multiplexed_model_ids: Any = frozenset()
    node_id: str = "node"
    availability_zone: str | None = None


def pending_request(call: str, token_ids: list[int]) -> Any:
    """A chat call ``call`` whose prompt is ``token_ids`` (its future belongs to the
    running loop: build it there)."""
    metadata: Any = type("Meta", (), {"request_id": call, "multiplexed_model_id": "",
                                      "internal_request_id": call})()
    return PendingRequest(args=[{"model": "m"}], kwargs={"request_token_ids": token_ids},
                          metadata=metadata)
