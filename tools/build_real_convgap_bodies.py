"""Build ``tests/render/real_convgap_bodies.jsonl``: the converted path's last gaps.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a
SentencePiece model and no tokenizer.json, under a ``tokenizer_class`` earlier corpora
did not name: ``SentencePieceBackend`` (transformers' Python SentencePiece base class,
render/_python_spm.py), ``PythonBackend`` in tokenizer_config.json and
``PreTrainedTokenizer`` in config.json (AutoTokenizer builds TokenizersBackend for
both: the generic backend's conversion), all three over the sentencepiece 0.2.1 sdist's
Unigram test model; and PegasusTokenizer over XLM-R's Unigram vocabulary (llama.cpp's
GGUF, as ``conv_pegasus``) with the folder's own ``additional_special_tokens``, and with
them beside an empty ``extra_special_tokens`` (which transformers 5.19 and 5.24, vLLM
0.29, 0.30, 0.32 and 0.33, replace with them; 5.17, vLLM 0.31's, keeps the empty
list). The bodies are tools/build_real_wu_bodies.py's, and completions of a text holding
the folders' own and the class's special tokens. ``tools/harvest_render.py --bodies
tests/render/real_convgap_bodies.jsonl --out tests/render/real_convgap_vectors.jsonl
--port 19810`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_convgap_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_convgap_bodies.py [--out tests/render/real_convgap_bodies.jsonl]
    python tools/build_real_convgap_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_text_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"convgap_spm_backend": True, "convgap_python_backend": True,
           "convgap_pretrained_tokenizer": True, "convgap_pegasus_extras": True,
           "convgap_pegasus_empty_extras": True}
#: Texts holding the folders' listed tokens and the Pegasus class's own.
TEXTS = {
    "listed-tokens": "<custom_a> a <mask_1> b hello<custom_a>world ▁hello <mask_2> <unk_5>",
    "listed-glued": "x<custom_a>y<mask_1>z hello hello</s><pad>",
}


def build() -> list[dict[str, Any]]:
    return wu_text_lines(FOLDERS, TEXTS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_convgap_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
