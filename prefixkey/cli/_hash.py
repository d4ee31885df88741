"""``prefixkey hash``: JSON Lines requests in, one result or error record per line out."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from typing import IO, Any

from ..errors import PrefixKeyError
from ..jsonl import (
    JsonLimits,
    bounded_lines,
    error_record,
    parse_json_line,
    parse_request,
    run_job,
)
from ._common import (
    Commands,
    add_limit_options,
    fail,
    input_name,
    json_limits,
    open_input,
    warn,
)
from ._render import add_render_options, rendered_lines, renderer_or_refusal
from ._render_url import add_render_url_options, render_url_expand

#: Turns one decoded line into the request lines to hash (a body into its prompts).
Expand = Callable[[Any], list[Any]]

__all__ = ["register"]


class _Tally:
    """What stderr reports: each distinct warning once (at its first line), then the failures."""

    def __init__(self) -> None:
        self.requests = 0
        self.failures = 0
        self.first_failure = ""
        self.warnings: Counter[str] = Counter()

    def warned(self, number: int, warnings: Iterable[str]) -> None:
        for warning in warnings:
            if not self.warnings[warning]:
                warn("hash", f"line {number}: {warning}")
            self.warnings[warning] += 1

    def failed(self, number: int, exc: PrefixKeyError) -> None:
        if not self.failures:
            self.first_failure = f"line {number}: {type(exc).__name__}: {exc}"
        self.failures += 1


def _hash_lines(lines: Iterable[bytes], out: IO[str], *, strict: bool, api_checks: bool,
                reject_unknown_fields: bool, limits: JsonLimits,
                expand: Expand | None = None) -> _Tally:
    """Hash every request line, writing one record each (one per prompt it expands to)."""
    tally = _Tally()
    for number, raw in enumerate(bounded_lines(lines, limits), start=1):
        if not raw.strip():
            continue
        tally.requests += 1
        request_id: Any = None
        records = []
        try:
            line_warnings: list[str] = []
            obj = parse_json_line(raw, limits, warnings=line_warnings)
            if isinstance(obj, dict):
                request_id = obj.get("id")
            for request in expand(obj) if expand is not None else [obj]:
                if isinstance(request, dict):
                    request_id = request.get("id")
                job = parse_request(request, strict=strict, api_checks=api_checks,
                                    reject_unknown_fields=reject_unknown_fields, limits=limits)
                record = run_job(job, request_id)
                record["warnings"][:0] = line_warnings
                tally.warned(number, record["warnings"])
                records.append(record)
        except PrefixKeyError as exc:
            tally.failed(number, exc)
            records.append(error_record(exc, request_id, number))
        for record in records:
            # ASCII output: any string a request echoes (even a lone surrogate) stays writable.
            out.write(json.dumps(record) + "\n")
    return tally


def _model_dir_expand(args: argparse.Namespace) -> Expand:
    """``--model-dir``: lines with ``endpoint`` + ``body`` are rendered, then hashed."""
    renderer = renderer_or_refusal(args, "hash")
    return lambda obj: rendered_lines(renderer, obj)


def _run(args: argparse.Namespace) -> int:
    expand: Expand | None = None
    if args.render_url is not None:
        try:
            expand = render_url_expand(args)
        except ImportError:
            return fail("hash", "--render-url needs the render extra: "
                        "pip install 'prefixkey[render]'")
        except PrefixKeyError as exc:
            return fail("hash", exc)
    elif args.model_dir is not None:
        try:
            expand = _model_dir_expand(args)
        except ImportError:
            return fail("hash", "--model-dir needs the render extra: "
                        "pip install 'prefixkey[render]'")
        except PrefixKeyError as exc:
            return fail("hash", exc)
    with open_input(args.file) as source:
        tally = _hash_lines(source, sys.stdout, strict=not args.lenient,
                            api_checks=not args.no_api_checks,
                            reject_unknown_fields=args.strict, limits=json_limits(args),
                            expand=expand)
    for warning, count in tally.warnings.items():
        if count > 1:
            warn("hash", f"{count - 1} more line(s): {warning}")
    if not tally.requests:
        warn("hash", f"no requests in {input_name(args.file)} (empty input), nothing hashed")
    if tally.failures:
        print(f"prefixkey hash: {tally.failures} request(s) could not be hashed "
              f"(first: {tally.first_failure})", file=sys.stderr)
    return 1 if tally.failures else 0


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
        "--strict", action="store_true",
        help="make an unknown request field (often a misspelling such as cache_slat, whose "
        "value would not be hashed) an error record instead of a warning",
    )
    cmd.add_argument(
        "--no-api-checks", action="store_true",
        help="skip the checks vLLM's API server makes (salt rules, non-empty LoRA path) and "
        "hash what the engine core would hash",
    )
    add_limit_options(cmd)
    add_render_options(cmd, required=False)
    add_render_url_options(cmd)
    cmd.set_defaults(run=_run)
