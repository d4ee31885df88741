"""Which vLLM configuration produced these keys? Inferred from observed KV events.

A router that consumes a replica's ``BlockStored`` events (docs/fingerprint.md)
wants to know which release family, hash algorithm and ``PYTHONHASHSEED`` to
configure so that its own keys match the replica's. :func:`fingerprint`
recomputes every usable event under every candidate: each scheme era in
:data:`prefixkey.core.ERAS` (one representative release per algorithm it
offers), every algorithm, and the seeds unset, ``"0"`` and any given. It keeps
the candidates that reproduce every usable event.

Only events that start a chain (``parent_block_hash`` null) and whose blocks
carry no extra keys are usable: the first block's parent is NONE_HASH, which
is what identifies the seed, and token-only blocks need nothing the event does
not carry. Token-only keys are identical across several eras (for example
0.29-0.33 with the seed unset), so several candidates often fit: the report
says "ambiguous" and lists them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from packaging.version import Version

from ..core import ALGORITHMS, ERAS, KNOWN_RELEASES, BlockHash, Era, Hasher, block_hash_to_int64
from ..core._builtin_hash import REPRODUCIBLE_PYTHON
from ..core._checks import int_refusal
from ..core._request import check_token_ids
from ..errors import InvalidRequestError, PrefixKeyError, UnreproducibleKeysError
from ._model import AllBlocksCleared, BlockRemoved, BlockStored

__all__ = [
    "DEFAULT_SEEDS",
    "Candidate",
    "FamilyMatch",
    "FingerprintReport",
    "SkippedEvent",
    "Verdict",
    "block_stored_events",
    "fingerprint",
]

#: Seeds always tried: PYTHONHASHSEED unset, and "0".
DEFAULT_SEEDS: Final[tuple[str | None, ...]] = (None, "0")

#: How many candidate configurations reproduce the events: one, several, none, or no usable events.
Verdict = Literal["unique", "ambiguous", "none", "no_events"]
HashForm = Literal["bytes", "int64"]

_UINT64: Final = 1 << 64
_INT64_MIN: Final = -(1 << 63)


@dataclass(frozen=True, slots=True)
class SkippedEvent:
    """An event not used, and why (``index`` counts events from 1)."""

    index: int
    reason: str


@dataclass(frozen=True, slots=True)
class Candidate:
    """One configuration that reproduces every used event."""

    era: str
    hash_algo: str
    python_hash_seed: str | None
    #: The releases of the era that offer the algorithm (last: newest known one).
    first_release: str
    last_release: str | None
    #: The release whose scheme was computed.
    representative: str


@dataclass(frozen=True, slots=True)
class FamilyMatch:
    """The fitting candidates of one release family (scheme era)."""

    era: str
    since: str
    changes: str
    first_release: str
    last_release: str | None
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class FingerprintReport:
    """The verdict, the fitting candidates by family, and the events used."""

    verdict: Verdict
    #: One line: "unique: …", "ambiguous: …", "none: keys cannot be reproduced …".
    summary: str
    families: tuple[FamilyMatch, ...]
    events_total: int
    events_used: int
    blocks_used: int
    #: "bytes", "int64", "mixed" (both forms among used events) or "none".
    hash_form: str
    skipped: tuple[SkippedEvent, ...]
    seeds_tried: tuple[str | None, ...]
    #: Why no candidate fits, or why several do.
    reasons: tuple[str, ...]

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        return tuple(c for family in self.families for c in family.candidates)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["candidates"] = [dataclasses.asdict(c) for c in self.candidates]
        return data


@dataclass(frozen=True, slots=True)
class _Event:
    form: HashForm
    keys: tuple[bytes | int, ...]
    token_ids: tuple[int, ...]
    block_size: int


@dataclass(frozen=True, slots=True)
class _Slot:
    """An (era, algorithm) pair: the representative release and the release range."""

    era: Era
    algo: str
    first: str
    last: str | None


class _UnusableEvent(PrefixKeyError, ValueError):
    """Why one event cannot be fingerprinted; it becomes a :class:`SkippedEvent`."""

    def __init__(self, field: str | None, reason: str) -> None:
        self.field: str | None = field
        super().__init__(reason)


def _hash_form(values: Any, what: str) -> tuple[HashForm, tuple[bytes | int, ...]]:
    if not isinstance(values, (list, tuple)) or not values:
        raise _UnusableEvent(what, f"{what} must be a non-empty array of hex strings or ints")
    if all(isinstance(v, bytes) for v in values):  # a typed event's digest bytes
        return "bytes", tuple(values)
    if all(isinstance(v, str) for v in values):
        try:
            return "bytes", tuple(bytes.fromhex(v) for v in values)
        except ValueError:
            raise _UnusableEvent(what, f"{what} holds a string that is not hex") from None
    if all(type(v) is int and _INT64_MIN <= v < _UINT64 for v in values):
        return "int64", tuple(values)
    raise _UnusableEvent(what, f"{what} must be all hex strings (bytes mode) or all 64-bit "
                         "ints (uint64, or signed for builtin hash()), not a mix")


def _fields(event: BlockStored) -> dict[str, Any]:
    """A typed event's fields under the JSON names the checks below read."""
    return {
        "type": "BlockStored", "parent_block_hash": event.parent_block_hash,
        "block_hashes": event.block_hashes, "extra_keys": event.extra_keys,
        "lora_name": event.lora_name, "lora_id": event.lora_id,
        "block_size": event.block_size, "token_ids": list(event.token_ids),
    }


def _parse_event(obj: Any) -> _Event:
    """The usable event, or :class:`_UnusableEvent` saying why it cannot be used."""
    if isinstance(obj, BlockStored):
        obj = _fields(obj)
    elif isinstance(obj, (BlockRemoved, AllBlocksCleared)):
        raise _UnusableEvent("type", f"a {type(obj).__name__} event, not BlockStored")
    if not isinstance(obj, Mapping):
        raise _UnusableEvent(None, f"not a JSON object ({type(obj).__name__})")
    kind = obj.get("type")
    if kind is not None and kind != "BlockStored":
        raise _UnusableEvent("type", f"a {kind} event, not BlockStored")
    parent = obj.get("parent_block_hash")
    if type(parent) is int:
        raise _UnusableEvent("parent_block_hash", "parent given as a 64-bit int: the chain "
                             "cannot be resumed from a truncated key")
    if parent is not None:
        raise _UnusableEvent("parent_block_hash", "parent given: the blocks continue a chain "
                             "that starts elsewhere, so NONE_HASH (the seed) is not in them")
    form, keys = _hash_form(obj.get("block_hashes"), "block_hashes")
    extra = obj.get("extra_keys")
    if isinstance(extra, (list, tuple)) and any(entry is not None for entry in extra):
        raise _UnusableEvent("extra_keys", "blocks carry extra keys (LoRA, multimodal, salt or "
                             "embeddings): only token-only blocks are fingerprinted")
    if obj.get("lora_name") is not None or obj.get("lora_id") is not None:
        raise _UnusableEvent("lora_name", "the blocks belong to a LoRA adapter, which joins "
                             "their keys")
    refusal = int_refusal(obj.get("block_size"))
    if refusal is not None:
        raise _UnusableEvent("block_size", f"block_size {refusal}")
    size: int = obj["block_size"]
    tokens = obj.get("token_ids")
    if not isinstance(tokens, list):
        raise _UnusableEvent("token_ids", "token_ids must be an array of ints")
    check_token_ids(tokens)
    if len(tokens) != len(keys) * size:
        raise _UnusableEvent(
            "token_ids", f"{len(tokens)} token_ids for {len(keys)} blocks of {size}: a partial "
            "or group-level block (hash block size differs from block_size)"
        )
    return _Event(form, keys, tuple(tokens), size)


def _slots() -> list[_Slot]:
    """Every (era, algorithm) pair, with the era's releases that offer the algorithm."""
    known = sorted(Version(v) for v in KNOWN_RELEASES)
    slots = []
    for i, era in enumerate(ERAS):
        end = ERAS[i + 1].first_version if i + 1 < len(ERAS) else None
        for algo, algo_since in era.algorithms:
            first = max(era.first_version, Version(algo_since))
            if end is not None and first >= end:
                continue
            inside = [v for v in known if first <= v and (end is None or v < end)]
            slots.append(_Slot(era, algo, str(first), str(inside[-1]) if inside else None))
    return slots


class _Search:
    """Hashers built once per candidate and block size; unreproducible ones remembered."""

    def __init__(self) -> None:
        self.hashers: dict[tuple[str, str, str | None, int], Hasher | None] = {}
        self.unreproducible: set[tuple[str, str | None]] = set()
        self.errors: set[str] = set()

    def hasher(self, slot: _Slot, seed: str | None, size: int) -> Hasher | None:
        key = (slot.first, slot.algo, seed, size)
        if key not in self.hashers:
            try:
                algorithm = slot.era.algorithm(slot.algo, Version(slot.first))
                python = REPRODUCIBLE_PYTHON if algorithm.engine_bound else None
                self.hashers[key] = Hasher(block_size=size, hash_algo=slot.algo,
                                           python_hash_seed=seed, vllm_version=slot.first,
                                           engine_python=python)
            except UnreproducibleKeysError:
                self.unreproducible.add((slot.algo, slot.era.name))
                self.hashers[key] = None
            except PrefixKeyError as exc:
                self.errors.add(f"vLLM {slot.first}: {exc}")
                self.hashers[key] = None
        return self.hashers[key]

    def fits(self, slot: _Slot, seed: str | None, events: Sequence[_Event]) -> bool:
        for event in events:
            hasher = self.hasher(slot, seed, event.block_size)
            if hasher is None:
                return False
            try:
                keys = hasher.block_hashes(event.token_ids)
            except UnreproducibleKeysError:
                self.unreproducible.add((slot.algo, slot.era.name))
                return False
            if len(keys) != len(event.keys) or not all(
                _same(k, v, event.form) for k, v in zip(keys, event.keys, strict=True)
            ):
                return False
        return True


def _same(key: BlockHash, seen: bytes | int, form: HashForm) -> bool:
    """Whether ``key`` is published as ``seen``: bytes, their low 64 bits, or the int itself."""
    if isinstance(key, bytes):
        return key == seen if form == "bytes" else block_hash_to_int64(key) == seen
    return form == "int64" and key == seen


def _span(first: str, last: str | None) -> str:
    return first if last in (None, first) else f"{first}-{last}"


def _seed_words(seed: str | None) -> str:
    return "unset" if seed is None else repr(seed)


def _none_reasons(events: Sequence[_Event], seeds: Sequence[str | None],
                  search: _Search) -> list[str]:
    reasons = []
    sizes = {len(k) for e in events if e.form == "bytes" for k in e.keys if isinstance(k, bytes)}
    digest_sizes = {a.digest_size for a in ALGORITHMS.values()}
    concatenating = [e for e in ERAS if e.group_keys == "concatenated"]
    later = ERAS[ERAS.index(concatenating[-1]) + 1:]
    until = f" until {later[0].since}" if later else ""
    for size in sorted(sizes - digest_sizes):
        reasons.append(f"keys are {size} bytes long, which no algorithm produces "
                       f"({', '.join(f'{s} bytes' for s in sorted(digest_sizes))}): "
                       "group-level keys (several hashes concatenated, vLLM "
                       f"{concatenating[0].since}{until})?")
    tried = ", ".join(_seed_words(s) for s in seeds)
    reasons.append(f"PYTHONHASHSEED set to a value not tried (tried: {tried}): "
                   "pass the replica's value with --seed")
    if search.unreproducible:
        default_since = next((e.since for e in ERAS if e.none_hash == "seed_or_default"), None)
        after = f"before {default_since}, or" if default_since else "or"
        reasons.append(
            f"a random NONE_HASH: PYTHONHASHSEED unset {after} with a non-collision-resistant "
            "algorithm (xxhash, xxhash_cbor); such keys differ per engine process and "
            "cannot be reproduced by anyone"
        )
    reasons.append("a hash block size different from the events' block_size (hybrid models' "
                   "prefix_match_unit, decode context parallelism)")
    reasons.append("extra keys the events do not show (multimodal items, a cache salt, "
                   "prompt embeddings or a LoRA before events published extra_keys)")
    lookahead = next((e.since for e in ERAS if e.lookahead), None)
    if lookahead:
        reasons.append(f"lookahead hashing (vLLM {lookahead}+ with EAGLE/EAGLE3/MTP "
                       "speculative decoding), which prefixkey does not try")
    known = f"{ERAS[0].since}-{KNOWN_RELEASES[-1]}"
    reasons.append(f"a release outside the known schemes ({known}), or a modified vLLM")
    reasons.append(f"builtin hash() keys from an engine on CPython older than "
                   f"{REPRODUCIBLE_PYTHON} (only {REPRODUCIBLE_PYTHON}+ was tried; older ones "
                   "are random per process)")
    reasons += sorted(search.errors)
    return reasons


def _ambiguity_reasons(families: Sequence[FamilyMatch]) -> list[str]:
    reasons = []
    groups: dict[tuple[str, str | None], list[Candidate]] = {}
    for candidate in (c for f in families for c in f.candidates):
        groups.setdefault((candidate.hash_algo, candidate.python_hash_seed), []).append(candidate)
    for (algo, seed), members in groups.items():
        if len(members) > 1:
            span = _span(members[0].first_release, members[-1].last_release)
            reasons.append(
                f"releases {span} ({len(members)} release families) compute the same "
                f"keys for token-only blocks with {algo} and seed {_seed_words(seed)}: their "
                "schemes differ in extra keys (LoRA, multimodal, salt, embeddings) or in "
                "NONE_HASH when PYTHONHASHSEED is unset, which these events do not exercise"
            )
    if len(groups) > 1:
        reasons.append("several algorithm/seed combinations fit: the events hold too few "
                       "blocks to separate them")
    return reasons


def _summary(verdict: Verdict, families: Sequence[FamilyMatch], reasons: Sequence[str]) -> str:
    if verdict == "no_events":
        return ("no usable events: only events that start a chain (parent null) with "
                "token-only blocks can be fingerprinted")
    if verdict == "none":
        return f"none: keys cannot be reproduced from these events, because of {reasons[0]}" \
            + (f" (or {len(reasons) - 1} other likely reasons below)" if len(reasons) > 1 else "")
    candidates = [c for f in families for c in f.candidates]
    if verdict == "unique":
        c = candidates[0]
        return (f"unique: vLLM {_span(c.first_release, c.last_release)}, "
                f"{c.hash_algo}, PYTHONHASHSEED {_seed_words(c.python_hash_seed)}")
    span = _span(candidates[0].first_release,
                 max((c.last_release or c.first_release for c in candidates), key=Version))
    algos = ", ".join(dict.fromkeys(c.hash_algo for c in candidates))
    seeds = ", ".join(dict.fromkeys(_seed_words(c.python_hash_seed) for c in candidates))
    return (f"ambiguous: {len(candidates)} candidates in {len(families)} release families fit "
            f"(vLLM {span}; {algos}; PYTHONHASHSEED {seeds})")


def block_stored_events(messages: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """The BlockStored events of decoded recording messages, as :func:`fingerprint` takes them.

    ``messages`` are the records of :func:`prefixkey.events.decode_recording`,
    whose events already carry hashes as published (ints, or hex for digest
    bytes); error records and replay end markers hold no events.
    """
    for message in messages:
        for event in message.get("events", ()):
            if event.get("type") == "BlockStored":
                yield event


def fingerprint(events: Iterable[Any], seeds: Iterable[str] = ()) -> FingerprintReport:
    """Infer the (release family, algorithm, seed) candidates that reproduce ``events``.

    ``events`` are :class:`BlockStored` events, or their JSON objects as recordings
    decode them (docs/fingerprint.md); other events are skipped. ``seeds``
    are PYTHONHASHSEED values to try besides unset and ``"0"``.
    """
    if isinstance(seeds, str):
        raise InvalidRequestError("seeds", "must be an iterable of PYTHONHASHSEED strings, "
                                  "not one string")
    extra = tuple(seeds)
    for i, seed in enumerate(extra):
        if not isinstance(seed, str):
            raise InvalidRequestError(
                "seeds", f"must be a PYTHONHASHSEED string, got {type(seed).__name__}",
                position=i)
    tried: tuple[str | None, ...] = tuple(dict.fromkeys((*DEFAULT_SEEDS, *extra)))
    used: list[_Event] = []
    skipped: list[SkippedEvent] = []
    total = 0
    for index, obj in enumerate(events, start=1):
        total += 1
        try:
            used.append(_parse_event(obj))
        except PrefixKeyError as exc:
            skipped.append(SkippedEvent(index, str(exc)))
    forms = {e.form for e in used}
    hash_form = forms.pop() if len(forms) == 1 else ("mixed" if forms else "none")
    blocks = sum(len(e.keys) for e in used)
    families: list[FamilyMatch] = []
    reasons: list[str] = []
    if not used:
        verdict: Verdict = "no_events"
    else:
        search = _Search()
        fitting = [Candidate(slot.era.name, slot.algo, seed, slot.first, slot.last, slot.first)
                   for slot in _slots() for seed in tried if search.fits(slot, seed, used)]
        for era in ERAS:
            mine = tuple(c for c in fitting if c.era == era.name)
            if mine:
                last = max((c.last_release for c in mine if c.last_release), key=Version,
                           default=None)
                families.append(FamilyMatch(era.name, era.since, era.changes,
                                            min((c.first_release for c in mine), key=Version),
                                            last, mine))
        verdict = "none" if not fitting else "unique" if len(fitting) == 1 else "ambiguous"
        if verdict == "none":
            reasons = _none_reasons(used, tried, search)
        elif verdict == "ambiguous":
            reasons = _ambiguity_reasons(families)
    return FingerprintReport(
        verdict, _summary(verdict, families, reasons), tuple(families), total, len(used),
        blocks, hash_form, tuple(skipped), tried, tuple(reasons),
    )
