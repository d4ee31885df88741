"""One Renderer shared by threads renders what it renders alone (docs/render.md, "Sharing").

The corpus bodies of two server configurations (vLLM's answers in
vectors.jsonl: truncated prompts, which reconfigure the Rust tokenizer, and
trusted request templates, which go through the compile cache) are rendered
once in order, then by several threads at once from one Renderer per
configuration, each thread in its own order, and every answer compared.
"""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import pytest

pytest.importorskip("tokenizers", reason="needs the render extra: pip install -e '.[test]'")

from test_render_vectors import BODIES, VECTORS, renderer

from prefixkey.errors import PrefixKeyError
from prefixkey.render import Renderer

#: Two configurations: the default one (16 truncated bodies) and the one trusting
#: request templates with server kwargs.
SERVED = ("gpt2-chatml", "unigram-kwargs")
THREADS = 4
ROUNDS = 2
#: Truncated bodies are rendered this many times more: the tokenizer's truncation is
#: mutable state, the likeliest place for threads to meet.
TRUNCATED_ROUNDS = 30


def _outcome(r: Renderer, body: dict[str, Any]) -> Any:
    try:
        rendered = r.render(body["endpoint"], body["body"])
    except PrefixKeyError as exc:
        return (type(exc).__name__, str(exc))
    return [(list(x.token_ids), x.prompt, x.request.lora, x.request.cache_salt)
            for x in rendered]


def _cases() -> list[tuple[Renderer, dict[str, Any]]]:
    cases = []
    for vector in VECTORS:
        body = BODIES[vector["id"]]
        if body["server"].get("--served-model-name") in SERVED:
            cases.append((renderer(body["model_dir"], json.dumps(body["server"], sort_keys=True)),
                          body))
    return cases


def test_a_renderer_shared_by_threads_renders_as_it_does_alone() -> None:
    cases = _cases()
    assert len({id(r) for r, _ in cases}) == len(SERVED)
    assert sum("chat_template" in b["body"] for _, b in cases) >= 5
    alone = [_outcome(r, b) for r, b in cases]
    truncated = [i for i, (_, b) in enumerate(cases) if "truncate_prompt_tokens" in b["body"]]
    assert len(truncated) >= 10
    mismatches: list[tuple[int, str]] = []
    failures: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(n: int) -> None:
        order = list(range(len(cases))) * ROUNDS + truncated * TRUNCATED_ROUNDS
        random.Random(n).shuffle(order)
        try:
            start.wait()
            for i in order:
                if _outcome(*cases[i]) != alone[i]:
                    mismatches.append((n, cases[i][1]["id"]))
        except BaseException as exc:  # reported below: a crash is a failure too
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == [] and mismatches == []
