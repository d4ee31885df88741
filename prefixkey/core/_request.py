"""What vLLM's block hasher reads from a request, as typed, validated values.

The hashing core accepts what vLLM's engine-core hashing path accepts.
Structurally invalid input (wrong types, negative token ids, multimodal items
outside the prompt, unsorted or overlapping) is always an
:class:`~prefixkey.errors.InvalidRequestError`. Rules that vLLM enforces only
in its API server (salt characters and length, a non-empty LoRA path) are in
:func:`check_api_rules`, which callers opt into.
"""

from __future__ import annotations

import marshal
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from operator import countOf
from typing import Final

from ..errors import InvalidRequestError
from ._prompt_embeds import PromptEmbeds

__all__ = ["LoRA", "MMItem", "Request", "check_api_rules", "check_token_ids", "token_words"]


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


def _check_int(value: object, field: str, *, minimum: int | None = None) -> None:
    if type(value) is not int:
        raise InvalidRequestError(field, f"must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise InvalidRequestError(field, f"must be >= {minimum}, got {value}")


def token_words(
    token_ids: Sequence[int], *, field: str = "token_ids", start: int = 0
) -> bytes | None:
    """Check token ids as :func:`check_token_ids` does; on the fast path, return their words.

    The fast path runs at C speed (a sequence other than a list or tuple is
    listed first). ``marshal`` format version 2 (no back-references) writes an
    exact int in [-2**31, 2**31) as five bytes, ``i`` and its little-endian
    int32, and anything else (a bool, an int subclass, a float, a larger
    int) in another form or not at all. So the ids are exact ints in
    [0, 2**31) iff every fifth byte after the 5-byte header is ``i`` and no
    sign bit is set; the serializers reuse those words. Returns None after
    the element-wise check (invalid ids to report, valid ids of 2**31 and beyond).
    """
    ids = token_ids if type(token_ids) is list or type(token_ids) is tuple else list(token_ids)
    try:
        words = marshal.dumps(ids, 2)
    except ValueError:  # an element marshal cannot write: reported below
        words = b""
    n = len(ids)
    if len(words) == 5 + 5 * n and words[5::5] == b"i" * n and words[9::5].isascii():
        return words
    # Still at C speed when all are exact ints in [0, 2**64) (ids of 2**31 and beyond).
    if countOf(map(type, ids), int) == n:
        try:
            array("Q", ids)
            return None
        except OverflowError:
            pass  # a negative id, or a (valid) id of 2**64 or more
    for i, t in enumerate(ids):
        if type(t) is not int:
            raise InvalidRequestError(
                field, f"must be an int, got {type(t).__name__} {t!r}", position=start + i
            )
        if t < 0:
            raise InvalidRequestError(field, f"must be non-negative, got {t}", position=start + i)
    return None


def check_token_ids(token_ids: Sequence[int], *, field: str = "token_ids", start: int = 0) -> None:
    """Raise unless every token id is a non-negative int (bools and floats are not).

    ``start`` is added to reported positions, for appended tokens.
    """
    token_words(token_ids, field=field, start=start)


@dataclass(frozen=True, slots=True)
class LoRA:
    """The LoRA adapter a request runs with, as the serving engine names it.

    vLLM 0.31+ keys blocks by ``name`` and ``path`` verbatim (no path
    normalisation); ``int_id`` is the server-assigned id that KV events carry.
    vLLM's API asserts a non-empty path, but its hashing function takes any
    value, None included (:func:`check_api_rules` applies the assertion).
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


@dataclass(frozen=True, slots=True)
class Request:
    """A request's hashing inputs.

    ``token_ids`` are all tokens the engine holds (``all_token_ids``): the
    prompt after templating and placeholder expansion, then any generated
    tokens. The sequence is not copied. Multimodal items must be sorted and
    must not overlap; :meth:`check_inside` checks they lie within the tokens.
    """

    token_ids: Sequence[int]
    lora: LoRA | None = None
    cache_salt: str | None = None
    mm_items: Sequence[MMItem] = ()
    prompt_embeds: PromptEmbeds | None = None

    def __post_init__(self) -> None:
        ids = self.token_ids
        if type(ids) is not list and type(ids) is not tuple and (
            isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence)
        ):
            raise InvalidRequestError("token_ids", "must be a sequence of ints")
        if self.lora is not None and not isinstance(self.lora, LoRA):
            raise InvalidRequestError("lora", f"must be a LoRA, got {type(self.lora).__name__}")
        if self.cache_salt is not None:
            _check_str(self.cache_salt, "cache_salt")
        if self.prompt_embeds is not None and not isinstance(self.prompt_embeds, PromptEmbeds):
            raise InvalidRequestError(
                "prompt_embeds",
                f"must be PromptEmbeds, got {type(self.prompt_embeds).__name__}"
                " (use PromptEmbeds.from_tensor)",
            )
        if type(self.mm_items) is not tuple or self.mm_items:
            check_mm_items(self.mm_items)

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
    if isinstance(mm_items, (str, bytes)) or not isinstance(mm_items, Sequence):
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


_SALT_MAX_LENGTH: Final = 128
_SALT_FORBIDDEN: Final = frozenset("@/\\\x00")


def check_api_rules(request: Request) -> None:
    """Apply the checks vLLM's API server (0.31) makes before a request reaches the engine.

    The engine core itself hashes whatever it is given, so these are opt-in:
    a non-empty cache salt of at most 128 characters without ``@ / \\`` or
    NUL, a non-empty LoRA path, and a LoRA int id of at least 1.
    """
    salt = request.cache_salt
    if salt is not None:
        if not salt:
            raise InvalidRequestError("cache_salt", "must be a non-empty string if given")
        if len(salt) > _SALT_MAX_LENGTH:
            raise InvalidRequestError(
                "cache_salt", f"must be at most {_SALT_MAX_LENGTH} characters, has {len(salt)}"
            )
        bad = next((i for i, c in enumerate(salt) if c in _SALT_FORBIDDEN), None)
        if bad is not None:
            raise InvalidRequestError(
                "cache_salt", f"must not contain '@', '/', '\\' or NUL (found {salt[bad]!r})",
                position=bad,
            )
    if request.lora is not None and not request.lora.path:
        raise InvalidRequestError("lora.path", "cannot be empty (vLLM asserts lora_path)")
    if request.lora is not None and request.lora.int_id is not None and request.lora.int_id < 1:
        raise InvalidRequestError("lora.int_id", "must be >= 1 (vLLM 0.11+ LoRARequest)")
