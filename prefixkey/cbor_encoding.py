"""``cbor2.dumps(obj, canonical=True)`` for the one shape vLLM hashes, byte for byte.

vLLM's ``sha256_cbor`` and ``xxhash_cbor`` algorithms digest canonical CBOR
of ``(parent_hash, tuple(block_tokens), extra_keys)``: tuples are arrays,
heads are minimal-length, ints of 2**64 and beyond are bignums (tag 2 for
non-negative, tag 3 for negative), and None is the simple value null. CBOR
has no object identity, so unlike pickle nothing depends on which strings
are the same object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

__all__ = ["chain", "dumps", "encode_extra_keys_tail", "encode_tokens"]

_NULL: Final = b"\xf6"
_ARRAY3: Final = b"\x83"
_UINT64_LIMIT: Final = 1 << 64


def _head(major: int, value: int) -> bytes:
    """A minimal-length CBOR head for ``value`` < 2**64 of major type ``major``."""
    base = major << 5
    if value < 24:
        return bytes((base | value,))
    if value <= 0xFF:
        return bytes((base | 24, value))
    if value <= 0xFFFF:
        return bytes((base | 25,)) + value.to_bytes(2, "big")
    if value <= 0xFFFFFFFF:
        return bytes((base | 26,)) + value.to_bytes(4, "big")
    return bytes((base | 27,)) + value.to_bytes(8, "big")


def encode_int(value: int) -> bytes:
    """Canonical CBOR of one int, with bignum tags beyond the 64-bit heads."""
    if value >= 0:
        if value < _UINT64_LIMIT:
            return _head(0, value)
        tag, magnitude = 0xC2, value
    else:
        magnitude = -1 - value
        if magnitude < _UINT64_LIMIT:
            return _head(1, magnitude)
        tag = 0xC3
    payload = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big")
    return bytes((tag,)) + _head(2, len(payload)) + payload


_TABLE_SIZE: Final = 1 << 18
_table: list[bytes] = []


def _token_table() -> list[bytes]:
    if not _table:
        _table.extend(_head(0, i) for i in range(_TABLE_SIZE))
    return _table


def encode_tokens(token_ids: Sequence[int]) -> list[bytes]:
    """Per-token encodings; callers have checked the ids are non-negative ints."""
    table = _token_table()
    try:
        return list(map(table.__getitem__, token_ids))
    except IndexError:
        return [table[t] if t < _TABLE_SIZE else encode_int(t) for t in token_ids]


def _encode(obj: Any, out: list[bytes]) -> None:
    if obj is None:
        out.append(_NULL)
    elif type(obj) is int:
        out.append(encode_int(obj))
    elif isinstance(obj, str):
        data = obj.encode("utf-8")
        out.append(_head(3, len(data)))
        out.append(data)
    elif isinstance(obj, bytes):
        out.append(_head(2, len(obj)))
        out.append(obj)
    elif type(obj) is tuple:
        out.append(_head(4, len(obj)))
        for item in obj:
            _encode(item, out)
    else:  # pragma: no cover - extra keys are built by prefixkey itself
        raise TypeError(f"cannot encode {type(obj).__name__} in a block key")


def dumps(obj: Any) -> bytes:
    """``cbor2.dumps(obj, canonical=True)`` for None, int, str, bytes and tuples."""
    out: list[bytes] = []
    _encode(obj, out)
    return b"".join(out)


# Encoded text strings: tags and a request's identifiers recur block after block.
_TEXT_CACHE_SIZE: Final = 4096
_text_cache: dict[str, bytes] = {}


def _text(value: str) -> bytes:
    encoded = _text_cache.get(value)
    if encoded is None:
        data = value.encode("utf-8")
        encoded = _head(3, len(data)) + data
        if len(_text_cache) >= _TEXT_CACHE_SIZE:
            _text_cache.clear()
        _text_cache[value] = encoded
    return encoded


def encode_extra_keys_tail(extra_keys: tuple[Any, ...] | None) -> bytes:
    """Encode ``extra_keys`` (None, or a tuple of flat key tuples), the block array's end."""
    if extra_keys is None:
        return _NULL
    out = [_head(4, len(extra_keys))]
    for key in extra_keys:
        out.append(_head(4, len(key)))
        for value in key:
            kind = type(value)
            if kind is str:
                out.append(_text(value))
            elif kind is int:
                out.append(encode_int(value))
            elif value is None:
                out.append(_NULL)
            else:
                out.append(_head(2, len(value)))
                out.append(value)
    return b"".join(out)


def chain(
    parent: bytes,
    tokens: Sequence[bytes],
    starts: range,
    size: int,
    tails: Iterable[bytes],
    digest: Callable[[bytes], bytes],
) -> list[bytes]:
    """Keys of the blocks starting at ``starts``, with encoded extra keys ``tails``.

    ``tokens`` are the per-token encodings from :func:`encode_tokens`. Each
    key is the digest of the CBOR array ``[parent, [tokens…], extra_keys]`` and
    the parent of the next; every parent has the length of the first.
    """
    join = b"".join
    opening = _ARRAY3 + _head(2, len(parent))
    tokens_head = _head(4, size)
    keys = []
    for start, tail in zip(starts, tails, strict=True):
        block = join(tokens[start : start + size])
        parent = digest(join((opening, parent, tokens_head, block, tail)))
        keys.append(parent)
    return keys
