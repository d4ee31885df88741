"""Build ``tests/render/real_conv_bodies.jsonl``: bodies over folders without tokenizer.json.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a real
SentencePiece model and no tokenizer.json, so transformers converts it
(render/_hf_converted.py): Mistral 7B's BPE model (mistral_common 1.13.1's
tokenizer.model.v1) as LlamaTokenizer's tokenizer.model, with Llama 2's
tokenizer_config.json (``add_bos_token``) and without it, and as the generic backend's
(PreTrainedTokenizerFast, ``add_bos_token``); the sentencepiece 0.2.1 sdist's Unigram test
model (with its nmt_nfkc charsmap) under T5Tokenizer, AlbertTokenizer, XLNetTokenizer,
CamembertTokenizer, XLMRobertaTokenizer and the generic backend. The bodies are
tools/build_real_wu_bodies.py's. ``tools/harvest_render.py --bodies
tests/render/real_conv_bodies.jsonl --out tests/render/real_conv_vectors.jsonl --port
19150`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_conv_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_conv_bodies.py [--out tests/render/real_conv_bodies.jsonl]
    python tools/build_real_conv_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"conv_llama": False, "conv_llama_nobos": True, "conv_generic_bpe": False,
           "conv_t5": True, "conv_albert": False, "conv_xlnet": False,
           "conv_camembert": False, "conv_xlm_roberta": False, "conv_generic": True}


def build() -> list[dict[str, Any]]:
    return wu_lines(FOLDERS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_conv_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
