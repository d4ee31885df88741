"""Build ``tests/render/real_trunc_bodies.jsonl``: truncation by the Python and Mistral tokenizers.

Maintainer tool. vLLM loads a folder's tokenizer truncating on the right when its runner
is ``pooling`` and on the left when it is ``generate`` (vllm/tokenizers/registry.py; the
runner from the architectures: prefixkey/render/_runner.py); a body's
``truncate_prompt_tokens`` without ``truncation_side`` is the tokenizer's own truncation
(``prepare_for_model``: room kept for the special tokens, then they are added). These
bodies truncate (below, at and past the special tokens' count, 0, -1 with and without
``max_tokens``, past the prompt, past the limit, with ``truncation_side`` named, over a
prompt list and over ids; chat bodies too) with every kind of Python tokenizer
(render/_hf_python.py: bytes, code points, vocabulary characters and words, fastBPE
words, WordPiece) and with mistral_common's (``--tokenizer-mode mistral``), each on a
folder under a pooling architecture (``*_pool``: its own folder's files, only
``config.json``'s ``architectures`` changed to one vLLM starts as a pooling model) and on
the generative original. HF-mode servers have ``--chat-template
models/override_template.jinja``.
``tools/harvest_render.py --bodies tests/render/real_trunc_bodies.jsonl --out
tests/render/real_trunc_vectors.jsonl --port 19600`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_trunc_bodies.py [--out tests/render/real_trunc_bodies.jsonl]
    python tools/build_real_trunc_bodies.py --keep-release 0.32.0 /tmp/r/032

``--keep-release RELEASE DIR`` keeps, compactly, the answers another release's server gave
(``DIR/real_trunc_vectors.jsonl``, harvested with that release's ``--vllm-python``) under
tests/render/releases/RELEASE/ (tools/build_python_bodies.py's ``keep_release``), replayed
by tests/render/test_real_trunc_vectors.py.
"""

from __future__ import annotations

from typing import Any, Final

from build_real_wu_bodies import CHAT, COMPLETIONS, TEXTS
from corpus_io import corpus_main, folder_lines

#: Each folder (``model_dir``), the text its bodies truncate (one its tokenizer splits
#: into distinct ids), and whether it is served in mistral mode.
FOLDERS: Final[dict[str, tuple[str, bool]]] = {
    # bytes (ByT5: eos only when the ids do not end with it; Perceiver: [CLS] … [SEP];
    # Dia: no special tokens), code points (Canine), vocabulary characters (MGP-STR,
    # Wav2Vec2 CTC) and words (ESM), under GPT2ForSequenceClassification / EsmModel /
    # Wav2Vec2Model.
    "python_models/byt5_pool": ("punct", False),
    "python_models/byt5": ("punct", False),
    # No architectures: vLLM's config reader fills in the model type's transformers base
    # class (MODEL_MAPPING_NAMES: GPT2Model), which it runs as a pooling model.
    "python_models/byt5_noarch": ("punct", False),
    "python_models/perceiver_pool": ("punct", False),
    "python_models/dia_pool": ("punct", False),
    "python_models/canine_pool": ("punct", False),
    "python_models/canine": ("punct", False),
    "python_models/mgpstr_pool": ("lower", False),
    "python_models/wav2vec2_pool": ("upper", False),
    "python_models/esm_pool": ("protein", False),
    "python_models/esm": ("protein", False),
    # fastBPE words (CTRL, Blenderbot small, PhoBERT: <s> … </s>) and WordPiece (RoCBert,
    # BertJapanese: [CLS] … [SEP]) over real vocabularies.
    "real:ctrl_pool": ("punct", False),
    "real:ctrl_rule": ("punct", False),
    "real:blenderbot_small_pool": ("punct", False),
    "real:phobert_pool": ("punct", False),
    "real:roc_bert_pool": ("punct", False),
    "real:roc_bert_rule": ("punct", False),
    "real:bert_japanese_pool": ("punct", False),
    # mistral_common: SentencePiece (Mistral 7B v0.3) and Tekken (NeMo).
    "real:mistral7b_v03_pool": ("words", True),
    "real:mistral_nemo_pool": ("words", True),
}
_TEXTS: Final = {
    "punct": TEXTS["punct"] * 4,
    "lower": "the quick brown fox 0123456789 jumps over the lazy dog " * 2,
    "upper": "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG AND THEN SOME MORE",
    "protein": "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ",
    "words": "one two three four five six seven eight nine ten eleven twelve thirteen",
}
TEMPLATE = "models/override_template.jinja"
#: Past the 512-token context in every tokenizer here.
LONG = "word " * 600


def _completions(name: str, text: str, byt5: bool) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = [
        *((f"truncate-{n}", {"prompt": text, "truncate_prompt_tokens": n})
          for n in (9, 3, 2, 1, 0, 200)),
        ("truncate-9-no-specials", {"prompt": text, "truncate_prompt_tokens": 9,
                                    "add_special_tokens": False}),
        ("truncate-1-no-specials", {"prompt": text, "truncate_prompt_tokens": 1,
                                    "add_special_tokens": False}),
        ("truncate-minus-1", {"prompt": LONG, "truncate_prompt_tokens": -1}),
        ("truncate-minus-1-max-tokens", {"prompt": LONG, "truncate_prompt_tokens": -1,
                                         "max_tokens": 100}),
        ("truncate-minus-1-short", {"prompt": text, "truncate_prompt_tokens": -1}),
        ("truncate-497", {"prompt": LONG, "truncate_prompt_tokens": 497}),
        ("truncate-side-left", {"prompt": text, "truncate_prompt_tokens": 9,
                                "truncation_side": "left"}),
        ("truncate-side-right", {"prompt": text, "truncate_prompt_tokens": 9,
                                 "truncation_side": "right"}),
        ("truncate-prompt-list", {"prompt": [text, text[::-1]],
                                  "truncate_prompt_tokens": 7}),
        ("truncate-ids", {"prompt": list(range(10, 40)), "truncate_prompt_tokens": 5}),
        ("too-long", {"prompt": LONG}),
    ]
    if byt5:
        # The kept bytes end with eos ("</s>"): ByT5 adds no second one.
        bodies += [(f"truncate-{n}-eos-inside", {"prompt": "ab</s>cdefgh",
                                                 "truncate_prompt_tokens": n})
                   for n in (4, 3)]
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def _chat(name: str, text: str) -> list[tuple[str, dict[str, Any]]]:
    user = [{"role": "user", "content": text}]
    long = [{"role": "user", "content": LONG}]
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("plain", {"messages": user}),
        ("truncate-9", {"messages": user, "truncate_prompt_tokens": 9}),
        ("truncate-9-specials", {"messages": user, "truncate_prompt_tokens": 9,
                                 "add_special_tokens": True}),
        ("truncate-minus-1", {"messages": long, "truncate_prompt_tokens": -1}),
        ("truncate-side-left", {"messages": user, "truncate_prompt_tokens": 9,
                                "truncation_side": "left"}),
    ]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def build() -> list[dict[str, Any]]:
    lines = []
    for model_dir, (key, mistral) in FOLDERS.items():
        folder = model_dir.removeprefix("real:").removeprefix("python_models/")
        name = f"trunc-{folder}"
        server: dict[str, Any] = {"--served-model-name": name, "--max-model-len": 512}
        server |= {"--tokenizer-mode": "mistral"} if mistral else {"--chat-template": TEMPLATE}
        text = _TEXTS[key]
        lines += folder_lines(folder, server, (
            (CHAT, _chat(name, text)),
            (COMPLETIONS, _completions(name, text, folder.startswith("byt5")))), model_dir)
    return lines


def main(argv: list[str] | None = None) -> int:
    return corpus_main(__doc__.splitlines()[0], "real_trunc_", build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
