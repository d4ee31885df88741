"""Writing a render corpus's bodies file: one JSON line per body, as the builders write it.

The ``build_*_bodies.py`` tools build body lines (``body``, ``endpoint``, ``id``,
``model_dir``, ``server``) and write them here, so every corpus file has one format
(sorted keys, UTF-8 as is but for the line breaks ``str.splitlines`` splits at) that
``tools/harvest_render.py`` and the tests read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

#: Where the corpora, their answers and the kept releases live.
RENDER_DIR: Final = Path(__file__).resolve().parent.parent / "tests" / "render"

#: A corpus's bodies for one endpoint: each body with its id within the folder.
Bodies = Iterable[tuple[str, dict[str, Any]]]

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


def text_prompts(texts: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """Each text as a completions prompt, then again without special tokens
    (``<key>-no-specials``)."""
    bodies: list[tuple[str, dict[str, Any]]] = []
    for key, text in texts.items():
        bodies.append((key, {"prompt": text}))
        bodies.append((f"{key}-no-specials", {"prompt": text, "add_special_tokens": False}))
    return bodies


def folder_lines(folder: str, server: dict[str, Any], endpoints: Iterable[tuple[str, Bodies]],
                 model_dir: str | None = None) -> list[dict[str, Any]]:
    """The body lines of one folder served with ``server``'s flags: each endpoint's bodies
    in order, ids ``<folder>/<ident>``; ``model_dir`` by default the real folder
    ``real:<folder>``."""
    return [{"body": body, "endpoint": endpoint, "id": f"{folder}/{ident}",
             "model_dir": model_dir or f"real:{folder}", "server": server}
            for endpoint, bodies in endpoints for ident, body in bodies]


def write_main(description: str, default_out: Path,
               build: Callable[[], Iterable[dict[str, Any]]],
               argv: list[str] | None = None) -> int:
    """A builder's command line: ``--out`` (default ``default_out``), then the lines."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    write_bodies(args.out, build())
    return 0


def corpus_main(description: str, corpus: str, build: Callable[[], Iterable[dict[str, Any]]],
                argv: list[str] | None = None) -> int:
    """A kept-release corpus builder's command line: ``--keep-release RELEASE DIR`` keeps
    another release's answers to ``corpus`` (``DIR/<corpus>vectors.jsonl``) under
    tests/render/releases/RELEASE/ (tools/build_python_bodies.py), otherwise
    :func:`write_main` into ``tests/render/<corpus>bodies.jsonl``."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--keep-release"] and len(args) == 3:
        from build_python_bodies import keep_release

        keep_release(args[1], Path(args[2]), (corpus,))
        return 0
    return write_main(description, RENDER_DIR / f"{corpus}bodies.jsonl", build, args)
