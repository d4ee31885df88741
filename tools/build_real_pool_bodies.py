"""Build ``tests/render/real_pool_bodies.jsonl``: truncation where vLLM runs a pooling model.

Maintainer tool. vLLM loads a folder's tokenizer truncating on the right when its runner
is ``pooling`` (vllm/tokenizers/registry.py; the runner from the architectures:
prefixkey/render/_runner.py). These bodies truncate (``truncate_prompt_tokens`` below,
at and past the special tokens' count, 0, -1 with and without ``max_tokens``, past the
prompt, past the limit, with ``truncation_side`` named, over a prompt list and over ids;
chat bodies too) on tests/render/real/ folders: ``bert_bge`` (BertModel: pooling, a
WordPiece tokenizer adding [CLS] ... [SEP]), ``xlm_roberta_model`` (XLMRobertaModel:
pooling, the XLM-RoBERTa Unigram tokenizer adding <s> ... </s>) and
``chatglm_model_rule`` (bge's files under ChatGLMModel, which the registry runs as a
generative model though its name ends in ``Model``, the suffix of pooling models). Every
server has ``--chat-template models/override_template.jinja`` (the folders have none).
``tools/harvest_render.py --bodies tests/render/real_pool_bodies.jsonl --out
tests/render/real_pool_vectors.jsonl --port 18600`` records vLLM 0.31's answers.

Usage::

    python tools/build_real_pool_bodies.py [--out tests/render/real_pool_bodies.jsonl]
"""

from __future__ import annotations

from typing import Any

from build_real_wu_bodies import CHAT, COMPLETIONS, TEXTS
from corpus_io import RENDER_DIR, folder_lines, write_main

FOLDERS = ("bert_bge", "xlm_roberta_model", "chatglm_model_rule")
TEMPLATE = "models/override_template.jinja"
#: About 60 tokens; "word " * 600 is past the 512-token context.
TEXT = TEXTS["punct"] * 4
LONG = "word " * 600


def _completions(name: str) -> list[tuple[str, dict[str, Any]]]:
    bodies: list[tuple[str, dict[str, Any]]] = [
        *((f"truncate-{n}", {"prompt": TEXT, "truncate_prompt_tokens": n})
          for n in (9, 3, 2, 1, 0, 200)),
        ("truncate-9-no-specials", {"prompt": TEXT, "truncate_prompt_tokens": 9,
                                    "add_special_tokens": False}),
        ("truncate-1-no-specials", {"prompt": TEXT, "truncate_prompt_tokens": 1,
                                    "add_special_tokens": False}),
        ("truncate-minus-1", {"prompt": LONG, "truncate_prompt_tokens": -1}),
        ("truncate-minus-1-max-tokens", {"prompt": LONG, "truncate_prompt_tokens": -1,
                                         "max_tokens": 100}),
        ("truncate-minus-1-short", {"prompt": TEXT, "truncate_prompt_tokens": -1}),
        ("truncate-496-long", {"prompt": LONG, "truncate_prompt_tokens": 496}),
        ("truncate-497", {"prompt": LONG, "truncate_prompt_tokens": 497}),
        ("truncate-side-left", {"prompt": TEXT, "truncate_prompt_tokens": 9,
                                "truncation_side": "left"}),
        ("truncate-side-right", {"prompt": TEXT, "truncate_prompt_tokens": 9,
                                 "truncation_side": "right"}),
        ("truncate-prompt-list", {"prompt": [TEXT, TEXTS["accents"] * 3],
                                  "truncate_prompt_tokens": 7}),
        ("truncate-ids", {"prompt": list(range(1000, 1030)), "truncate_prompt_tokens": 5}),
        ("truncate-ids-minus-1", {"prompt": list(range(1000, 1600)),
                                  "truncate_prompt_tokens": -1}),
        ("too-long", {"prompt": LONG}),
    ]
    return [(f"completion-{i}", {"model": name, **b}) for i, b in bodies]


def _chat(name: str) -> list[tuple[str, dict[str, Any]]]:
    user = [{"role": "user", "content": TEXT}]
    long = [{"role": "user", "content": LONG}]
    bodies: list[tuple[str, dict[str, Any]]] = [
        ("plain", {"messages": user}),
        ("truncate-9", {"messages": user, "truncate_prompt_tokens": 9}),
        ("truncate-9-specials", {"messages": user, "truncate_prompt_tokens": 9,
                                 "add_special_tokens": True}),
        ("truncate-1-specials", {"messages": user, "truncate_prompt_tokens": 1,
                                 "add_special_tokens": True}),
        ("truncate-minus-1", {"messages": long, "truncate_prompt_tokens": -1}),
        ("truncate-minus-1-max-tokens", {"messages": long, "truncate_prompt_tokens": -1,
                                         "max_tokens": 100}),
        ("truncate-side-left", {"messages": user, "truncate_prompt_tokens": 9,
                                "truncation_side": "left"}),
        ("too-long", {"messages": long}),
    ]
    return [(f"chat-{i}", {"model": name, **b}) for i, b in bodies]


def build() -> list[dict[str, Any]]:
    lines = []
    for folder in FOLDERS:
        name = f"real-{folder}"
        server = {"--served-model-name": name, "--max-model-len": 512,
                  "--chat-template": TEMPLATE}
        lines += folder_lines(folder, server,
                              ((CHAT, _chat(name)), (COMPLETIONS, _completions(name))))
    return lines


def main(argv: list[str] | None = None) -> int:
    return write_main(__doc__.splitlines()[0], RENDER_DIR / "real_pool_bodies.jsonl", build,
                      argv)


if __name__ == "__main__":
    raise SystemExit(main())
