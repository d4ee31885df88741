"""Build ``tests/render/real_layout_bodies.jsonl``: classes with their own call or tokens.

Maintainer tool. The bodies of tools/build_real_wu_bodies.py over the folders of
:data:`FOLDERS` (tests/render/real/<name>/), real vocabularies under a model type whose
registered class rebuilds the tokenizer and calls it its own way (render/_hf_rebuilds.py):
``markuplm_rule`` (MarkupLMTokenizer: a text is encoded as its whitespace-separated
words, pretokenized; Llama 3's byte-level vocabulary), ``udop_rule`` (UdopTokenizer,
whose call refuses a text: it wants words with boxes; the XLM-RoBERTa SentencePiece
vocabulary), ``lasr_rule`` (LasrTokenizer, T5's pipeline with its own unk id; the same
vocabulary), ``dpr_context_rule`` (DPRContextEncoderTokenizer over bge-small-en-v1.5's
WordPiece vocabulary) and ``esmc_rule`` (EsmcTokenizer, whose model is its own amino acid
vocabulary whatever the file's: bge-small-en-v1.5's tokenizer.json, whose added tokens
stay; amino acid sequences added to the texts); ``layoutlmv2_rule``,
``layoutlmv3_rule`` and ``layoutxlm_rule`` name LayoutLMv2Tokenizer, LayoutLMv3Tokenizer
and LayoutXLMTokenizer (whose model types vLLM does not start for) as the hub class of a
GPT-2 folder it starts for: their call refuses a text, as Udop's.
``tools/harvest_render.py --bodies tests/render/real_layout_bodies.jsonl --out
tests/render/real_layout_vectors.jsonl --port 18540`` records vLLM 0.31's answers; the
``real_layout_030_``, ``real_layout_032_`` and ``real_layout_033_`` copies (``--out
tests/render/real_layout_0XY_bodies.jsonl``) are harvested with ``--vllm-python
/work/venvs/vllm0XY/bin/python`` (0.33: the overlay, docs/render-releases.md).

Usage::

    python tools/build_real_layout_bodies.py [--out tests/render/real_layout_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

import build_real_wu_bodies as wu
from build_real_wu_bodies import CHAT, COMPLETIONS, _chat, _completions
from corpus_io import RENDER_DIR, folder_lines, write_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"markuplm_rule": True, "udop_rule": True, "lasr_rule": False,
           "dpr_context_rule": False, "esmc_rule": False, "layoutlmv2_rule": True,
           "layoutlmv3_rule": True, "layoutxlm_rule": True}
#: Amino acid sequences, for the folders of EsmcTokenizer (one token per letter).
PROTEIN_TEXTS = {"protein": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ",
                 "chains": "ACDEFG|HIKLMN|<mask>PQ", "protein-lower": "mktayiakqr ACD-EF.G"}
PROTEIN_FOLDERS = frozenset({"esmc_rule"})


def _bodies(folder: str, template: bool) -> list[dict[str, Any]]:
    name = f"real-{folder}"
    server = {"--served-model-name": name, "--max-model-len": 512}
    return folder_lines(folder, server, ((CHAT, _chat(name, template)),
                                         (COMPLETIONS, _completions(name, False))))


def build() -> list[dict[str, Any]]:
    lines = []
    for folder, template in FOLDERS.items():
        saved = dict(wu.TEXTS)
        if folder in PROTEIN_FOLDERS:
            wu.TEXTS.update(PROTEIN_TEXTS)
        try:
            lines += _bodies(folder, template)
        finally:
            wu.TEXTS.clear()
            wu.TEXTS.update(saved)
    return lines


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_layout_bodies.jsonl", build,
                      argv)


if __name__ == "__main__":
    raise SystemExit(main())
