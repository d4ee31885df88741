"""Build ``tests/render/real_reuse_bodies.jsonl``: chat bodies reusing prefill prompt ids
(``kv_transfer_params.prompt_token_ids``) around the largest id vLLM admits.

Maintainer tool. From 0.32 on vLLM checks reused ids before rendering: an id past both
its tokenizer's largest id (``max_token_id``: the largest of ``get_vocab()``, the added
tokens included, and the tokenizer's ``vocab_size`` less one) and config.json's
``vocab_size`` less one is its 400 "Token id N is out of vocabulary". Two folders with the
real Qwen3 tokenizer (largest id 151668, base vocabulary 151643): qwen3, whose config's
vocab_size 151936 is the larger bound, and reuse_small_vocab, the same config with
vocab_size 151000, where the tokenizer's added tokens are. Each body reuses ``[5, N]`` for
an N at and past each bound. ``tools/harvest_render.py --bodies
tests/render/real_reuse_bodies.jsonl`` records vLLM 0.31's answers (which takes the ids
as they are); 0.32's and 0.33's are kept with ``--keep-release RELEASE DIR``.

Usage::

    python tools/build_real_reuse_bodies.py [--keep-release RELEASE DIR]
"""

from __future__ import annotations

from typing import Any

from corpus_io import corpus_main, folder_lines

#: folder -> the last ids to reuse (after 5): each bound's last id and the next.
FOLDERS = {"qwen3": (151643, 151668, 151669, 151935, 151936, 10**6),
           "reuse_small_vocab": (150999, 151000, 151642, 151643, 151668, 151669)}
_USER = {"role": "user", "content": "What is the weather like in Paris today?"}


def _chat(name: str, ids: tuple[int, ...]) -> list[tuple[str, dict[str, Any]]]:
    return [(f"reuse-{last}", {"model": name, "messages": [_USER],
                               "kv_transfer_params": {"prompt_token_ids": [5, last]}})
            for last in ids]


def build() -> list[dict[str, Any]]:
    lines = []
    for folder, ids in FOLDERS.items():
        name = f"real-{folder}-reuse"
        server = {"--served-model-name": name, "--max-model-len": 2048}
        lines += folder_lines(folder, server, (("/v1/chat/completions", _chat(name, ids)),))
    return lines


if __name__ == "__main__":
    raise SystemExit(corpus_main(__doc__.splitlines()[0], "real_reuse_", build))
