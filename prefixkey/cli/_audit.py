"""``prefixkey audit``: explain cache hits and misses from a recording and a request log."""

from __future__ import annotations

import argparse
import json
import sys

from ..analysis import DriftConfig, audit, audit_html, audit_text, parse_replica_option
from ..errors import PrefixKeyError
from ._common import Commands, fail

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    """Run the subcommand: 0 on success, 2 on a bad option or unreadable input."""
    try:
        replicas: dict[str, DriftConfig] = dict(map(parse_replica_option, args.replica))
        with open(args.recording, "rb") as rec, open(args.request_log, "rb") as log:
            report = audit(rec, log, replicas=replicas, clock_offset=args.clock_offset,
                           bucket_seconds=args.bucket, strict=not args.lenient)
    except PrefixKeyError as exc:
        return fail("audit", exc)
    if args.html:
        with open(args.html, "w", encoding="utf-8") as out:
            out.write(audit_html(report))
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    else:
        sys.stdout.write(audit_text(report, worst=args.worst))
        if args.html:
            sys.stdout.write(f"HTML report written to {args.html}\n")
    return 0


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
    cmd.add_argument("--lenient", action="store_true",
                     help="treat a release newer than any known one as the newest era")
    cmd.add_argument("--json", action="store_true", help="print the report as one JSON document")
    cmd.add_argument("--html", metavar="FILE", default=None,
                     help="also write a self-contained HTML report (inline CSS and SVG)")
    cmd.set_defaults(run=_run)
