"""Build ``tests/render/real_wu_bodies.jsonl``: bodies over WordPiece and Unigram folders.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a
tokenizer.json written from a real vocabulary (llama.cpp's GGUF files of BAAI's
bge-small-en-v1.5, bert-base-uncased's WordPiece vocabulary, and of an XLM-RoBERTa
SentencePiece vocabulary with its scores and charsmap: tests/real_models.py ``gguf``)
under a ``config.json`` / ``tokenizer_config.json`` that makes transformers pick a
WordPiece or Unigram class that rebuilds the tokenizer (BertTokenizer, DistilBertTokenizer,
DPRQuestionEncoderTokenizer, FunnelTokenizer, XLMRobertaTokenizer, T5Tokenizer,
AlbertTokenizer, CamembertTokenizer, XLNetTokenizer, BigBirdTokenizer:
render/_hf_rebuilds.py).
The bodies exercise what those rebuilds decide: lower-casing and accents
(``do_lower_case``, ``strip_accents``), Chinese characters (``tokenize_chinese_chars``),
words longer than WordPiece's 100 characters, whitespace and control characters, the
SentencePiece charsmap (compatibility forms), unknown characters, special tokens written
in the text, and the class's own post-processor (``add_special_tokens``).
``tools/harvest_render.py --bodies tests/render/real_wu_bodies.jsonl --out
tests/render/real_wu_vectors.jsonl --port 18650`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_wu_bodies.py [--out tests/render/real_wu_bodies.jsonl]
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from corpus_io import RENDER_DIR, folder_lines, text_prompts, write_main

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
#: The folders, and whether their tokenizer_config.json has a chat template.
FOLDERS = {"bert_bge": False, "distilbert_cased_rule": True, "dpr_rule": False,
           "xlm_roberta": False, "t5_rule": True, "funnel_rule": False, "albert_rule": False,
           "camembert_rule": False, "xlnet_rule": False, "big_bird_rule": False}
TEXTS = {
    "ascii": "Hello world",
    "mixed-case": "MiXeD CaSe WORDS and iPhone McDonald's",
    "accents": "Übersetze: «Grüße aus Köln» — café naïve résumé Ångström",
    "combining": "combining e\u0301 a\u0308 n\u0303 and precomposed é ä ñ",
    "compat": ("ﬁ ﬀ Ⅻ ① \uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 ½ ™ "
               "zero\u200bwidth\u00a0nbsp"),
    "chinese": "中文文本和日本語のテキスト、한국어 텍스트",
    "scripts": "ภาษาไทย العربية हिन्दी Ελληνικά Русский",
    "space-runs": "  leading spaces and   runs   of spaces  \t\t tabs",
    "newlines": "line one\n\n\nline two\r\n  indented\n",
    "controls": "bell\u0007 nul\u0000 escape\u001b del\u007f soft\u00adhyphen",
    "unknown": "emoji 😀🤖👩‍💻 private \ue000\U000f0000 ∑x² ≤ ∞ \U0001d518\U0001d52b fraktur",
    "long-word-100": "a" * 100,
    "long-word-101": "b" * 101 + " after",
    "long-pieces": "pneumonoultramicroscopicsilicovolcanoconiosis" * 3 + " ok",
    "digits": "digits 1234567890 3.14159 1,000,000 and 2024-01-01 v2.0",
    "punct": "punct!!! ??? ... --- ((()))[[]]{{}} @#$%^&* ``'' \"quoted\"",
    "code": "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 2}  # comment\n",
    "specials-bert": "[CLS] text [SEP] more [MASK] [UNK] [PAD] [cls] [sep]",
    "specials-spm": "<s>bos</s> <unk> <pad> <mask>x <extra_id_0> <extra_id_99> </s>",
    "empty-ish": " ",
}
#: Folders whose architecture vLLM runs as a pooling model: its tokenizer truncates on the
#: right (vLLM tokenizers/registry.py); their truncation bodies are
#: tools/build_real_pool_bodies.py's corpus, not this one's.
POOLING = frozenset({"bert_bge"})
#: A small chat template for the folders that have one (written in their config).
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}assistant:{% endif %}")


def _completions(name: str, pooling: bool) -> list[tuple[str, dict[str, Any]]]:
    bodies = text_prompts(TEXTS)
    bodies.append(("prompt-list", {"prompt": [TEXTS["accents"], TEXTS["chinese"]]}))
    if not pooling:
        bodies.append(("truncate", {"prompt": TEXTS["punct"] * 4, "truncate_prompt_tokens": 9}))
    bodies.append(("too-long", {"prompt": "word " * 600}))
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def _chat(name: str, template: bool) -> list[tuple[str, dict[str, Any]]]:
    user = {"role": "user", "content": TEXTS["accents"] + "\n" + TEXTS["chinese"]}
    bodies: list[tuple[str, dict[str, Any]]] = [("user", {"messages": [user]})]
    if template:
        bodies += [
            ("system-user", {"messages": [{"role": "system", "content": TEXTS["space-runs"]},
                                          {"role": "user", "content": TEXTS["mixed-case"]}]}),
            ("specials", {"messages": [{"role": "user", "content": TEXTS["specials-bert"]},
                                       {"role": "assistant", "content": TEXTS["specials-spm"]},
                                       {"role": "user", "content": TEXTS["long-word-101"]}]}),
            ("add-special-tokens", {"messages": [user], "add_special_tokens": True}),
            ("continue-final", {"messages": [user, {"role": "assistant", "content": " Grüße"}],
                                "continue_final_message": True,
                                "add_generation_prompt": False}),
        ]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def wu_lines(folders: Mapping[str, bool], pooling: Collection[str] = ()) -> list[dict[str, Any]]:
    """Each folder's chat bodies (its template overridden where ``folders`` says so) and
    completions bodies (pooling ones for the folders in ``pooling``), served as
    ``real-<folder>`` with a 512-token context: the shape the other corpora reuse."""
    lines = []
    for folder, template in folders.items():
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 512}
        lines += folder_lines(folder, server, (
            (CHAT, _chat(name, template)), (COMPLETIONS, _completions(name, folder in pooling))))
    return lines


def wu_text_lines(folders: Mapping[str, bool], texts: dict[str, str]) -> list[dict[str, Any]]:
    """:func:`wu_lines`, then each folder's completions of ``texts`` (with and without
    special tokens: ``completion-<key>``, ``completion-<key>-no-specials``)."""
    lines = wu_lines(folders)
    for folder in folders:
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 512}
        lines += folder_lines(folder, server, ((COMPLETIONS, [
            (f"completion-{ident}", {"model": name, **body})
            for ident, body in text_prompts(texts)]),))
    return lines


def build() -> list[dict[str, Any]]:
    return wu_lines(FOLDERS, POOLING)


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_wu_bodies.jsonl", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
