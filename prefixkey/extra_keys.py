"""The extra keys of a block: the third element of the hashed tuple (vLLM 0.31+).

For a block covering tokens ``[start, end)`` vLLM lists, in this order:

1. ``("lora", name, path)`` when the request has a LoRA adapter;
2. ``("mm", identifier, offset - start)`` for each multimodal item that
   overlaps the block, in position order (the offset is negative for items
   that began in an earlier block);
3. ``("cache_salt", salt)`` in the block that starts at token 0, when the
   salt is truthy (``""`` acts as no salt);
4. ``("prompt_embeds", sha256(rows[start:end]))`` when the request has
   prompt embeddings.

An empty list becomes ``None``, never ``()``. KV events publish an untagged
form of the same keys (:func:`event_extra_keys`).

The keys are built with the object identity the engine core has, because the
pickle algorithms depend on it (pickle back-references a repeated object): the
tags are shared literals, and every data string is decoded afresh from UTF-8,
as msgpack delivers it to the engine (CPython still returns its shared objects
for ``""`` and one-character Latin-1 strings, exactly as it does there).
"""

from __future__ import annotations

from typing import Final, TypeAlias

from .request import Request

__all__ = [
    "CACHE_SALT_TAG",
    "LORA_TAG",
    "MM_TAG",
    "PROMPT_EMBEDS_TAG",
    "BlockExtraKeys",
    "ExtraKeysBuilder",
    "engine_string",
    "event_extra_keys",
]

# One object per tag, as vLLM's literals are: pickle back-references repeats.
LORA_TAG: Final = "lora"
MM_TAG: Final = "mm"
CACHE_SALT_TAG: Final = "cache_salt"
PROMPT_EMBEDS_TAG: Final = "prompt_embeds"

ExtraKey: TypeAlias = tuple[str | int | bytes | None, ...]
BlockExtraKeys: TypeAlias = "tuple[ExtraKey, ...] | None"


def engine_string(value: str | None) -> str | None:
    """``value`` as its own object, the way msgpack decoding hands it to the engine."""
    return None if value is None else value.encode("utf-8").decode("utf-8")


class ExtraKeysBuilder:
    """Builds one request's per-block extra keys; holds what does not change per block."""

    __slots__ = ("_lora", "_mm_cursor", "_mm_items", "_prompt_embeds", "_salt", "plain",
                 "plain_start")

    def __init__(self, request: Request, block_size: int) -> None:
        lora = request.lora
        self._lora: tuple[ExtraKey, ...] = ()
        if lora is not None:
            self._lora = ((LORA_TAG, engine_string(lora.name), engine_string(lora.path)),)
        self._mm_items = [
            (item.offset, item.end, engine_string(item.identifier)) for item in request.mm_items
        ]
        self._mm_cursor = 0
        self._salt: tuple[ExtraKey, ...] = ()
        if request.cache_salt:
            self._salt = ((CACHE_SALT_TAG, engine_string(request.cache_salt)),)
        self._prompt_embeds = request.prompt_embeds
        #: The keys of a block with no salt, item or embeddings in it.
        self.plain: BlockExtraKeys = self._lora or None
        #: Every block from here on has the keys :attr:`plain` (None: no block has).
        self.plain_start: int | None = None
        if self._prompt_embeds is None:
            mm_end = self._mm_items[-1][1] if self._mm_items else 0
            first = block_size if self._salt else 0
            self.plain_start = max(first, -(-mm_end // block_size) * block_size)

    def block(self, start: int, end: int) -> BlockExtraKeys:
        """The extra keys of block ``[start, end)``; blocks are asked for in order."""
        items, i = self._mm_items, self._mm_cursor
        # Items that ended before this block are never needed again: vLLM 0.31
        # resumes at the first item whose end is past ``start`` too.
        while i < len(items) and items[i][1] <= start:
            i += 1
        self._mm_cursor = i
        if start and self._prompt_embeds is None and (i == len(items) or items[i][0] >= end):
            return self.plain
        keys: list[ExtraKey] = list(self._lora)
        while i < len(items) and items[i][0] < end:
            offset, _, identifier = items[i]
            keys.append((MM_TAG, identifier, offset - start))
            i += 1
        if start == 0:
            keys.extend(self._salt)
        if self._prompt_embeds is not None:
            keys.append((PROMPT_EMBEDS_TAG, self._prompt_embeds.block_digest(start, end)))
        return tuple(keys) if keys else None


def event_extra_keys(keys: BlockExtraKeys) -> tuple[object, ...] | None:
    """The untagged form vLLM 0.31+ publishes in KV events for one block.

    The tag is dropped from every key: LoRA becomes its name alone (the path
    is not published), mm becomes ``(identifier, offset)``, the salt and the
    embeddings digest stand alone.
    """
    if keys is None:
        return None
    return tuple(key[1:] if key[0] == MM_TAG else key[1] for key in keys)
