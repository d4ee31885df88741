"""CPython 3.12+'s builtin ``hash()`` for the values vLLM 0.7-0.10.1 hashed.

vLLM's ``builtin`` prefix-caching algorithm keyed blocks by
``hash((parent, tuple(tokens), extra_keys))``. That is reproducible outside
the engine only when the engine ran CPython 3.12 or newer (where
``hash(None)`` is a constant instead of an address) and, wherever a string is
hashed, with a known ``PYTHONHASHSEED`` (string hashes are SipHash-1-3 keyed
from it). This module computes the same 64-bit values for ints, str, bytes,
None and tuples of them; anything that depends on a random key raises
:class:`~prefixkey.errors.UnreproducibleKeysError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InvalidRequestError, UnreproducibleKeysError

__all__ = [
    "REPRODUCIBLE_PYTHON", "PythonHash", "chain", "chain_flat", "dumps", "extra_keys_tail",
    "python_hash_for",
]

#: The oldest engine CPython whose builtin hash() keys are reproducible (hash(None) is a
#: constant from 3.12 on): what tools assume when they must pick an engine CPython.
REPRODUCIBLE_PYTHON: Final = "3.12"

_MASK: Final = (1 << 64) - 1
_MODULUS: Final = (1 << 61) - 1  # sys.hash_info.modulus
_NONE_HASH: Final = 0xFCA86420  # hash(None) from CPython 3.12
_XXPRIME_1: Final = 11400714785074694791
_XXPRIME_2: Final = 14029467366897019727
_XXPRIME_5: Final = 2870177450012600261
_TUPLE_LENGTH_MIX: Final = _XXPRIME_5 ^ 3527539


def _signed(value: int) -> int:
    value &= _MASK
    return value - (1 << 64) if value >> 63 else value


def _rotl(x: int, bits: int) -> int:
    return ((x << bits) | (x >> (64 - bits))) & _MASK


def _siphash13(k0: int, k1: int, data: bytes) -> int:
    """SipHash-1-3, as CPython's ``Py_HASH_SIPHASH13`` (the default from 3.11)."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(n: int) -> None:
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & _MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & _MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & _MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & _MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    whole = len(data) - len(data) % 8
    for i in range(0, whole, 8):
        m = int.from_bytes(data[i : i + 8], "little")
        v3 ^= m
        rounds(1)
        v0 ^= m
    last = int.from_bytes(data[whole:], "little") | (len(data) & 0xFF) << 56
    v3 ^= last
    rounds(1)
    v0 ^= last
    v2 ^= 0xFF
    rounds(3)
    return v0 ^ v1 ^ v2 ^ v3


def _secret_keys(seed: int) -> tuple[int, int]:
    """SipHash keys CPython derives from PYTHONHASHSEED (``lcg_urandom``; 0 disables)."""
    if seed == 0:
        return 0, 0
    secret = bytearray(16)
    x = seed
    for i in range(16):
        x = (x * 214013 + 2531011) & 0xFFFFFFFF
        secret[i] = (x >> 16) & 0xFF
    return int.from_bytes(secret[:8], "little"), int.from_bytes(secret[8:], "little")


@dataclass(frozen=True, slots=True)
class PythonHash:
    """``hash()`` of one CPython 3.12+ process; ``keys`` None when PYTHONHASHSEED is unset."""

    keys: tuple[int, int] | None

    def _bytes(self, data: bytes, what: str) -> int:
        if not data:
            return 0
        if self.keys is None:
            raise UnreproducibleKeysError(
                f"this key hashes a {what} with builtin hash(), which CPython randomizes per "
                "process when PYTHONHASHSEED is unset. Start the engines with PYTHONHASHSEED "
                "set (an integer) and pass it as python_hash_seed."
            )
        value = _signed(_siphash13(self.keys[0], self.keys[1], data))
        return -2 if value == -1 else value

    def __call__(self, value: Any) -> int:
        kind = type(value)
        if kind is int:
            magnitude = abs(value) % _MODULUS
            result = -magnitude if value < 0 else magnitude
            return -2 if result == -1 else result
        if kind is tuple:
            acc = _XXPRIME_5
            for item in value:
                acc = (acc + (self(item) & _MASK) * _XXPRIME_2) & _MASK
                acc = (_rotl(acc, 31) * _XXPRIME_1) & _MASK
            acc = (acc + (len(value) ^ _TUPLE_LENGTH_MIX)) & _MASK
            return 1546275796 if acc == _MASK else _signed(acc)
        if value is None:
            return _NONE_HASH
        if kind is str:
            # CPython hashes a string's storage: 1, 2 or 4 bytes per character.
            top = max(map(ord, value), default=0)
            width = 1 if top < 0x100 else 2 if top < 0x10000 else 4
            data = b"".join(ord(c).to_bytes(width, "little") for c in value)
            return self._bytes(data, "string")
        if kind is bytes:
            return self._bytes(value, "bytes value")
        raise InvalidRequestError("extra_keys", f"cannot hash {kind.__name__} like vLLM's keys")


def python_hash_for(engine_python: str | None, python_hash_seed: str | None) -> PythonHash:
    """The ``hash()`` of an engine on CPython ``engine_python`` with this PYTHONHASHSEED.

    Raises :class:`UnreproducibleKeysError` below 3.12 (``hash(None)`` is an
    address there) or when the version is not given.
    """
    if engine_python is None:
        raise UnreproducibleKeysError(
            "builtin hash() keys depend on the engine's CPython version: pass engine_python "
            f"({REPRODUCIBLE_PYTHON} or newer reproduces them)"
        )
    if not isinstance(engine_python, str):
        raise InvalidRequestError("engine_python", f"must be a string like '3.12', got "
                                  f"{type(engine_python).__name__}")
    try:
        version = tuple(int(part) for part in engine_python.split(".")[:2])
    except ValueError:
        raise InvalidRequestError(
            "engine_python", f"must look like '3.12', got {engine_python!r}"
        ) from None
    if version < tuple(int(part) for part in REPRODUCIBLE_PYTHON.split(".")):
        raise UnreproducibleKeysError(
            f"builtin hash() on CPython {engine_python}: hash(None), part of every key, is "
            f"derived from an address there, so keys differ per process. CPython "
            f"{REPRODUCIBLE_PYTHON}+ engines are reproducible."
        )
    if python_hash_seed in (None, "", "random"):  # CPython ignores an empty PYTHONHASHSEED
        return PythonHash(None)
    try:
        seed = int(python_hash_seed)
    except ValueError:
        seed = -1  # reported below
    if not 0 <= seed <= 0xFFFFFFFF:
        raise InvalidRequestError(
            "python_hash_seed",
            f"CPython accepts only 'random' or an integer in [0, 4294967295], got "
            f"{python_hash_seed!r}",
        )
    return PythonHash(_secret_keys(seed))


def dumps(value: Any) -> Any:
    """builtin hash() needs no serialization: the value is hashed as it is."""
    return value


def extra_keys_tail(extra_keys: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    return extra_keys


def _chain(value: Callable[[Any, Sequence[int], Any], Any]) -> Callable[..., list[Any]]:
    def chain(
        parent: Any,
        tokens: Sequence[int],
        starts: range,
        size: int,
        tails: Iterable[Any],
        digest: Callable[[Any], Any],
    ) -> list[Any]:
        keys = []
        for start, tail in zip(starts, tails, strict=True):
            parent = digest(value(parent, tokens[start : start + size], tail))
            keys.append(parent)
        return keys

    return chain


#: Keys ``hash((parent, tuple(block), extra_keys))`` of the blocks at ``starts``.
chain = _chain(lambda parent, block, tail: (parent, tuple(block), tail))
#: vLLM 0.7.0's keys, ``hash((parent, *block))``: extra keys are not hashed.
chain_flat = _chain(lambda parent, block, tail: (parent, *block))
