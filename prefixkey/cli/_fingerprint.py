"""``prefixkey fingerprint``: infer release family, algorithm and seed from KV events.

The input is BlockStored events as JSON Lines, or with ``--vllm-version`` a
recording of KV-event messages (what ``prefixkey listen --record`` writes),
decoded first.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import IO, Any

from ..analysis import block_stored_events, fingerprint, fingerprint_text, read_requests
from ..errors import PrefixKeyError
from ..events import EventDecoder, decode_recording
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
from ._formats import wrong_kind_of_lines

__all__ = ["register"]


def _recorded_events(source: IO[bytes], args: argparse.Namespace) -> list[Mapping[str, Any]]:
    """The recording's BlockStored events; undecodable messages are said on stderr."""
    decoder = EventDecoder(args.vllm_version, strict=not args.lenient)
    for warning in decoder.version_warnings:
        warn("fingerprint", warning)
    messages = list(decode_recording(source, decoder, limits=json_limits(args)))
    failed = [m["error"] for m in messages if "error" in m]
    if failed:
        first = failed[0]
        warn("fingerprint", f"{len(failed)} of {len(messages)} message(s) could not be decoded "
             f"and were left out (first: line {first['line']}: {first['type']}: "
             f"{first['message']})")
    return list(block_stored_events(messages))


def _looks_recorded(events: list[Any]) -> bool:
    return any(isinstance(e, Mapping) and "frames_b64" in e for e in events)


def _run(args: argparse.Namespace) -> int:
    line_warnings: list[str] = []
    try:
        with open_input(args.events) as source:
            if args.vllm_version is None:
                events = read_requests(source, json_limits(args), warnings=line_warnings)
            else:
                events = _recorded_events(source, args)
    except PrefixKeyError as exc:
        return fail("fingerprint", exc)
    for warning in line_warnings:
        warn("fingerprint", warning)
    report = fingerprint(events, seeds=args.seed)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    else:
        sys.stdout.write(fingerprint_text(report))
    if report.verdict != "no_events":
        return 0
    name = input_name(args.events)
    if not report.events_total:
        what = "messages" if args.vllm_version else "events"
        print(f"prefixkey fingerprint: no BlockStored {what} in {name}, nothing fingerprinted",
              file=sys.stderr)
    else:
        print(f"prefixkey fingerprint: none of the {report.events_total} event(s) in {name} "
              "is usable (see the skipped reasons), nothing fingerprinted", file=sys.stderr)
    if args.vllm_version is None and _looks_recorded(events):
        print(f"prefixkey fingerprint: hint: {name} looks like a recording of KV-event "
              "messages: pass --vllm-version X (the replica's release) to decode it",
              file=sys.stderr)
    elif args.vllm_version is None and (
            hint := wrong_kind_of_lines(events, "prefixkey fingerprint", ("event",), name)):
        print(f"prefixkey fingerprint: hint: {hint}", file=sys.stderr)
    return 1


def register(commands: Commands) -> None:
    """Add ``prefixkey fingerprint``."""
    cmd = commands.add_parser(
        "fingerprint",
        help="infer release family, algorithm and seed from KV events (docs/fingerprint.md)",
    )
    cmd.add_argument("events", metavar="EVENTS",
                     help="JSON Lines BlockStored events, or with --vllm-version a recording "
                     "of KV-event messages (docs/events.md); - for stdin")
    cmd.add_argument("--vllm-version", metavar="X", default=None,
                     help="read EVENTS as a recording and decode it as this release publishes "
                     "(0.9.0+); the candidates tried stay all releases")
    add_lenient_option(cmd, when="with --vllm-version: ")
    cmd.add_argument("--seed", action="append", default=[], metavar="S",
                     help="a PYTHONHASHSEED value to try besides unset and '0' (repeatable)")
    add_json_option(cmd)
    add_limit_options(cmd)
    cmd.set_defaults(run=_run)
