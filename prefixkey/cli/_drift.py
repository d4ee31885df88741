"""``prefixkey drift``: which requests keep their keys between two configurations."""

from __future__ import annotations

import argparse
import json
import sys

from ..analysis import DriftConfig, builtin_corpus, drift, drift_text, read_requests
from ..errors import PrefixKeyError
from ._common import Commands, fail, open_input

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    try:
        from_config, to_config = DriftConfig.parse(args.source), DriftConfig.parse(args.target)
        if args.requests is None:
            requests = builtin_corpus()
        else:
            with open_input(args.requests) as source:
                requests = read_requests(source)
        report = drift(from_config, to_config, requests)
    except PrefixKeyError as exc:
        return fail("drift", exc)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    else:
        sys.stdout.write(drift_text(report))
    return 0


def register(commands: Commands) -> None:
    """Add ``prefixkey drift``."""
    cmd = commands.add_parser(
        "drift", help="which requests keep their keys between two configurations (docs/drift.md)"
    )
    spec = "VERSION[:key=value,...] with keys algo, seed, block_size, lookahead"
    cmd.add_argument("source", metavar="FROM", help=f"the current configuration: {spec}")
    cmd.add_argument("target", metavar="TO", help=f"the new configuration: {spec}")
    cmd.add_argument("requests", metavar="REQUESTS", nargs="?", default=None,
                     help="JSON Lines requests (- for stdin); default: the built-in corpus")
    cmd.add_argument("--json", action="store_true", help="print the report as one JSON document")
    cmd.set_defaults(run=_run)
