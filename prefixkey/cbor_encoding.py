"""``cbor2.dumps(obj, canonical=True)`` for the one shape vLLM hashes, byte for byte.

vLLM's ``sha256_cbor`` and ``xxhash_cbor`` algorithms digest canonical CBOR
of ``(parent_hash, tuple(block_tokens), extra_keys)``: tuples are arrays,
heads are minimal-length, ints of 2**64 and beyond are bignums (tag 2 for
non-negative, tag 3 for negative), and None is the simple value null. CBOR
has no object identity, so unlike pickle nothing depends on which strings
are the same object.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

__all__ = ["TokenStream", "chain", "dumps", "encode_extra_keys_tail", "encode_tokens"]

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


def _lookup(*values: int) -> bytes:
    """A ``bytes.translate`` table mapping 0, 1, 2, … to ``values`` (and the rest to 0)."""
    return bytes(values) + bytes(256 - len(values))


_NONZERO: Final = _lookup(0, *[1] * 255)
_AT_LEAST_24: Final = _lookup(*[0] * 24, *[1] * 232)
# By width class (0: < 24, 1: < 2**8, 2: < 2**16, 3: < 2**32) of a token id:
_HEAD: Final = _lookup(0, 0x18, 0x19, 0x1A)
_DROP_HEAD: Final = _lookup(0xFF)
_DROP_HIGH16: Final = _lookup(0xFF, 0xFF, 0xFF)
_DROP_BYTE1: Final = _lookup(0xFF, 0xFF)
_WIDTH: Final = _lookup(1, 2, 3, 5)


def _encode_uint32s(token_ids: Sequence[int]) -> tuple[bytes, bytes]:
    """CBOR of many ids below 2**32, concatenated, and each one's width, at C speed.

    A lookup per token would touch a table entry per id at random, which is
    slow for long prompts; instead every step here is one pass of a C
    routine over the whole request. Each id becomes five UTF-16 code units,
    ``[head, b3, b2, b1, b0]`` of its big-endian bytes, where a unit that the
    minimal-length encoding does not use is U+FF00; deleting those and
    encoding as Latin-1 leaves the CBOR bytes. OverflowError for larger ids.
    """
    n = len(token_ids)
    words = array("I", token_ids)  # OverflowError outside [0, 2**32)
    if words.itemsize != 4:  # pragma: no cover - every supported platform
        raise OverflowError("no 32-bit array type")
    if sys.byteorder == "little":
        words.byteswap()
    raw = words.tobytes()
    b3, b2, b1, b0 = raw[0::4], raw[1::4], raw[2::4], raw[3::4]

    def num(plane: bytes) -> int:
        return int.from_bytes(plane, "little")

    high16 = num(b3) | num(b2)
    from_2_16 = high16.to_bytes(n, "little").translate(_NONZERO)
    from_2_8 = (high16 | num(b1)).to_bytes(n, "little").translate(_NONZERO)
    from_24 = num(from_2_8) | num(b0.translate(_AT_LEAST_24))
    width_class = (from_24 + num(from_2_8) + num(from_2_16)).to_bytes(n, "little")
    units = bytearray(10 * n)
    units[0::10] = width_class.translate(_HEAD)
    units[1::10] = width_class.translate(_DROP_HEAD)
    drop_high16 = width_class.translate(_DROP_HIGH16)
    units[2::10], units[3::10] = b3, drop_high16
    units[4::10], units[5::10] = b2, drop_high16
    units[6::10], units[7::10] = b1, width_class.translate(_DROP_BYTE1)
    units[8::10] = b0
    data = units.decode("utf-16-le").replace("\uff00", "").encode("latin-1")
    return data, width_class.translate(_WIDTH)


class TokenStream:
    """A request's token ids as concatenated CBOR, with each id's width in bytes."""

    __slots__ = ("_data", "_mark", "_widths")

    def __init__(self, token_ids: Sequence[int] = ()) -> None:
        self._data = bytearray()
        self._widths = bytearray()
        self._mark = (0, 0)  # (token index, byte offset) last asked for
        self.extend(token_ids)

    def __len__(self) -> int:
        return len(self._widths)

    def __bytes__(self) -> bytes:
        return bytes(self._data)

    def extend(self, token_ids: Sequence[int]) -> None:
        try:
            data, widths = _encode_uint32s(token_ids)
        except OverflowError:  # ids of 2**32 and beyond: one at a time
            encoded = [encode_int(t) for t in token_ids]
            data, widths = b"".join(encoded), bytes(map(len, encoded))
        self._data += data
        self._widths += widths

    def offset(self, index: int) -> int:
        """Byte offset of token ``index``; cheap when asked in increasing order."""
        start, offset = self._mark
        if index < start:
            start, offset = 0, 0
        offset += sum(self._widths[start:index])
        self._mark = (index, offset)
        return offset



def encode_tokens(token_ids: Sequence[int]) -> TokenStream:
    """The request's tokens as a :class:`TokenStream`; ids are checked non-negative ints."""
    return TokenStream(token_ids)


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


def _encode(obj: Any, out: list[bytes]) -> None:
    kind = type(obj)
    if kind is tuple:
        out.append(_head(4, len(obj)))
        for item in obj:
            _encode(item, out)
    elif kind is str:
        out.append(_text(obj))
    elif kind is int:
        out.append(encode_int(obj))
    elif obj is None:
        out.append(_NULL)
    elif kind is bytes:
        out.append(_head(2, len(obj)))
        out.append(obj)
    else:  # pragma: no cover - extra keys are built by prefixkey itself
        raise TypeError(f"cannot encode {kind.__name__} in a block key")


def dumps(obj: Any) -> bytes:
    """``cbor2.dumps(obj, canonical=True)`` for None, int, str, bytes and tuples."""
    out: list[bytes] = []
    _encode(obj, out)
    return b"".join(out)


def encode_extra_keys_tail(extra_keys: tuple[Any, ...] | None) -> bytes:
    """Encode ``extra_keys``, the block array's last element."""
    return dumps(extra_keys)


def chain(
    parent: bytes | int,
    tokens: TokenStream,
    starts: range,
    size: int,
    tails: Iterable[bytes],
    digest: Callable[[bytes], Any],
) -> list[Any]:
    """Keys of the blocks starting at ``starts``, with encoded extra keys ``tails``.

    Each key is the digest of the CBOR array ``[parent, [tokens…], extra_keys]``
    and the parent of the next. Parents are digests of one length, or ints
    (sha256_cbor_64bit of 0.10.0-0.10.1.1).
    """
    join = b"".join
    tokens_head = _head(4, size)
    data, widths = tokens._data, tokens._widths
    offset = tokens.offset(starts.start) if starts else 0
    opening = _ARRAY3 if isinstance(parent, int) else _ARRAY3 + _head(2, len(parent))
    keys: list[Any] = []
    for start, tail in zip(starts, tails, strict=True):
        end = offset + sum(widths[start : start + size])
        encoded_parent = encode_int(parent) if isinstance(parent, int) else parent
        parent = digest(join((opening, encoded_parent, tokens_head, data[offset:end], tail)))
        offset = end
        keys.append(parent)
    if starts:
        tokens._mark = (starts[-1] + size, offset)
    return keys
