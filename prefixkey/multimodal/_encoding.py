"""The digest input of vLLM's ``MultiModalHasher.hash_kwargs``, as byte chunks.

Only the bytes fed to the digest matter, and for the values an image request
carries (strings, JSON numbers and containers, the image's bytes or pixel
array) they are fixed by two encodings:

* ``concat`` (0.7-0.30): per keyword argument, containers flattened into
  dotted keys (``size.shortest_edge``), then each key's UTF-8 followed by its
  value's bytes: strings as UTF-8, numbers as the bytes of a 0-d numpy array
  (int64, float64, bool), ``None`` pickled (protocol 4) or, from 0.15, the key
  alone;
* ``framed`` (0.31+): each chunk preceded by its 8-byte little-endian length,
  each value tagged None / sequence (with its length) / mapping (with its
  length; keys framed) / leaf.

An object vLLM serializes as ``iter_item_to_bytes(key, value)`` (an image's
``{"mode", "data"}``, an ndarray's ``{"dtype", "shape", "data"}``) is a
:class:`Keyed` node. Values arrive from JSON, so every other type is refused
with a typed error naming the field: vLLM would pickle it, which is no portable
key.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, TypeAlias, Union

from ..errors import InvalidRequestError

__all__ = ["Chunk", "Keyed", "Streamed", "Value", "check_value", "item_chunks"]

Chunk: TypeAlias = "bytes | memoryview"
Value: TypeAlias = Union[
    bool, int, float, str, bytes, memoryview, "Keyed", "Streamed",
    list["Value"], tuple["Value", ...], dict[str, "Value"], None,
]

_INT64 = struct.Struct("<q")
_FLOAT64 = struct.Struct("<d")
_LENGTH = struct.Struct("<Q")
_TAG_NONE = b"\x00"
_TAG_SEQUENCE = b"\x01"
_TAG_MAPPING = b"\x02"
_TAG_LEAF = b"\x03"
#: pickle.dumps(None) at the default protocol (4) of the Pythons those releases ran on.
_PICKLED_NONE = b"\x80\x04N."
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class Streamed:
    """A bytes leaf of ``nbytes`` bytes fed to the digest as ``chunks()`` makes them, never
    whole: a decoded image's pixels, a strip of rows at a time (issue 23: hashing pixels
    took 16x the decoded image's size in copies)."""

    nbytes: int
    chunks: Callable[[], Iterator[bytes]]


@dataclass(frozen=True, slots=True)
class Keyed:
    """A value vLLM serializes as ``iter_item_to_bytes(key, value)``."""

    key: str
    value: Value


def check_value(value: object, field: str, *, depth: int = 0) -> None:
    """Refuse what vLLM would not hash portably: non-JSON types, ints past int64, NaN."""
    if depth > 32:
        raise InvalidRequestError(field, "nested too deeply (more than 32 levels)")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:  # a lone surrogate: vLLM's encode("utf-8") raises
            raise InvalidRequestError(field, "string is not encodable as UTF-8") from None
        return
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            # numpy makes an object (or uint64) array of it, whose bytes are no portable key.
            raise InvalidRequestError(field, f"integer {value} is outside int64")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidRequestError(field, f"{value} is not a JSON number")
        return
    if isinstance(value, (list, tuple)):
        for i, elem in enumerate(value):
            check_value(elem, f"{field}[{i}]", depth=depth + 1)
        return
    if isinstance(value, dict):
        for key, elem in value.items():
            if not isinstance(key, str):
                raise InvalidRequestError(field, f"key {key!r} is not a string")
            check_value(elem, f"{field}.{key}", depth=depth + 1)
        return
    raise InvalidRequestError(field, f"{type(value).__name__} is not a JSON value")


def _number(value: bool | int | float) -> bytes:
    # np.array(value).tobytes(): bool_ (1 byte), int64, float64, little-endian hosts.
    if isinstance(value, bool):
        return b"\x01" if value else b"\x00"
    if isinstance(value, int):
        return _INT64.pack(value)
    return _FLOAT64.pack(value)


def _concat(key: str, value: Value, none_key_only: bool) -> Iterator[Chunk]:
    if isinstance(value, (list, tuple)):
        for i, elem in enumerate(value):
            yield from _concat(f"{key}.{i}", elem, none_key_only)
    elif isinstance(value, dict):
        for k, elem in value.items():
            yield from _concat(f"{key}.{k}", elem, none_key_only)
    elif value is None:
        yield key.encode()
        if not none_key_only:
            yield _PICKLED_NONE
    else:
        yield key.encode()
        if isinstance(value, Keyed):
            yield from _concat(value.key, value.value, none_key_only)
        elif isinstance(value, str):
            yield value.encode()
        elif isinstance(value, (bytes, memoryview)):
            yield value
        elif isinstance(value, Streamed):
            yield from value.chunks()
        else:
            yield _number(value)


def _framed_leaf(chunk: Chunk) -> Iterator[Chunk]:
    yield _LENGTH.pack(len(chunk) if isinstance(chunk, bytes) else chunk.nbytes)
    yield chunk


def _framed_value(value: Value) -> Iterator[Chunk]:
    if value is None:
        yield _TAG_NONE
    elif isinstance(value, (list, tuple)):
        yield _TAG_SEQUENCE
        yield _LENGTH.pack(len(value))
        for elem in value:
            yield from _framed_value(elem)
    elif isinstance(value, dict):
        yield _TAG_MAPPING
        yield _LENGTH.pack(len(value))
        for k, elem in value.items():
            yield from _framed_leaf(str(k).encode())
            yield from _framed_value(elem)
    else:
        yield _TAG_LEAF
        if isinstance(value, Keyed):
            yield from _framed(value.key, value.value)
        elif isinstance(value, str):
            yield from _framed_leaf(value.encode())
        elif isinstance(value, (bytes, memoryview)):
            yield from _framed_leaf(value)
        elif isinstance(value, Streamed):
            yield _LENGTH.pack(value.nbytes)
            yield from value.chunks()
        else:
            yield from _framed_leaf(_number(value))


def _framed(key: str, value: Value) -> Iterator[Chunk]:
    yield from _framed_leaf(key.encode())
    yield from _framed_value(value)


def item_chunks(encoding: Literal["concat", "framed"], key: str, value: Value, *,
                none_key_only: bool) -> Iterator[Chunk]:
    """The digest input of one keyword argument ``key=value`` of ``hash_kwargs``."""
    if encoding == "framed":
        return _framed(key, value)
    return _concat(key, value, none_key_only)
