"""Replay vLLM 0.31.0's own rendering of the corpus through prefixkey.render.

``vectors.jsonl`` holds what vLLM's GPU-less render server answered for each
body of ``bodies.jsonl`` (tools/harvest_render.py): its token ids, or its
error. Each must replay: the same ids, or a typed prefixkey error where vLLM
refused the body. Two answers are the render server's own, not the OpenAI
server's, and are checked as such: it has no LoRA support (a ``--lora-modules``
name is "does not exist" there; ``vllm serve`` renders it with the adapter),
and it refuses beam search (``vllm serve`` renders the same ids).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from render_cases import flag_options

from prefixkey.errors import PrefixKeyError
from prefixkey.render import (
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
)

HERE = Path(__file__).resolve().parent
BODIES = {b["id"]: b for b in map(json.loads, (HERE / "bodies.jsonl").open(encoding="utf-8"))}
VECTORS = [json.loads(line) for line in (HERE / "vectors.jsonl").open(encoding="utf-8")]


@cache
def renderer(model_dir: str, server: str) -> Renderer:
    return Renderer(flag_options(str(HERE / model_dir), json.loads(server)))


def test_the_corpus_is_whole() -> None:
    assert len(VECTORS) == len(BODIES) >= 1000
    assert {v["id"] for v in VECTORS} == set(BODIES)
    statuses = {v["status"] for v in VECTORS}
    assert statuses == {200, 400, 404}


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_vllm_rendering_replays(vector: dict[str, Any]) -> None:
    body = BODIES[vector["id"]]
    r = renderer(body["model_dir"], json.dumps(body["server"], sort_keys=True))
    loras = {m.name for m in r.options.lora_modules}
    if vector["status"] == 200:
        rendered = r.render(body["endpoint"], body["body"])
        ids = [list(x.token_ids) for x in rendered]
        expected = vector["token_ids"]
        assert ids == (expected if body["endpoint"] == "/v1/completions" else [expected])
        answers = vector["response"]
        answers = answers if isinstance(answers, list) else [answers]
        assert [x.request.cache_salt for x in rendered] == [a["cache_salt"] for a in answers]
        return
    message = vector["error"]["message"]
    if vector["status"] == 404 and body["body"].get("model") in loras:
        # The render server has no LoRA support; the OpenAI server keys with the adapter.
        assert "does not exist" in message
        (first, *_) = r.render(body["endpoint"], body["body"])
        assert first.request.lora is not None
        assert first.request.lora.name == body["body"]["model"]
        return
    if message == "Beam search is not supported by the render endpoint":
        assert body["body"].get("use_beam_search") is True
        r.render(body["endpoint"], body["body"])  # the OpenAI server renders it
        return
    with pytest.raises(PrefixKeyError) as info:
        r.render(body["endpoint"], body["body"])
    assert not isinstance(info.value, RenderUnsupportedError), info.value
    if vector["status"] == 404:
        assert isinstance(info.value, RenderRequestError) and info.value.status == 404
