"""``prefixkey hash``: JSON Lines requests in, one result or error record per line out."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any, Final

from .._json_lines import dump_line
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
    add_lenient_option,
    add_limit_options,
    fail,
    input_name,
    json_limits,
    open_input,
    positive_int,
    warn,
)
from ._formats import wrong_kind_hint
from ._render import add_render_options, rendered_lines, renderer_or_refusal
from ._render_url import add_render_url_options, render_url_expand

#: Turns one decoded line into the request lines to hash (a body into its prompts),
#: appending the rendering's warnings to the list it is given.
Expand = Callable[[Any, list[str]], list[Any]]

__all__ = ["register"]

# The line kinds hash reads (_formats.line_kind); --model-dir and --render-url add bodies.
_READS = ("request",)


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

    def failed(self, number: int, error: dict[str, Any]) -> None:
        if not self.failures:
            hint = f"; hint: {error['hint']}" if "hint" in error else ""
            self.first_failure = f"line {number}: {error['type']}: {error['message']}{hint}"
        self.failures += 1


def _hash_lines(lines: Iterable[bytes], out: IO[str], *, strict: bool, api_checks: bool,
                reject_unknown_fields: bool, limits: JsonLimits,
                expand: Expand | None = None, allow_misspelled_fields: bool = False,
                defaults: Mapping[str, Any] | None = None) -> _Tally:
    """Hash every request line, writing one record each (one per prompt it expands to)."""
    tally = _Tally()
    for number, raw in enumerate(bounded_lines(lines, limits), start=1):
        if not raw.strip():
            continue
        tally.requests += 1
        request_id: Any = None
        obj: Any = None
        records = []
        try:
            line_warnings: list[str] = []
            obj = parse_json_line(raw, limits, warnings=line_warnings)
            if isinstance(obj, dict):
                request_id = obj.get("id")
            reads = _READS if expand is None else (*_READS, "body")
            # A BlockStored event has token_ids and block_size, but its keys chain from
            # its parent_block_hash: hashed alone, they are not the event's.
            if (hint := wrong_kind_hint(obj, "prefixkey hash", reads)) is not None:
                line_warnings.append(hint)
            for request in expand(obj, line_warnings) if expand is not None else [obj]:
                if isinstance(request, dict):
                    request_id = request.get("id")
                    if defaults:  # the options' values for the fields a line leaves out
                        request = {**defaults, **request}
                job = parse_request(request, strict=strict, api_checks=api_checks,
                                    reject_unknown_fields=reject_unknown_fields,
                                    allow_misspelled_fields=allow_misspelled_fields,
                                    limits=limits)
                record = run_job(job, request_id)
                record["warnings"][:0] = line_warnings
                tally.warned(number, record["warnings"])
                records.append(record)
        except PrefixKeyError as exc:
            record = error_record(exc, request_id, number)
            # A line of another format (a recording, a body without --model-dir): say so.
            hint = wrong_kind_hint(obj, "prefixkey hash",
                                   _READS if expand is None else (*_READS, "body"))
            if hint is not None and hint not in record["error"]["message"]:
                record["error"]["message"] += f" ({hint})"
            tally.failed(number, record["error"])
            records.append(record)
        for record in records:
            # ASCII output: any string a request echoes (even a lone surrogate) stays writable.
            out.write(dump_line(record) + "\n")
    return tally


def _model_dir_expand(args: argparse.Namespace) -> Expand:
    """``--model-dir``: lines with ``endpoint`` + ``body`` are rendered, then hashed."""
    renderer = renderer_or_refusal(args, "hash")
    return lambda obj, warnings: rendered_lines(renderer, obj, warnings)


#: Request fields an option of the same name sets for the lines without them.
_DEFAULT_FIELDS: Final = ("vllm_version", "hash_algo", "python_hash_seed", "block_size",
                          "lookahead")


def _line_defaults(args: argparse.Namespace) -> dict[str, Any]:
    """The request fields the options set for lines that leave them out."""
    return {field: getattr(args, field) for field in _DEFAULT_FIELDS
            if getattr(args, field, None) is not None}


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
        except PrefixKeyError as exc:  # a MissingExtraError names its extra (mistral)
            return fail("hash", exc)
        except ImportError:
            return fail("hash", "--model-dir needs the render extra: "
                        "pip install 'prefixkey[render]'")
    with open_input(args.file) as source:
        tally = _hash_lines(source, sys.stdout, strict=not args.lenient,
                            api_checks=not args.no_api_checks,
                            reject_unknown_fields=args.strict, limits=json_limits(args),
                            expand=expand,
                            allow_misspelled_fields=args.allow_misspelled_fields,
                            defaults=_line_defaults(args))
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
    add_lenient_option(cmd)
    cmd.add_argument(
        "--strict", action="store_true",
        help="make an unknown request field (often a misspelling such as cache_slat, whose "
        "value would not be hashed) an error record instead of a warning",
    )
    cmd.add_argument(
        "--allow-misspelled-fields", action="store_true",
        help="hash a line with an unknown field that looks like a misspelled key-changing "
        "field it lacks (cache_slat without cache_salt), with a warning, instead of making "
        "it an error record (the default: the key would be silently wrong)",
    )
    cmd.add_argument(
        "--no-api-checks", action="store_true",
        help="skip the checks vLLM's API server makes (salt rules, non-empty LoRA path) and "
        "hash what the engine core would hash",
    )
    defaults = cmd.add_argument_group(
        "defaults for lines without the field (rendered bodies have none; a line's own "
        "value wins)")
    defaults.add_argument("--block-size", type=positive_int, metavar="N",
                          help="the hash block size (block_size)")
    defaults.add_argument("--hash-algo", metavar="ALGO",
                          help="the algorithm (hash_algo; default: the release's default)")
    defaults.add_argument("--python-hash-seed", metavar="S",
                          help="the engine's PYTHONHASHSEED (python_hash_seed; default unset)")
    defaults.add_argument("--lookahead", type=int, metavar="N",
                          help="lookahead tokens per block (lookahead; 0.33+)")
    add_limit_options(cmd)
    add_render_options(cmd, required=False)
    add_render_url_options(cmd)
    cmd.set_defaults(run=_run)
