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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeAlias

from .request import MMItem, Request

__all__ = [
    "CACHE_SALT_TAG",
    "LORA_TAG",
    "MM_TAG",
    "PROMPT_EMBEDS_TAG",
    "BlockExtraKeys",
    "ExtraKeysBuilder",
    "event_extra_keys",
]

# One object per tag, as vLLM's literals are: pickle back-references repeats.
LORA_TAG: Final = "lora"
MM_TAG: Final = "mm"
CACHE_SALT_TAG: Final = "cache_salt"
PROMPT_EMBEDS_TAG: Final = "prompt_embeds"

ExtraKey: TypeAlias = tuple[str | int | bytes | None, ...]
BlockExtraKeys: TypeAlias = "tuple[ExtraKey, ...] | None"


class ExtraKeysBuilder:
    """Builds one request's per-block extra keys; holds what does not change per block."""

    __slots__ = ("_lora", "_mm_cursor", "_mm_items", "_plain", "_prompt_embeds", "_salt")

    def __init__(self, request: Request) -> None:
        lora = request.lora
        self._lora: tuple[ExtraKey, ...] = ()
        if lora is not None:
            self._lora = ((LORA_TAG, lora.name, lora.path),)
        self._mm_items: Sequence[MMItem] = request.mm_items
        self._mm_cursor = 0
        self._salt: tuple[ExtraKey, ...] = (
            ((CACHE_SALT_TAG, request.cache_salt),) if request.cache_salt else ()
        )
        self._prompt_embeds = request.prompt_embeds
        #: The keys of a block with no salt, item or embeddings in it.
        self._plain: BlockExtraKeys = self._lora or None

    def plain_from(self, start: int) -> bool:
        """True when every block from ``start`` on has the same keys, :attr:`plain`."""
        return (
            start > 0
            and self._prompt_embeds is None
            and (not self._mm_items or self._mm_items[-1].end <= start)
        )

    @property
    def plain(self) -> BlockExtraKeys:
        return self._plain

    def block(self, start: int, end: int) -> BlockExtraKeys:
        """The extra keys of block ``[start, end)``; blocks are asked for in order."""
        keys: list[ExtraKey] = list(self._lora)
        items = self._mm_items
        if items:
            # Items that ended before this block are never needed again: vLLM
            # 0.31 resumes at the first item whose end is past ``start`` too.
            i = self._mm_cursor
            while i < len(items) and items[i].end <= start:
                i += 1
            self._mm_cursor = i
            while i < len(items) and items[i].offset < end:
                keys.append((MM_TAG, items[i].identifier, items[i].offset - start))
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
