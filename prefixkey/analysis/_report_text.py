"""Plain-text renderings of the drift and fingerprint reports, for the command line."""

from __future__ import annotations

from ..core import ERAS, resolve_release
from ..errors import PrefixKeyError
from ..events import FingerprintReport
from ._drift import DriftConfig, DriftReport, FeatureSummary, RequestDrift

__all__ = ["drift_text", "fingerprint_text"]


def _side(config: DriftConfig) -> str:
    text = config.describe()
    if isinstance(config.vllm_version, str):
        try:
            era = resolve_release(config.vllm_version, strict=config.strict).era
        except PrefixKeyError:
            return text
        text += f" [scheme of {era.span}]"
    return text


def _first_sentence(text: str) -> str:
    return text.partition(". ")[0].rstrip(".")


def _request_line(result: RequestDrift) -> str:
    if result.identical:
        return f"identical ({result.num_blocks} of {result.num_blocks} blocks)"
    unavailable = [c for c in result.causes if c.kind.endswith("_unavailable")]
    if unavailable:
        return "; ".join(_first_sentence(c.message) for c in unavailable)
    head = (f"diverges at block {result.first_diverging_block} of {result.num_blocks} "
            f"({result.shared_blocks} shared)")
    return f"{head}: " + "; ".join(c.message for c in result.causes)


def _share(part: int, whole: int) -> str:
    percent = f"{100 * part / whole:5.1f}%" if whole else "    -"
    return f"{part:>5}/{whole:<5} {percent}"


def _summary_line(row: FeatureSummary) -> str:
    return (f"  {row.feature:<10} {_share(row.requests_surviving, row.requests)}   "
            f"{_share(row.blocks_surviving, row.blocks)}")


def _crossed(report: DriftReport) -> list[str]:
    versions = [c.vllm_version for c in (report.from_config, report.to_config)]
    if not all(isinstance(v, str) for v in versions):
        return []
    try:
        eras = [resolve_release(str(v), strict=False).era for v in versions]
    except PrefixKeyError:
        return []
    lo, hi = sorted(e.first_version for e in eras)
    return [f"  {e.since}: {e.changes}"
            for e in ERAS if lo < e.first_version <= hi]


def drift_text(report: DriftReport) -> str:
    """One line per request, then survival per feature."""
    lines = [f"FROM {_side(report.from_config)}  ->  TO {_side(report.to_config)}"]
    crossed = _crossed(report)
    if crossed:
        lines += ["scheme changes crossed:", *crossed]
    lines.append("")
    width = max((len(r.request_id) for r in report.requests), default=8)
    lines += [f"{r.request_id:<{width}}  {_request_line(r)}" for r in report.requests]
    lines += ["", "keys surviving  requests                blocks",
              *(_summary_line(row) for row in report.summary)]
    return "\n".join(lines) + "\n"


def _span(first: str, last: str | None) -> str:
    return first if last in (None, first) else f"{first}-{last}"


def _seed(seed: str | None) -> str:
    return "unset" if seed is None else repr(seed)


def fingerprint_text(report: FingerprintReport) -> str:
    """Events used and skipped, the verdict, the fitting candidates, and why."""
    lines = [f"events: {report.events_total} read, {report.events_used} used "
             f"({report.blocks_used} blocks, {report.hash_form} form), "
             f"{len(report.skipped)} skipped"]
    lines += [f"  skipped event {s.index}: {s.reason}" for s in report.skipped]
    lines.append(f"seeds tried: {', '.join(_seed(s) for s in report.seeds_tried)}")
    lines.append(f"verdict: {report.summary}")
    for family in report.families:
        span = _span(family.first_release, family.last_release)
        lines.append(f"  vLLM {span}:")
        lines += [f"    {c.hash_algo:<12} seed {_seed(c.python_hash_seed):<8} "
                  f"vLLM {_span(c.first_release, c.last_release)}"
                  for c in family.candidates]
    if report.reasons:
        lines.append("why:")
        lines += [f"  - {reason}" for reason in report.reasons]
    return "\n".join(lines) + "\n"
