"""The ``prefixkey`` command line: an edge over the library, reading and writing JSON Lines.

One private module per command (``_hash``, ``_drift``, …), each with a
``register`` that adds its subparser; ``_common`` holds what they share.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .._version import __version__
from . import (
    _audit,
    _drift,
    _events,
    _fingerprint,
    _hash,
    _listen,
    _mm_id,
    _oracle,
    _render,
    _simulate,
    _vectors,
)
from ._formats import swapped_version

__all__ = ["build_parser", "main"]

# In the order `prefixkey --help` lists them.
_COMMANDS = (
    _hash, _render, _mm_id, _drift, _fingerprint, _events, _listen, _audit, _oracle, _vectors,
    _simulate,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``prefixkey`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="prefixkey", description="vLLM prefix-cache block keys, bit for bit."
    )
    parser.add_argument("--version", action="version", version=f"prefixkey {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in _COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (0 success, 1 failed input, 2 unusable arguments)."""
    args = build_parser().parse_args(argv)
    if (swapped := swapped_version(args)) is not None:
        print(f"prefixkey {args.command}: {swapped}", file=sys.stderr)
        return 2
    try:
        return int(args.run(args))
    except BrokenPipeError:
        # The reader went away (`prefixkey hash … | head`): stop without a
        # message and with the status of a tool SIGPIPE ended (128 + 13); stdout
        # goes to devnull so that Python's flush at exit does not complain.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        print(f"prefixkey: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
