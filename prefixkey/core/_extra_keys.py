"""The extra keys of a block: the third element of the hashed tuple.

For a block covering tokens ``[start, end)`` vLLM lists, in this order:

1. the LoRA adapter: its server int id (0.10.2-0.11.0), its name (0.11.1+),
   or ``("lora", name, path)`` (0.31+);
2. each multimodal item the block names, in position order: its identifier
   (before 0.19), ``(identifier, offset - start)`` (0.19+), or
   ``("mm", identifier, offset - start)`` (0.31+); offsets are negative for
   items that began in an earlier block;
3. ``cache_salt`` (``("cache_salt", salt)`` from 0.31) in the block that starts
   at token 0, when the salt is truthy (``""`` acts as no salt);
4. the prompt embeddings of the block: their raw bytes (0.11.1-0.16), their
   SHA-256 (0.17+), or ``("prompt_embeds", sha256)`` (0.31+).

An empty list becomes ``None``, never ``()``. KV events publish the keys as
hashed (0.17-0.30) or untagged (0.31+): :func:`event_extra_keys`. Which items a
block names depends on the era's window rules; :class:`ExtraKeysBuilder`
walks the items exactly as vLLM's ``_gen_mm_extra_hash_keys`` does, including
where each hashing pass resumes.

The keys are built with the object identity the engine core has, because the
pickle algorithms depend on it (pickle back-references a repeated object): the
tags are shared literals, and every data string is decoded afresh from UTF-8,
as msgpack delivers it to the engine (CPython still returns its shared objects
for ``""`` and one-character Latin-1 strings, exactly as it does there).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Final, TypeAlias

from ..errors import InvalidRequestError
from ._request import Request
from ._schemes import Era

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
#: The tag of a LoRA extra key (0.31+): ``("lora", name, path)``.
LORA_TAG: Final = "lora"
#: The tag of a multimodal extra key (0.31+): ``("mm", identifier, offset)``.
MM_TAG: Final = "mm"
#: The tag of the cache salt extra key (0.31+): ``("cache_salt", salt)``.
CACHE_SALT_TAG: Final = "cache_salt"
#: The tag of a prompt embeddings extra key (0.31+): ``("prompt_embeds", digest)``.
PROMPT_EMBEDS_TAG: Final = "prompt_embeds"

ExtraKey: TypeAlias = "str | int | bytes | tuple[str | int | bytes | None, ...] | None"
#: One block's extra keys; with lookahead, ``(extra keys, *lookahead token ids)``.
BlockExtraKeys: TypeAlias = "tuple[Any, ...] | None"


def engine_string(value: str | None) -> str | None:
    """``value`` as its own object, the way msgpack decoding hands it to the engine."""
    return None if value is None else value.encode("utf-8").decode("utf-8")


class ExtraKeysBuilder:
    """Builds one request's per-block extra keys under an era's rules.

    Blocks are asked for in order, in passes: :meth:`begin_pass` where vLLM
    runs its hasher (request creation, then each time appended tokens
    complete a block), then :meth:`block` for each block of the pass.
    """

    __slots__ = (
        "_embeds", "_embeds_key", "_empty_tuple", "_inclusive", "_lora", "_mm_index",
        "_mm_items", "_mm_key", "_salt", "_tagged", "_window", "ignored", "plain", "plain_start",
    )

    def __init__(self, request: Request, era: Era, block_size: int) -> None:
        self._tagged = era.tagged
        self._mm_key = era.mm_key
        self._inclusive = era.mm_window == "inclusive_last_item"
        self._window = era.mm_window == "overlap_window"
        self._empty_tuple = era.empty_extra_keys == "empty_tuple"
        #: Request features the era does not key.
        self.ignored: list[str] = []
        self._lora: tuple[ExtraKey, ...] = ()
        lora = request.lora
        if lora is not None:
            if era.lora_key == "unkeyed":
                self.ignored.append("lora")
            elif era.lora_key == "int_id":
                if lora.int_id is None:
                    raise InvalidRequestError(
                        "lora.int_id", f"is required: vLLM {era.span} keys "
                        "LoRA by the server's int id",
                    )
                self._lora = (lora.int_id,)
            elif era.lora_key == "name":
                self._lora = (engine_string(lora.name),)
            else:
                self._lora = ((LORA_TAG, engine_string(lora.name), engine_string(lora.path)),)
        self._mm_items = [
            (item.offset, item.end, engine_string(item.identifier)) for item in request.mm_items
        ]
        self._mm_index = 0
        self._salt: tuple[ExtraKey, ...] = ()
        if request.cache_salt and not era.cache_salt:
            self.ignored.append("cache_salt")
        elif request.cache_salt:
            salt = engine_string(request.cache_salt)
            self._salt = ((CACHE_SALT_TAG, salt),) if era.tagged else (salt,)
        self._embeds = request.prompt_embeds
        self._embeds_key = era.prompt_embeds_key
        if self._embeds is not None and self._embeds_key == "ignored":
            self.ignored.append("prompt_embeds")
            self._embeds = None
        #: The keys of a block with no salt, item or embeddings in it.
        self.plain: BlockExtraKeys = self._lora or None
        #: Every block from here on has the keys :attr:`plain` (None: no block has).
        self.plain_start: int | None = None
        if self._embeds is None:
            # Past the last item's end (inclusive: strictly past it) no pass names it.
            mm_end = self._mm_items[-1][1] + self._inclusive if self._mm_items else 0
            first = block_size if self._salt else 0
            self.plain_start = max(first, -(-mm_end // block_size) * block_size)

    def begin_pass(self, start: int, *, resume: bool) -> None:
        """A hashing pass starts at block ``start``: set the item index as vLLM does.

        ``resume``: vLLM treats the pass as resuming mid-request (any pass but
        the first, or from 0.10.1 one that starts past block 0).
        """
        items = self._mm_items
        if not resume or not items:
            self._mm_index = 0
        elif not self._window:
            self._mm_index = -1  # "only the last item can still be in later blocks"
        elif items[-1][1] > start:
            self._mm_index = bisect_left(items, start + 1, key=lambda item: item[1])
        else:
            self._mm_index = 0

    def _mm(self, start: int, end: int) -> list[ExtraKey] | None:
        """vLLM's ``_gen_mm_extra_hash_keys`` walk: the keys of the items it names
        for a block starting at ``start``, in the era's form.

        None where vLLM returns before walking (no items, or all behind the block).
        """
        items = self._mm_items
        if not items:
            return None
        last_end = items[-1][1]
        if last_end < start or (last_end == start and not self._inclusive):
            return None
        i = self._mm_index
        if i < 0:
            i += len(items)
        named: list[ExtraKey] = []
        form = self._mm_key
        while i < len(items):
            offset, item_end, identifier = items[i]
            if end <= offset:
                break
            if start > item_end or (start == item_end and not self._inclusive):
                i += 1  # the block is past this item
                continue
            if form == "identifier":
                named.append(identifier)
            elif self._tagged:
                named.append((MM_TAG, identifier, offset - start))
            else:
                named.append((identifier, offset - start))
            if end >= item_end:
                i += 1
            else:
                break
        self._mm_index = i
        return named

    def block(
        self, start: int, end: int, *, new_pass: bool = False, lookahead: int = 0
    ) -> BlockExtraKeys:
        """The extra keys of block ``[start, end)``: the next block of the pass,
        or with ``new_pass`` the only one of a resumed pass of its own.

        With ``lookahead`` (0.33) the keys cover ``[start, end + lookahead)``,
        and the walk then steps back to items that reach past ``end``, as
        vLLM's ``generate_lookahead_block_hash_extra_keys`` does.
        """
        if new_pass:
            self.begin_pass(start, resume=True)
        named = self._mm(start, end + lookahead)
        if lookahead:
            items = self._mm_items
            while self._mm_index > 0 and items[self._mm_index - 1][1] > end:
                self._mm_index -= 1
            end += lookahead
        # 0.7.1-0.7.2 keep an empty tuple where the walk ran but named nothing.
        empty: BlockExtraKeys = () if self._empty_tuple and named is not None else None
        if start and not named and self._embeds is None:
            return empty if empty is not None else self.plain
        keys: tuple[ExtraKey, ...] = (*self._lora, *named) if named else self._lora
        if start == 0:
            keys += self._salt
        if self._embeds is not None:
            if self._embeds_key == "raw_bytes":
                keys += (self._embeds.block_bytes(start, end),)
            elif self._tagged:
                keys += ((PROMPT_EMBEDS_TAG, self._embeds.block_digest(start, end)),)
            else:
                keys += (self._embeds.block_digest(start, end),)
        return keys if keys else empty


def event_extra_keys(
    keys: BlockExtraKeys, era: Era, *, lookahead: int = 0
) -> tuple[object, ...] | None:
    """What a KV event of ``era`` publishes for a block whose hashed extra keys are ``keys``.

    Before 0.17.0 nothing (BlockStored has no ``extra_keys``): None. From
    0.17.0 the hashed tuple itself; from 0.31.0 its untagged form, the tag
    dropped from every key: LoRA becomes its name alone (the path is not
    published), mm becomes ``(identifier, offset)``, the salt and the
    embeddings digest stand alone. With 0.33's ``lookahead`` the hashed keys
    are ``(keys, *lookahead tokens)`` and the event publishes ``keys`` (the
    tokens travel in ``lookahead_token_ids``).

    vLLM recomputes the keys when it publishes, walking the multimodal items
    from the first item at the event's first block. Up to 0.30 that walk can
    name items the hash did not: a block hashed in a resumed pass (appended
    tokens) that overlaps several items names only the last in its key, and
    before 0.19 an event's first block that starts where an item ends names
    that item. Those blocks' published keys differ from what this returns.
    """
    if lookahead and not era.lookahead:
        raise InvalidRequestError(
            "lookahead", f"vLLM {era.span} has no lookahead hashing")
    form = era.published_extra_keys
    if form == "none":
        return None
    if lookahead and keys is not None:
        keys = keys[0]
    if keys is None or form == "hashed":
        return keys
    return tuple(key[1:] if key[0] == MM_TAG else key[1] for key in keys)
