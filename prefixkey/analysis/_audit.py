"""Cache-hit audit: replay recorded KV events, then explain every request's prefix miss.

Sans-IO: lines in (a recording of KV-event messages, docs/events.md, and a
request log in the JSON Lines request format with the optional fields
``replica``, ``arrival_time`` and ``cached_tokens``), an :class:`AuditReport`
out. Nothing here opens files or sockets.

The recorded batches are applied per source (= replica name) in ``recv_time``
order to a :class:`~prefixkey.fleet.PrefixIndex`, sequenced as the live
subscriber does: a duplicate seq is skipped, and a replay reply that fills a
gap is applied just before the message that revealed the gap (at its
``recv_time``); other replay replies are skipped. Each request is audited
against the index as it stood at its arrival: every message with
``recv_time <= arrival_time + clock_offset`` has been applied, no later one.
Messages without ``recv_time`` are applied first; requests without
``arrival_time`` are audited after the whole recording.

The predicted hit is vLLM's: the leading run of the request's block keys the
serving replica holds (any medium), capped at ``num_tokens - 1`` tokens in
whole blocks. When it is short of the prompt's full blocks, the first missed
block gets one reason (:data:`~prefixkey.analysis.REASONS`, decided in this order;
docs/audit.md). The request log is read by :mod:`._audit_log`, the results are
:mod:`._audit_results`.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..core import (
    DEFAULT_VLLM_VERSION,
    BlockHash,
    Hasher,
    HashJob,
    block_hash_to_int64,
    event_extra_keys,
)
from ..errors import PrefixKeyError
from ..events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    EventDecoder,
    EventHash,
    ReplayEnd,
    StreamSequence,
    Via,
    parse_recording_line,
    split_recorded,
)
from ..fleet import PrefixIndex, ReplicaId, ReplicaScheme
from ..jsonl import JSON_LIMITS, JsonLimits, bounded_lines
from ._audit_log import LoggedRequest, _parse_log_line
from ._audit_results import AuditReport, RequestAudit
from ._drift import DriftConfig

__all__ = ["audit"]

_ROOT: Final = b"prefixkey-audit-root"
_UNPUBLISHED: Final = object()


def _digest(parent: bytes, tokens: Iterable[int]) -> bytes:
    h = hashlib.blake2b(parent, digest_size=16)
    for t in tokens:
        h.update(t.to_bytes(8, "big", signed=True) if -(1 << 63) <= t < 1 << 63
                 else str(t).encode())
    return h.digest()


def _tuples(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_tuples(v) for v in value)
    return value


@dataclass(frozen=True, slots=True)
class _Block:
    key: EventHash
    extra: Any
    lora: str | None
    time: float


@dataclass(slots=True)
class _History:
    """What one replica stored and removed so far (group 0), for the diagnosis."""

    publishes: str
    stored_at: dict[EventHash, float] = field(default_factory=dict)
    removed_at: dict[EventHash, float] = field(default_factory=dict)
    cleared_at: float | None = None
    prefix: dict[EventHash, bytes] = field(default_factory=dict)
    by_prefix: dict[bytes, list[_Block]] = field(default_factory=dict)
    block_sizes: Counter[int] = field(default_factory=Counter)

    def apply(self, batch: EventBatch, time: float) -> None:
        for event in batch.events:
            if isinstance(event, AllBlocksCleared):
                self.cleared_at = time
            elif (event.group_idx or 0) != 0:
                continue
            elif isinstance(event, BlockRemoved):
                for key in event.block_hashes:
                    self.removed_at[self._key(key)] = time
            elif isinstance(event, BlockStored):
                self._store(event, time)

    def _key(self, key: EventHash) -> EventHash:
        return block_hash_to_int64(key) if self.publishes == "int" and isinstance(
            key, bytes) else key

    def _store(self, event: BlockStored, time: float) -> None:
        bs = event.block_size
        self.block_sizes[bs] += 1
        parent = event.parent_block_hash
        digest = _ROOT if parent is None else self.prefix.get(self._key(parent))
        lora = event.lora_name if event.lora_name is not None else (
            None if event.lora_id is None else f"lora_id {event.lora_id}")
        for i, raw in enumerate(event.block_hashes):
            key = self._key(raw)
            self.stored_at.setdefault(key, time)
            tokens = event.token_ids[i * bs : (i + 1) * bs]
            if digest is None or len(tokens) != bs:
                digest = None
                continue
            digest = _digest(digest, tokens)
            self.prefix[key] = digest
            extra = (_UNPUBLISHED if event.extra_keys is None else
                     _tuples(event.extra_keys[i]) if i < len(event.extra_keys) else None)
            self.by_prefix.setdefault(digest, []).append(_Block(key, extra, lora, time))



@dataclass(slots=True)
class _Message:
    time: float | None
    #: After ``time``: (line it is applied at, 0 for a replayed batch else 1, own line).
    order: tuple[int, int, int]
    rid: ReplicaId
    batch: EventBatch


@dataclass(slots=True)
class _Stream:
    """One ``(source, topic)`` stream of the recording, sequenced as the subscriber does."""

    seq: StreamSequence = field(default_factory=StreamSequence)
    #: Each gap ``[start, end)`` with the time and line of the message that revealed it.
    gaps: list[tuple[int, int, float | None, int]] = field(default_factory=list)

    def observe(self, seq: int, payload: bytes, time: float | None, line: int) -> bool:
        """A PUB message: False for a duplicate (the subscriber skips it)."""
        verdict = self.seq.observe(seq, hash(payload))
        if verdict.kind == "restart":
            self.gaps.clear()
        if verdict.missing is not None:
            self.gaps.append((*verdict.missing, time, line))
        return verdict.kind != "duplicate"

    def fill(self, seq: int, payload: bytes) -> tuple[float | None, int] | None:
        """A replay reply: the time and line of the gap it fills, None if it fills none."""
        if not self.seq.fill(seq, hash(payload)):
            return None
        # Gaps of one epoch are disjoint: the newest holding seq is the one filled.
        return next((t, line) for start, end, t, line in reversed(self.gaps)
                    if start <= seq < end)


class _Auditor:
    def __init__(self, messages: list[_Message]) -> None:
        self.index = PrefixIndex()
        self.history: dict[ReplicaId, _History] = {}
        publishes: dict[ReplicaId, str] = {}
        for m in messages:
            kind = publishes.setdefault(m.rid, "int")
            if kind == "int" and any(isinstance(h, bytes) for e in m.batch.events
                                     if isinstance(e, BlockStored) for h in e.block_hashes):
                publishes[m.rid] = "bytes"
        placeholder = Hasher(block_size=1, vllm_version=DEFAULT_VLLM_VERSION)
        for rid, kind in publishes.items():
            self.index.register(rid, ReplicaScheme(placeholder, "bytes" if kind == "bytes"
                                                   else "int"))
            self.history[rid] = _History(kind)

    def apply(self, m: _Message) -> None:
        self.index.apply(m.rid, m.batch)
        self.history[m.rid].apply(m.batch, -math.inf if m.time is None else m.time)

    def audit(self, row: RequestAudit, job: HashJob) -> None:
        hasher, request = job.hasher, job.request
        n, bs = len(request.token_ids), hasher.block_size
        row.num_tokens, row.block_size = n, bs
        rid = ReplicaId.parse(row.replica or "")
        hist = self.history.get(rid)
        fine = hasher.block_hashes(request) if n >= bs else []
        keys = [] if hist is None else [hist._key(k) for k in fine]
        table = self.index.table(rid, 0) if hist is not None else {}
        held = 0
        while held < len(keys) and keys[held] in table:
            held += 1
        full, cap = n // bs, max(n - 1, 0) // bs
        hit = min(held, cap)
        row.held_blocks, row.predicted_hit_tokens = held, hit * bs
        if row.reported_hit_tokens is not None:
            diff = row.predicted_hit_tokens - row.reported_hit_tokens
            row.agreement = "match" if diff == 0 else "over" if diff > 0 else "under"
        row.outcome = "full" if n >= bs and hit == full else "partial" if hit else "miss"
        if row.outcome == "full":
            return
        row.missed_tokens = (full - hit) * bs if n >= bs else n
        if n < bs:
            row.reason = "short_prompt"
            row.detail = f"{n} tokens < block size {bs}: no full block, no key"
        elif hit < held:
            row.reason = "last_block_cap"
            row.detail = (f"all {full} blocks held, but vLLM caps a hit at num_tokens-1 = "
                          f"{n - 1} tokens: the last block is recomputed")
        elif hist is None:
            row.reason = "no_events"
            row.detail = f"the recording has no events from replica {row.replica!r}"
        else:
            self._diagnose(row, job, rid, hist, fine, hit)

    def _diagnose(self, row: RequestAudit, job: HashJob, rid: ReplicaId, hist: _History,
                  fine: list[BlockHash], m: int) -> None:
        key, bs = hist._key(fine[m]), job.hasher.block_size
        where = f"block {m}"
        if key in hist.stored_at:
            removed = hist.removed_at.get(key)
            if removed is not None and (hist.cleared_at is None or removed >= hist.cleared_at):
                how = f"removed (BlockRemoved) at {removed:.3f}"
            elif hist.cleared_at is not None:
                how = f"cleared (AllBlocksCleared) at {hist.cleared_at:.3f}"
            else:
                how = "evicted by the index's memory bound"
            row.reason = "evicted"
            row.detail = (f"{where} stored at {hist.stored_at[key]:.3f}, {how}, "
                          "before arrival")
            return
        sizes = hist.block_sizes.most_common(1)
        if sizes and sizes[0][0] != bs:
            row.reason = "block_size_mismatch"
            row.detail = (f"the replica's events have block_size {sizes[0][0]}, the request "
                          f"is hashed with block_size {bs}")
            return
        tokens = job.request.token_ids
        digest = _ROOT
        for i in range(m + 1):
            digest = _digest(digest, tokens[i * bs : (i + 1) * bs])
        same_tokens = hist.by_prefix.get(digest, [])
        if same_tokens:
            self._same_tokens(row, job, m, same_tokens)
            return
        for other, ohist in self.history.items():
            okey = ohist._key(fine[m])
            if other != rid and okey in ohist.stored_at:
                held = "holds it" if okey in self.index.table(other, 0) else "held it"
                row.reason = "other_replica"
                row.detail = f"{where} never stored here; replica {other} {held}"
                return
        row.reason = "never_stored"
        row.detail = f"no replica stored {where} (nor the same tokens) before arrival"

    @staticmethod
    def _same_tokens(row: RequestAudit, job: HashJob, m: int, blocks: list[_Block]) -> None:
        request, hasher = job.request, job.hasher
        ek = hasher.start(request).extra_keys[m]
        mine = _tuples(event_extra_keys(ek, hasher.era, lookahead=hasher.lookahead))
        lora = None if request.lora is None else request.lora.name
        where = f"block {m}: same tokens stored under another key"
        for b in blocks:
            if b.lora != lora:
                row.reason = "salt_or_lora"
                row.detail = f"{where}; LoRA differs (stored {b.lora!r}, request {lora!r})"
                return
        for b in blocks:
            if b.extra is not _UNPUBLISHED and b.extra != mine:
                row.reason = "salt_or_lora"
                row.detail = (f"{where}; extra keys differ (stored {b.extra!r}, request "
                              f"{mine!r}): cache_salt (or multimodal)")
                return
        seen = "" if any(b.extra is not _UNPUBLISHED for b in blocks) else (
            " (the release publishes no extra keys: a salt cannot be ruled out)")
        row.reason = "seed_or_release"
        row.detail = (f"{where} with the same extra keys: the replica's PYTHONHASHSEED, hash "
                      f"algorithm or release differ from {hasher!r}{seen}")


def _read_recording(lines: Iterable[bytes | str], replicas: Mapping[str, DriftConfig],
                    versions: Mapping[str, str], strict: bool, framing: Via | None,
                    limits: JsonLimits) -> tuple[list[_Message], dict[str, Any]]:
    decoders: dict[str, EventDecoder] = {}
    streams: dict[str, dict[str, _Stream]] = {}
    messages: list[_Message] = []
    errors: list[dict[str, Any]] = []
    sources: Counter[str] = Counter()
    replayed = skipped = 0
    for number, raw in enumerate(bounded_lines(lines, limits), start=1):
        if not raw.strip():
            continue
        try:
            msg = parse_recording_line(raw, limits)
            source = msg.source or ""
            decoder = decoders.get(source)
            if decoder is None:
                config = replicas.get(source)
                version = (config.vllm_version if config is not None
                           and isinstance(config.vllm_version, str)
                           else versions.get(source, DEFAULT_VLLM_VERSION))
                decoder = decoders[source] = EventDecoder(version, strict=strict)
            split = split_recorded(msg, decoder, framing=framing)
            if isinstance(split, ReplayEnd):
                continue
            own = streams.setdefault(source, {})
            at: tuple[float | None, int] | None = (msg.recv_time, number)
            if split.via == "pub":
                stream = own.setdefault(split.topic, _Stream())
                if not stream.observe(split.seq, split.payload, msg.recv_time, number):
                    at = None
            else:
                if decoder.era.replay_carries_topic:
                    candidates = [own[split.topic]] if split.topic in own else []
                else:  # the reply carries no topic: it belongs to the gap it fills
                    candidates = list(own.values())
                at = next((a for c in candidates
                           if (a := c.fill(split.seq, split.payload)) is not None), None)
            if at is None:
                skipped += 1
                continue
            batch = decoder.decode_batch(split.payload)
        except PrefixKeyError as exc:
            errors.append({"line": number, "type": type(exc).__name__, "message": str(exc)})
            continue
        sources[source] += 1
        replayed += split.via == "replay"
        rid = ReplicaId(source, batch.data_parallel_rank or 0)
        when, line = at
        messages.append(_Message(when, (line, int(split.via == "pub"), number), rid, batch))
    info = {"messages": len(messages), "sources": dict(sources), "errors": errors,
            "untimed": sum(m.time is None for m in messages), "replayed": replayed,
            "skipped": skipped}
    return messages, info


def audit(
    recording: Iterable[bytes | str],
    request_log: Iterable[bytes | str | LoggedRequest],
    *,
    replicas: Mapping[str, DriftConfig] | None = None,
    clock_offset: float = 0.0,
    bucket_seconds: float | None = None,
    strict: bool = True,
    framing: Via | None = None,
    limits: JsonLimits = JSON_LIMITS,
) -> AuditReport:
    """Audit a request log against a recording (see the module docs and docs/audit.md).

    ``request_log`` holds JSON Lines lines, or typed :class:`LoggedRequest`s.

    ``replicas`` maps a replica name (the recording's ``source``) to the scheme
    overrides of that replica; fields it leaves unset come from each request.
    ``clock_offset`` is added to every ``arrival_time`` to put it on the
    recording's ``recv_time`` clock. ``framing`` frames the recording's lines
    that neither say their ``via`` nor show it by their shape (default
    ``"pub"``; :func:`~prefixkey.events.split_recorded`). ``limits`` bounds
    every line of both inputs (:class:`~prefixkey.jsonl.JsonLimits`).
    """
    replicas = dict(replicas or {})
    entries = [_parse_log_line(i, raw, replicas, strict, limits)
               for i, raw in enumerate(bounded_lines(request_log, limits), start=1)
               if isinstance(raw, LoggedRequest) or raw.strip()]
    versions: dict[str, str] = {}
    for e in entries:
        if e.job is not None and e.audit.replica is not None:
            versions.setdefault(ReplicaId.parse(e.audit.replica).name, e.job.hasher.vllm_version)
    messages, info = _read_recording(recording, replicas, versions, strict, framing, limits)
    sources = sorted({str(m.rid) for m in messages})
    for e in entries:
        if e.job is not None and e.audit.replica is None and len(sources) == 1:
            e.audit.replica = sources[0]
        if e.effective_time is not None:
            e.effective_time += clock_offset
    messages.sort(key=lambda m: (m.time is not None, m.time or 0.0, m.order))
    auditor = _Auditor(messages)
    pending = iter(messages)
    upcoming = next(pending, None)
    ordered = sorted((e for e in entries if e.job is not None),
                     key=lambda e: (e.effective_time is None, e.effective_time or 0.0, e.line))
    for e in ordered:
        while upcoming is not None and (e.effective_time is None or upcoming.time is None
                                        or upcoming.time <= e.effective_time):
            auditor.apply(upcoming)
            upcoming = next(pending, None)
        assert e.job is not None
        if e.audit.replica is None:
            e.audit.outcome = "error"
            e.audit.error = {"type": "InvalidRequestError", "field": "replica",
                             "message": "replica: is required when the recording has "
                                        f"{len(sources)} sources"}
            continue
        auditor.audit(e.audit, e.job)
    return AuditReport([e.audit for e in entries], info, clock_offset, bucket_seconds)
