"""Why two configurations give a request different keys, in a platform engineer's words.

Causes come from data: the two bound hashers (block size, algorithm, NONE_HASH
seed, lookahead) and their scheme eras. Each :class:`~prefixkey.core.Era`
field that differs is switched on its own (the old era with only that field
taking the new value) and the request re-hashed by the core: if its extra
keys change, the field is a cause, starting at the first block that changed.
Fields the core adds later are handled the same way; a difference no single
change explains is reported with the eras' own ``changes`` text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..core import ERAS, BlockExtraKeys, Era, Hasher, HashJob
from ..core._era_table import era_at
from ..errors import PrefixKeyError

__all__ = ["Cause", "eras_between", "explain", "first_difference"]


@dataclass(frozen=True, slots=True)
class Cause:
    """Why keys differ: what changed, the first (FROM) block it changes, in words."""

    #: "block_size", "hash_algo", "none_hash", "lookahead", "era:<Era field>",
    #: "era" (not attributable to one field), "from_unavailable", "to_unavailable".
    kind: str
    from_block: int
    message: str


#: How each value of an Era field reads in a sentence; unknown fields and
#: values fall back to their repr.
_VALUE_WORDS: Final[dict[str, dict[object, str | tuple[str, ...]]]] = {
    "lora_key": {
        "unkeyed": "nothing (not keyed)",
        "int_id": "the server's int id",
        "name": "the adapter name",
        "name_path": "('lora', name, path)",
    },
    "mm_key": {
        "identifier": "its identifier alone",
        "identifier_offset": "(identifier, offset relative to the block)",
    },
    "mm_window": {
        # (boundary rule, where decode-time hashing resumes): only the aspect that
        # changed is named.
        "inclusive_last_item": ("a block starting where an item ends still names it",
                                "decode-time hashing looks at the last item only"),
        "overlap_last_item": ("a block names only the items overlapping it",
                              "decode-time hashing looks at the last item only"),
        "overlap_window": ("a block names only the items overlapping it",
                           "decode-time hashing finds the items by window"),
    },
    "prompt_embeds_key": {
        "ignored": "nothing (not keyed)",
        "raw_bytes": "each block's raw embedding bytes",
        "digest": "the SHA-256 of each block's embedding bytes",
    },
    "tagged": {True: "tagged with their source", False: "untagged"},
    "hash_type": {"bytes": "raw digest bytes", "int": "Python ints"},
    "block_tuple": {"nested": "(parent, tokens, extra_keys)", "flat": "(parent, *tokens)"},
    "cache_salt": {True: "keyed into block 0", False: "not keyed"},
    "empty_extra_keys": {"none": "None", "empty_tuple": "()"},
}
#: What a value brings, said once per value (not per pair of versions).
_VALUE_NOTES: Final[dict[tuple[str, object], str]] = {
    ("lora_key", "name_path"): "tagged, and the LoRA path joins the key",
    ("lora_key", "name"): "the int id is assigned per server; the name is shared",
}
_FIELD_SUBJECTS: Final = {
    "lora_key": "LoRA keyed by",
    "mm_key": "a multimodal item keyed by",
    "prompt_embeds_key": "prompt embeddings keyed by",
    "hash_type": "keys are",
    "block_tuple": "the hashed value is",
    "cache_salt": "the cache salt is",
    "empty_extra_keys": "a block naming no item has extra keys",
}
#: Era fields that change every key of every request when they differ.
_WHOLE_KEY_FIELDS: Final = ("hash_type", "block_tuple")
#: Era fields that describe the era or its KV events, or that the config comparison covers.
_NOT_KEY_FIELDS: Final = frozenset({"name", "since", "changes", "algorithms", "none_hash",
                                    "lookahead", "published_extra_keys", *_WHOLE_KEY_FIELDS})


def _words(field: str, value: object, other: object = None) -> str:
    """``value`` in words; for aspect tuples, only the aspects where it differs from ``other``."""
    words = _VALUE_WORDS.get(field, {})
    mine, theirs = words.get(value, repr(value)), words.get(other, ())
    if isinstance(mine, str):
        return mine
    changed = [a for i, a in enumerate(mine) if i >= len(theirs) or theirs[i] != a]
    return "; ".join(changed or mine)


def eras_between(a: Era, b: Era) -> list[Era]:
    """The eras whose start lies in (older, newer]: the boundaries crossed."""
    lo, hi = sorted((a.first_version, b.first_version))
    return [e for e in ERAS if lo < e.first_version <= hi]


def _field_sinces(field: str, a: Era, b: Era) -> list[str]:
    """Releases, between the two eras, where ``field`` changed value."""
    lo = min(a.first_version, b.first_version)
    previous = era_at(ERAS, lo) or a
    sinces = []
    for era in eras_between(a, b):
        if getattr(era, field) != getattr(previous, field):
            sinces.append(era.since)
        previous = era
    return sinces


def _blocks_phrase(block: int, feature: str | None = None) -> str:
    if block == 0:
        return "every block differs"
    where = f"the first {feature} (block {block})" if feature else f"block {block}"
    return f"blocks from {where} on differ"


def _present(job: HashJob) -> list[str]:
    """The request's features a tag would touch (LoRA's tag comes with its key shape)."""
    request = job.request
    names = [("mm items", bool(request.mm_items)),
             ("a cache salt", bool(request.cache_salt)),
             ("prompt embeddings", request.prompt_embeds is not None)]
    return [name for name, present in names if present]


def _era_field_message(field: str, old: Era, new: Era, block: int, job: HashJob) -> str:
    sinces = ", ".join(_field_sinces(field, old, new)) or new.since
    was, now = getattr(old, field), getattr(new, field)
    present = _present(job)
    image = field == "mm_key" or (field == "tagged" and present == ["mm items"])
    tail = _blocks_phrase(block, "image" if image else None)
    if field == "tagged":
        verb = "tags" if now else "no longer tags"
        has = ", ".join(present) or "extra keys"
        return f"{sinces} {verb} extra keys; this request has {has}: {tail}"
    if field == "mm_window":
        return (f"multimodal window changes ({sinces}): now {_words(field, now, was)} "
                f"(was: {_words(field, was, now)}): {tail}")
    subject = _FIELD_SUBJECTS.get(field)
    if subject is None:
        return f"era field {field} changes from {was!r} to {now!r} ({sinces}): {tail}"
    if field == "mm_key" and now == "identifier_offset":
        return f"mm offset now relative to block ({sinces}): {tail}"
    note = _VALUE_NOTES.get((field, now))
    return (f"{subject} {_words(field, now)} instead of {_words(field, was)} "
            f"({sinces}{': ' + note if note else ''}): {tail}")


def _extra_keys_under(job: HashJob, era: Era) -> list[BlockExtraKeys]:
    """The request's per-block extra keys if its hasher followed ``era``'s rules.

    The core's own hashing passes decide every key (windows, decode-time
    passes, fields added later).
    """
    return job.run(job.hasher.with_era_rules(era)).extra_keys


def first_difference(a: Sequence[object], b: Sequence[object]) -> int | None:
    index = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    if index is None and len(a) != len(b):
        return min(len(a), len(b))
    return index


def _era_causes(job: HashJob, baseline: Sequence[BlockExtraKeys], new: Era) -> list[Cause]:
    """Each differing Era field that, on its own, changes this request's extra keys."""
    old = job.hasher.era
    causes = []
    for f in dataclasses.fields(Era):
        if not f.init or f.name in _NOT_KEY_FIELDS:
            continue
        if getattr(old, f.name) == getattr(new, f.name):
            continue
        try:
            hybrid = dataclasses.replace(old, **{f.name: getattr(new, f.name)})
            switched = _extra_keys_under(job, hybrid)
        except (PrefixKeyError, TypeError, ValueError, AttributeError):
            continue
        block = first_difference(baseline, switched)
        if block is not None:
            causes.append(Cause(f"era:{f.name}", block,
                                _era_field_message(f.name, old, new, block, job)))
    return causes


def _seed_words(hasher: Hasher) -> str:
    none_hash = hasher.none_hash
    if none_hash.seed_source == "PYTHONHASHSEED":
        return f"PYTHONHASHSEED {none_hash.seed!r}"
    if none_hash.seed_source == "default":
        since = next((e.since for e in ERAS if e.none_hash == hasher.era.none_hash),
                     hasher.era.since)
        return f"unset: default {none_hash.seed!r} ({since}+)"
    if none_hash.seed_source == "none":
        return "None itself"
    return f"a constant ({hasher.era.none_hash})"


def _config_causes(ha: Hasher, hb: Hasher) -> list[Cause]:
    causes = []
    if ha.block_size != hb.block_size:
        causes.append(Cause("block_size", 0, (
            f"hash block size differs ({ha.block_size} vs {hb.block_size}): blocks cover "
            "different tokens, all keys differ")))
    if ha.algorithm.name != hb.algorithm.name:
        how = []
        if ha.algorithm.serializer.name != hb.algorithm.serializer.name:
            how.append(f"{ha.algorithm.serializer.name} vs {hb.algorithm.serializer.name} "
                       "serialization")
        if ha.algorithm.digest_size != hb.algorithm.digest_size:
            how.append(f"{ha.algorithm.digest_size}- vs {hb.algorithm.digest_size}-byte keys")
        detail = f"; {', '.join(how)}" if how else ""
        causes.append(Cause("hash_algo", 0, (
            f"hash algorithm differs ({ha.algorithm.name} vs {hb.algorithm.name}{detail}): "
            "all keys differ")))
    for name in _WHOLE_KEY_FIELDS:
        was, now = getattr(ha.era, name, None), getattr(hb.era, name, None)
        if was != now:
            sinces = ", ".join(_field_sinces(name, ha.era, hb.era)) or hb.era.since
            causes.append(Cause(f"era:{name}", 0, (
                f"{_FIELD_SUBJECTS[name]} {_words(name, now)} instead of {_words(name, was)} "
                f"({sinces}): all keys differ")))
    seeds = [(h.none_hash.seed, h.none_hash.seed_source) for h in (ha, hb)]
    if seeds[0] != seeds[1]:
        causes.append(Cause("none_hash", 0, (
            f"NONE_HASH seed differs ({_seed_words(ha)} vs {_seed_words(hb)}): "
            "all keys differ")))
    elif ha.era.none_hash != hb.era.none_hash and not causes and (
        ha.none_hash.value != hb.none_hash.value
    ):
        sinces = ", ".join(_field_sinces("none_hash", ha.era, hb.era)) or hb.era.since
        causes.append(Cause("none_hash", 0, (
            f"NONE_HASH is derived differently ({ha.era.none_hash} vs {hb.era.none_hash}, "
            f"{sinces}): all keys differ")))
    if ha.lookahead != hb.lookahead:
        causes.append(Cause("lookahead", 0, (
            f"lookahead differs ({ha.lookahead} vs {hb.lookahead} tokens, speculative "
            "decoding): every key covers different extra keys, all keys differ")))
    return causes


def explain(old_job: HashJob, old_extra: Sequence[BlockExtraKeys], new_job: HashJob,
            first: int) -> list[Cause]:
    """Why keys computed by ``old_job`` and ``new_job`` differ from block ``first`` on.

    ``old_extra`` are the old side's per-block extra keys, the baseline that
    each era field is switched against.
    """
    old, new = old_job.hasher.era, new_job.hasher.era
    causes = _config_causes(old_job.hasher, new_job.hasher)
    if old != new:
        causes += _era_causes(old_job, old_extra, new)
    if not causes or min(c.from_block for c in causes) > first:
        crossed = eras_between(old, new)
        text = "; ".join(f"{e.since}: {e.changes}" for e in crossed) or "same era"
        causes.append(Cause("era", first, (
            f"schemes of vLLM {old.span} vs {new.span} ({text}): keys differ from block "
            f"{first}, not attributable to a single change")))
    return sorted(causes, key=lambda c: c.from_block)
