"""Build ``tests/render/real_conv_files_bodies.jsonl``: folders with vocabulary files only.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a real
vocabulary as the slow files a Hugging Face folder has beside tokenizer.json, and no
tokenizer.json, so transformers hands the class's ``__init__`` their paths
(render/_hf_converted.py): vocab.json and merges.txt (tests/real_models.py ``bpe_files``)
of Qwen3's, Llama 3's, DeepSeek V3's, CLIP's and Whisper's BPE vocabularies, vocab.txt
(``gguf`` ``wordpiece_vocab_txt``) of bge-small-en-v1.5's WordPiece one. ``conv_qwen3``,
``conv_gpt2``, ``conv_roberta`` and ``conv_bert`` are Qwen3's, GPT-2-, RoBERTa- and
BERT-style folders; the others are the ``*_rule`` folders of the rebuild corpora
(tokenizer_config.json and config.json copied) with their tokenizer.json's vocabulary
written as those files; ``conv_whisper`` is ``whisper_rule``'s with its added tokens as
tokenizer_config.json's ``added_tokens_decoder`` (``added_tokens_decoder``), as Whisper's
hub folders hold them, ``conv_whisper_bare`` without them (its prefix tokens are then the
unk token). The bodies are tools/build_real_wu_bodies.py's.
``tools/harvest_render.py --bodies tests/render/real_conv_files_bodies.jsonl --out
tests/render/real_conv_files_vectors.jsonl --port 19151`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_conv_files_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_conv_files_bodies.py [--out tests/render/real_conv_files_bodies.jsonl]
    python tools/build_real_conv_files_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {
    "conv_qwen3": True, "conv_gpt2": True, "conv_roberta": False, "conv_bert": False,
    "conv_blenderbot": True, "conv_clip": True, "conv_codegen": True, "conv_cohere": False,
    "conv_deberta": True, "conv_distilbert_cased": True, "conv_dpr_context": False,
    "conv_dpr": False, "conv_funnel": False, "conv_gpt_neox": True, "conv_herbert": True,
    "conv_layoutlmv2": True, "conv_layoutlmv3": True, "conv_markuplm": True,
    "conv_mpnet": False, "conv_nougat": True, "conv_openai_gpt": True, "conv_splinter": True,
    "conv_whisper": True, "conv_whisper_bare": True,
}


def build() -> list[dict[str, Any]]:
    return wu_lines(FOLDERS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_conv_files_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
