"""``prefixkey hash``: JSON Lines requests in, one result or error record per line out."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import IO, Any

from ..errors import PrefixKeyError
from ..jsonl import error_record, parse_json_line, parse_request, run_job
from ._common import Commands, open_input

__all__ = ["register"]


def _hash_lines(lines: Iterable[bytes], out: IO[str], *, strict: bool, api_checks: bool) -> int:
    """Hash every request line; return how many failed."""
    failures = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        request_id: Any = None
        try:
            obj = parse_json_line(raw)
            if isinstance(obj, dict):
                request_id = obj.get("id")
            job = parse_request(obj, strict=strict, api_checks=api_checks)
            record = run_job(job, request_id)
        except PrefixKeyError as exc:
            failures += 1
            record = error_record(exc, request_id, number)
        # ASCII output: any string a request echoes (even a lone surrogate) stays writable.
        out.write(json.dumps(record) + "\n")
    return failures


def _run(args: argparse.Namespace) -> int:
    with open_input(args.file) as source:
        failures = _hash_lines(
            source, sys.stdout, strict=not args.lenient, api_checks=not args.no_api_checks
        )
    if failures:
        print(f"prefixkey: {failures} request(s) could not be hashed", file=sys.stderr)
    return 1 if failures else 0


def register(commands: Commands) -> None:
    """Add ``prefixkey hash``."""
    cmd = commands.add_parser(
        "hash", help="hash JSON Lines requests (docs/request-format.md), one result per line"
    )
    cmd.add_argument("file", nargs="?", default="-", help="request file, or - for stdin")
    cmd.add_argument(
        "--lenient", action="store_true",
        help="map a vLLM release newer than any known one to the newest era (with a warning)",
    )
    cmd.add_argument(
        "--no-api-checks", action="store_true",
        help="skip the checks vLLM's API server makes (salt rules, non-empty LoRA path) and "
        "hash what the engine core would hash",
    )
    cmd.set_defaults(run=_run)
