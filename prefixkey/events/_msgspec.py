"""The event decoder's optional C path: msgspec with each wire era's schema (sans-IO).

Installed with the ``events-fast`` extra. For each wire era this module
declares the event structs the way vLLM declares them (tagged, array-like up
to 0.23, defaults omitted) with the types the reference decoder accepts, and
decodes a payload with them in C. A payload is taken only when msgspec
accepts it *and* encodes the decoded batch back to exactly the same bytes:
that is the form vLLM's own msgspec encoder writes, and it leaves nothing the
reference path would report or reject unseen — no unknown or duplicate keys,
no trailing fields, no explicit nil where vLLM omits a default, no float for
an int or int for a float, no bool for an int. What the round trip cannot
see is checked here: a finite ``ts``, and ``extra_keys``, kept as raw bytes
and checked by the reference code. The bounds of :class:`DecodeLimits` hold
because the decoder uses this path only for payloads too small to break any
of them (every element takes a byte); msgspec checks an announced length
against the bytes left before it allocates.

Anything else, and any failure, returns None: the reference path then decodes
the payload from the start, so every error, warning and counter stays its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from operator import attrgetter
from typing import Any, Final, TypeAlias

import msgspec

from ._layouts import CLEARED_OP, REMOVED, STORED, BlockOp
from ._model import AllBlocksCleared, BlockRemoved, BlockStored, EventBatch, KVCacheEvent
from ._wire import EventDecodeError, WireEra

#: An explicit nil, as an absent field reads in vLLM's array events.
_NIL: Final = msgspec.Raw(b"\xc0")

#: One shared value: AllBlocksCleared has no fields.
_CLEARED: Final = AllBlocksCleared()

#: The types the reference path accepts per field (its ``_field``), in msgspec's terms.
_TYPES: Final[dict[str, Any]] = {
    "block_hashes": tuple[int | bytes, ...],
    "parent_block_hash": int | bytes | None,
    "token_ids": tuple[int, ...],
    "block_size": int,
    "lora_id": int | None,
    "group_idx": int | None,
    "kv_cache_spec_sliding_window": int | None,
    # Nested values of any kind, checked by the reference code from their bytes.
    "extra_keys": msgspec.Raw,
    "lookahead_token_ids": tuple[tuple[int, ...], ...] | None,
}

#: The reference path's check of one field: (event index, field, value) -> value, or raises.
FieldCheck: TypeAlias = Callable[[int, str, Any], Any]
#: The reference path's bounded unpack of a payload (or part of one).
Unpack: TypeAlias = Callable[[bytes], Any]
#: ``ts, data_parallel_rank, ops`` of a payload taken whole.
FastOps: TypeAlias = "tuple[float, int | None, list[BlockOp]]"


class _Schema:
    """One era's structs, built once per era and shared (immutable classes)."""

    __slots__ = ("batch", "map_keys", "removed", "stored")

    def __init__(self, era: WireEra) -> None:
        array_like = era.event_encoding == "array"

        def event(tag: str, names: tuple[str, ...], required: int) -> type[msgspec.Struct]:
            fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
            for j, name in enumerate(names):
                kind = _TYPES.get(name, str | None)
                if j < required:
                    fields.append((name, kind))
                else:
                    fields.append((name, kind, msgspec.Raw() if kind is msgspec.Raw else None))
            # What an op reads that the era does not publish: None, as a class attribute.
            unpublished = {n: None for n in ("medium", "group_idx") if n not in names}
            return msgspec.defstruct(tag, fields, namespace=unpublished, tag=True,
                                     array_like=array_like, omit_defaults=True,
                                     forbid_unknown_fields=True, gc=False)

        self.stored = event("BlockStored", era.block_stored_fields, era.block_stored_required)
        self.removed = event("BlockRemoved", era.block_removed_fields,
                             era.block_removed_required)
        cleared = event("AllBlocksCleared", (), 0)
        # Built at run time from the structs: not a type mypy could check.
        events: Any = tuple.__class_getitem__((self.stored | self.removed | cleared, ...))
        batch_fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
            ("ts", float), ("events", events)]
        unpublished: dict[str, Any] = {"data_parallel_rank": None}
        if era.batch_has_dp_rank:
            batch_fields.append(("data_parallel_rank", int | None, None))
            unpublished = {}
        self.batch = msgspec.defstruct("KVEventBatch", batch_fields, namespace=unpublished,
                                       array_like=True, omit_defaults=True,
                                       forbid_unknown_fields=True, gc=False)
        #: The most keys a map event of the era has (its tag included).
        self.map_keys = 0 if array_like else 1 + len(era.block_stored_fields)


@cache
def _schema(era: WireEra) -> _Schema:
    return _Schema(era)


#: An event's extra keys the reference path rejects: the payload is the reference path's.
_FAILED: Final = object()


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """An event struct's field values in the model's (= the era's) order."""
    if len(names) == 1:  # 0.9's BlockRemoved: an attrgetter of one name returns no tuple
        name = names[0]
        return lambda event: (getattr(event, name),)
    return attrgetter(*names)


class MsgspecPath:
    """:class:`EventDecoder <prefixkey.events.EventDecoder>`'s decoding in C, or None.

    :meth:`events` and :meth:`ops` return None for whatever the reference path
    must decode (and report or reject) itself.
    """

    __slots__ = ("_check", "_decode", "_encode", "_extra_at", "_removed", "_removed_values",
                 "_stored", "_stored_values", "_unpack", "max_bytes")

    def __init__(self, era: WireEra, max_bytes: int, max_map_len: int, check: FieldCheck,
                 unpack: Unpack) -> None:
        schema = _schema(era)
        #: Payloads up to this size are tried here (0: none, a map bound below the era's keys).
        self.max_bytes = max_bytes if schema.map_keys <= max_map_len else 0
        # Per decoder: no msgspec state is shared between threads that decode.
        self._decode = msgspec.msgpack.Decoder(schema.batch).decode
        self._encode = msgspec.msgpack.Encoder().encode
        self._stored, self._removed = schema.stored, schema.removed
        self._stored_values = _values(era.block_stored_fields)
        self._removed_values = _values(era.block_removed_fields)
        fields = era.block_stored_fields
        self._extra_at = fields.index("extra_keys") if "extra_keys" in fields else -1
        self._check, self._unpack = check, unpack

    def _batch(self, payload: bytes) -> Any:
        """The decoded batch when it is exactly what vLLM's encoder writes, else None."""
        if type(payload) is not bytes or len(payload) > self.max_bytes:
            return None  # the reference path's checks and bounds
        try:
            batch: Any = self._decode(payload)
        # ValidationError is a DecodeError; msgspec 0.18.0 raises UnicodeDecodeError
        # for a string that is not UTF-8; it skips the values of a map that is not an event
        # recursively, so nesting too deep raises RecursionError.
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):  # the reference's
            return None
        if self._encode(batch) != payload or not math.isfinite(batch.ts):
            return None
        return batch

    def events(self, payload: bytes) -> EventBatch | None:
        """The payload's :class:`EventBatch`, or None: the reference path's to decode."""
        batch = self._batch(payload)
        if batch is None:
            return None
        out: list[KVCacheEvent] = []
        append = out.append
        stored, removed, at = self._stored, self._removed, self._extra_at
        stored_values, removed_values = self._stored_values, self._removed_values
        for i, event in enumerate(batch.events):
            kind = type(event)
            if kind is stored:
                values = stored_values(event)
                if at >= 0:
                    keys = self._extra_keys(i, values[at])
                    if keys is _FAILED:
                        return None
                    values = (*values[:at], keys, *values[at + 1:])
                append(BlockStored(*values))
            elif kind is removed:
                append(BlockRemoved(*removed_values(event)))
            else:
                append(_CLEARED)
        return EventBatch(batch.ts, tuple(out), batch.data_parallel_rank)

    def ops(self, payload: bytes) -> FastOps | None:
        """The payload's ``ts, rank, ops``, or None: the reference path's to decode."""
        batch = self._batch(payload)
        if batch is None:
            return None
        ops: list[BlockOp] = []
        append = ops.append
        stored, removed, extra = self._stored, self._removed, self._extra_at >= 0
        for i, event in enumerate(batch.events):
            kind = type(event)
            if kind is stored:
                if extra and self._extra_keys(i, event.extra_keys) is _FAILED:
                    return None
                append((STORED, event.block_hashes, event.medium, event.group_idx))
            elif kind is removed:
                append((REMOVED, event.block_hashes, event.medium, event.group_idx))
            else:
                append(CLEARED_OP)
        return batch.ts, batch.data_parallel_rank, ops

    def _extra_keys(self, index: int, keys: msgspec.Raw) -> Any:
        """Extra keys as the reference path decodes them (their own bytes), or ``_FAILED``."""
        if not len(keys) or keys == _NIL:  # absent, or nil
            return None
        try:
            return self._check(index, "extra_keys", self._unpack(bytes(keys)))
        except EventDecodeError:  # the reference path's to report, in its order
            return _FAILED
