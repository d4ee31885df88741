"""Render an :class:`~prefixkey.analysis.AuditReport`: a terminal summary and a standalone page.

The HTML page is one self-contained file: inline CSS and inline SVG charts,
no JavaScript, no network access (it opens from disk in any browser).
"""

from __future__ import annotations

import html
import time
from typing import Any, Final

from ._audit_results import AuditReport, RequestAudit

__all__ = ["audit_html", "audit_text"]

_COLORS: Final = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def audit_text(report: AuditReport, *, worst: int = 10) -> str:
    """The terminal summary: totals, per replica, per miss reason, worst requests."""
    t = report.totals()
    lines = [
        f"requests: {t['requests']} audited, {t['errors']} error(s); recording: "
        f"{report.recording['messages']} message(s), {len(report.recording['errors'])} "
        "undecodable",
        f"hit rate (tokens): predicted {_pct(t['predicted_hit_rate'])}, reported "
        f"{_pct(t['reported_hit_rate'])} ({t['reported_requests']} request(s) report "
        f"cached_tokens; predicted on those {_pct(t['predicted_hit_rate_where_reported'])})",
        "", "per replica:",
    ]
    for name, s in report.per_replica().items():
        agree = ", ".join(f"{k} {v}" for k, v in sorted(s["agreement"].items()))
        lines.append(f"  {name or '(none)'}: {s['requests']} request(s), predicted "
                     f"{_pct(s['predicted_hit_rate'])}, reported {_pct(s['reported_hit_rate'])}"
                     + (f" [{agree}]" if agree else ""))
    lines += ["", "misses by reason:"]
    reasons = report.per_reason()
    if not reasons:
        lines.append("  (none)")
    for reason, r in reasons.items():
        lines.append(f"  {reason}: {r['requests']} request(s), {r['missed_tokens']} "
                     "token(s) missed")
    rows = report.worst(worst)
    if rows:
        lines += ["", f"worst {len(rows)} request(s):"]
        for row in rows:
            reported = "-" if row.reported_hit_tokens is None else row.reported_hit_tokens
            lines.append(f"  line {row.line} id={row.id!r} on {row.replica}: hit "
                         f"{row.predicted_hit_tokens}/{row.num_tokens} predicted, {reported} "
                         f"reported; {row.reason or 'no miss'}: {row.detail}")
    errors = [r for r in report.requests if r.error is not None]
    if errors:
        lines += ["", "request errors:"]
        lines += [f"  line {r.line}: {r.error['message']}" for r in errors if r.error]
    return "\n".join(lines) + "\n"


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _utc(t: float) -> str:
    """Unix seconds as the charts show them: ``2023-11-14 22:13:20.500`` (UTC)."""
    text = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
    millis = round((t - int(t)) * 1000) % 1000
    return f"{text}.{millis:03d}" if millis else text


#: How each series is drawn. The reported line goes on top of every predicted band,
#: thin and dashed: where both rates are equal the dashes lie on the band, still seen.
_SERIES: Final = (
    ("predicted_hit_rate", "predicted",
     'stroke-width="7" stroke-opacity="0.35" stroke-linecap="round"',
     'r="4" fill="{color}" fill-opacity="0.35"'),
    ("reported_hit_rate", "reported",
     'stroke-width="2" stroke-dasharray="6,4"',
     'r="3" fill="#fff" stroke="{color}" stroke-width="1.5"'),
)


def _line_chart(report: AuditReport, width: int = 760, height: int = 260) -> str:
    points = report.timeline()
    if not points:
        return "<p>No request has an arrival_time: no timeline.</p>"
    left, right, top, bottom = 50, 150, 15, 35
    t0 = min(p["start"] for p in points)
    t1 = max(p["end"] for p in points)
    span = max(t1 - t0, 1e-9)
    pw, ph = width - left - right, height - top - bottom

    def x(t: float) -> float:
        return float(left + pw * (t - t0) / span)

    def y(rate: float) -> float:
        return top + ph * (1 - rate)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'role="img" aria-label="hit rate over time per replica">']
    for frac in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(frac):.1f}" y2="{y(frac):.1f}" '
                   'stroke="#e5e7eb"/>'
                   f'<text x="{left - 6}" y="{y(frac) + 4:.1f}" text-anchor="end" '
                   f'font-size="11">{int(frac * 100)}%</text>')
    # One axis label: the window, in UTC like the request table's arrival times.
    out.append(f'<text class="x-axis" x="{left + pw / 2:.1f}" y="{height - 8}" font-size="11" '
               f'text-anchor="middle">arrival time (UTC): {_esc(_utc(t0))} to '
               f'{_esc(_utc(t1))} ({span:.0f} s)</text>')
    names = sorted({p["replica"] for p in points})
    colors = {name: _COLORS[i % len(_COLORS)] for i, name in enumerate(names)}
    for key, series, line_style, dot_style in _SERIES:  # every band, then every dashed line
        for name in names:
            xy = [(x((p["start"] + p["end"]) / 2), y(p[key])) for p in points
                  if p["replica"] == name and p[key] is not None]
            if not xy:
                continue
            color, label = colors[name], _esc(name or "(none)")
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in xy)
            out.append(f'<g class="{series}" data-replica="{label}">'
                       f'<polyline points="{path}" fill="none" stroke="{color}" {line_style}/>')
            dots = dot_style.format(color=color)
            out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" {dots}/>' for a, b in xy]
            out.append("</g>")
    lx = left + pw + 12
    for i, name in enumerate(names):
        ly = top + 18 * i
        out.append(f'<rect x="{lx}" y="{ly}" width="12" height="12" fill="{colors[name]}"/>'
                   f'<text x="{lx + 18}" y="{ly + 10}" font-size="12">'
                   f'{_esc(name or "(none)")}</text>')
    ly = top + 18 * len(names) + 10
    for (_, series, line_style, _dots), dy in zip(_SERIES, (0, 16), strict=True):
        out.append(f'<g class="legend-{series}"><line x1="{lx}" x2="{lx + 22}" y1="{ly + dy - 4}" '
                   f'y2="{ly + dy - 4}" stroke="#374151" {line_style}/><text x="{lx + 28}" '
                   f'y="{ly + dy}" font-size="11">{series}</text></g>')
    note = ("reported on top: where", "equal, its dashes lie", "on the predicted band")
    out += [f'<text class="legend-note" x="{lx}" y="{ly + 34 + 12 * i}" font-size="10">'
            f"{line}</text>" for i, line in enumerate(note)]
    out.append("</svg>")
    return "".join(out)


def _bar_chart(report: AuditReport, width: int = 760) -> str:
    reasons = report.per_reason()
    if not reasons:
        return "<p>No miss.</p>"
    top = max(r["requests"] for r in reasons.values())
    left, bar, gap = 160, 22, 8
    height = len(reasons) * (bar + gap) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'role="img" aria-label="misses by reason">']
    for i, (reason, r) in enumerate(reasons.items()):
        yy = 5 + i * (bar + gap)
        w = (width - left - 200) * r["requests"] / top
        out.append(f'<text x="{left - 8}" y="{yy + 15}" text-anchor="end" font-size="12">'
                   f'{_esc(reason)}</text><rect x="{left}" y="{yy}" width="{w:.1f}" '
                   f'height="{bar}" fill="{_COLORS[1]}"/><text x="{left + w + 6:.1f}" '
                   f'y="{yy + 15}" font-size="12">{r["requests"]} request(s), '
                   f'{r["missed_tokens"]} tokens</text>')
    out.append("</svg>")
    return "".join(out)


#: A request row's class by outcome: each outcome has its own colour (see _CSS).
_ROW_CLASS: Final = {"full": "full", "partial": "partial", "miss": "miss", "error": "err"}


def _row(r: RequestAudit) -> str:
    cls = "err" if r.error else _ROW_CLASS.get(r.outcome, "miss")
    detail = r.error["message"] if r.error else r.detail
    reported = "" if r.reported_hit_tokens is None else r.reported_hit_tokens
    arrival = ("<td></td>" if r.arrival_time is None else
               f'<td title="{_esc(r.arrival_time)} (unix seconds)">{_esc(_utc(r.arrival_time))}'
               "</td>")
    cells = [_esc(c) for c in (r.line, "" if r.id is None else r.id, r.replica or "")]
    cells += [_esc(c) for c in (r.num_tokens, r.predicted_hit_tokens, reported,
                                 r.agreement or "", r.outcome, r.reason or "", detail)]
    return (f'<tr class="{cls}">' + "".join(f"<td>{c}</td>" for c in cells[:3]) + arrival
            + "".join(f"<td>{c}</td>" for c in cells[3:]) + "</tr>")


#: The agreement columns of the per-replica table, as the terminal summary counts them.
_AGREEMENTS: Final = ("match", "over", "under")


def _replica_rows(report: AuditReport) -> str:
    rows = []
    for name, s in report.per_replica().items():
        counts = "".join(f"<td>{s['agreement'].get(a, 0)}</td>" for a in _AGREEMENTS)
        rows.append(f"<tr><td>{_esc(name or '(none)')}</td><td>{s['requests']}</td>"
                    f"<td>{_pct(s['predicted_hit_rate'])}</td>"
                    f"<td>{_pct(s['reported_hit_rate'])}</td>{counts}</tr>")
    return "".join(rows)


_CSS: Final = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;
color:#111827;background:#fff}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{border:1px solid #d1d5db;border-radius:8px;padding:10px 14px;min-width:150px}
.card b{display:block;font-size:22px}
table{border-collapse:collapse;font-size:12px;width:100%}
th,td{border:1px solid #e5e7eb;padding:4px 6px;text-align:left;vertical-align:top}
th{background:#f3f4f6}tr.full td,.full{background:#dcfce7}
tr.partial td,.partial{background:#fef9c3}tr.miss td,.miss{background:#fee2e2}
tr.err td,.err{background:#e5e7eb}
.key span{display:inline-block;padding:2px 8px;margin-right:6px;font-size:12px}
"""


def audit_html(report: AuditReport, *, title: str = "prefixkey cache-hit audit") -> str:
    """One self-contained HTML page: summary cards, two SVG charts, the request table."""
    t = report.totals()
    cards = [("requests", t["requests"]), ("predicted hit rate", _pct(t["predicted_hit_rate"])),
             ("reported hit rate", _pct(t["reported_hit_rate"])),
             ("misses explained", sum(r["requests"] for r in report.per_reason().values())),
             ("errors", t["errors"])]
    head = ("<tr><th>line</th><th>id</th><th>replica</th><th>arrival (UTC)</th><th>tokens</th>"
            "<th>predicted hit</th><th>reported</th><th>agreement</th><th>outcome</th>"
            "<th>reason</th><th>detail</th></tr>")
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{_esc(title)}</h1><div class=\"cards\">"
        + "".join(f'<div class="card">{_esc(k)}<b>{_esc(v)}</b></div>' for k, v in cards)
        + "</div><h2>Hit rate over time, per replica (token-weighted)</h2>"
        + _line_chart(report)
        + "<h2>Misses by reason</h2>" + _bar_chart(report)
        + "<h2>Per replica</h2><table><tr><th>replica</th><th>requests</th>"
        "<th>predicted</th><th>reported</th>"
        + "".join(f"<th>{a}</th>" for a in _AGREEMENTS) + "</tr>" + _replica_rows(report)
        + "</table><p>match, over, under: requests whose reported cached_tokens equal, fall "
        "short of, exceed the predicted hit.</p>"
        + '<h2>Requests</h2><p class="key"><span class="full">full hit</span>'
        '<span class="partial">partial hit</span><span class="miss">miss</span>'
        '<span class="err">error</span></p><table>' + head
        + "".join(_row(r) for r in report.requests) + "</table></body></html>\n"
    )
