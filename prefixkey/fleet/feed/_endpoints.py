"""vLLM's KV-event publishers as the subscribers see them, and what each one sent.

A :class:`ReplicaEndpoint` is one publisher: a replica (one data-parallel
rank of it), its PUB and replay endpoints, its release and scheme. vLLM
offsets a data-parallel rank's endpoints from rank 0's (:func:`offset_endpoint`,
:func:`data_parallel_endpoints`). Each applied batch reaches ``on_batch`` as a
:class:`ReceivedBatch`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ...core import DEFAULT_VLLM_VERSION
from ...errors import InvalidRequestError
from ...events import EventBatch
from ..index._memory import ReplicaId, ReplicaScheme

__all__ = ["ReceivedBatch", "ReplicaEndpoint", "data_parallel_endpoints", "offset_endpoint"]


def offset_endpoint(endpoint: str, dp_rank: int) -> str:
    """vLLM's endpoint of data-parallel rank ``dp_rank``: tcp port + rank, inproc ``_dp{rank}``.

    A tcp port of 0 is left alone (0.31+), as is every endpoint of rank 0.
    """
    if dp_rank == 0:
        return endpoint
    if "inproc" in endpoint:
        return f"{endpoint}_dp{dp_rank}"
    if "tcp" in endpoint and ":" in endpoint:
        base, _, port = endpoint.rpartition(":")
        if not (port.isascii() and port.isdigit()):  # int() also takes " 5557", "5_557"
            raise InvalidRequestError("endpoint", f"has no tcp port number: {endpoint!r}")
        return endpoint if int(port) == 0 else f"{base}:{int(port) + dp_rank}"
    raise InvalidRequestError("endpoint", f"must be tcp:// or inproc://, got {endpoint!r}")


@dataclass(frozen=True)
class ReplicaEndpoint:
    """One publisher: a replica (one data-parallel rank of it) and how to reach it.

    ``scheme``, when given, registers ``ReplicaId(name, rank)`` with the index
    on the first batch of each rank (``rank`` from the batch); without it the
    subscriber learns the scheme from the replica's events (``learn_schemes``).
    ``vllm_version=None`` infers the wire era from the payloads (the era
    that decodes them). ``strict=False`` decodes a release newer than any known
    one as the newest era.
    """

    name: str
    endpoint: str
    vllm_version: str | None = DEFAULT_VLLM_VERSION
    replay_endpoint: str | None = None
    topic: str = ""
    dp_rank: int | None = None
    scheme: ReplicaScheme | None = None
    strict: bool = True

    @property
    def key(self) -> str:
        """The label of this publisher in stats: the name, ``name#dpN`` for ranks > 0."""
        return self.name if self.dp_rank is None else str(ReplicaId(self.name, self.dp_rank))


def data_parallel_endpoints(
    name: str, endpoint: str, dp_size: int, *, replay_endpoint: str | None = None,
    **options: Any,
) -> list[ReplicaEndpoint]:
    """One :class:`ReplicaEndpoint` per DP rank, at vLLM's offset endpoints (port base+rank)."""
    return [
        ReplicaEndpoint(
            name, offset_endpoint(endpoint, rank), replay_endpoint=(
                None if replay_endpoint is None else offset_endpoint(replay_endpoint, rank)),
            dp_rank=rank, **options,
        )
        for rank in range(dp_size)
    ]


@dataclass(frozen=True, slots=True)
class ReceivedBatch:
    """A batch handed to ``on_batch``: who sent it, its seq, and how it arrived."""

    replica: str
    topic: str
    seq: int
    batch: EventBatch
    via: Literal["pub", "replay"]
    recv_time: float
