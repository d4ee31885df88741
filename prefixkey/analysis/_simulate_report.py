"""A :class:`SimulationReport` as one self-contained HTML page (inline CSS and SVG, no script)."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Final

from ._simulate import PolicyResult, SimulationReport, simulation_text

__all__ = ["simulation_html"]

_COLORS: Final = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2",
                  "#4b5563", "#ca8a04")


def _bars(title: str, results: Sequence[PolicyResult], value: Callable[[PolicyResult], float],
          fmt: str) -> str:
    """A horizontal bar chart, one bar per policy."""
    width, row, label = 560, 22, 150
    top = max((value(r) for r in results), default=0.0) or 1.0
    parts = [f'<svg width="{width}" height="{row * len(results) + 30}" role="img" '
             f'aria-label="{html.escape(title)}">',
             f'<text x="0" y="14" font-weight="bold">{html.escape(title)}</text>']
    for i, r in enumerate(results):
        y = 24 + i * row
        v = value(r)
        w = (width - label - 70) * v / top
        parts.append(f'<text x="0" y="{y + 14}">{html.escape(r.policy)}</text>'
                     f'<rect x="{label}" y="{y}" width="{w:.1f}" height="{row - 6}" '
                     f'fill="{_COLORS[i % len(_COLORS)]}"/>'
                     f'<text x="{label + w + 4:.1f}" y="{y + 14}">{format(v, fmt)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _load_chart(results: Sequence[PolicyResult]) -> str:
    """Requests per replica, per policy (one row of cells each)."""
    rows = []
    for r in results:
        counts = r.per_replica_requests
        top = max(counts, default=0) or 1
        cells = "".join(
            f'<td title="{c}" style="background:rgba(37,99,235,{c / top:.2f})">{c}</td>'
            for c in counts)
        rows.append(f"<tr><th>{html.escape(r.policy)}</th>{cells}</tr>")
    return "<table class=load>" + "".join(rows) + "</table>"


def simulation_html(report: SimulationReport) -> str:
    """The report as a standalone page: the summary, then hit rate, TTFT and load charts."""
    results = report.results
    charts = [
        _bars("hit rate (tokens reused / prompt tokens)", results, lambda r: r.hit_rate, ".3f"),
        _bars("TTFT mean (s)", results, lambda r: r.ttft_mean_s, ".2f"),
        _bars("TTFT p99 (s)", results, lambda r: r.ttft_p99_s, ".2f"),
        _bars("decision CPU time (µs per request)", results,
              lambda r: r.decision_cpu_us_mean, ".0f"),
    ]
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>prefixkey simulate</title>"
        "<style>body{font:14px system-ui,sans-serif;margin:2em}pre{background:#f3f4f6;"
        "padding:1em;overflow:auto}table.load td{padding:2px 6px;text-align:right}"
        "svg{display:block;margin:1em 0}</style></head><body>"
        "<h1>prefixkey simulate</h1>"
        f"<pre>{html.escape(simulation_text(report))}</pre>"
        + "".join(charts)
        + "<h2>requests per replica</h2>" + _load_chart(results)
        + "</body></html>\n")
