"""Build ``tests/render/real_luke_bodies.jsonl``: LUKE's, mLUKE's and DPR's reader classes.

Maintainer tool. The bodies of tools/build_real_wu_bodies.py, and a text naming the
entity tokens, over the folders of :data:`FOLDERS` (tests/render/real/<name>/): a GPT-2
config vLLM starts for whose tokenizer_config.json names a class whose own model type
vLLM does not start for (render/_hf_rebuilds.py): ``luke_rule`` (LukeTokenizer over
GPT-2's byte-level vocabulary, openai-whisper's gpt2.tiktoken: RoBERTa's BPE with other
ids), ``luke_task_rule`` (the same with ``task`` set: its call wants entity spans and
refuses a text), ``mluke_rule`` (MLukeTokenizer over the XLM-RoBERTa SentencePiece
vocabulary, llama.cpp's GGUF) and ``dpr_reader_rule`` (DPRReaderTokenizer over
bge-small-en-v1.5's WordPiece vocabulary). ``tools/harvest_render.py --bodies
tests/render/real_luke_bodies.jsonl --out tests/render/real_luke_vectors.jsonl --port
19510`` records vLLM 0.31's answers; the ``real_luke_0XY_`` copies (``--out
tests/render/real_luke_0XY_bodies.jsonl``) are harvested with ``--vllm-python
/work/venvs/vllm0XY/bin/python`` (``_033_`` by the 0.33 overlay, docs/render-releases.md).

Usage::

    python tools/build_real_luke_bodies.py [--out tests/render/real_luke_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

import build_real_wu_bodies as wu
from build_real_wu_bodies import wu_lines
from corpus_io import RENDER_DIR, write_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"luke_rule": True, "luke_task_rule": False, "mluke_rule": True,
           "dpr_reader_rule": False}
#: The entity keywords' tokens (added as special tokens by both LUKE classes).
ENTITY_TEXTS = {"entities": "<ent> Tokyo <ent2> is a [MASK] city [MASK2] and [UNK] [PAD] "
                            "<ent><ent2>x"}


def build() -> list[dict[str, Any]]:
    lines = []
    saved = dict(wu.TEXTS)
    wu.TEXTS.update(ENTITY_TEXTS)
    try:
        lines += wu_lines(FOLDERS)
    finally:
        wu.TEXTS.clear()
        wu.TEXTS.update(saved)
    return lines


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_luke_bodies.jsonl", build,
                      argv)


if __name__ == "__main__":
    raise SystemExit(main())
