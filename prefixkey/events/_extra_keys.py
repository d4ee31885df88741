"""Published (event) extra keys back to the keys vLLM hashed, where that is possible.

Up to 0.30 a BlockStored event's ``extra_keys`` are exactly the per-block
tuples vLLM hashed. From 0.31.0 vLLM hashes *tagged* keys but publishes them
untagged: ``("lora", name, path)`` becomes ``name`` (the path is not
published), ``("mm", identifier, offset)`` becomes ``(identifier, offset)``,
``("cache_salt", salt)`` becomes ``salt`` and ``("prompt_embeds", digest)``
becomes ``digest``. Rebuilding the tags needs what the event does not carry:

* the adapter's path, which the router knows per replica (``lora_path``: one
  path, or a mapping adapter name → path);
* whether a leading string is the LoRA name or the salt. The event's
  ``lora_name`` settles it; without it a block that may be the request's
  first is **ambiguous**, and both readings are returned as candidates,
  never guessed (hash both and compare with the published block hash).

With 0.33's lookahead the hashed key is ``(keys, *lookahead tokens)``; pass
the event's ``lookahead_token_ids`` to get that form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..core import (
    CACHE_SALT_TAG,
    ERAS,
    LORA_TAG,
    MM_TAG,
    PROMPT_EMBEDS_TAG,
    BlockExtraKeys,
    resolve_release,
)
from ..errors import PrefixKeyError
from ._decode import wire_era
from ._model import BlockStored

__all__ = [
    "UNKNOWN",
    "AmbiguousExtraKeysError",
    "BlockKeyCandidates",
    "ExtraKeysConversionError",
    "ExtraKeysNotPublishedError",
    "MissingLoRAPathError",
    "event_extra_keys_to_typed",
    "typed_extra_keys_of",
]


class ExtraKeysConversionError(PrefixKeyError, ValueError):
    """Published extra keys cannot be turned back into hashed ones.

    ``field`` is ``"extra_keys[<block>]"`` (or ``"extra_keys"``), ``block``
    the entry's index in the event's ``block_hashes``.
    """

    def __init__(self, message: str, *, block: int | None = None) -> None:
        self.block = block
        self.field: str | None = "extra_keys" if block is None else f"extra_keys[{block}]"
        super().__init__(f"{self.field}: {message}")


class ExtraKeysNotPublishedError(ExtraKeysConversionError):
    """The release publishes no extra keys (before 0.17.0)."""


class MissingLoRAPathError(ExtraKeysConversionError):
    """A LoRA name needs its path (0.31+ hashes it) and none was supplied for it."""


class AmbiguousExtraKeysError(ExtraKeysConversionError):
    """:meth:`BlockKeyCandidates.resolve` on a block with several readings."""


_PATH_SINCE: Final = next(e.since for e in ERAS if e.lora_key == "name_path")
_PUBLISHED_SINCE: Final = next(e.since for e in ERAS if e.published_extra_keys != "none")


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


#: ``lora_name`` not known (the event's is the authority; pass it when you have it).
UNKNOWN: Final = _Unknown()


@dataclass(frozen=True, slots=True)
class BlockKeyCandidates:
    """Every hashed form one published entry may come from (one, unless ambiguous)."""

    #: The entry's index in the event's ``block_hashes``.
    block: int
    candidates: tuple[BlockExtraKeys, ...]
    #: Why there is more than one candidate.
    notes: tuple[str, ...] = ()

    @property
    def ambiguous(self) -> bool:
        return len(self.candidates) != 1

    def resolve(self) -> BlockExtraKeys:
        """The hashed keys, or :class:`AmbiguousExtraKeysError` naming the readings."""
        if self.ambiguous:
            raise AmbiguousExtraKeysError(
                f"{len(self.candidates)} readings: {'; '.join(self.notes)}", block=self.block
            )
        return self.candidates[0]


def _tuples(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


def _path_for(name: str, lora_path: str | Mapping[str, str] | None, block: int) -> str:
    path = lora_path.get(name) if isinstance(lora_path, Mapping) else lora_path
    if path is None:
        raise MissingLoRAPathError(
            f"LoRA adapter {name!r}: vLLM {_PATH_SINCE}+ hashes its path, which events do not "
            "publish; supply lora_path (a path or a name -> path mapping)", block=block)
    return path


def _infer_lora(entries: Sequence[Any], starts_request: bool | None) -> str | _Unknown | None:
    """The LoRA name from a block that cannot be the request's first (no salt there)."""
    for b, entry in enumerate(entries):
        if b == 0 and starts_request is not False:
            continue
        if entry and isinstance(entry[0], str):
            return str(entry[0])
        return None  # a later block without a leading string: no LoRA
    return UNKNOWN


def _typed_entry(
    entry: tuple[Any, ...] | None, b: int, *, lora: str | None, may_start: bool,
    lora_path: str | Mapping[str, str] | None,
) -> BlockExtraKeys:
    """One entry under a definite reading of the LoRA (None: no adapter)."""
    if entry is None:
        return None
    keys: list[Any] = []
    for k, key in enumerate(entry):
        if isinstance(key, str):
            if k == 0 and lora is not None:
                if key != lora:
                    raise ExtraKeysConversionError(
                        f"leads with {key!r}, but the LoRA adapter is {lora!r}", block=b)
                keys.append((LORA_TAG, key, _path_for(key, lora_path, b)))
            elif may_start:
                keys.append((CACHE_SALT_TAG, key))
            else:
                raise ExtraKeysConversionError(
                    f"string key {key!r} at {k} outside the request's first block "
                    "(only a salt or the LoRA name can be a string)", block=b)
        elif isinstance(key, bytes):
            keys.append((PROMPT_EMBEDS_TAG, key))
        elif (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], str)
              and type(key[1]) is int):
            keys.append((MM_TAG, key[0], key[1]))
        else:
            raise ExtraKeysConversionError(
                f"key {k} ({key!r}) is not an untagged key vLLM publishes", block=b)
    if lora is not None and not (entry and entry[0] == lora):
        raise ExtraKeysConversionError(f"lacks the LoRA name {lora!r}", block=b)
    return tuple(keys) if keys else None


def event_extra_keys_to_typed(
    extra_keys: Sequence[Any] | None,
    *,
    vllm_version: str,
    lora_name: str | _Unknown | None = UNKNOWN,
    lora_path: str | Mapping[str, str] | None = None,
    starts_request: bool | None = None,
    lookahead_token_ids: Sequence[Sequence[int]] | None = None,
    strict: bool = True,
) -> tuple[BlockKeyCandidates, ...]:
    """The hashed extra keys of each block of a BlockStored event.

    ``lora_name``: the event's ``lora_name`` (None: no adapter; ``UNKNOWN``:
    not known). ``starts_request``: whether the event's first block is the
    request's block 0 (its ``parent_block_hash`` is nil); ``None`` if not
    known. Only that block can carry the salt.
    """
    wire_era(vllm_version, strict=strict)  # a release that publishes KV events at all
    form = resolve_release(vllm_version, strict=strict).era.published_extra_keys
    if form == "none":
        raise ExtraKeysNotPublishedError(
            f"vLLM {vllm_version} publishes no extra keys in KV events ({_PUBLISHED_SINCE}+)")
    if extra_keys is None:
        return ()
    if isinstance(extra_keys, (str, bytes)) or not isinstance(extra_keys, Sequence):
        raise ExtraKeysConversionError(
            f"must be an array (one entry per block) or nil, got {type(extra_keys).__name__}")
    entries = [_tuples(e) for e in extra_keys]
    for b, entry in enumerate(entries):
        if entry is not None and not isinstance(entry, tuple):
            raise ExtraKeysConversionError(f"must be an array or nil, got {entry!r}", block=b)
    if lookahead_token_ids is not None and len(lookahead_token_ids) != len(entries):
        raise ExtraKeysConversionError(
            f"{len(entries)} entries but {len(lookahead_token_ids)} lookahead token rows")

    def tail(b: int, keys: BlockExtraKeys) -> BlockExtraKeys:
        if lookahead_token_ids is None:
            return keys
        return (keys, *lookahead_token_ids[b])

    if form == "hashed":
        return tuple(BlockKeyCandidates(b, (tail(b, e),)) for b, e in enumerate(entries))
    if isinstance(lora_name, _Unknown):
        lora_name = _infer_lora(entries, starts_request)
    out: list[BlockKeyCandidates] = []
    for b, entry in enumerate(entries):
        may_start = b == 0 and starts_request is not False
        if not isinstance(lora_name, _Unknown):
            keys = _typed_entry(entry, b, lora=lora_name, may_start=may_start,
                                lora_path=lora_path)
            out.append(BlockKeyCandidates(b, (tail(b, keys),)))
            continue
        # Only the request's first block can lead with a string that is not the LoRA.
        if not (entry and isinstance(entry[0], str)):
            keys = _typed_entry(entry, b, lora=None, may_start=may_start, lora_path=lora_path)
            out.append(BlockKeyCandidates(b, (tail(b, keys),)))
            continue
        first = entry[0]
        if len(entry) > 1 and isinstance(entry[1], str):  # (lora, salt): both present
            keys = _typed_entry(entry, b, lora=first, may_start=True, lora_path=lora_path)
            out.append(BlockKeyCandidates(b, (tail(b, keys),)))
            continue
        as_lora = _typed_entry(entry, b, lora=first, may_start=True, lora_path=lora_path)
        as_salt = _typed_entry(entry, b, lora=None, may_start=True, lora_path=lora_path)
        out.append(BlockKeyCandidates(
            b, (tail(b, as_lora), tail(b, as_salt)),
            (f"{first!r} is the LoRA adapter name (first candidate) or the cache salt "
             "(second); pass the event's lora_name to decide",)))
    return tuple(out)


def typed_extra_keys_of(
    event: BlockStored,
    *,
    vllm_version: str,
    lora_path: str | Mapping[str, str] | None = None,
    strict: bool = True,
) -> tuple[BlockKeyCandidates, ...]:
    """:func:`event_extra_keys_to_typed` with what the event itself says.

    The event's ``lora_name`` (published from 0.14.0) settles the LoRA,
    a nil ``parent_block_hash`` marks the request's first block, and its
    ``lookahead_token_ids`` (0.33.0) join the keys.
    """
    return event_extra_keys_to_typed(
        event.extra_keys,
        vllm_version=vllm_version,
        lora_name=event.lora_name,
        lora_path=lora_path,
        starts_request=event.parent_block_hash is None,
        lookahead_token_ids=event.lookahead_token_ids,
        strict=strict,
    )
