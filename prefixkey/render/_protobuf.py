"""Protobuf's wire format, read as protobuf's own parser reads it (no protobuf runtime).

transformers parses a SentencePiece ``*.model`` file with ``ModelProto.ParseFromString``
(``SentencePieceExtractor``; protobuf 7.36's upb parser in vLLM's venvs) and reads a file
whose parse fails as a tiktoken file. Both sides of that rule read the wire format here:
render/_hf_converted.py the model's fields (and whether all of it parses),
render/_hf_tiktoken.py whether its top level does. The parser's rules, each checked
against upb in tests/units/test_hf_converted.py: a varint of at most 10 bytes; no field
number 0; wire types 0, 1, 2, 5, and groups (3 opens one, 4 closes the innermost of the
same number), kept as unknown fields like any field the message does not declare, or a
declared one of another wire type; nothing may run past the end; groups and messages
nest at most :data:`DEPTH` deep. A declared message field is itself parsed (its fault
fails the whole parse).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, TypeAlias

__all__ = ["DEPTH", "Messages", "WireError", "check_message", "fields", "is_message"]

#: The fields of a message that are messages themselves, each with its own such fields.
Messages: TypeAlias = Mapping[int, "Messages"]

_VARINT, _FIXED64, _BYTES, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
#: How deep groups and messages may nest below the message parsed (upb's default limit).
DEPTH: Final = 100
_NO_MESSAGES: Final[Messages] = {}


class WireError(ValueError):
    """Data protobuf's parser rejects."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A base-128 varint at ``at`` and the position after it."""
    try:
        byte = data[at]
        if byte < 0x80:  # most are one byte: no loop
            return byte, at + 1
        value = byte & 0x7F
        for shift in range(7, 70, 7):
            at += 1
            byte = data[at]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value, at + 1
    except IndexError:
        raise WireError("a varint runs past the data") from None
    raise WireError("a varint longer than 10 bytes")


def _scan(data: bytes, at: int, end: int, depth: int, messages: Messages,
          out: list[tuple[int, int, int | bytes]] | None, group: int = 0) -> int:
    """Walk the fields of ``data[at:end]`` (``group``: those of the group of that number,
    up to its end tag) and return the position after them; ``out`` gets each field (not
    a group's), ``messages`` names the fields parsed as messages, ``depth`` is the levels
    of groups and messages still allowed. One-byte keys, varints and lengths, most of a
    vocabulary's, are read inline."""
    while at < end:
        key = data[at]
        if key < 0x80:
            at += 1
        else:
            key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire == _VARINT:
            if at < end and data[at] < 0x80:
                value: int = data[at]
                at += 1
            else:
                value, at = _varint(data, at)
            if out is not None:
                out.append((number, wire, value))
            continue
        if wire == _BYTES:
            if at < end and data[at] < 0x80:
                size = data[at]
                at += 1
            else:
                size, at = _varint(data, at)
        elif wire in (_FIXED32, _FIXED64):
            size = 4 if wire == _FIXED32 else 8
        elif wire == _START_GROUP:
            if depth < 1:
                raise WireError(f"nested deeper than {DEPTH}")
            at = _scan(data, at, end, depth - 1, _NO_MESSAGES, None, number)
            continue
        elif wire == _END_GROUP:
            if number != group:
                raise WireError(f"group {number} closed but not open")
            return at
        else:
            raise WireError(f"wire type {wire}")
        stop = at + size
        if stop > end:
            raise WireError("a field runs past the data")
        if out is not None:
            out.append((number, wire, data[at:stop]))
        if wire == _BYTES and messages:
            inner = messages.get(number)
            if inner is not None:
                if depth < 1:
                    raise WireError(f"nested deeper than {DEPTH}")
                _scan(data, at, stop, depth - 1, inner, None)
        at = stop
    if group:
        raise WireError(f"group {group} is not closed")
    return at


def fields(data: bytes, depth: int = DEPTH) -> list[tuple[int, int, int | bytes]]:
    """A message's fields in order, as (number, wire type, value): a varint's value, else
    the bytes of a length-delimited or fixed-size field. Groups are skipped (no message
    read here declares one: the parser keeps them as unknown fields). ``depth``: the
    levels of groups and messages the parser still allows within this message (one less
    for a message inside another)."""
    out: list[tuple[int, int, int | bytes]] = []
    _scan(data, 0, len(data), depth, _NO_MESSAGES, out)
    return out


def check_message(data: bytes, messages: Messages, depth: int = DEPTH) -> None:
    """Raise :class:`WireError` unless the parser accepts ``data`` as a message whose
    message fields are ``messages``."""
    _scan(data, 0, len(data), depth, messages, None)


def is_message(data: bytes, messages: Messages) -> bool:
    """Whether the parser accepts ``data`` (:func:`check_message`)."""
    try:
        check_message(data, messages)
    except WireError:
        return False
    return True
