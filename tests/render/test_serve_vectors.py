"""vllm serve's answers for LoRA bodies, replayed through the in-process Renderer.

tests/render/serve_vectors.jsonl is what ``vllm serve --enable-scale-out`` (an engine
with two ``--lora-modules`` adapters) rendered: the one source of vLLM's own rendering
of bodies that name an adapter, which the render server answers 404. The Renderer must
give the same ids and the adapter's ``LoRA(name, path, int_id)``. Beam search is the
render endpoint's own refusal (``vllm serve``'s chat path renders it), as in
test_render_vectors.py.
"""

from __future__ import annotations

import pytest
from render_cases import RenderCase, each_case, render_cases, server_options

from prefixkey import LoRA
from prefixkey.render import (
    COMPLETIONS_ENDPOINT,
    Renderer,
    RenderRequestError,
)

CASES = render_cases("serve_")
RENDERER = Renderer(server_options(CASES[0]))


def test_one_server_and_both_adapters() -> None:
    assert len({str(sorted(c.server.items())) for c in CASES}) == 1
    assert {c.body.get("model") for c in CASES if c.status == 200} >= {"adapter-a", "adapter-b"}


@each_case(CASES)
def test_serve_rendering_replays(case: RenderCase) -> None:
    if case.body.get("use_beam_search"):
        assert case.status == 400  # the render endpoint's refusal, not the server's
        return
    if case.status != 200:
        with pytest.raises(RenderRequestError) as caught:
            RENDERER.render(case.endpoint, case.body)
        assert caught.value.status == case.status
        return
    prompts = RENDERER.render(case.endpoint, case.body)
    ids = [list(p.token_ids) for p in prompts]
    assert ids == (case.token_ids if case.endpoint == COMPLETIONS_ENDPOINT
                   else [case.token_ids])
    adapters = {"adapter-a": LoRA("adapter-a", "/adapters/a", 1),
                "adapter-b": LoRA("adapter-b", "/adapters/b", 2)}
    model = case.body.get("model")
    for prompt in prompts:
        assert prompt.request.lora == (adapters.get(model) if isinstance(model, str) else None)
        assert prompt.request.cache_salt == case.body.get("cache_salt")
