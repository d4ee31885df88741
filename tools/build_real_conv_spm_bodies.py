"""Build ``tests/render/real_conv_spm_bodies.jsonl``: more classes converting SentencePiece.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a
SentencePiece model and no tokenizer.json, so its class converts the model
(render/_hf_converted.py), as tools/build_real_conv_bodies.py's folders do for other
classes: Gemma 3's vocabulary written as the tokenizer.model its tokenizer.json came from
(tests/real_models.py's ``spm_model`` edit; no registry ships Gemma's model file) under
GemmaTokenizer (a Gemma 3 folder: its config.json and tokenizer_config.json) and
Siglip2Tokenizer; Mistral 7B's BPE model (mistral_common 1.13.1's tokenizer.model.v1)
under CodeLlamaTokenizer (with Code Llama's infilling tokens); the sentencepiece 0.2.1
sdist's Unigram test model (with its nmt_nfkc charsmap) under ReformerTokenizer,
BigBirdTokenizer, DebertaV2Tokenizer, BarthezTokenizer, RemBertTokenizer, XGLMTokenizer
and FNetTokenizer (the generic backend's tokenizer with AlbertTokenizer's named tokens);
XLM-R's Unigram vocabulary (llama.cpp's GGUF) written as a SentencePiece model under
PegasusTokenizer. The bodies are tools/build_real_wu_bodies.py's. ``tools/harvest_render.py
--bodies tests/render/real_conv_spm_bodies.jsonl --out
tests/render/real_conv_spm_vectors.jsonl --port 19110`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_conv_spm_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_conv_spm_bodies.py [--out tests/render/real_conv_spm_bodies.jsonl]
    python tools/build_real_conv_spm_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"conv_gemma3": True, "conv_siglip2": True, "conv_code_llama": False,
           "conv_reformer": True, "conv_big_bird": False, "conv_deberta_v2": False,
           "conv_barthez": False, "conv_rembert": False, "conv_xglm": False,
           "conv_fnet": False, "conv_pegasus": True}


def build() -> list[dict[str, Any]]:
    return wu_lines(FOLDERS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_conv_spm_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
