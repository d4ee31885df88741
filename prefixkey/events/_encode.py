"""Encode typed KV events in a release's wire layout (the inverse of :mod:`._decode`).

For tests, samples and replay tools: builds the msgpack payload a vLLM
replica of a given release publishes, and the JSON Lines recording line
(docs/events.md) that holds it:

>>> from prefixkey.events import (BlockStored, EventBatch, EventDecoder, encode_batch,
...                               recording_line, seq_frame)
>>> batch = EventBatch(1.0, (BlockStored((bytes(32),), None, (7, 8), 2),))
>>> frames = [b"kv-events", seq_frame(0), encode_batch(batch, "0.31.0")]
>>> line = recording_line(frames, recv_time=1.0, source="a")
>>> EventDecoder("0.31.0").decode_message(frames).batch == batch
True

Array-era events (0.9.0-0.23) carry every field of the release positionally;
map-era events (0.24.0+) are ``{"type": tag, field: value}`` with unset
(``None``) optional fields omitted, as msgspec's ``omit_defaults`` does.
"""

from __future__ import annotations

from typing import Any

import msgpack

from ..errors import InvalidRequestError
from ._decode import wire_era
from ._model import AllBlocksCleared, BlockRemoved, BlockStored, EventBatch, KVCacheEvent

__all__ = ["encode_batch", "encode_event", "seq_frame"]


def _wire_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_wire_value(v) for v in value]
    return value


def encode_event(event: KVCacheEvent, vllm_version: str) -> Any:
    """One event as the msgpack-ready value of ``vllm_version``'s wire era."""
    era, _ = wire_era(vllm_version)
    tag = type(event).__name__
    if isinstance(event, AllBlocksCleared):
        return {"type": tag} if era.event_encoding == "map" else [tag]
    if isinstance(event, BlockStored):
        names, required = era.block_stored_fields, era.block_stored_required
    elif isinstance(event, BlockRemoved):
        names, required = era.block_removed_fields, era.block_removed_required
    else:
        raise InvalidRequestError(
            "event", f"must be BlockStored, BlockRemoved or AllBlocksCleared, got "
            f"{type(event).__name__}")
    values = [_wire_value(getattr(event, name)) for name in names]
    if era.event_encoding == "array":
        return [tag, *values]
    out: dict[str, Any] = {"type": tag}
    for i, (name, value) in enumerate(zip(names, values, strict=True)):
        if value is not None or i < required:
            out[name] = value
    return out


def encode_batch(batch: EventBatch, vllm_version: str) -> bytes:
    """The msgpack payload of one ``KVEventBatch`` as ``vllm_version`` publishes it."""
    if not isinstance(batch, EventBatch):
        raise InvalidRequestError("batch", f"must be an EventBatch, got {type(batch).__name__}")
    era, _ = wire_era(vllm_version)
    events = [encode_event(e, vllm_version) for e in batch.events]
    raw: list[Any] = [batch.ts, events]
    if era.batch_has_dp_rank:
        raw.append(batch.data_parallel_rank)
    try:
        return bytes(msgpack.packb(raw, use_bin_type=True))
    except (TypeError, ValueError, OverflowError) as exc:  # a field value msgpack cannot carry
        raise InvalidRequestError("batch", f"cannot be encoded: {exc}") from None


def seq_frame(seq: int) -> bytes:
    """A PUB message's sequence-number frame: 8 bytes, big-endian."""
    if type(seq) is not int or not 0 <= seq < 1 << 64:
        raise InvalidRequestError("seq", f"must be an int in [0, 2**64), got {seq!r}")
    return seq.to_bytes(8, "big", signed=False)
