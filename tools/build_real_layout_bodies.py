"""Build ``tests/render/real_layout_bodies.jsonl``: classes with their own call or tokens.

Maintainer tool. The bodies of tools/build_real_wu_bodies.py over the folders of
:data:`FOLDERS` (tests/render/real/<name>/), real vocabularies under a model type whose
registered class rebuilds the tokenizer and calls it its own way (render/_hf_rebuilds.py):
``markuplm_rule`` (MarkupLMTokenizer: a text is encoded as its whitespace-separated
words, pretokenized; Llama 3's byte-level vocabulary), ``udop_rule`` (UdopTokenizer,
whose call refuses a text: it wants words with boxes; the XLM-RoBERTa SentencePiece
vocabulary), ``lasr_rule`` (LasrTokenizer, T5's pipeline with its own unk id; the same
vocabulary) and ``dpr_context_rule`` (DPRContextEncoderTokenizer over bge-small-en-v1.5's
WordPiece vocabulary). ``tools/harvest_render.py --bodies
tests/render/real_layout_bodies.jsonl --out tests/render/real_layout_vectors.jsonl
--port 18540`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_layout_bodies.py [--out tests/render/real_layout_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import CHAT, COMPLETIONS, RENDER_DIR, _chat, _completions
from corpus_io import write_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"markuplm_rule": True, "udop_rule": True, "lasr_rule": False,
           "dpr_context_rule": False}


def build() -> list[dict[str, Any]]:
    lines = []
    for folder, template in FOLDERS.items():
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 512}
        for endpoint, bodies in ((CHAT, _chat(name, template)),
                                 (COMPLETIONS, _completions(name, False))):
            for ident, body in bodies:
                lines.append({"body": body, "endpoint": endpoint, "id": f"{folder}/{ident}",
                              "model_dir": f"real:{folder}", "server": server})
    return lines


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_layout_bodies.jsonl", build,
                      argv)


if __name__ == "__main__":
    raise SystemExit(main())
