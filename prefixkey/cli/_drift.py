"""``prefixkey drift``: which requests keep their keys between two configurations."""

from __future__ import annotations

import argparse
import json
import sys

from ..analysis import DriftConfig, builtin_corpus, drift, drift_text, read_requests
from ..core import resolve_release
from ..errors import PrefixKeyError
from ._common import (
    Commands,
    add_json_option,
    add_lenient_option,
    add_limit_options,
    fail,
    input_name,
    json_limits,
    open_input,
    warn,
)

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    strict = not args.lenient
    line_warnings: list[str] = []
    try:
        from_config = DriftConfig.parse(args.source, strict=strict)
        to_config = DriftConfig.parse(args.target, strict=strict)
        if args.requests is None:
            requests = builtin_corpus()
        else:
            with open_input(args.requests) as source:
                requests = read_requests(source, json_limits(args), warnings=line_warnings)
        report = drift(from_config, to_config, requests, api_checks=not args.no_api_checks)
    except PrefixKeyError as exc:
        return fail("drift", exc)
    for warning in line_warnings:
        warn("drift", warning)
    for config in (from_config, to_config):
        if isinstance(config.vllm_version, str):  # a --lenient guess, said once, not per request
            for warning in resolve_release(config.vllm_version, strict=strict).warnings:
                warn("drift", warning)
    if not requests:
        warn("drift", f"no requests in {input_name(args.requests)} (empty input), "
             "nothing compared")
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
    spec = "VERSION[:key=value,...] with keys algo, seed, block_size, lookahead, python"
    cmd.add_argument("source", metavar="FROM", help=f"the current configuration: {spec}")
    cmd.add_argument("target", metavar="TO", help=f"the new configuration: {spec}")
    cmd.add_argument("requests", metavar="REQUESTS", nargs="?", default=None,
                     help="JSON Lines requests (- for stdin); default: the built-in corpus")
    add_json_option(cmd)
    add_lenient_option(cmd)
    cmd.add_argument(
        "--no-api-checks", action="store_true",
        help="skip the checks vLLM's API server makes (salt rules, non-empty LoRA path), as "
        "prefixkey hash --no-api-checks does",
    )
    add_limit_options(cmd)
    cmd.set_defaults(run=_run)
