"""``prefixkey fingerprint``: infer release family, algorithm and seed from KV events."""

from __future__ import annotations

import argparse
import json
import sys

from ..analysis import fingerprint, fingerprint_text, read_requests
from ..errors import PrefixKeyError
from ._common import Commands, fail, open_input

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    try:
        with open_input(args.events) as source:
            events = read_requests(source)
    except PrefixKeyError as exc:
        return fail("fingerprint", exc)
    report = fingerprint(events, seeds=args.seed)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    else:
        sys.stdout.write(fingerprint_text(report))
    return 0


def register(commands: Commands) -> None:
    """Add ``prefixkey fingerprint``."""
    cmd = commands.add_parser(
        "fingerprint",
        help="infer release family, algorithm and seed from KV events (docs/fingerprint.md)",
    )
    cmd.add_argument("events", metavar="EVENTS", help="JSON Lines BlockStored events, or -")
    cmd.add_argument("--seed", action="append", default=[], metavar="S",
                     help="a PYTHONHASHSEED value to try besides unset and '0' (repeatable)")
    cmd.add_argument("--json", action="store_true", help="print the report as one JSON document")
    cmd.set_defaults(run=_run)
