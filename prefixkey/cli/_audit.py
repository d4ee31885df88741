"""``prefixkey audit``: explain cache hits and misses from a recording and a request log."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..analysis import (
    AuditReport,
    DriftConfig,
    audit,
    audit_html,
    audit_text,
    parse_replica_option,
)
from ..errors import PrefixKeyError
from ..jsonl import JsonLimits, bounded_lines, parse_json_line
from ._common import (
    Commands,
    add_json_option,
    add_lenient_option,
    add_limit_options,
    fail,
    json_limits,
    warn,
    write_report,
)

__all__ = ["register"]


def _first_object(path: str, limits: JsonLimits) -> Any:
    """The first line of ``path`` decoded, or None (blank file, not JSON)."""
    with open(path, "rb") as lines:
        for raw in bounded_lines(lines, limits):
            if raw.strip():
                try:
                    return parse_json_line(raw, limits)
                except PrefixKeyError:
                    return None
    return None


def _has(obj: Any, key: str) -> bool:
    return isinstance(obj, dict) and key in obj


def _nothing_audited(report: AuditReport, args: argparse.Namespace) -> int:
    """Say on stderr why no request could be audited; the exit status 1."""
    rows = report.requests
    if not rows:
        print(f"prefixkey audit: no requests in {args.request_log} (empty input), "
              "nothing audited", file=sys.stderr)
    else:
        first = next(r for r in rows if r.error is not None)
        assert first.error is not None
        print(f"prefixkey audit: nothing audited: none of the {len(rows)} request line(s) "
              f"could be audited (first: line {first.line}: {first.error['type']}: "
              f"{first.error['message']})", file=sys.stderr)
    # A recording line carries frames_b64, a request token_ids: the usual mistake is the order.
    limits = json_limits(args)
    if _has(_first_object(args.request_log, limits), "frames_b64") or _has(
            _first_object(args.recording, limits), "token_ids"):
        print("prefixkey audit: hint: the arguments look swapped: the RECORDING (KV-event "
              "messages, frames_b64) comes first, then the REQUEST_LOG (requests)",
              file=sys.stderr)
    return 1


def _run(args: argparse.Namespace) -> int:
    """Run the subcommand: 0 on success, 1 if nothing could be audited, 2 on a bad option or
    unreadable input."""
    try:
        replicas: dict[str, DriftConfig] = dict(
            parse_replica_option(spec, strict=not args.lenient) for spec in args.replica)
        with open(args.recording, "rb") as rec, open(args.request_log, "rb") as log:
            report = audit(rec, log, replicas=replicas, clock_offset=args.clock_offset,
                           bucket_seconds=args.bucket, strict=not args.lenient,
                           framing=args.framing, limits=json_limits(args))
    except PrefixKeyError as exc:
        return fail("audit", exc)
    recorded = report.recording
    if not recorded["messages"] and not recorded["errors"]:
        warn("audit", f"no messages in {args.recording} (empty input): every request meets "
             "an empty cache")
    write_report(args, report.to_dict, lambda: audit_text(report, worst=args.worst),
                 lambda: audit_html(report))
    return 0 if report.audited() else _nothing_audited(report, args)


def register(commands: Commands) -> None:
    """Add ``prefixkey audit``."""
    cmd = commands.add_parser(
        "audit", help="predicted vs reported prefix-cache hits, and why each miss happened "
        "(docs/audit.md)")
    cmd.add_argument("recording", metavar="RECORDING",
                     help="JSON Lines recording of KV-event messages (docs/events.md)")
    cmd.add_argument("request_log", metavar="REQUEST_LOG",
                     help="JSON Lines requests with replica, arrival_time, cached_tokens")
    cmd.add_argument("--replica", action="append", default=[],
                     metavar="NAME=VERSION[:algo=..,seed=..,block_size=..]",
                     help="a replica's scheme (repeatable); default: each request's fields")
    cmd.add_argument("--clock-offset", type=float, default=0.0, metavar="S",
                     help="seconds added to arrival_time to reach the recording's recv_time "
                     "clock (default 0)")
    cmd.add_argument("--bucket", type=float, default=None, metavar="S",
                     help="timeline bucket width in seconds (default: span / 12, rounded)")
    cmd.add_argument("--worst", type=int, default=10, metavar="N",
                     help="how many worst requests the summary lists (default 10)")
    cmd.add_argument("--framing", choices=("pub", "replay"), default=None,
                     help="framing of the recording lines whose \"via\" and frame count do "
                     "not tell (default pub; docs/events.md)")
    add_lenient_option(cmd)
    add_json_option(cmd)
    cmd.add_argument("--html", metavar="FILE", default=None,
                     help="also write a self-contained HTML report (inline CSS and SVG)")
    add_limit_options(cmd)
    cmd.set_defaults(run=_run)
