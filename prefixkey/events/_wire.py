"""The KV-event wire, apart from decoding events: eras as data, framing, the errors (sans-IO).

What each release publishes and how (:data:`WIRE_ERAS`), the ZMQ frames of a
PUB message and of a replay reply, and the typed errors of decoding them;
:mod:`prefixkey.events._decode` decodes the payloads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from packaging.version import Version

from ..core import resolve_release
from ..core._era_table import era_at
from ..errors import PrefixKeyError, UnknownVersionError

# ----------------------------------------------------------------------------- errors


class EventDecodeError(PrefixKeyError, ValueError):
    """A KV-event message could not be decoded.

    ``field`` is the dotted field at fault (``"events[2].block_hashes"``),
    ``event_index`` the position of the event in its batch (None for the batch
    or the framing), ``reason`` the message without the location.
    """

    def __init__(
        self, reason: str, *, field: str | None = None, event_index: int | None = None
    ) -> None:
        self.field: str | None = field
        self.event_index = event_index
        self.reason = reason
        super().__init__(f"{field}: {reason}" if field else reason)


class MalformedPayloadError(EventDecodeError):
    """The payload is not one complete msgpack value (truncated, invalid, trailing bytes)."""


class PayloadTooLargeError(EventDecodeError):
    """The payload, or a length it announces, exceeds :class:`DecodeLimits`."""


class EventFieldError(EventDecodeError):
    """A field has the wrong type or shape for the release (also the batch itself)."""


class MissingEventFieldError(EventFieldError):
    """A field the release always publishes is missing."""


class UnknownEventTypeError(EventDecodeError):
    """An event's tag is not BlockStored, BlockRemoved or AllBlocksCleared."""


class EventFramingError(EventDecodeError):
    """A ZMQ message does not have the frames a publisher or replay socket sends."""


# ----------------------------------------------------------------------------- eras

_STORED_0_9: Final = ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id")


@dataclass(frozen=True, slots=True)
class WireEra:
    """Releases that publish KV events in the same wire format.

    What ``extra_keys`` holds is a key-scheme fact: ``Era.published_extra_keys``.
    """

    #: First release of the era.
    since: str
    #: What changed on the wire in ``since``.
    changes: str
    #: Events as ``[tag, field, …]`` (all fields, trailing nils included) or
    #: as ``{"type": tag, field: value, …}`` with defaults omitted.
    event_encoding: Literal["array", "map"]
    #: BlockStored's fields in declaration (= wire) order.
    block_stored_fields: tuple[str, ...]
    #: How many leading BlockStored fields have no default (always published).
    block_stored_required: int
    block_removed_fields: tuple[str, ...]
    block_removed_required: int
    #: The batch is ``[ts, events, data_parallel_rank]`` (else ``[ts, events]``).
    batch_has_dp_rank: bool
    #: Replay replies: ``[seq, payload]`` or, from 0.26.0, ``[topic, seq, payload]``.
    replay_carries_topic: bool
    first_version: Version = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "first_version", Version(self.since))


def _eras() -> tuple[WireEra, ...]:
    stored: tuple[str, ...] = _STORED_0_9
    removed: tuple[str, ...] = ("block_hashes",)
    req_s, req_r = 5, 1
    rank, topic = False, False
    enc: Literal["array", "map"] = "array"
    out: list[WireEra] = []

    def add(since: str, changes: str) -> None:
        out.append(WireEra(since, changes, enc, stored, req_s, removed, req_r, rank, topic))

    add("0.9.0", "KV events: [ts, events]; events [tag, *fields]; int block hashes")
    rank = True
    add("0.9.1", "the batch carries data_parallel_rank")
    stored, removed, req_s, req_r = (*stored, "medium"), (*removed, "medium"), 6, 2
    add("0.10.2", "required medium on both events; hashes int64 or digest bytes")
    stored, req_s = (*stored, "lora_name"), 7
    add("0.14.0", "required BlockStored.lora_name")
    stored = (*stored, "extra_keys")
    add("0.17.0", "optional BlockStored.extra_keys (the hashed per-block tuples)")
    stored, removed = (*stored, "group_idx"), (*removed, "group_idx")
    add("0.20.0", "optional group_idx on both events")
    stored = (*stored, "kv_cache_spec_kind", "kv_cache_spec_sliding_window")
    add("0.22.0", "optional BlockStored.kv_cache_spec_kind and kv_cache_spec_sliding_window")
    enc = "map"
    add("0.24.0", "events become maps {type, fields…} with default (nil) optionals omitted")
    stored, removed, topic = (*stored, "locality"), (*removed, "locality"), True
    add("0.26.0", "optional locality on both events; replay replies carry the topic")
    stored, removed = (*stored, "ownership"), (*removed, "ownership")
    add("0.29.0", "optional ownership on both events")
    stored = (*stored, "session_id")
    add("0.30.0", "optional BlockStored.session_id")
    add("0.31.0", "same wire; extra_keys carry the untagged keys (Era.published_extra_keys)")
    stored = (*stored, "lookahead_token_ids")
    add("0.33.0", "optional BlockStored.lookahead_token_ids")
    return tuple(out)


#: Ordered oldest first; each era runs until the next one starts.
WIRE_ERAS: Final[tuple[WireEra, ...]] = _eras()

#: The replay end marker's sequence number: -1 as 8 signed big-endian bytes.
END_SEQ: Final = (-1).to_bytes(8, "big", signed=True)

#: The socket a message came from: the publisher's PUB or the replay ROUTER.
Via = Literal["pub", "replay"]


def wire_era(vllm_version: str, *, strict: bool = True) -> tuple[WireEra, tuple[str, ...]]:
    """The wire era of a release, and the warnings of resolving it (lenient mode)."""
    resolved = resolve_release(vllm_version, strict=strict)
    era = era_at(WIRE_ERAS, resolved.release)
    if era is None:
        raise UnknownVersionError(
            f"vllm_version {vllm_version}: vLLM publishes KV events from "
            f"{WIRE_ERAS[0].since} on"
        )
    return era, resolved.warnings


def replay_request(start_seq: int) -> bytes:
    """The frame a replay client sends: the first wanted sequence number, 8 bytes BE."""
    if type(start_seq) is not int or not 0 <= start_seq < 1 << 64:
        raise EventFramingError(f"must be an int in [0, 2**64), got {start_seq!r}",
                                field="start_seq")
    return start_seq.to_bytes(8, "big", signed=False)


def split_message(frames: Sequence[bytes]) -> tuple[str, int, bytes]:
    """A PUB message's frames ``[topic, seq (8-byte BE), payload]`` as a tuple."""
    frames = _frames(frames)
    if len(frames) != 3:
        raise EventFramingError(
            f"a KV-event message has 3 frames [topic, seq, payload], got {len(frames)}")
    return _topic(frames[0]), _seq(frames[1]), bytes(frames[2])


def _frames(frames: Sequence[bytes]) -> list[bytes]:
    value: object = frames  # checked at run time: frames come from sockets and files
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise EventFramingError(f"a message must be a list of frames, got "
                                f"{type(frames).__name__}")
    parts = list(frames)
    for i, frame in enumerate(parts):
        if not isinstance(frame, (bytes, bytearray, memoryview)):
            raise EventFramingError(f"must be bytes, got {type(frame).__name__}",
                                    field=f"frames[{i}]")
    return parts


def _topic(frame: bytes) -> str:
    try:
        return bytes(frame).decode("utf-8")
    except UnicodeDecodeError:
        raise EventFramingError("is not UTF-8", field="topic") from None


def _seq(frame: bytes) -> int:
    if len(frame) != 8:
        raise EventFramingError(f"must be 8 bytes (big-endian), got {len(frame)}", field="seq")
    return int.from_bytes(frame, "big", signed=False)
