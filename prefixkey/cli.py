"""The ``prefixkey`` command line: an edge over the library, reading and writing JSON Lines."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

from . import __version__
from .errors import MalformedJSONError, PrefixKeyError
from .jsonl import error_record, parse_request, run_job

__all__ = ["main"]


def _hash_lines(lines: Iterable[bytes], out: IO[str], *, strict: bool, api_checks: bool) -> int:
    """Hash every request line; return how many failed."""
    failures = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        request_id: Any = None
        try:
            try:
                obj = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise MalformedJSONError(f"not UTF-8: byte {exc.start} is invalid") from None
            except json.JSONDecodeError as exc:
                raise MalformedJSONError(
                    f"invalid JSON: {exc.msg} at column {exc.colno}"
                ) from None
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


def _cmd_hash(args: argparse.Namespace) -> int:
    source = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    with source:
        failures = _hash_lines(
            source, sys.stdout, strict=not args.lenient, api_checks=not args.no_api_checks
        )
    if failures:
        print(f"prefixkey: {failures} request(s) could not be hashed", file=sys.stderr)
    return 1 if failures else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prefixkey", description="vLLM prefix-cache block keys, bit for bit."
    )
    parser.add_argument("--version", action="version", version=f"prefixkey {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    hash_cmd = commands.add_parser(
        "hash", help="hash JSON Lines requests (docs/request-format.md), one result per line"
    )
    hash_cmd.add_argument("file", nargs="?", default="-", help="request file, or - for stdin")
    hash_cmd.add_argument(
        "--lenient", action="store_true",
        help="map a vLLM release newer than any known one to the newest era (with a warning)",
    )
    hash_cmd.add_argument(
        "--no-api-checks", action="store_true",
        help="skip the checks vLLM's API server makes (salt rules, non-empty LoRA path) and "
        "hash what the engine core would hash",
    )
    hash_cmd.set_defaults(run=_cmd_hash)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except OSError as exc:
        print(f"prefixkey: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
