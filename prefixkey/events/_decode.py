"""Decode vLLM's KV-cache event messages into :mod:`prefixkey.events` values (sans-IO).

Bytes in, typed events out: no sockets, threads or logging. Build one
:class:`EventDecoder` per replica release and reuse it::

    decoder = EventDecoder("0.31.0")
    message = decoder.decode_message(frames)   # [topic, seq (8-byte BE), payload]
    for event in message.batch.events: ...

The wire format of each release is data (:data:`WIRE_ERAS`): array-like
events with every field positional up to 0.23.0, tagged maps with defaults
omitted from 0.24.0, replay replies that carry the topic from 0.26.0. The
decoder is strict about what a release requires (a typed error names the
field and the event index) and tolerant of what a later release adds: unknown
trailing array fields and unknown map keys are ignored *and reported* in
:attr:`DecodedBatch.warnings` and :attr:`EventDecoder.ignored`. Every length
is bounded before anything is allocated, and a payload's arrays and maps are
counted while msgpack unpacks it (:class:`DecodeLimits`), so the cost of a
payload is bounded by its size.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeAlias

import msgpack

from ._layouts import DecodedOps, EventLayouts
from ._model import AllBlocksCleared, BlockRemoved, BlockStored, EventBatch, KVCacheEvent
from ._wire import (
    END_SEQ,
    WIRE_ERAS,
    EventDecodeError,
    EventFieldError,
    EventFramingError,
    MalformedPayloadError,
    MissingEventFieldError,
    PayloadTooLargeError,
    UnknownEventTypeError,
    Via,
    WireEra,
    _frames,
    _seq,
    _topic,
    replay_request,
    split_message,
    wire_era,
)

if TYPE_CHECKING:
    from ._msgspec import MsgspecPath

__all__ = [
    "END_SEQ",
    "WIRE_ERAS",
    "DecodeLimits",
    "DecodedBatch",
    "DecodedMessage",
    "EventDecodeError",
    "EventDecoder",
    "EventFieldError",
    "EventFramingError",
    "MalformedPayloadError",
    "MissingEventFieldError",
    "PayloadTooLargeError",
    "ReplayEnd",
    "UnknownEventTypeError",
    "Via",
    "WireEra",
    "replay_request",
    "split_message",
    "wire_era",
]

# ----------------------------------------------------------------------------- results

#: Builds a NamedTuple from its fields in C: its ``__new__`` is a Python call, a few
#: percent of a small payload's decoding on the hot path.
_new_tuple: Final = tuple.__new__


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """Bounds on one payload, so that its decoding cost is bounded by its size.

    Lengths are checked before msgpack allocates; containers are counted as
    msgpack completes them. With the defaults a payload decodes or fails
    within about 1.5 GB and a few seconds whatever its bytes (docs/events.md,
    "Bounds").
    """

    #: Decoding may take up to ~40 bytes of memory per payload byte (a flood
    #: of 1-byte ints inside arrays that are never closed, where no count can
    #: reach), so this bounds the worst case: 32 MiB -> ~1.3 GB.
    max_payload_bytes: int = 32 * 1024 * 1024
    #: Elements of any one array (events, block hashes, token ids, …).
    max_array_len: int = 4 * 1024 * 1024
    max_map_len: int = 64
    max_str_len: int = 1024 * 1024
    max_bin_len: int = 1024 * 1024
    #: Arrays, maps and map entries in one payload, all levels together. Each
    #: costs 50-90 bytes from one or two payload bytes, and the garbage
    #: collector's time and the decoder's per-event work grow with their
    #: number; vLLM publishes at most about one per 10 bytes (an event map,
    #: its entries, its hash array).
    max_containers: int = 1024 * 1024
    #: Nesting inside one extra key (vLLM's are at most two levels deep).
    max_extra_key_depth: int = 4


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """A decoded payload, with what the decoder ignored (unknown trailing fields or keys)."""

    batch: EventBatch
    warnings: tuple[str, ...] = ()


class DecodedMessage(NamedTuple):
    """A PUB message or replay reply: ``topic, seq, batch``."""

    topic: str
    seq: int
    batch: EventBatch


@dataclass(frozen=True, slots=True)
class ReplayEnd:
    """The replay socket's end marker: no more buffered batches."""

    topic: str = ""


class _OverBudget(Exception):
    """Raised inside msgpack's hooks: the payload has more containers than allowed."""


#: A msgpack map as its ordered pairs (duplicates are detected, not merged).
#: Arrays decode as tuples, so a list is always a map.
_Map: TypeAlias = list[tuple[Any, Any]]


# ----------------------------------------------------------------------------- decoder

_TAGS: Final = ("BlockStored", "BlockRemoved", "AllBlocksCleared")


_INT_TYPES: Final = frozenset({int})
_HASH_TYPES: Final = frozenset({int, bytes})
#: The array fields: what the value must be, its items' types, what each item must be.
_ARRAYS: Final[dict[str, tuple[str, frozenset[type], str]]] = {
    "block_hashes": ("an array of hashes", _HASH_TYPES, "an int or bin hash"),
    "token_ids": ("an array of ints", _INT_TYPES, "an int"),
}
_ENTRY_TYPES: Final[frozenset[type]] = frozenset({type(None), tuple})
#: What makes an extra key need a walk item by item: arrays and maps (msgpack's
#: decoded forms) to check, and floats, which vLLM never puts in a key, to
#: check for NaN and infinities (no JSON form).
_WALK_TYPES: Final = frozenset({tuple, list, float})


def _first_not(values: tuple[Any, ...], types: frozenset[type]) -> int | None:
    """The index of the first value whose exact type is not in ``types``, or None.

    The common case, all well typed, is one scan in C; an array of millions
    of ids would take seconds item by item in Python.
    """
    if types.issuperset(map(type, values)):
        return None
    return next(j for j, v in enumerate(values) if type(v) not in types)


def _kind(value: object) -> str:
    if value is None:
        return "nil"
    if isinstance(value, list):
        return "map"
    return {tuple: "array", bytes: "bin", str: "str", bool: "bool", float: "float",
            int: "int"}.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    """A hostile value as an error message shows it: a short string's repr, else its kind.

    A repr of the value itself could be megabytes long, or recurse past the
    interpreter's limit (an array nested a thousand deep).
    """
    if isinstance(value, str):
        return repr(value) if len(value) <= 64 else f"{value[:64]!r}… ({len(value)} chars)"
    if isinstance(value, (int, float, bool)) or value is None:
        return repr(value)
    return _kind(value)


def _fast_path(decoder: EventDecoder) -> MsgspecPath | None:
    """The decoder's msgspec path, or None without msgspec (imported on first use)."""
    try:
        from ._msgspec import MsgspecPath
    except ImportError:  # the events-fast extra is not installed
        return None
    lim = decoder.limits
    # Within this size no array, string, bin or container count can pass its bound.
    size = min(lim.max_payload_bytes, lim.max_array_len, lim.max_str_len, lim.max_bin_len,
               lim.max_containers)
    return MsgspecPath(decoder.era, size, lim.max_map_len, decoder._field,
                      lambda raw: decoder._unpacked(raw, len(raw), None, list))


class EventDecoder:
    """Decodes the KV-event payloads and messages of one vLLM release.

    ``strict=False`` accepts a release newer than any known one, decoding it
    as the newest known era (said in :attr:`version_warnings`). The decoder
    keeps no per-message state except :attr:`ignored`, a running count of the
    unknown fields it skipped (``"BlockStored.<key>"`` or
    ``"BlockStored[+trailing]"``).
    """

    def __init__(
        self, vllm_version: str, *, strict: bool = True, limits: DecodeLimits | None = None
    ) -> None:
        self.vllm_version = vllm_version
        self.era, self.version_warnings = wire_era(vllm_version, strict=strict)
        self.limits = limits or DecodeLimits()
        self.ignored: Counter[str] = Counter()
        era = self.era
        #: A replay reply's frames as a REQ socket receives them (a DEALER gets one more).
        self._reply_frames = 3 if era.replay_carries_topic else 2
        self._fields = {
            "BlockStored": (era.block_stored_fields, era.block_stored_required),
            "BlockRemoved": (era.block_removed_fields, era.block_removed_required),
            "AllBlocksCleared": ((), 0),
        }
        # The fast path; ``_event`` and ``_field`` are the reference it falls back on.
        self._layouts = EventLayouts(self._fields, era.event_encoding, era.since, self._event,
                                     self._field, self.ignored)
        #: msgspec's C path ahead of both (the ``events-fast`` extra), or None.
        self._fast = _fast_path(self)

    def __repr__(self) -> str:
        return f"EventDecoder({self.vllm_version!r}, era={self.era.since})"

    # -- payloads

    def _unpack(self, payload: bytes) -> Any:
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise EventFieldError(f"payload must be bytes, got {type(payload).__name__}")
        lim, size = self.limits, len(payload)
        if size > lim.max_payload_bytes:
            raise PayloadTooLargeError(
                f"payload of {size} bytes exceeds max_payload_bytes ({lim.max_payload_bytes})"
            )
        if size <= lim.max_containers:
            # Every array takes at least one payload byte and a map of n entries
            # 1 + 2n, so the count cannot pass the budget: no hooks called in
            # Python per container (a fifth of the unpack). ``list`` keeps maps
            # as their pairs, duplicates and all, as ``pairs`` below does.
            return self._unpacked(payload, size, None, list)
        # msgpack calls these as it completes each array or map, so a flood of
        # containers fails once over budget instead of after allocating them all.
        # A map's entries count too: each is a (key, value) tuple.
        left = lim.max_containers

        def array(items: tuple[Any, ...]) -> tuple[Any, ...]:
            nonlocal left
            left -= 1
            if left < 0:
                raise _OverBudget
            return items

        def pairs(items: _Map) -> _Map:
            nonlocal left
            left -= 1 + len(items)
            if left < 0:
                raise _OverBudget
            return items

        return self._unpacked(payload, size, array, pairs)

    def _unpacked(self, payload: bytes, size: int,
                  list_hook: Callable[[tuple[Any, ...]], Any] | None,
                  object_pairs_hook: Callable[[_Map], Any]) -> Any:
        """msgpack's unpack of ``payload`` within the bounds; its failures as typed errors."""
        lim = self.limits
        try:
            return msgpack.unpackb(
                payload, raw=False, use_list=False, strict_map_key=True,
                list_hook=list_hook, object_pairs_hook=object_pairs_hook,
                max_array_len=min(lim.max_array_len, size), max_map_len=min(lim.max_map_len, size),
                max_str_len=min(lim.max_str_len, size), max_bin_len=min(lim.max_bin_len, size),
                max_ext_len=0,
            )
        except _OverBudget:
            raise PayloadTooLargeError(
                f"more than max_containers ({lim.max_containers}) arrays, maps and map "
                "entries") from None
        except msgpack.ExtraData:
            raise MalformedPayloadError("trailing bytes after the batch") from None
        except UnicodeDecodeError as exc:
            raise MalformedPayloadError(f"a string is not UTF-8 (byte {exc.start})") from None
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            text = str(exc) or type(exc).__name__
            if "exceeds max_" in text:
                if "max_ext_len" in text:
                    raise MalformedPayloadError("msgpack ext types are never published") from None
                raise PayloadTooLargeError(f"announced length {text}") from None
            if isinstance(exc, msgpack.StackError):
                raise PayloadTooLargeError("nesting too deep") from None
            raise MalformedPayloadError(f"not a msgpack value: {text}") from None

    def decode(self, payload: bytes) -> DecodedBatch:
        """Decode one payload (``KVEventBatch`` msgpack) with its warnings."""
        fast = self._fast
        if fast is not None:
            batch = fast.events(payload)
            if batch is not None:
                return DecodedBatch(batch)
        warnings: list[str] = []
        ts, events, rank = self._batch(payload, warnings)
        decoded = self._layouts.events(events, warnings)
        return DecodedBatch(EventBatch(ts, decoded, rank), tuple(warnings))

    def ops(self, payload: bytes) -> DecodedOps:
        """Decode one payload as an index applies it: :meth:`decode` without the event objects.

        The same checks, typed errors and warnings as :meth:`decode`, and
        ``decode(payload)``'s batch has the same ``ts``, ``data_parallel_rank`` and
        events, each as a :data:`~prefixkey.events.BlockOp` ``(kind, block_hashes,
        medium, group_idx)``; every index backend applies the result
        (``apply_ops``). The fast path of the subscribers and of
        ``PrefixIndex.ingest``: a quarter to a half of ``decode``'s cost is the
        event objects.
        """
        fast = self._fast
        if fast is not None:
            taken = fast.ops(payload)
            if taken is not None:
                return _new_tuple(DecodedOps, (*taken, ()))
        warnings: list[str] = []
        ts, events, rank = self._batch(payload, warnings)
        ops = self._layouts.ops(events, warnings)
        return _new_tuple(DecodedOps, (ts, rank, ops, tuple(warnings)))

    def _batch(self, payload: bytes, warnings: list[str]) -> tuple[float, Any, int | None]:
        """The checked ``ts``, raw events and data-parallel rank of a payload."""
        raw = self._unpack(payload)
        if not isinstance(raw, tuple):
            raise EventFieldError(f"the batch must be an array, got {_kind(raw)}", field="batch")
        known = 3 if self.era.batch_has_dp_rank else 2
        if len(raw) < 2:
            missing = "ts" if not raw else "events"
            raise MissingEventFieldError("is missing from the batch", field=missing)
        ts, events = raw[0], raw[1]
        if type(ts) not in (float, int):
            raise EventFieldError(f"must be a float, got {_kind(ts)}", field="ts")
        if not math.isfinite(ts):  # vLLM sends time.time(); NaN has no JSON form
            raise EventFieldError(f"must be a finite float, got {ts}", field="ts")
        if not isinstance(events, tuple):
            raise EventFieldError(f"must be an array, got {_kind(events)}", field="events")
        rank = raw[2] if self.era.batch_has_dp_rank and len(raw) > 2 else None
        if rank is not None and type(rank) is not int:
            raise EventFieldError(f"must be an int or nil, got {_kind(rank)}",
                                  field="data_parallel_rank")
        if len(raw) > known:
            self._ignore(warnings, "batch[+trailing]",
                         f"batch: {len(raw) - known} trailing field(s) ignored")
        return float(ts), events, rank

    def decode_batch(self, payload: bytes) -> EventBatch:
        """Decode one payload; ignored unknown fields are counted in :attr:`ignored`."""
        return self.decode(payload).batch

    def _ignore(self, warnings: list[str], key: str, text: str) -> None:
        self.ignored[key] += 1
        warnings.append(text)

    def _event(self, index: int, raw: Any, warnings: list[str]) -> KVCacheEvent:
        """One event the reference way, field by field (the fast path's fallback)."""
        where = f"events[{index}]"
        values: tuple[Any, ...] | dict[str, Any]
        if self.era.event_encoding == "array":
            if not isinstance(raw, tuple):
                raise EventFieldError(
                    f"must be an array [tag, fields…] in vLLM {self.era.since}-0.23 events, "
                    f"got {_kind(raw)} (is the vLLM version right?)", field=where,
                    event_index=index)
            if not raw:
                raise MissingEventFieldError("is missing", field=f"{where}.type",
                                             event_index=index)
            tag, values = raw[0], raw[1:]
        else:
            if not isinstance(raw, list):
                raise EventFieldError(
                    f"must be a map {{type, fields…}} in vLLM 0.24+ events, got {_kind(raw)} "
                    "(is the vLLM version right?)", field=where, event_index=index)
            tag, values = self._pairs(index, raw)
        if not isinstance(tag, str) or tag not in _TAGS:
            raise UnknownEventTypeError(
                f"unknown event type {_shown(tag)} (expected one of {', '.join(_TAGS)})",
                field=f"{where}.type", event_index=index)
        names, required = self._fields[tag]
        fields: dict[str, Any]
        if isinstance(values, dict):
            fields = {}
            for name in names:
                if name in values:
                    fields[name] = values.pop(name)
            unknown = sorted(values)
            for key in unknown:
                self.ignored[f"{tag}.{key}"] += 1
            if unknown:
                warnings.append(f"{where} {tag}: unknown key(s) ignored: {', '.join(unknown)}")
        else:
            fields = dict(zip(names, values, strict=False))
            if len(values) > len(names):
                self._ignore(warnings, f"{tag}[+trailing]",
                             f"{where} {tag}: {len(values) - len(names)} trailing field(s) "
                             f"beyond vLLM {self.era.since}'s {len(names)} ignored")
        for name in names[:required]:
            if name not in fields:
                raise MissingEventFieldError(
                    f"is required in vLLM {self.era.since}+ {tag} events",
                    field=f"{where}.{name}", event_index=index)
        if tag == "AllBlocksCleared":
            return AllBlocksCleared()
        typed = {name: self._field(index, name, value) for name, value in fields.items()}
        if tag == "BlockStored":
            return BlockStored(**typed)
        return BlockRemoved(**typed)

    def _pairs(self, index: int, raw: _Map) -> tuple[Any, dict[str, Any]]:
        values: dict[str, Any] = {}
        for key, value in raw:
            if not isinstance(key, str):
                raise EventFieldError(f"map keys must be strings, got {_kind(key)}",
                                      field=f"events[{index}]", event_index=index)
            if key in values:
                raise EventFieldError(f"duplicate key {_shown(key)}", field=f"events[{index}]",
                                      event_index=index)
            values[key] = value
        if "type" not in values:
            raise MissingEventFieldError("is missing", field=f"events[{index}].type",
                                         event_index=index)
        return values.pop("type"), values

    # -- fields

    def _field(self, index: int, name: str, value: Any) -> Any:
        where = f"events[{index}].{name}"

        def bad(expected: str, got: Any = value, at: str = where) -> EventFieldError:
            return EventFieldError(f"must be {expected}, got {_kind(got)}", field=at,
                                   event_index=index)

        array = _ARRAYS.get(name)
        if array is not None:
            whole, types, each = array
            if not isinstance(value, tuple):
                raise bad(whole)
            j = _first_not(value, types)
            if j is not None:
                raise bad(each, value[j], f"{where}[{j}]")
            return value
        if name == "parent_block_hash":
            if value is not None and type(value) not in (int, bytes):
                raise bad("an int or bin hash, or nil")
            return value
        if name == "block_size":
            if type(value) is not int:
                raise bad("an int")
            return value
        if name in ("lora_id", "group_idx", "kv_cache_spec_sliding_window"):
            if value is not None and type(value) is not int:
                raise bad("an int or nil")
            return value
        if name == "extra_keys":
            return self._extra_keys(index, value)
        if name == "lookahead_token_ids":
            if value is None:
                return None
            if not isinstance(value, tuple):
                raise bad("an array of token arrays, or nil")
            for j, row in enumerate(value):
                if not isinstance(row, tuple) or _first_not(row, _INT_TYPES) is not None:
                    raise bad("an array of ints", row, f"{where}[{j}]")
            return value
        # medium, lora_name, kv_cache_spec_kind, locality, ownership, session_id
        if value is not None and not isinstance(value, str):
            raise bad("a str or nil")
        return value

    def _extra_keys(self, index: int, value: Any) -> tuple[Any, ...] | None:
        where = f"events[{index}].extra_keys"
        if value is None:
            return None
        if not isinstance(value, tuple):
            raise EventFieldError(f"must be an array or nil, got {_kind(value)}", field=where,
                                  event_index=index)
        j = _first_not(value, _ENTRY_TYPES)
        if j is not None:
            raise EventFieldError(f"must be an array or nil, got {_kind(value[j])}",
                                  field=f"{where}[{j}]", event_index=index)
        if tuple in map(type, value):
            for j, entry in enumerate(value):
                if entry is not None:
                    self._check_key(entry, f"{where}[{j}]", index, 0)
        return value

    def _check_key(self, value: tuple[Any, ...], where: str, index: int, depth: int) -> None:
        if depth > self.limits.max_extra_key_depth:
            raise PayloadTooLargeError("nests too deep", field=where, event_index=index)
        if _WALK_TYPES.isdisjoint(map(type, value)):
            return  # flat, as vLLM's keys mostly are: no walk item by item
        for j, item in enumerate(value):
            if isinstance(item, tuple):
                self._check_key(item, f"{where}[{j}]", index, depth + 1)
            elif isinstance(item, list):
                raise EventFieldError("must not contain maps", field=f"{where}[{j}]",
                                      event_index=index)
            elif isinstance(item, float) and not math.isfinite(item):
                raise EventFieldError(f"must be a finite number, got {item}",
                                      field=f"{where}[{j}]", event_index=index)

    # -- framing

    def decode_message(self, frames: Sequence[bytes]) -> DecodedMessage:
        """Decode a PUB message ``[topic, seq (8-byte BE), payload]``.

        Unknown fields are counted in :attr:`ignored`; for the per-message
        warnings, :func:`split_message` and :meth:`decode` the payload.
        """
        topic, seq, payload = split_message(frames)
        return DecodedMessage(topic, seq, self.decode_batch(payload))

    def split_replay_reply(self, frames: Sequence[bytes]) -> tuple[str, int, bytes] | ReplayEnd:
        """One reply of the replay ROUTER socket as ``(topic, seq, payload)``, or its end.

        Up to 0.25.x a reply is ``[seq, payload]`` (topic ``""``) and the end
        marker ``[ff*8, b""]``; from 0.26.0 ``[topic, seq, payload]`` and
        ``[b"", ff*8, b""]``. A DEALER client also sees the leading empty
        delimiter frame, which is dropped here (a REQ socket drops it itself).
        """
        want = self._reply_frames
        parts = _frames(frames)
        if len(parts) == want + 1 and parts[0] == b"":
            parts = parts[1:]
        if len(parts) != want:
            shape = "[topic, seq, payload]" if want == 3 else "[seq, payload]"
            raise EventFramingError(
                f"a vLLM {self.era.since}+ replay reply has {want} frames {shape} "
                f"(after any empty delimiter), got {len(frames)}")
        topic = _topic(parts[0]) if want == 3 else ""
        if bytes(parts[-2]) == END_SEQ:
            return ReplayEnd(topic)
        return topic, _seq(parts[-2]), bytes(parts[-1])

    def framing_of(self, frames: Sequence[bytes]) -> Via | None:
        """The socket that sent ``frames`` when their shape tells: ``"pub"`` or ``"replay"``.

        A PUB message has 3 frames. A replay reply has the era's count (2, or 3
        with the topic from 0.26.0) as a REQ socket receives it, one more, the
        empty delimiter first, as a DEALER does. None when both sockets send
        this shape (from 0.26.0 a reply as a REQ sees it; before, one as a
        DEALER sees it, ``[b"", seq, payload]``, which is also a PUB message on
        the default empty topic) or when neither does.
        """
        count = len(frames)
        pub = count == 3
        replay = count == self._reply_frames or (
            count == self._reply_frames + 1 and frames[0] == b"")
        if pub == replay:
            return None
        return "pub" if pub else "replay"

    def decode_replay_reply(self, frames: Sequence[bytes]) -> DecodedMessage | ReplayEnd:
        """Decode one replay reply (:meth:`split_replay_reply`), or return its end marker."""
        split = self.split_replay_reply(frames)
        if isinstance(split, ReplayEnd):
            return split
        topic, seq, payload = split
        return DecodedMessage(topic, seq, self.decode_batch(payload))
