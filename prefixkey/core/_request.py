"""What vLLM's block hasher reads from a request, as typed, validated values.

The hashing core accepts what vLLM's engine-core hashing path accepts.
Structurally invalid input (wrong types, multimodal items outside the prompt,
unsorted or overlapping) is always an
:class:`~prefixkey.errors.InvalidRequestError`. Rules that vLLM enforces only
in its API server, per release (salt length and characters, negative token
ids, a non-empty LoRA path), are in :func:`~prefixkey.core.check_api_rules`
(``_api_rules.py``), which callers opt into.
"""

from __future__ import annotations

import marshal
import operator
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import countOf
from typing import Any, Final, Protocol, TypeAlias, final, overload

from ..errors import InvalidRequestError
from ._checks import check_int, shown
from ._frozen import Frozen
from ._prompt_embeds import PromptEmbeds

__all__ = [
    "IntArray",
    "LoRA",
    "MMItem",
    "Request",
    "TokenIds",
    "TokenIdsLike",
    "check_token_ids",
    "checked_token_ids",
    "is_numpy_scalar",
]


def _check_str(value: object, field: str) -> None:
    if not isinstance(value, str):
        raise InvalidRequestError(field, f"must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # msgpack cannot carry a lone surrogate to the engine core.
        raise InvalidRequestError(
            field, f"is not valid Unicode (lone surrogate at character {exc.start})"
        ) from None


# Offsets, lengths and ids are int64 in vLLM; a larger one (4300 digits from JSON) would
# only make the sums that error messages print overflow CPython's str() limit.
_INT64_MAX: Final = 2**63 - 1


def _check_int(value: object, field: str, *, minimum: int) -> None:
    if check_int(field, value, least=minimum) > _INT64_MAX:
        raise InvalidRequestError(field, f"must be < 2**63, got {shown(value)}")


class IntArray(Protocol):
    """A NumPy integer array or scalar, as prefixkey sees one without importing NumPy:
    its dtype from ``__array_interface__``, its values through the buffer protocol."""

    @property
    def __array_interface__(self) -> dict[str, Any]: ...


#: What token ids may be given as: exact ints, NumPy integer scalars, or a NumPy array.
TokenIdsLike: TypeAlias = "Sequence[int | IntArray] | IntArray"

_KIND_NAMES: Final = {"b": "bools", "f": "floats", "c": "complex numbers", "O": "objects"}
# array typecodes by NumPy kind and item size ('q'/'Q' are 8 bytes everywhere, 'i'/'I' 4).
_ARRAY_CODES: Final = {
    "i": {1: "b", 2: "h", 4: "i", 8: "q"},
    "u": {1: "B", 2: "H", 4: "I", 8: "Q"},
}
_NATIVE_ORDER: Final = "<" if sys.byteorder == "little" else ">"


def _array_ids(values: IntArray, field: str) -> list[int]:
    """A 1-d NumPy integer array's values as exact ints (endianness and strides applied)."""
    typestr = values.__array_interface__.get("typestr")  # e.g. "<i8", "|u1", ">u4", "|b1"
    if not isinstance(typestr, str) or len(typestr) < 2:
        raise InvalidRequestError(field, f"must be a NumPy integer array, got {typestr=}")
    kind, codes = typestr[1], _ARRAY_CODES.get(typestr[1])
    code = codes.get(int(typestr[2:])) if codes and typestr[2:].isdigit() else None
    if code is None:
        raise InvalidRequestError(
            field, f"must be integers, got an array of "
            f"{_KIND_NAMES.get(kind, 'non-integers')} (dtype {typestr})",
        )
    try:
        view = memoryview(values)  # type: ignore[arg-type]  # NumPy arrays export buffers
    except TypeError:
        raise InvalidRequestError(
            field, f"{type(values).__name__} has an array interface but no buffer to read"
        ) from None
    if view.ndim != 1:
        raise InvalidRequestError(
            field, f"must be one-dimensional, got an array of shape {tuple(view.shape or ())}"
        )
    ids = array(code, view.tobytes())  # tobytes: C order, so strided views read right
    if typestr[0] not in (_NATIVE_ORDER, "|", "="):
        ids.byteswap()
    return ids.tolist()


def is_numpy_scalar(value: object) -> bool:
    """Whether ``value`` is a NumPy scalar (or 0-d array) of any dtype."""
    return (hasattr(type(value), "__array_interface__")
            and value.__array_interface__.get("shape") == ())  # type: ignore[attr-defined]


def _numpy_int(value: object) -> int | None:
    """A NumPy integer scalar's exact value (None for anything else, NumPy bools included)."""
    if not is_numpy_scalar(value):
        return None
    kind = value.__array_interface__["typestr"][1]  # type: ignore[attr-defined]
    return operator.index(value) if kind in ("i", "u") else None  # type: ignore[arg-type]


_MARSHAL_HEADER: Final = marshal.dumps([], 2)[:1]  # a list's type byte; its length follows
_CONSTRUCT: Final = object()  # TokenIds' private constructor key


@final
class TokenIds(Frozen, Sequence[int]):
    """Token ids prefixkey has checked: exact ints, immutable.

    Only prefixkey builds them (:func:`check_token_ids`, the JSON Lines reader),
    so a :class:`~prefixkey.core.Hasher` hashes them without checking each id
    again. Slices are TokenIds too. A router can check a prompt once and pass
    it to several hashers, or keep it to append to later requests.
    """

    __slots__ = ("_ids", "_words")
    _ids: tuple[int, ...]
    _words: bytes | None

    def __init__(self, ids: tuple[int, ...], words: bytes | None, key: object = None) -> None:
        if key is not _CONSTRUCT:
            raise InvalidRequestError(
                "token_ids", "TokenIds are built by check_token_ids(ids), which checks them"
            )
        # With their marshal records (see checked_token_ids), for the CBOR encoder.
        self._bind(_ids=ids, _words=words)

    def __reduce__(self) -> tuple[Any, ...]:
        return check_token_ids, (self._ids,)  # unpickling checks them again

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> TokenIds: ...
    def __getitem__(self, index: int | slice) -> int | TokenIds:
        if not isinstance(index, slice):
            return self._ids[index]
        start, stop, step = index.indices(len(self._ids))
        words = self._words
        if words is not None:
            if step == 1:
                n = max(0, stop - start)
                words = (_MARSHAL_HEADER + n.to_bytes(4, "little")
                         + words[5 + 5 * start : 5 + 5 * (start + n)])
            else:
                words = marshal.dumps(list(self._ids[index]), 2)
        return TokenIds(self._ids[index], words, _CONSTRUCT)

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __contains__(self, value: object) -> bool:
        return value in self._ids

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TokenIds) and self._ids == other._ids

    def __hash__(self) -> int:
        return hash(self._ids)

    def __repr__(self) -> str:
        return f"TokenIds({list(self._ids)!r})"


def checked_token_ids(
    token_ids: TokenIdsLike, *, field: str = "token_ids", start: int = 0
) -> tuple[Sequence[int], bytes | None]:
    """Raise unless every token id is an exact int; return the ids and their words.

    A negative id is an int like any other here: vLLM's engine core hashes it
    (its API server refuses it from 0.28 on, :func:`~prefixkey.core.check_api_rules`).

    :class:`TokenIds` pass unchecked; a NumPy integer array is read as exact
    ints, and NumPy integer scalars in a sequence count as their values (the
    ids returned are then a new list). The fast path runs at C speed (a
    sequence other than a list or tuple is listed first). ``marshal`` format
    version 2 (no back-references) writes an exact int in [-2**31, 2**31) as
    five bytes, ``i`` and its little-endian int32, and anything else (a bool,
    an int subclass, a float, a larger int) in another form or not at all. So
    the ids are exact ints in [0, 2**31) iff every fifth byte after the 5-byte
    header is ``i`` and no sign bit is set; the serializers reuse those words.
    The words are None for any other ids (negative ones, or of 2**31 and
    beyond). ``start`` is added to reported positions, for appended tokens.
    """
    ids: list[int] | tuple[int, ...]
    if type(token_ids) is TokenIds:  # exact: a subclass could set its ids unchecked
        return token_ids._ids, token_ids._words
    if type(token_ids) is list or type(token_ids) is tuple:
        ids = token_ids
    elif hasattr(type(token_ids), "__array_interface__"):
        ids = _array_ids(token_ids, field)  # type: ignore[arg-type]
    else:
        ids = list(token_ids)  # type: ignore[arg-type]
    try:
        words = marshal.dumps(ids, 2)
    except ValueError:  # an element marshal cannot write: reported below
        words = b""
    n = len(ids)
    if len(words) == 5 + 5 * n and words[5::5] == b"i" * n and words[9::5].isascii():
        return ids, words
    # Still at C speed when all are exact ints (negative ones, or of 2**31 and beyond).
    if countOf(map(type, ids), int) == n:
        return ids, None
    exact: list[int] | None = None  # the ids with NumPy scalars replaced, once one is seen
    for i, t in enumerate(ids):
        if type(t) is not int:
            value = _numpy_int(t)
            if value is None:
                raise InvalidRequestError(
                    field, f"must be an int, got {type(t).__name__} {t!r}", position=start + i
                )
            if exact is None:
                exact = list(ids)
            exact[i] = t = value
    if exact is not None:
        return checked_token_ids(exact, field=field, start=start)
    return ids, None


def check_token_ids(
    token_ids: TokenIdsLike, *, field: str = "token_ids", start: int = 0
) -> TokenIds:
    """The ids as :class:`TokenIds`; raise unless every one is an exact int.

    Accepts sequences of exact ints (bools, floats and int subclasses are
    errors), NumPy integer arrays of one dimension and NumPy integer scalars.
    ``start`` is added to reported positions.
    """
    if type(token_ids) is TokenIds:
        return token_ids
    ids, words = checked_token_ids(token_ids, field=field, start=start)
    return TokenIds(tuple(ids), words, _CONSTRUCT)


@dataclass(frozen=True, slots=True)
class LoRA:
    """The LoRA adapter a request runs with, as the serving engine names it.

    vLLM 0.31+ keys blocks by ``name`` and ``path`` verbatim (no path
    normalisation); ``int_id`` is the server-assigned id that KV events carry.
    vLLM's API asserts a non-empty path, but its hashing function takes any
    value, None included (:func:`~prefixkey.core.check_api_rules` applies the
    assertion).
    """

    name: str
    path: str | None
    int_id: int | None = None

    def __post_init__(self) -> None:
        _check_str(self.name, "lora.name")
        if self.path is not None:
            _check_str(self.path, "lora.path")
        if self.int_id is not None:
            _check_int(self.int_id, "lora.int_id", minimum=0)


@dataclass(frozen=True, slots=True)
class MMItem:
    """One multimodal item: its identifier and placeholder token range."""

    identifier: str
    offset: int
    length: int

    def __post_init__(self) -> None:
        _check_str(self.identifier, "mm_items.identifier")
        _check_int(self.offset, "mm_items.offset", minimum=0)
        _check_int(self.length, "mm_items.length", minimum=1)

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass(frozen=True, slots=True, init=False)
class Request:
    """A request's hashing inputs.

    ``token_ids`` are all tokens the engine holds (``all_token_ids``): the
    prompt after templating and placeholder expansion, then any generated
    tokens. A list or other sequence is not copied (the hasher checks it when
    it hashes); :class:`TokenIds` are already checked; a NumPy integer array
    is checked here and kept as TokenIds. Multimodal items must be sorted and
    must not overlap; :meth:`check_inside` checks they lie within the tokens.
    """

    token_ids: Sequence[int]
    lora: LoRA | None = None
    cache_salt: str | None = None
    mm_items: Sequence[MMItem] = ()
    prompt_embeds: PromptEmbeds | None = None

    def __init__(
        self,
        token_ids: TokenIdsLike,
        lora: LoRA | None = None,
        cache_salt: str | None = None,
        mm_items: Sequence[MMItem] = (),
        prompt_embeds: PromptEmbeds | None = None,
    ) -> None:
        ids = token_ids
        kind = type(ids)
        if kind is TokenIds or kind is list or kind is tuple:
            pass  # the common inputs first: the ABC check below costs more than the rest
        elif hasattr(kind, "__array_interface__"):
            ids = check_token_ids(ids)  # a snapshot: the array may change after
        elif isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise InvalidRequestError("token_ids", "must be a sequence of ints")
        if lora is not None and not isinstance(lora, LoRA):
            raise InvalidRequestError("lora", f"must be a LoRA, got {type(lora).__name__}")
        if cache_salt is not None:
            _check_str(cache_salt, "cache_salt")
        if prompt_embeds is not None and not isinstance(prompt_embeds, PromptEmbeds):
            raise InvalidRequestError(
                "prompt_embeds",
                f"must be PromptEmbeds, got {type(prompt_embeds).__name__}"
                " (use PromptEmbeds.from_tensor)",
            )
        if type(mm_items) is not tuple or mm_items:
            check_mm_items(mm_items)
        set_field = object.__setattr__  # frozen: the dataclass's own __init__ does the same
        set_field(self, "token_ids", ids)
        set_field(self, "lora", lora)
        set_field(self, "cache_salt", cache_salt)
        set_field(self, "mm_items", mm_items)
        set_field(self, "prompt_embeds", prompt_embeds)

    def check_inside(self, num_tokens: int) -> None:
        """Raise unless multimodal items and embedding rows lie within ``num_tokens``.

        One-shot hashing checks against the request's own tokens. Incremental
        hashing may start before a prompt is complete (streaming input), so
        it checks nothing here: items past the tokens wait for appended ones.
        """
        if self.prompt_embeds is not None and self.prompt_embeds.num_rows > num_tokens:
            raise InvalidRequestError(
                "prompt_embeds.shape",
                f"has {self.prompt_embeds.num_rows} rows for {num_tokens} tokens",
            )
        for i, item in enumerate(self.mm_items):
            if item.end > num_tokens:
                raise InvalidRequestError(
                    f"mm_items[{i}]",
                    f"placeholder [{item.offset}, {item.end}) is outside the {num_tokens} tokens",
                )


def check_mm_items(mm_items: Sequence[MMItem]) -> None:
    """Raise unless the items are sorted by offset and do not overlap."""
    value: object = mm_items  # checked at run time: callers are not all typed
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidRequestError("mm_items", "must be a sequence of MMItem")
    previous_end = 0
    for i, item in enumerate(mm_items):
        if not isinstance(item, MMItem):
            raise InvalidRequestError(
                "mm_items", f"must be an MMItem, got {type(item).__name__}", position=i
            )
        if item.offset < previous_end:
            raise InvalidRequestError(
                f"mm_items[{i}].offset",
                f"{item.offset} overlaps or precedes the previous item (ends at {previous_end});"
                " items must be sorted by offset and not overlap",
            )
        previous_end = item.end
