"""Decoded KV events as JSON, and recordings of KV-event messages decoded to JSON Lines.

JSON form: hashes are written as the release published them: with
``tagged_hashes`` as ``{"int": n}`` or ``{"hex": "…"}`` (the wire fixtures'
form), otherwise ints as JSON ints and digest bytes as a hex string (the CLI's
form). Bytes anywhere else (an extra key's embeddings digest) are always
``{"hex": "…"}``, so they cannot be mistaken for a string. The encoding is
the results' (:func:`prefixkey.jsonl.hash_to_json`, :func:`~prefixkey.jsonl.value_to_json`).
Every field of the event model is written; a field the release does not publish
(or left unset) is ``null``.

A recording holds one received ZMQ message per line (docs/events.md)::

    {"recv_time": 1700000000.5, "source": "replica-a", "via": "pub",
     "frames_b64": ["", "AAAAAAAAAAA=", "…"]}

``via`` says which socket the message came from: the publisher (``"pub"``) or
the replay socket (``"replay"``). A line without it is framed by its shape
when that tells (:meth:`EventDecoder.framing_of`), else by the caller's
``framing`` (default ``"pub"``), so one recording may mix both sockets.
:func:`decode_recording` turns each line into one output record: the decoded
batch, or an error record for a line that could not be read or decoded
(decoding goes on with the next line).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from .._json_lines import JSON_LIMITS, JsonLimits, bounded_lines, parse_json_line
from ..errors import MalformedJSONError, PrefixKeyError
from ..jsonl import hash_to_json, value_to_json
from ._decode import EventDecodeError, EventDecoder, ReplayEnd, Via, split_message
from ._model import AllBlocksCleared, EventBatch, KVCacheEvent

__all__ = [
    "RecordedMessage",
    "RecordedPayload",
    "RecordingFormatError",
    "batch_to_json",
    "decode_recording",
    "event_to_json",
    "parse_recording_line",
    "recording_line",
    "split_recorded",
]

_VIAS: tuple[Via, ...] = ("pub", "replay")

_HASH_FIELDS = frozenset({"block_hashes", "parent_block_hash"})


def event_to_json(event: KVCacheEvent, *, tagged_hashes: bool = False) -> dict[str, Any]:
    """``{"type": <class name>, <every model field>: …}``."""
    out: dict[str, Any] = {"type": type(event).__name__}
    if isinstance(event, AllBlocksCleared):
        return out
    for f in fields(event):
        value = getattr(event, f.name)
        if f.name == "block_hashes":
            out[f.name] = [hash_to_json(h, tagged=tagged_hashes) for h in value]
        elif f.name in _HASH_FIELDS:
            out[f.name] = hash_to_json(value, tagged=tagged_hashes)
        else:
            out[f.name] = value_to_json(value)
    return out


def batch_to_json(batch: EventBatch, *, tagged_hashes: bool = False) -> dict[str, Any]:
    """``{"ts", "data_parallel_rank", "events": [...]}``."""
    return {
        "ts": batch.ts,
        "data_parallel_rank": batch.data_parallel_rank,
        "events": [event_to_json(e, tagged_hashes=tagged_hashes) for e in batch.events],
    }


#: Frames per message at most: a PUB message has 3, a DEALER's replay reply 4.
MAX_FRAMES = 8


class RecordingFormatError(PrefixKeyError, ValueError):
    """A recording line is not ``{"recv_time", "source", "via", "frames_b64"}``.

    ``field`` names the field at fault (None for the line itself).
    """

    def __init__(self, field: str | None, message: str) -> None:
        self.field: str | None = field
        super().__init__(f"{field}: {message}" if field else message)


@dataclass(frozen=True, slots=True)
class RecordedMessage:
    """One received ZMQ message: when, from where, through which socket, and its frames."""

    recv_time: float | None
    source: str | None
    frames: tuple[bytes, ...]
    #: None when the line does not say (:func:`split_recorded` then decides).
    via: Via | None = None


class RecordedPayload(NamedTuple):
    """A recorded message's payload, where it sits in its stream, and its socket."""

    via: Via
    topic: str
    seq: int
    payload: bytes


def recording_line(
    frames: Sequence[bytes], *, recv_time: float | None, source: str | None,
    via: Via | None = None,
) -> str:
    """One recording line ``{"recv_time", "source", ["via",] "frames_b64"}`` (no newline)."""
    line: dict[str, Any] = {"recv_time": recv_time, "source": source}
    if via is not None:
        if via not in _VIAS:
            raise RecordingFormatError("via", f"must be 'pub' or 'replay', got {via!r}")
        line["via"] = via
    line["frames_b64"] = [base64.b64encode(bytes(f)).decode("ascii") for f in frames]
    return json.dumps(line)


def parse_recording_line(raw: bytes | str, limits: JsonLimits = JSON_LIMITS, *,
                         warnings: list[str] | None = None) -> RecordedMessage:
    """Parse one recording line (raises :class:`RecordingFormatError`).

    ``limits`` bounds the line (:class:`~prefixkey.jsonl.JsonLimits`); a
    duplicate key is a warning, appended to ``warnings`` when given.
    """
    try:
        obj = parse_json_line(raw, limits, warnings=warnings)
    except MalformedJSONError as exc:
        raise RecordingFormatError(exc.field, str(exc)) from None
    if not isinstance(obj, dict):
        raise RecordingFormatError(None, f"must be a JSON object, got {type(obj).__name__}")
    recv_time, source = obj.get("recv_time"), obj.get("source")
    if recv_time is not None and (
        type(recv_time) not in (int, float) or not math.isfinite(recv_time)
    ):
        raise RecordingFormatError("recv_time", "must be a number (unix seconds)")
    if source is not None and not isinstance(source, str):
        raise RecordingFormatError("source", "must be a string")
    via = obj.get("via")
    if via is not None and via not in _VIAS:
        raise RecordingFormatError("via", f"must be 'pub' or 'replay', got {via!r}")
    frames_b64 = obj.get("frames_b64")
    if not isinstance(frames_b64, list):
        raise RecordingFormatError("frames_b64", "must be a list of base64 strings")
    if len(frames_b64) > MAX_FRAMES:
        raise RecordingFormatError(
            "frames_b64", f"has {len(frames_b64)} frames (max {MAX_FRAMES})"
        )
    frames = []
    for i, item in enumerate(frames_b64):
        if not isinstance(item, str):
            raise RecordingFormatError(f"frames_b64[{i}]", "must be a base64 string")
        try:
            frames.append(base64.b64decode(item, validate=True))
        except (binascii.Error, ValueError):
            raise RecordingFormatError(f"frames_b64[{i}]", "is not valid base64") from None
    return RecordedMessage(
        None if recv_time is None else float(recv_time), source, tuple(frames), via
    )


def split_recorded(
    message: RecordedMessage, decoder: EventDecoder, *, framing: Via | None = None
) -> RecordedPayload | ReplayEnd:
    """A recorded message's payload, or the replay end marker it is.

    The framing is the line's ``via``; failing that the frames' shape, where
    it tells (:meth:`EventDecoder.framing_of`); failing that ``framing``
    (default ``"pub"``). Raises :class:`EventFramingError` when the frames do
    not have that socket's shape.
    """
    via = message.via or decoder.framing_of(message.frames) or framing or "pub"
    if via == "pub":
        return RecordedPayload(via, *split_message(message.frames))
    reply = decoder.split_replay_reply(message.frames)
    if isinstance(reply, ReplayEnd):
        return reply
    return RecordedPayload(via, *reply)


def _error(exc: PrefixKeyError, line: int, message: RecordedMessage | None) -> dict[str, Any]:
    error: dict[str, Any] = {
        "type": type(exc).__name__, "message": str(exc), "field": exc.field, "line": line,
    }
    if isinstance(exc, EventDecodeError):
        error["event_index"] = exc.event_index
    return {
        "source": message.source if message else None,
        "recv_time": message.recv_time if message else None,
        "error": error,
    }


def decode_recording(
    lines: Iterable[bytes | str],
    decoder: EventDecoder,
    *,
    framing: Via | None = None,
    limits: JsonLimits = JSON_LIMITS,
) -> Iterator[dict[str, Any]]:
    """One JSON record per non-blank line: a decoded message or an error.

    A stream is read line by line within ``limits`` (:func:`~prefixkey.jsonl.bounded_lines`):
    an overlong line is an error record, and decoding goes on with the next.

    Each line is framed by :func:`split_recorded` (``framing`` is for lines
    whose ``via`` and shape leave it open). A decoded message is ``{"source",
    "recv_time", "via", "topic", "seq", "ts", "data_parallel_rank", "events",
    "warnings"}`` with hashes as published (ints, or hex strings for digest
    bytes); a replay end marker is ``{"source", "recv_time", "via": "replay",
    "topic", "replay_end": true}``; an error is ``{"source", "recv_time",
    "error": {"type", "message", "field", "line", "event_index"}}``.
    """
    for number, raw in enumerate(bounded_lines(lines, limits), start=1):
        if not raw.strip():
            continue
        message: RecordedMessage | None = None
        line_warnings: list[str] = []
        try:
            message = parse_recording_line(raw, limits, warnings=line_warnings)
            split = split_recorded(message, decoder, framing=framing)
            if isinstance(split, ReplayEnd):
                yield {"source": message.source, "recv_time": message.recv_time,
                       "via": "replay", "topic": split.topic, "replay_end": True}
                continue
            decoded = decoder.decode(split.payload)
        except PrefixKeyError as exc:
            yield _error(exc, number, message)
            continue
        batch = decoded.batch
        yield {
            "source": message.source,
            "recv_time": message.recv_time,
            "via": split.via,
            "topic": split.topic,
            "seq": split.seq,
            "ts": batch.ts,
            "data_parallel_rank": batch.data_parallel_rank,
            "events": [event_to_json(e) for e in batch.events],
            "warnings": [*line_warnings, *decoded.warnings],
        }
