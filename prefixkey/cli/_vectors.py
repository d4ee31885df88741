"""``prefixkey vectors``: export a language-neutral golden-vector set for one release.

Needs the ``hypothesis`` extra, imported only when the command runs.
"""

from __future__ import annotations

import argparse

from ..core._checks import int_refusal
from ..errors import PrefixKeyError
from ._common import NO_HYPOTHESIS, Commands, fail

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    try:
        from ..testing import export_vectors
    except ImportError:
        return fail("vectors", NO_HYPOTHESIS)
    refusal = int_refusal(args.count)
    if refusal is not None:
        return fail("vectors", f"--count {refusal}")
    try:
        path = export_vectors(args.release, args.out, count=args.count, seed=args.seed)
    except PrefixKeyError as exc:
        return fail("vectors", exc)
    print(f"wrote {path} and {path.parent / 'README.md'}")
    return 0


def register(commands: Commands) -> None:
    """Add ``prefixkey vectors``."""
    cmd = commands.add_parser(
        "vectors", help="export a language-neutral golden-vector set for one release "
        "(docs/oracle.md)",
    )
    cmd.add_argument("--release", required=True, metavar="X", help="the vLLM release")
    cmd.add_argument("--out", required=True, metavar="DIR", help="output directory")
    cmd.add_argument("--count", type=int, default=100, metavar="N",
                     help="how many vector records to write (default 100)")
    cmd.add_argument("--seed", type=int, default=0, metavar="S",
                     help="generation seed: the same seed writes the same set (default 0)")
    cmd.set_defaults(run=_run)
