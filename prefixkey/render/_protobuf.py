"""Protobuf's wire format, read as protobuf's own parser reads it (no protobuf runtime).

transformers parses a SentencePiece ``*.model`` file with ``ModelProto.ParseFromString``
(``SentencePieceExtractor``; protobuf 7.36's upb parser in vLLM's venvs) and reads a file
whose parse fails as a tiktoken file. Both sides of that rule read the wire format here:
render/_hf_converted.py the model's fields, render/_hf_tiktoken.py whether the parse
succeeds. The parser's rules, each checked against upb in tests/units/test_hf_converted.py:
a varint of at most 10 bytes; no field number 0; wire types 0, 1, 2, 5, and groups (3 opens
one, 4 closes the innermost of the same number), kept as unknown fields like any field
the message does not declare, or a declared one of another wire type; nothing may run past
the end; groups and messages nest at most :data:`DEPTH` deep. A declared message field
is itself parsed (its fault fails the whole parse).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, TypeAlias

__all__ = ["DEPTH", "Messages", "WireError", "check_message", "fields", "is_message"]

#: The fields of a message that are messages themselves, each with its own such fields.
Messages: TypeAlias = Mapping[int, "Messages"]

_VARINT, _FIXED64, _BYTES, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
#: How deep groups and messages may nest below the message parsed (upb's default limit).
DEPTH: Final = 100


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


def _field(data: bytes, at: int, depth: int) -> tuple[int, int, int | bytes | None, int]:
    """The field at ``at`` (number, wire type, value) and the position after it; a group
    (within ``depth`` more levels) is skipped and an end-group tag returned, value None."""
    key, at = _varint(data, at)
    number, wire = key >> 3, key & 7
    if number == 0:
        raise WireError("field number 0")
    if wire == _VARINT:
        value, at = _varint(data, at)
        return number, wire, value, at
    if wire == _BYTES:
        size, at = _varint(data, at)
    elif wire in (_FIXED32, _FIXED64):
        size = 4 if wire == _FIXED32 else 8
    elif wire == _START_GROUP:
        return number, wire, None, _skip_group(data, at, number, depth - 1)
    elif wire == _END_GROUP:
        return number, wire, None, at
    else:
        raise WireError(f"wire type {wire}")
    end = at + size
    if end > len(data):
        raise WireError("a field runs past the data")
    return number, wire, data[at:end], end


def _skip_group(data: bytes, at: int, number: int, depth: int) -> int:
    """The position after the group ``number`` opened before ``at`` (nested ones too)."""
    if depth < 0:
        raise WireError(f"nested deeper than {DEPTH}")
    while at < len(data):
        field, wire, _, at = _field(data, at, depth)
        if wire == _END_GROUP:
            if field != number:
                raise WireError(f"group {number} closed as {field}")
            return at
    raise WireError(f"group {number} is not closed")


def _walk(data: bytes, depth: int) -> Iterator[tuple[int, int, int | bytes]]:
    at, end = 0, len(data)
    while at < end:
        number, wire, value, at = _field(data, at, depth)
        if value is not None:
            yield number, wire, value
        elif wire == _END_GROUP:
            raise WireError(f"group {number} closed but not open")


def fields(data: bytes, depth: int = DEPTH) -> list[tuple[int, int, int | bytes]]:
    """A message's fields in order, as (number, wire type, value): a varint's value, else
    the bytes of a length-delimited or fixed-size field. Groups are skipped (no message
    read here declares one: the parser keeps them as unknown fields). ``depth``: the
    levels of groups and messages the parser still allows within this message (one less
    for a message inside another)."""
    return list(_walk(data, depth))


def check_message(data: bytes, messages: Messages, depth: int = DEPTH) -> None:
    """Raise :class:`WireError` unless the parser accepts ``data`` as a message whose
    message fields are ``messages``."""
    for number, wire, value in _walk(data, depth):
        inner = messages.get(number)
        if inner is not None and wire == _BYTES:
            assert isinstance(value, bytes)
            check_message(value, inner, depth - 1)


def is_message(data: bytes, messages: Messages) -> bool:
    """Whether the parser accepts ``data`` (:func:`check_message`)."""
    try:
        check_message(data, messages)
    except WireError:
        return False
    return True
