"""``prefixkey oracle``: check a foreign implementation of the JSON Lines format.

Needs the ``hypothesis`` extra, imported only when the command runs so that
the rest of the command line works without it. Exit statuses: 0 success, 1 a
mismatch, 2 a crashing or garbled implementation, bad arguments, or a missing
extra.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from ..core import DEFAULT_VLLM_VERSION
from ..errors import PrefixKeyError
from ._common import NO_HYPOTHESIS, Commands, add_json_option, fail

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    try:
        from ..testing import check_implementation
    except ImportError:
        return fail("oracle", NO_HYPOTHESIS)
    try:
        command = shlex.split(args.command)
    except ValueError as exc:
        return fail("oracle", f"--command: {exc}")
    features = None if args.features is None else [
        f.strip() for f in args.features.split(",") if f.strip()]
    try:
        report = check_implementation(
            command, vllm_version=args.vllm_version, max_examples=args.max_examples,
            seed=args.seed, compare=args.compare or ("block_hashes",), features=features,
            hash_algos=args.hash_algo or None, block_size=args.block_size,
            timeout=args.timeout,
        )
    except PrefixKeyError as exc:
        return fail("oracle", exc)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    elif report.ok:
        sys.stdout.write(f"passed {report.examples} requests (vLLM {report.vllm_version}, "
                         f"compared {', '.join(report.compared)})\n")
    else:
        sys.stdout.write(_failure_text(report.to_dict()))
    if report.ok:
        return 0
    return 1 if report.status == "mismatch" else 2


def _failure_text(report: dict[str, Any]) -> str:
    lines = [
        f"{report['status']} after {report['examples']} requests; minimal failing request:",
        json.dumps(report["request"]),
        *(f"  {difference}" for difference in report["differences"]),
    ]
    expected, got = report["expected"] or {}, report["got"]
    for name in report["compared"]:
        lines.append(f"expected {name}: {json.dumps(expected.get(name))}")
        if got is not None:
            shown = got.get("error") if "error" in got else got.get(name)
            lines.append(f"got      {name}: {json.dumps(shown)}")
    if report["stderr_tail"].strip():
        lines += ["implementation stderr (tail):", report["stderr_tail"].rstrip()]
    return "\n".join(lines) + "\n"


def register(commands: Commands) -> None:
    """Add ``prefixkey oracle``."""
    cmd = commands.add_parser(
        "oracle", help="check a foreign implementation of the JSON Lines format against "
        "prefixkey on generated requests, shrinking any mismatch (docs/oracle.md)",
    )
    cmd.add_argument("--command", required=True, metavar="CMD",
                     help="the implementation's command line (shell-quoted): it reads request "
                     "lines on stdin and writes one result line each")
    cmd.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION, metavar="X",
                     help="the release whose requests to generate "
                     f"(default {DEFAULT_VLLM_VERSION})")
    cmd.add_argument("--max-examples", type=int, default=200, metavar="N",
                     help="how many generated requests to check at most (default 200)")
    cmd.add_argument("--seed", type=int, default=None, metavar="S",
                     help="Hypothesis seed, to repeat a run exactly (default: random)")
    cmd.add_argument("--compare", action="append", metavar="FIELD",
                     help="a result field to compare (repeatable; default block_hashes)")
    cmd.add_argument("--features", default=None, metavar="LIST",
                     help="comma-separated request features to generate (default: all the "
                     "release keys): lora,cache_salt,mm_items,prompt_embeds,hash_calls,lookahead")
    cmd.add_argument("--hash-algo", action="append", metavar="ALGO",
                     help="only generate this algorithm (repeatable)")
    cmd.add_argument("--block-size", type=int, default=None, metavar="N",
                     help="only generate this block size (default: several)")
    cmd.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                     help="how long writing each request and reading its answer may take")
    add_json_option(cmd)
    cmd.set_defaults(run=_run)
