"""vLLM 0.31.0's recorded render-endpoint answers, replayed through the endpoint parser.

Every answer of tests/render/vectors.jsonl: a rendered one must give exactly the ids vLLM
put in it, one prompt per completions prompt, with the body's ``cache_salt``; an error
one must raise the typed error with vLLM's status, message and field. The render server
has no LoRA support, so the corpus's adapter names are vLLM's 404s here; the LoRA a
``model`` implies comes from tests/render/serve_vectors.jsonl, vllm serve's answers (an
engine with two adapters), also replayed here.
"""

from __future__ import annotations

import pytest
from render_cases import RenderCase, each_case, render_cases

from prefixkey import LoRA
from prefixkey.render import (
    COMPLETIONS_ENDPOINT,
    RenderRequestError,
    RenderResponseParser,
    parse_lora_module,
)

CASES = render_cases()
# vllm serve --enable-scale-out (an engine with two adapters): what the render server
# cannot answer, bodies naming a --lora-modules adapter.
SERVE_CASES = render_cases("serve_")
RENDERED = [c for c in CASES + SERVE_CASES if c.status == 200]
REFUSED = [c for c in CASES + SERVE_CASES if c.status != 200]


def parser_for(case: RenderCase) -> RenderResponseParser:
    modules = [parse_lora_module(m) for m in case.lora_modules]
    return RenderResponseParser(
        loras=[LoRA(m.name, m.path, i) for i, m in enumerate(modules, start=1)],
        served_model_names=case.served_names,
    )


def test_the_corpus_has_both_outcomes() -> None:
    assert len(RENDERED) > 700
    assert len(REFUSED) > 200
    assert {c.status for c in REFUSED} == {400, 404}
    adapters = {c.body.get("model") for c in SERVE_CASES if c.status == 200}
    assert {"adapter-a", "adapter-b"} <= adapters


def expected_lora(case: RenderCase) -> LoRA | None:
    """The adapter the body's model names on its server (vLLM numbers them from 1)."""
    for i, spec in enumerate(case.lora_modules, start=1):
        module = parse_lora_module(spec)
        if module.name == case.body.get("model"):
            return LoRA(module.name, module.path, i)
    return None


@each_case(RENDERED)
def test_rendered_answer_replays(case: RenderCase) -> None:
    assert case.status is not None  # the endpoint corpora's servers all started
    prompts = parser_for(case).parse(case.endpoint, case.status, case.response,
                                     model=case.body.get("model"))
    ids = [list(p.token_ids) for p in prompts]
    expected = case.token_ids if case.endpoint == COMPLETIONS_ENDPOINT else [case.token_ids]
    assert ids == expected
    for prompt in prompts:
        assert prompt.request.cache_salt == case.body.get("cache_salt")
        assert prompt.request.lora == expected_lora(case)
        assert prompt.request.mm_items == ()
        assert prompt.model == (case.body.get("model") or "")


@each_case(REFUSED)
def test_refused_answer_is_the_typed_error(case: RenderCase) -> None:
    assert case.error is not None and case.status is not None
    with pytest.raises(RenderRequestError) as caught:
        parser_for(case).parse(case.endpoint, case.status, case.response,
                               model=case.body.get("model"))
    assert caught.value.status == case.status
    assert caught.value.reason == case.error["message"]
    param = case.error["param"]
    if param is None:
        assert caught.value.field == "body"
    else:
        # vLLM's pydantic location, as a body field: body.prompt.0 -> prompt[0].
        assert caught.value.field is not None
        flat = caught.value.field.replace("[", ".").replace("]", "")
        assert flat == param.removeprefix("body.")


def test_unknown_model_field_is_model() -> None:
    case = next(c for c in REFUSED if c.id == "gpt2/bad-chat-unknown_model")
    assert case.status is not None
    with pytest.raises(RenderRequestError) as caught:
        parser_for(case).parse(case.endpoint, case.status, case.response)
    assert (caught.value.field, caught.value.status) == ("model", 404)
