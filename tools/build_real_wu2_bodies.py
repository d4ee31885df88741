"""Build ``tests/render/real_wu2_bodies.jsonl``: more Unigram / WordPiece rebuild folders.

Maintainer tool. The bodies of tools/build_real_wu_bodies.py over the folders of
:data:`FOLDERS` (tests/render/real/<name>/): the same real vocabularies under a
``tokenizer_config.json`` naming another rebuilding class (BarthezTokenizer,
DebertaV2Tokenizer, MPNetTokenizer: render/_hf_rebuilds.py). ``tools/harvest_render.py
--bodies tests/render/real_wu2_bodies.jsonl --out tests/render/real_wu2_vectors.jsonl
--port 18600`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_wu2_bodies.py [--out tests/render/real_wu2_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_lines
from corpus_io import RENDER_DIR, write_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"barthez_rule": False, "deberta_v2_rule": False, "mpnet_rule": False}


def build() -> list[dict[str, Any]]:
    return wu_lines(FOLDERS)


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_wu2_bodies.jsonl", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
