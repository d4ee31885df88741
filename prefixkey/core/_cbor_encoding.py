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

from ..errors import InvalidRequestError

__all__ = [
    "TokenStream", "chain", "dumps", "encode_extra_keys_tail", "encode_tokens", "extend_tokens",
]

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
_ZERO_TO_DROP: Final = _lookup(0xFF)  # a high byte of 0xFF makes the unit U+FFxx: dropped
# By width class (0: < 24, 1: < 2**8, 2: < 2**16, 3: < 2**31) of a token id, its head:
_HEAD: Final = _lookup(0, 0x18, 0x19, 0x1A)


def _encode_blocks(records: bytes, first: int, n: int, size: int) -> list[bytes]:
    """CBOR of each block of ``size`` ids, for ``n`` ids (a multiple of ``size``) in [0, 2**31).

    ``records`` holds the ids' marshal records from ``records[first]`` on (see
    :func:`~prefixkey.core._request.checked_token_ids`): per id ``i`` and its
    little-endian bytes b0..b3. A lookup per token would touch a table entry
    per id at random, which is slow for long prompts; instead every step is
    one pass of a C routine over the whole run. Each id becomes five UTF-16
    code units, its head and big-endian bytes ``[head, b3, b2, b1, b0]``,
    where a byte that the minimal-length encoding does not use gets the high
    byte 0xFF; encoding a block's units to Latin-1 with errors ignored drops
    exactly those.
    """
    def num(plane: bytes) -> int:
        return int.from_bytes(plane, "little")

    end = first + 5 * n
    b0, b1, b2, b3 = (records[first + k : end : 5] for k in (1, 2, 3, 4))
    # Bytewise: non-zero where the id is >= 2**16, >= 2**8, >= 24.
    high = num(b2) | num(b3)
    mid = high | num(b1)
    from_2_16 = high.to_bytes(n, "little")
    from_2_8 = mid.to_bytes(n, "little")
    from_24 = (mid | num(b0.translate(_AT_LEAST_24))).to_bytes(n, "little")
    width_class = (
        num(from_24.translate(_NONZERO)) + num(from_2_8.translate(_NONZERO))
        + num(from_2_16.translate(_NONZERO))
    ).to_bytes(n, "little")
    drop_b0 = from_24.translate(_ZERO_TO_DROP)
    # The head is the id itself below 24, else 0x18/0x19/0x1a.
    head = (num(width_class.translate(_HEAD)) | (num(b0) & num(drop_b0))).to_bytes(n, "little")
    drop_high = from_2_16.translate(_ZERO_TO_DROP)
    units = bytearray(10 * n)
    units[0::10] = head
    units[2::10], units[3::10] = b3, drop_high
    units[4::10], units[5::10] = b2, drop_high
    units[6::10], units[7::10] = b1, from_2_8.translate(_ZERO_TO_DROP)
    units[8::10], units[9::10] = b0, drop_b0
    text, step = units.decode("utf-16-le"), 5 * size
    return [text[i : i + step].encode("latin-1", "ignore") for i in range(0, 5 * n, step)]


class TokenStream:
    """A request's token ids as CBOR: one bytes object per full block of
    ``block_size`` ids (:attr:`blocks`), then the ids of the partial block."""

    __slots__ = ("_pending", "_pending_records", "block_size", "blocks")

    def __init__(
        self, block_size: int, token_ids: Sequence[int] = (), words: bytes | None = None
    ) -> None:
        self.block_size = block_size
        self.blocks: list[bytes] = []
        self._pending: list[int] = []
        self._pending_records: bytes | None = b""  # their marshal records, if all have them
        self.extend(token_ids, words)

    def __len__(self) -> int:
        return len(self.blocks) * self.block_size + len(self._pending)

    def __bytes__(self) -> bytes:
        return b"".join(self.blocks) + b"".join(map(encode_int, self._pending))

    def extend(self, token_ids: Sequence[int], words: bytes | None = None) -> None:
        """Append checked token ids; ``words`` are their marshal records from
        :func:`~prefixkey.core._request.checked_token_ids`, when that returned
        them (else each id is encoded on its own)."""
        ids, records, first = token_ids, words, 5  # 5: the records follow marshal's header
        if self._pending:
            ids = [*self._pending, *token_ids]
            if words is None or self._pending_records is None:
                records = None
            else:
                records, first = self._pending_records + words[5:], 0
        size = self.block_size
        full = len(ids) // size * size
        if records is None:
            self.blocks += [
                b"".join(map(encode_int, ids[s : s + size])) for s in range(0, full, size)
            ]
        elif full:
            self.blocks += _encode_blocks(records, first, full, size)
        self._pending = list(ids[full:])
        if not self._pending:
            self._pending_records = b""
        elif records is None:
            self._pending_records = None
        else:
            self._pending_records = records[first + 5 * full : first + 5 * len(ids)]


def encode_tokens(
    token_ids: Sequence[int], words: bytes | None, block_size: int
) -> TokenStream:
    """The request's checked token ids (and their words, if any) as a :class:`TokenStream`."""
    return TokenStream(block_size, token_ids, words)


def extend_tokens(
    tokens: TokenStream, token_ids: Sequence[int], words: bytes | None
) -> TokenStream:
    """``tokens`` with checked token ids (and their words, if any) appended."""
    tokens.extend(token_ids, words)
    return tokens


# Encoded text strings and keys: tags, a request's identifiers and its LoRA and
# salt keys recur block after block (CBOR has no object identity: equal is same).
_CACHE_SIZE: Final = 4096
_text_cache: dict[str, bytes] = {}
_key_cache: dict[tuple[Any, ...], bytes] = {}


def _text(value: str) -> bytes:
    encoded = _text_cache.get(value)
    if encoded is None:
        data = value.encode("utf-8")
        encoded = _head(3, len(data)) + data
        if len(_text_cache) >= _CACHE_SIZE:
            _text_cache.clear()
        _text_cache[value] = encoded
    return encoded


def _key(key: Any) -> bytes:
    """One extra key; tuples (small: tags, strings, ints, a digest) from the cache."""
    if type(key) is not tuple:
        return dumps(key)  # a bare key: raw embedding bytes can be large
    encoded = _key_cache.get(key)
    if encoded is None:
        encoded = dumps(key)
        if len(_key_cache) >= _CACHE_SIZE:
            _key_cache.clear()
        _key_cache[key] = encoded
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
    else:  # only reached by calling the serializer directly: prefixkey builds the keys
        raise InvalidRequestError("extra_keys", f"cannot encode {kind.__name__} in a block key")


def dumps(obj: Any) -> bytes:
    """``cbor2.dumps(obj, canonical=True)`` for None, int, str, bytes and tuples."""
    out: list[bytes] = []
    _encode(obj, out)
    return b"".join(out)


def encode_extra_keys_tail(extra_keys: tuple[Any, ...] | None) -> bytes:
    """Encode ``extra_keys``, the block array's last element."""
    if extra_keys is None:
        return _NULL
    return _head(4, len(extra_keys)) + b"".join(map(_key, extra_keys))


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
    head = _head(4, size)
    first = starts.start // size
    blocks = tokens.blocks[first : first + len(starts)]
    if isinstance(parent, int):
        return [
            parent := digest(join((_ARRAY3, encode_int(parent), head, block, tail)))
            for block, tail in zip(blocks, tails, strict=True)
        ]
    opening = _ARRAY3 + _head(2, len(parent))
    return [
        parent := digest(join((opening, parent, head, block, tail)))
        for block, tail in zip(blocks, tails, strict=True)
    ]
