"""Build ``tests/render/real_specials_bodies.jsonl``: both special-token lists at once.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) gives
tokenizer_config.json an ``additional_special_tokens`` list beside a non-empty
``extra_special_tokens``: a different list (``*_lists``) or a dict of named tokens
(``*_named``), over the as-is path (Llama 3's tokenizer.json), the rebuilt path
(Qwen3's, Qwen2Tokenizer), the generic backend's conversion of a SentencePiece model
(the sentencepiece 0.2.1 sdist's test model, as ``convgap_python_backend``) and
PegasusTokenizer's (XLM-R's Unigram vocabulary, as ``convgap_pegasus_extras``).
transformers 5.17 (vLLM 0.31) drops the additional list whenever the extra key exists;
5.19 and 5.24 (vLLM 0.29, 0.30, 0.32, 0.33) keep it as a keyword, which becomes the
extra list once a dict of named tokens has been moved out of the way (render/_eras.py
``specials_merge``). The bodies are tools/build_real_wu_bodies.py's, and completions of
texts holding both lists' tokens. ``tools/harvest_render.py --bodies
tests/render/real_specials_bodies.jsonl --out tests/render/real_specials_vectors.jsonl
--port 19210`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_specials_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_specials_bodies.py [--out tests/render/real_specials_bodies.jsonl]
    python tools/build_real_specials_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_text_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"specials_asis_lists": True, "specials_asis_named": True,
           "specials_rebuilt_lists": True, "specials_rebuilt_named": True,
           "specials_generic_named": True, "specials_pegasus_lists": True}
#: Texts holding both lists' tokens (and Pegasus's own).
TEXTS = {
    "both-lists": "<custom_a> a <custom_b> b hello world ▁hello <mask_1> <unk_5>",
    "both-glued": "x<custom_a>y<custom_b>z hello world helloworld</s>",
}


def build() -> list[dict[str, Any]]:
    return wu_text_lines(FOLDERS, TEXTS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_specials_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
