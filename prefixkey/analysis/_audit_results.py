"""The audit's results: one :class:`RequestAudit` per request, and the :class:`AuditReport`.

Plain data and its aggregates (totals, per replica, per miss reason, a
timeline, the worst misses); :mod:`prefixkey.analysis._audit` fills them in,
:mod:`prefixkey.analysis._audit_report` renders them.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["REASONS", "AuditReport", "RequestAudit"]

#: Miss reasons, in the order they are decided.
REASONS: Final = (
    "short_prompt", "last_block_cap", "no_events", "evicted", "block_size_mismatch",
    "salt_or_lora", "seed_or_release", "other_replica", "never_stored",
)


@dataclass(slots=True)
class RequestAudit:
    """One request of the log: predicted and reported hit, and why the rest missed."""

    line: int
    id: Any
    replica: str | None
    arrival_time: float | None
    num_tokens: int = 0
    block_size: int = 0
    #: Leading blocks the serving replica held at arrival (before the cap).
    held_blocks: int = 0
    predicted_hit_tokens: int = 0
    reported_hit_tokens: int | None = None
    #: "full" (every full block hit), "partial", "miss" (nothing hit) or "error".
    outcome: str = "miss"
    reason: str | None = None
    detail: str = ""
    #: Full-block tokens not hit (the whole prompt for a prompt shorter than a block).
    missed_tokens: int = 0
    #: Reported vs predicted: "match", "over" (predicted more), "under", or None.
    agreement: str | None = None
    error: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


def _rate(hit: int, total: int) -> float | None:
    return None if total == 0 else hit / total


@dataclass
class AuditReport:
    """The audit: one :class:`RequestAudit` per request line, and aggregates."""

    requests: list[RequestAudit]
    recording: dict[str, Any]
    clock_offset: float = 0.0
    bucket_seconds: float | None = None

    def audited(self) -> list[RequestAudit]:
        return [r for r in self.requests if r.error is None]

    def _summary(self, rows: list[RequestAudit]) -> dict[str, Any]:
        tokens = sum(r.num_tokens for r in rows)
        predicted = sum(r.predicted_hit_tokens for r in rows)
        rep_rows = [r for r in rows if r.reported_hit_tokens is not None]
        reported = sum(r.reported_hit_tokens or 0 for r in rep_rows)
        rep_tokens = sum(r.num_tokens for r in rep_rows)
        return {
            "requests": len(rows), "prompt_tokens": tokens,
            "predicted_hit_tokens": predicted, "predicted_hit_rate": _rate(predicted, tokens),
            "reported_requests": len(rep_rows), "reported_hit_tokens": reported,
            "reported_hit_rate": _rate(reported, rep_tokens),
            "predicted_hit_rate_where_reported": _rate(
                sum(r.predicted_hit_tokens for r in rep_rows), rep_tokens),
            "outcomes": dict(Counter(r.outcome for r in rows)),
            "agreement": dict(Counter(r.agreement for r in rep_rows)),
        }

    def totals(self) -> dict[str, Any]:
        return {**self._summary(self.audited()),
                "errors": sum(r.error is not None for r in self.requests)}

    def per_replica(self) -> dict[str, dict[str, Any]]:
        names = sorted({r.replica or "" for r in self.audited()})
        return {n: self._summary([r for r in self.audited() if (r.replica or "") == n])
                for n in names}

    def per_reason(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for reason in (*REASONS, "unknown"):
            rows = [r for r in self.audited() if r.reason == reason]
            if rows:
                out[reason] = {"requests": len(rows),
                               "missed_tokens": sum(r.missed_tokens for r in rows)}
        return out

    def timeline(self) -> list[dict[str, Any]]:
        """Per time bucket (arrival_time) and replica: hit rates predicted and reported."""
        timed = [r for r in self.audited() if r.arrival_time is not None]
        if not timed:
            return []
        times = [r.arrival_time for r in timed if r.arrival_time is not None]
        start, end = min(times), max(times)
        width = self.bucket_seconds or _nice_width(end - start)
        buckets: dict[tuple[int, str], list[RequestAudit]] = {}
        for r in timed:
            assert r.arrival_time is not None
            slot = int((r.arrival_time - start) // width)
            buckets.setdefault((slot, r.replica or ""), []).append(r)
        out = []
        for (slot, name), rows in sorted(buckets.items()):
            s = self._summary(rows)
            out.append({"start": start + slot * width, "end": start + (slot + 1) * width,
                        "replica": name, "requests": s["requests"],
                        "prompt_tokens": s["prompt_tokens"],
                        "predicted_hit_rate": s["predicted_hit_rate"],
                        "reported_hit_rate": s["reported_hit_rate"]})
        return out

    def worst(self, n: int = 10) -> list[RequestAudit]:
        """The requests that missed most (missed tokens, then predicted-reported gap)."""
        rows = [r for r in self.audited() if r.missed_tokens or r.agreement not in (None, "match")]
        rows.sort(key=lambda r: (-r.missed_tokens, -abs(
            r.predicted_hit_tokens - (r.reported_hit_tokens or r.predicted_hit_tokens)), r.line))
        return rows[:n]

    def to_dict(self) -> dict[str, Any]:
        return {
            "totals": self.totals(), "per_replica": self.per_replica(),
            "per_reason": self.per_reason(), "timeline": self.timeline(),
            "recording": self.recording, "clock_offset": self.clock_offset,
            "requests": [r.to_dict() for r in self.requests],
        }


def _nice_width(span: float) -> float:
    if span <= 0:
        return 1.0
    raw = span / 12
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))

