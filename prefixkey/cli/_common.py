"""Helpers the subcommands share: opening inputs, reporting on stderr and stdout, the subparsers
type."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Mapping
from typing import IO, Any, Final, TypeAlias

from ..core._checks import int_refusal
from ..errors import PrefixKeyError
from ..jsonl import JSON_LIMITS, JsonLimits

__all__ = [
    "NO_HYPOTHESIS", "Commands", "add_limit_options", "fail", "input_name", "json_limits",
    "open_input", "positive_int", "warn", "write_report",
]

#: Why ``oracle`` and ``vectors`` cannot run without the ``hypothesis`` extra.
NO_HYPOTHESIS = "needs Hypothesis: pip install 'prefixkey[hypothesis]'"

#: What ``ArgumentParser.add_subparsers`` returns; each command module registers on it.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def open_input(name: str) -> IO[bytes]:
    """The named file opened for binary reading, or stdin for ``-``."""
    return sys.stdin.buffer if name == "-" else open(name, "rb")


def positive_int(text: str) -> int:
    """An argparse type: an int >= 1."""
    value = int(text)
    refusal = int_refusal(value)
    if refusal is not None:
        raise argparse.ArgumentTypeError(refusal)
    return value


#: The deepest nesting ``--max-json-depth`` may allow: far below Python's recursion limit,
#: which the readers of the parsed values (renderer, checks) walk within.
MAX_JSON_DEPTH: Final = 256


def json_depth(text: str) -> int:
    """An argparse type: a nesting depth, 1 to :data:`MAX_JSON_DEPTH`."""
    value = positive_int(text)
    if value > MAX_JSON_DEPTH:
        raise argparse.ArgumentTypeError(f"must be <= {MAX_JSON_DEPTH}, got {value}")
    return value


def add_limit_options(cmd: argparse.ArgumentParser) -> None:
    """Add ``--max-line-bytes`` and ``--max-json-depth`` (docs/request-format.md, "Limits")."""
    cmd.add_argument(
        "--max-line-bytes", type=positive_int, default=JSON_LIMITS.max_line_bytes, metavar="N",
        help="refuse an input line longer than N bytes with an error for that line, and "
        f"read on (default {JSON_LIMITS.max_line_bytes}, 64 MiB)",
    )
    cmd.add_argument(
        "--max-json-depth", type=json_depth, default=JSON_LIMITS.max_depth, metavar="N",
        help="refuse an input line nesting arrays and objects deeper than N (default "
        f"{JSON_LIMITS.max_depth}; at most {MAX_JSON_DEPTH}): raise it for tool schemas "
        "nested deeper",
    )


def add_lenient_option(cmd: argparse.ArgumentParser, *, when: str = "") -> None:
    """Add ``--lenient``: every command reads a newer release the same way (``when``: the
    option it goes with, if any)."""
    cmd.add_argument("--lenient", action="store_true",
                     help=f"{when}read a vLLM release newer than any known one as the newest "
                     "era, saying so")


def add_json_option(cmd: argparse.ArgumentParser) -> None:
    """Add ``--json``, the report as one JSON document (:func:`write_report`)."""
    cmd.add_argument("--json", action="store_true", help="print the report as one JSON document")


def json_limits(args: argparse.Namespace) -> JsonLimits:
    """The input limits the options ask for."""
    return dataclasses.replace(JSON_LIMITS, max_line_bytes=args.max_line_bytes,
                               max_depth=args.max_json_depth)


def input_name(name: str) -> str:
    """How messages name an input: the path, or ``stdin`` for ``-``."""
    return "stdin" if name == "-" else name


def fail(command: str, error: PrefixKeyError | str) -> int:
    """Report a bad option or unreadable input on stderr; the exit status 2."""
    message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    print(f"prefixkey {command}: {message}", file=sys.stderr)
    return 2


def warn(command: str, message: str) -> None:
    """One warning line on stderr."""
    print(f"prefixkey {command}: warning: {message}", file=sys.stderr)


def write_report(args: argparse.Namespace, to_dict: Callable[[], Mapping[str, Any]],
                 text: Callable[[], str], html: Callable[[], str]) -> None:
    """A report's outputs: the HTML file first when ``--html FILE`` asks for it, then on
    stdout one JSON document (``--json``) or the text, which names the HTML file."""
    if args.html:
        with open(args.html, "w", encoding="utf-8") as out:
            out.write(html())
    if args.json:
        sys.stdout.write(json.dumps(to_dict()) + "\n")
    else:
        sys.stdout.write(text())
        if args.html:
            sys.stdout.write(f"HTML report written to {args.html}\n")
