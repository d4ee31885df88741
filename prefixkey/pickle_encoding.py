"""``pickle.dumps(obj, protocol=5)`` for the one shape vLLM hashes, byte for byte.

vLLM's ``sha256`` and ``xxhash`` algorithms digest the pickle of
``(parent_hash, tuple(block_tokens), extra_keys)``. Pickling that tuple with
the C pickler is fast, but building it per block is not; here each token's
opcode is looked up once and blocks are joined at C speed.

Three details of CPython's pickler decide the exact bytes:

* **Memo.** Every str, bytes and tuple is followed by MEMOIZE; a second
  occurrence of the *same object* is written as a BINGET back-reference.
  Identity is modelled by value class, as the engine core sees it:
  :class:`Tag` strings are shared literals in vLLM (one object per tag);
  ``""`` and one-character Latin-1 strings are CPython singletons; every other
  string arrives msgpack-decoded as its own object and never back-references.
* **Framing.** Protocol 4+ wraps opcodes in FRAMEs of about 64 KiB. Before
  saving each object the pickler ends the current frame once it holds
  ``_FRAME_SIZE_TARGET`` bytes or more.
* **Large payloads.** A str or bytes payload of 64 KiB or more is written
  outside any frame, after ending the current one.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Final

__all__ = [
    "Tag",
    "dumps",
    "encode_block",
    "encode_extra_keys_tail",
    "encode_tokens",
]

_FRAME_SIZE_TARGET: Final = 64 * 1024
_FRAME_SIZE_MIN: Final = 4

_PROTO5: Final = b"\x80\x05"
_FRAME: Final = b"\x95"
_MEMOIZE: Final = b"\x94"
_STOP: Final = b"."
_NONE: Final = b"N"
_MARK: Final = b"("
_TUPLE: Final = b"t"
_TUPLE_N: Final = (b")", b"\x85", b"\x86", b"\x87")  # EMPTY_TUPLE, TUPLE1..TUPLE3
_TUPLE3_MEMO_STOP: Final = b"\x87\x94."

_pack_u32 = struct.Struct("<I").pack
_pack_i32 = struct.Struct("<i").pack
_pack_u64 = struct.Struct("<Q").pack


class Tag(str):
    """An extra-key tag (``"mm"``, ``"lora"``, …): one shared object per tag in vLLM.

    A subclass only so the encoders can tell a tag from a data string of the
    same text; it compares and hashes as a plain str.
    """

    __slots__ = ()


class _Save:
    """Marker in a piece list: the pickler is about to save one object."""

    __slots__ = ()


class _Large:
    """A str or bytes opcode whose payload the pickler writes outside frames."""

    __slots__ = ("header", "payload")

    def __init__(self, header: bytes, payload: bytes) -> None:
        self.header = header
        self.payload = payload


_SAVE: Final = _Save()
Piece = bytes | _Save | _Large


def encode_int(value: int) -> bytes:
    """The opcode pickle writes for one int (BININT1/BININT2/BININT/LONG1/LONG4)."""
    if 0 <= value <= 0xFF:
        return b"K" + bytes((value,))
    if 0 <= value <= 0xFFFF:
        return b"M" + value.to_bytes(2, "little")
    if -0x80000000 <= value <= 0x7FFFFFFF:
        return b"J" + _pack_i32(value)
    # pickle.encode_long: minimal two's-complement, little-endian.
    nbytes = (value.bit_length() >> 3) + 1
    raw = value.to_bytes(nbytes, "little", signed=True)
    if value < 0 and nbytes > 1 and raw[-1] == 0xFF and raw[-2] & 0x80:
        raw = raw[:-1]
    if len(raw) < 256:
        return b"\x8a" + bytes((len(raw),)) + raw
    return b"\x8b" + _pack_i32(len(raw)) + raw


# Token ids below this bound are looked up; most vocabularies fit.
_TABLE_SIZE: Final = 1 << 18
_table: list[bytes] = []


def _token_table() -> list[bytes]:
    if not _table:
        k = [b"K" + bytes((i,)) for i in range(256)]
        m = [b"M" + i.to_bytes(2, "little") for i in range(256, 0x10000)]
        j = [b"J" + _pack_i32(i) for i in range(0x10000, _TABLE_SIZE)]
        _table.extend(k + m + j)
    return _table


def encode_tokens(token_ids: Sequence[int]) -> list[bytes]:
    """Per-token opcodes; callers have checked the ids are non-negative ints."""
    table = _token_table()
    try:
        return list(map(table.__getitem__, token_ids))
    except IndexError:
        return [table[t] if t < _TABLE_SIZE else encode_int(t) for t in token_ids]


def _str_or_bytes(header_small: bytes, header_u32: bytes, header_u64: bytes,
                  payload: bytes) -> Piece:
    n = len(payload)
    if n < 256:
        return header_small + bytes((n,)) + payload
    header = header_u64 + _pack_u64(n) if n > 0xFFFFFFFF else header_u32 + _pack_u32(n)
    if n >= _FRAME_SIZE_TARGET:
        return _Large(header, payload)
    return header + payload


def _memo_get(index: int) -> bytes:
    return b"h" + bytes((index,)) if index < 256 else b"j" + _pack_u32(index)


class _Pickler:
    """Appends the pieces for one object tree; memo indices continue across calls."""

    __slots__ = ("memo", "next_index", "pieces")

    def __init__(self, next_index: int) -> None:
        self.pieces: list[Piece] = []
        self.memo: dict[tuple[str, object], int] = {}
        self.next_index = next_index

    def _memoize(self) -> None:
        self.pieces.append(_MEMOIZE)
        self.next_index += 1

    def save(self, obj: Any) -> None:
        pieces = self.pieces
        pieces.append(_SAVE)
        if obj is None:
            pieces.append(_NONE)
        elif type(obj) is int:
            pieces.append(encode_int(obj))
        elif isinstance(obj, str):
            if type(obj) is Tag:
                key: tuple[str, object] | None = ("tag", str(obj))
            elif len(obj) == 0 or (len(obj) == 1 and ord(obj) < 256):
                key = ("char", obj)
            else:
                key = None
            if key is not None and key in self.memo:
                pieces.append(_memo_get(self.memo[key]))
                return
            encoded = obj.encode("utf-8", "surrogatepass")
            pieces.append(_str_or_bytes(b"\x8c", b"X", b"\x8d", encoded))
            if key is not None:
                self.memo[key] = self.next_index
            self._memoize()
        elif isinstance(obj, bytes):
            pieces.append(_str_or_bytes(b"C", b"B", b"\x8e", obj))
            self._memoize()
        elif type(obj) is tuple:
            n = len(obj)
            if n == 0:
                pieces.append(_TUPLE_N[0])
                return
            if n > 3:
                pieces.append(_MARK)
            for item in obj:
                self.save(item)
            pieces.append(_TUPLE_N[n] if n <= 3 else _TUPLE)
            self._memoize()
        else:  # pragma: no cover - extra keys are built by prefixkey itself
            raise TypeError(f"cannot encode {type(obj).__name__} in a block key")


def _frame(pieces: Sequence[Piece]) -> bytes:
    """Apply protocol-5 framing to a piece list (everything after PROTO)."""
    out: list[bytes] = [_PROTO5]
    frame: list[bytes] = []
    frame_len = 0

    def commit() -> None:
        nonlocal frame, frame_len
        if frame_len >= _FRAME_SIZE_MIN:
            out.append(_FRAME + _pack_u64(frame_len))
        out.extend(frame)
        frame, frame_len = [], 0

    for piece in pieces:
        if type(piece) is bytes:
            frame.append(piece)
            frame_len += len(piece)
        elif piece is _SAVE:
            if frame_len >= _FRAME_SIZE_TARGET:
                commit()
        else:
            assert isinstance(piece, _Large)
            commit()
            out.append(piece.header)
            out.append(piece.payload)
    commit()
    return b"".join(out)


def dumps(obj: Any) -> bytes:
    """``pickle.dumps(obj, 5)`` for None, int, str, bytes and tuples of them."""
    pickler = _Pickler(0)
    pickler.save(obj)
    pickler.pieces.append(_STOP)
    return _frame(pickler.pieces)


class ExtraKeysTail:
    """The pickle of a block's extra keys plus the closing opcodes, ready to append.

    ``flat`` is set when the tail holds no large payload, which lets a block
    go through the single-frame fast path.
    """

    __slots__ = ("flat", "pieces")

    def __init__(self, pieces: list[Piece]) -> None:
        self.pieces = pieces
        if any(type(p) is _Large for p in pieces):
            self.flat: bytes | None = None
        else:
            self.flat = b"".join(p for p in pieces if type(p) is bytes)


def encode_extra_keys_tail(extra_keys: tuple[Any, ...] | None) -> ExtraKeysTail:
    """Encode ``extra_keys`` as the third element of the block tuple.

    Memo index 0 is the parent hash and 1 the token tuple (ints are never
    memoized), so the extra keys' encoding does not depend on the tokens.
    """
    pickler = _Pickler(2)
    pickler.save(extra_keys)
    pickler.pieces.append(_TUPLE3_MEMO_STOP)
    return ExtraKeysTail(pickler.pieces)


def _tuple_open_close(n: int) -> tuple[bytes, bytes]:
    if n > 3:
        return _MARK, _TUPLE + _MEMOIZE
    return b"", _TUPLE_N[n] + _MEMOIZE


def encode_block(parent: bytes, tokens: Sequence[bytes], tail: ExtraKeysTail) -> bytes:
    """The pickle of ``(parent, tuple(tokens), extra_keys)``.

    ``tokens`` are the per-token opcodes from :func:`encode_tokens`.
    """
    n = len(tokens)
    opening, closing = _tuple_open_close(n)
    parent_op = _str_or_bytes(b"C", b"B", b"\x8e", parent)
    token_bytes = b"".join(tokens)
    if tail.flat is not None and type(parent_op) is bytes:
        size = len(parent_op) + 1 + len(opening) + len(token_bytes) + 2 + len(tail.flat)
        if size < _FRAME_SIZE_TARGET:
            return b"".join((
                _PROTO5, _FRAME, _pack_u64(size), parent_op, _MEMOIZE,
                opening, token_bytes, closing, tail.flat,
            ))
    # Slow path: a frame boundary falls inside this block.
    pieces: list[Piece] = [_SAVE, _SAVE, parent_op, _MEMOIZE, _SAVE, opening]
    for token in tokens:
        pieces.append(_SAVE)
        pieces.append(token)
    pieces.append(closing)
    pieces.extend(tail.pieces)
    return _frame(pieces)
