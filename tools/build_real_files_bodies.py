"""Build ``tests/render/real_files_bodies.jsonl``: a legacy added_tokens.json, a processor
chat_template.json.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) is a real one
with one of the two files a Hugging Face folder may carry beside its tokenizer:

- ``added_tokens.json`` (transformers' legacy added-token file), which from_pretrained
  reads only when tokenizer_config.json has no ``added_tokens_decoder`` (``drop``): over
  the as-is path (Llama 3's tokenizer.json), the rebuilt one (Qwen3's, Qwen2Tokenizer)
  and a SentencePiece conversion (Llama 2's model, LlamaTokenizer), with tokens at an id
  tokenizer.json also gives (another text: it wins), new ones (plain, named special,
  listed special), a gap in the ids, and texts of the vocabulary ("hello"); and beside an
  ``added_tokens_decoder`` (``files_modern_rebuilt``: the file unread);
- ``chat_template.json`` (a processor's template) in a text-only folder, where vLLM's
  AutoProcessor lookup finds no processor: beside tokenizer_config.json's template
  (``files_ctj_text``) and alone (``files_ctj_only``: no template).

The bodies are tools/build_real_wu_bodies.py's, and completions of texts holding the
tokens. ``tools/harvest_render.py --bodies tests/render/real_files_bodies.jsonl --out
tests/render/real_files_vectors.jsonl --port 19300`` records vLLM 0.31's answers.

``--keep-release RELEASE DIR`` keeps, compactly, another release's answers harvested into
``DIR/real_files_vectors.jsonl`` (tests/render/releases/RELEASE/).

Usage::

    python tools/build_real_files_bodies.py [--out tests/render/real_files_bodies.jsonl]
    python tools/build_real_files_bodies.py --keep-release 0.32.0 /tmp/r/032
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import wu_text_lines
from corpus_io import corpus_main

#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"files_legacy_asis": True, "files_legacy_rebuilt": True,
           "files_modern_rebuilt": True, "files_legacy_conv": False,
           "files_ctj_text": True, "files_ctj_only": False}
#: Texts holding the added tokens, glued and spaced.
TEXTS = {
    "added": "<new_plain> a <new_special> b <new_pad> <gap> <clash> hello othello",
    "added-glued": "x<new_plain>y<new_special>z<gap>hello_othello<|im_end|><|eot_id|></s>",
    "vocab-words": "Hello hello HELLO othello Othello shell hellos",
}


def build() -> list[dict[str, Any]]:
    return wu_text_lines(FOLDERS, TEXTS)


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_files_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
