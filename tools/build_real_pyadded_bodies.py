"""Build ``tests/render/real_pyadded_bodies.jsonl``: added tokens of a Python tokenizer class.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) is
tests/render/real/roc_bert_rule (RoCBertTokenizer, a Python word-piece class, over the
bge vocabulary of llama.cpp's bert-bge GGUF) with one file beside it:

- ``pyadded_wp``: transformers' legacy ``added_tokens.json`` (no ``added_tokens_decoder``
  in tokenizer_config.json, so from_pretrained hands the file's tokens to the class at
  their ids: render/_python_tokenizer.py ``PythonTokenizer.with_added``): a new token, a
  vocabulary word ("hello", which a lowercased "Hello" then meets) and the named
  ``[CLS]``/``[MASK]`` at new ids (the class's ``cls_token_id`` follows the file), the
  named ``[SEP]`` at its own id, and a gap in the ids;
- ``st_py_lower``: a sentence-transformers ``sentence_bert_config.json`` with
  ``do_lower_case`` true, so vLLM's ``get_tokenizer`` adds the named tokens lowercased
  (``PythonTokenizer.with_lowercased_specials``).

The bodies are tools/build_real_wu_bodies.py's, and completions of texts holding the
tokens. ``tools/harvest_render.py --bodies tests/render/real_pyadded_bodies.jsonl --out
tests/render/real_pyadded_vectors.jsonl --port 19100`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_pyadded_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_pyadded_bodies.py [--out tests/render/real_pyadded_bodies.jsonl]
    python tools/build_real_pyadded_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_text_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"pyadded_wp": True, "st_py_lower": True}
#: Texts holding the added tokens and the named ones in both cases, glued and spaced.
TEXTS = {
    "added": "<new_plain> a hello Hello HELLO othello [MASK] [mask] [CLS] [cls] [SEP] [sep] "
             "<gap> zzqqxj [UNK] [unk] [PAD] [pad]",
    "added-glued": "x<new_plain>y[CLS]z[cls]hello_othello[sep][SEP]<gap>",
}


def build() -> list[dict[str, Any]]:
    return wu_text_lines(FOLDERS, TEXTS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_pyadded_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
