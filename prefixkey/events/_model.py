"""vLLM's KV-cache events as typed values (the model; decoding lives at the edge).

vLLM publishes, per scheduler step, an ``EventBatch`` of ``BlockStored``,
``BlockRemoved`` and ``AllBlocksCleared`` events over ZMQ. Each release adds
fields (never removes or reorders them); a field a release does not publish is
``None`` here. Block hashes are published as the 64-bit int form (the
default) or the raw digest bytes (``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0``);
int-keyed releases (up to 0.10.1.1) publish their int keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "AllBlocksCleared",
    "BlockRemoved",
    "BlockStored",
    "EventBatch",
    "EventHash",
    "KVCacheEvent",
]

#: A block hash as published: an int (64-bit form, or an int-era key) or digest bytes.
EventHash: TypeAlias = "int | bytes"


@dataclass(frozen=True, slots=True)
class BlockStored:
    """Blocks that became cached, in chain order (``parent_block_hash`` precedes the first)."""

    block_hashes: tuple[EventHash, ...]
    parent_block_hash: EventHash | None
    token_ids: tuple[int, ...]
    block_size: int
    lora_id: int | None = None
    medium: str | None = None  # 0.10.2+: "GPU", offload tiers "CPU", "STORAGE", …
    lora_name: str | None = None  # 0.14.0+
    #: 0.17.0+: per block, the published extra keys (untagged from 0.31.0).
    extra_keys: tuple[Any, ...] | None = None
    group_idx: int | None = None  # 0.20.0+
    kv_cache_spec_kind: str | None = None  # 0.22.0+
    kv_cache_spec_sliding_window: int | None = None  # 0.22.0+
    locality: str | None = None  # 0.26.0+
    ownership: Any = None  # 0.29.0+
    session_id: str | None = None  # 0.30.0+
    #: 0.33.0+: per block, the lookahead tokens hashed with it.
    lookahead_token_ids: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True, slots=True)
class BlockRemoved:
    """Blocks evicted (or replaced, e.g. a partial block's key)."""

    block_hashes: tuple[EventHash, ...]
    medium: str | None = None
    group_idx: int | None = None
    locality: str | None = None
    ownership: Any = None


@dataclass(frozen=True, slots=True)
class AllBlocksCleared:
    """The replica reset its prefix cache."""


#: One event of a batch.
KVCacheEvent: TypeAlias = "BlockStored | BlockRemoved | AllBlocksCleared"


@dataclass(frozen=True, slots=True)
class EventBatch:
    """One published message: the events of a scheduler step."""

    ts: float
    events: tuple[KVCacheEvent, ...]
    #: 0.9.1+: the data-parallel rank that published the batch.
    data_parallel_rank: int | None = None
