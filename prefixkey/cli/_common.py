"""Helpers the subcommands share: opening inputs, reporting on stderr, the subparsers type."""

from __future__ import annotations

import argparse
import sys
from typing import IO, TypeAlias

from ..errors import PrefixKeyError

__all__ = ["NO_HYPOTHESIS", "Commands", "fail", "input_name", "open_input", "warn"]

#: Why ``oracle`` and ``vectors`` cannot run without the ``hypothesis`` extra.
NO_HYPOTHESIS = "needs Hypothesis: pip install 'prefixkey[hypothesis]'"

#: What ``ArgumentParser.add_subparsers`` returns; each command module registers on it.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def open_input(name: str) -> IO[bytes]:
    """The named file opened for binary reading, or stdin for ``-``."""
    return sys.stdin.buffer if name == "-" else open(name, "rb")


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
