"""``prefixkey events decode``: a recording of KV-event messages, one JSON result per message."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import PrefixKeyError
from ..events import EventDecoder, decode_recording
from ._common import (
    Commands,
    add_lenient_option,
    add_limit_options,
    fail,
    input_name,
    json_limits,
    open_input,
    warn,
)

__all__ = ["register"]


def _run_decode(args: argparse.Namespace) -> int:
    try:
        decoder = EventDecoder(args.vllm_version, strict=not args.lenient)
    except PrefixKeyError as exc:
        return fail("events decode", exc)
    for warning in decoder.version_warnings:
        print(f"prefixkey events decode: warning: {warning}", file=sys.stderr)
    failures = messages = 0
    with open_input(args.recording) as source:
        for record in decode_recording(source, decoder, framing=args.framing,
                                       limits=json_limits(args)):
            messages += 1
            failures += "error" in record
            sys.stdout.write(json.dumps(record) + "\n")
    if not messages:
        warn("events decode", f"no messages in {input_name(args.recording)} (empty input), "
             "nothing decoded")
    if decoder.ignored:
        ignored = ", ".join(f"{key} x{n}" for key, n in sorted(decoder.ignored.items()))
        print(f"prefixkey events decode: ignored unknown fields: {ignored}", file=sys.stderr)
    if failures:
        print(f"prefixkey events decode: {failures} message(s) could not be decoded",
              file=sys.stderr)
    return 1 if failures else 0


def register(commands: Commands) -> None:
    """Add ``prefixkey events`` and its ``decode`` subcommand."""
    events = commands.add_parser("events", help="vLLM KV-event messages (docs/events.md)")
    sub = events.add_subparsers(dest="events_command", required=True)
    cmd = sub.add_parser(
        "decode", help="decode a recording of KV-event messages, one JSON result per message"
    )
    cmd.add_argument("recording", metavar="RECORDING",
                     help="JSON Lines recording (docs/events.md), or - for stdin")
    cmd.add_argument("--vllm-version", required=True, metavar="X",
                     help="the publishing replica's vLLM release (0.9.0+)")
    cmd.add_argument("--framing", choices=("pub", "replay"), default=None,
                     help="framing of the lines whose \"via\" and frame count do not tell: "
                     "PUB messages [topic, seq, payload] (default) or replay replies")
    add_lenient_option(cmd)
    add_limit_options(cmd)
    cmd.set_defaults(run=_run_decode)
