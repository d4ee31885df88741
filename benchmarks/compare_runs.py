"""Compare benchmark reports of several revisions: the median of each ratio, per row.

The benchmarks' ratios (vLLM / prefixkey, ranking / hashing, ...) are measured inside one
process, so they move less with the machine's load than times do; on a shared machine they
still move. Given several reports per revision (the same script run again, the revisions
alternated), this prints one markdown table: per row (matched by ``--key`` columns) and
ratio column, each revision's median over its reports (and how many there were) and its
change against the first revision::

    python benchmarks/compare_runs.py --key replicas --key "prompt tokens" --key layout \\
        --column ratio --column "top-1 ratio" before=a1.md,a2.md after=b1.md,b2.md

A cell such as ``1.43x *`` reads as 1.43. Rows missing from a revision are left out.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = ["compare", "main", "tables"]

_NUMBER = re.compile(r"-?[\d,]*\.?\d+")


def tables(text: str) -> Iterator[list[dict[str, str]]]:
    """Every markdown table of ``text``, as rows of header -> cell."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in lines[i].strip().strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                rows.append(dict(zip(header, cells, strict=False)))
                i += 1
            yield rows
        else:
            i += 1


def _value(cell: str) -> float | None:
    match = _NUMBER.search(cell)
    return float(match.group(0).replace(",", "")) if match else None


def _samples(paths: Sequence[Path], keys: Sequence[str], columns: Sequence[str]
             ) -> dict[tuple[str, ...], dict[str, list[float]]]:
    out: dict[tuple[str, ...], dict[str, list[float]]] = {}
    for path in paths:
        for rows in tables(path.read_text(encoding="utf-8")):
            for row in rows:
                if not all(k in row for k in keys):
                    continue
                for column in columns:
                    value = _value(row.get(column, ""))
                    if value is not None:
                        key = tuple(row[k] for k in keys)
                        out.setdefault(key, {}).setdefault(column, []).append(value)
    return out


def compare(revisions: Sequence[tuple[str, Sequence[Path]]], keys: Sequence[str],
            columns: Sequence[str]) -> str:
    """The markdown table: per row and column, each revision's median and its change."""
    samples = [(name, _samples(paths, keys, columns)) for name, paths in revisions]
    first = samples[0][1]
    head = [*keys, "column", *(f"{name} (median, n)" for name, _ in samples),
            *(f"{name} vs {samples[0][0]}" for name, _ in samples[1:])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in first:
        for column in columns:
            found_all = [found.get(key, {}).get(column) for _, found in samples]
            if not all(found_all):
                continue
            medians = [(statistics.median(v), len(v)) for v in found_all if v]
            base = medians[0][0]
            cells = [*key, column, *(f"{m:.2f} ({n})" for m, n in medians)]
            cells += [f"{(m / base - 1) * 100:+.0f}%" if base else "n/a" for m, _ in medians[1:]]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--key", action="append", required=True,
                        help="a column that names a row (repeatable)")
    parser.add_argument("--column", action="append", required=True,
                        help="a ratio column to compare (repeatable)")
    parser.add_argument("revisions", nargs="+", metavar="NAME=REPORT[,REPORT...]")
    args = parser.parse_args(argv)
    revisions = []
    for spec in args.revisions:
        name, _, paths = spec.partition("=")
        revisions.append((name, [Path(p) for p in paths.split(",") if p]))
    sys.stdout.write(compare(revisions, args.key, args.column))
    return 0


if __name__ == "__main__":
    sys.exit(main())
