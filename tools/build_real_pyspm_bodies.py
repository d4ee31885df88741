"""Build ``tests/render/real_py_spm_bodies.jsonl``: SentencePiece Python tokenizer folders.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/, composed by
tests/real_models.py) holds a real SentencePiece model from a registry (mistral_common's
``tokenizer.model.v1``, a BPE model with byte fallback; the sentencepiece sdist's
``test/test_model.model``, a Unigram model with NFKC) under a ``tokenizer_config.json``
naming one of the Python classes of render/_hf_python.py's SentencePiece records
(GPTSw3Tokenizer, BertGenerationTokenizer, SiglipTokenizer, MarianTokenizer,
M2M100Tokenizer, PLBartTokenizer, Speech2TextTokenizer), and, for the classes that read
one, a ``vocab.json`` built from that model (``m2m_100_langs_py``: with its language tokens
listed as additional special tokens, as facebook/m2m100 folders list them; ``siglip_py``:
with the ``added_tokens_decoder`` transformers saves). The bodies exercise what those classes do
around SentencePiece: the special and language tokens written in the text, whitespace
and control characters (GPT-SW3's and Siglip's text clean-up, NFKC), punctuation and case
(Siglip), ``▁`` in the text, a leading ``>>lang<<`` (Marian), the prefix and suffix
tokens, truncation (room kept for them) and chat. ``python tools/harvest_render.py
--bodies tests/render/real_py_spm_bodies.jsonl --out tests/render/real_py_spm_vectors.jsonl
--port 18560`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_pyspm_bodies.py [--out tests/render/real_py_spm_bodies.jsonl]
    python tools/build_real_pyspm_bodies.py --keep-release 0.32.0 /tmp/r/032

``--keep-release RELEASE DIR`` keeps, compactly, the answers another release's server gave
(``DIR/real_py_spm_vectors.jsonl``, harvested with ``--vllm-python
/work/venvs/vllmXYZ/bin/python``) as ``tests/render/releases/<RELEASE>/real_py_spm_vectors.jsonl``
(tools/build_python_bodies.py's ``keep_release``), replayed by
tests/render/test_real_py_spm_vectors.py.
"""

from __future__ import annotations

from typing import Any

from corpus_io import corpus_main, folder_lines, text_prompts

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
#: Each folder and the class its tokenizer_config.json names.
FOLDERS = {"gpt_sw3_py": "GPTSw3Tokenizer", "bert_generation_py": "BertGenerationTokenizer",
           "siglip_py": "SiglipTokenizer", "marian_py": "MarianTokenizer",
           "m2m_100_py": "M2M100Tokenizer", "m2m_100_langs_py": "M2M100Tokenizer",
           "plbart_py": "PLBartTokenizer",
           "speech_to_text_py": "Speech2TextTokenizer"}
#: ``--max-model-len`` per folder (None: the model's own; Siglip's text model has 64
#: positions, which a longer setting would exceed).
LENGTHS = {folder: None if folder == "siglip_py" else 512 for folder in FOLDERS}
TEXTS = {
    "ascii": "Hello world",
    "spaces": " Hello  world ",
    "utf8": "Grüße aus Köln — 日本語 😀 ∑x²",
    "specials": "a </s> b<s>c <unk> <pad>d</s>",
    "specials-spaced": "x \t</s>\n y\x1c<pad>\x1cz \u00a0<unk>\u2003w",
    "ends-eos": "ends with </s>",
    "starts-special": "</s> starts",
    "lang-marian": ">>fr<< Bonjour le monde",
    "lang-marian-late": "x >>de<< y",
    "lang-fairseq": "__en__ hi __fr__ __python__ def __java__x__en_XX__",
    "mask": "x <mask> y<mask>z",
    "gpt-sw3-tokens": "<|endoftext|>x<::::>y",
    "controls": "tab\there\nnew\u00a0nbsp\u200bzw\u00adsoft\x07bell\x7fdel\u3000ideo\ufffcobj",
    "punctuation": "Hello, World! It's (ok). {a}[b] \"q\" 50% #1 @x",
    "metaspace": "▁lead ▁x▁y",
    "nfkc": "\uff21\uff22\uff23 \ufb01 \u2460 \u216b",  # fullwidth ABC, ligature, ...
    "upper": "MiXeD CaSe ÄÖÜ",
    "empty": "",
    "one-space": " ",
}


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies = text_prompts(TEXTS)
    bodies.append(("prompt-list", {"prompt": [TEXTS["utf8"], TEXTS["specials"]]}))
    bodies.append(("truncate", {"prompt": TEXTS["utf8"] * 3, "truncate_prompt_tokens": 9}))
    bodies.append(("truncate-no-specials", {"prompt": TEXTS["utf8"] * 3,
                                            "truncate_prompt_tokens": 9,
                                            "add_special_tokens": False}))
    bodies.append(("truncate-ends-eos", {"prompt": "abc def ghi jkl</s>",
                                         "truncate_prompt_tokens": 5}))
    bodies.append(("too-long", {"prompt": "x " * 600}))
    bodies.append(("token-ids", {"prompt": [5, 6, 7]}))
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def _chat(name: str) -> list[tuple[str, dict[str, Any]]]:
    user = {"role": "user", "content": TEXTS["utf8"]}
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("user", {"messages": [user]}),
        ("system-user", {"messages": [{"role": "system", "content": TEXTS["controls"]},
                                      {"role": "user", "content": TEXTS["specials-spaced"]}]}),
        ("multi-turn", {"messages": [user, {"role": "assistant", "content": "ok </s>"},
                                     {"role": "user", "content": TEXTS["punctuation"]}]}),
        ("add-special-tokens", {"messages": [user], "add_special_tokens": True}),
        ("continue-final", {"messages": [user, {"role": "assistant", "content": " Grüße"}],
                            "continue_final_message": True, "add_generation_prompt": False}),
    ]
    # Every text as a chat too: vLLM renders no completions over an encoder-decoder
    # config, so chat is how its answers show these classes' encoding. Each text also
    # after a special token, where a piece starts with it (Marian's >>lang<<).
    for key, text in TEXTS.items():
        bodies.append((f"text-{key}", {"messages": [{"role": "user", "content": text}],
                                       "add_special_tokens": True}))
        bodies.append((f"after-special-{key}", {"messages": [
            {"role": "user", "content": "</s>" + text}]}))
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def build() -> list[dict[str, Any]]:
    lines = []
    for folder in FOLDERS:
        name = f"real-{folder}"
        server: dict[str, Any] = {"--served-model-name": name}
        if LENGTHS[folder] is not None:
            server["--max-model-len"] = LENGTHS[folder]
        lines += folder_lines(folder, server,
                              ((CHAT, _chat(name)), (COMPLETIONS, _completions(name))))
    return lines


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_py_spm_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
