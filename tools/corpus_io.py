"""Writing a render corpus's bodies file: one JSON line per body, as the builders write it.

The ``build_*_bodies.py`` tools build body lines (``body``, ``endpoint``, ``id``,
``model_dir``, ``server``) and write them here, so every corpus file has one format
(sorted keys, UTF-8 as is but for the line breaks ``str.splitlines`` splits at) that
``tools/harvest_render.py`` and the tests read.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

#: Characters ``str.splitlines()`` breaks a line at that JSON leaves as they are.
_LINE_BREAKS: Final = ("\x85", "\u2028", "\u2029")


def write_bodies(path: Path, lines: Iterable[dict[str, Any]]) -> int:
    """Write ``lines`` to ``path`` as JSON Lines; the number written."""
    count = 0
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            text = json.dumps(line, ensure_ascii=False, sort_keys=True)
            for char in _LINE_BREAKS:  # escaped: a reader splitting lines would split there
                text = text.replace(char, f"\\u{ord(char):04x}")
            f.write(text + "\n")
            count += 1
    return count


def write_main(description: str, default_out: Path,
               build: Callable[[], Iterable[dict[str, Any]]],
               argv: list[str] | None = None) -> int:
    """A builder's command line: ``--out`` (default ``default_out``), then the lines."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    write_bodies(args.out, build())
    return 0
