"""The render-endpoint parser on answers of each shape, and on answers it must refuse.

The recorded answers of vLLM 0.31.0 are replayed in tests/render/test_endpoint_vectors.py.
Here the answers are built after each release's protocol (read from the wheels: the
0.15-0.17 engine prompts, 0.18+ ``GenerateRequest`` with ``features``); every expected
value is the answer's own content (ids, salts, placeholders), never prefixkey's.
"""

from __future__ import annotations

from typing import Any

import pytest

from prefixkey import LoRA, MMItem
from prefixkey.errors import FrozenError, InvalidRequestError, UnknownVersionError
from prefixkey.render import (
    RENDER_PATHS,
    RenderEndpointError,
    RenderRequestError,
    RenderResponseParser,
    render_response_shape,
)

CHAT = "/v1/chat/completions"
CMPL = "/v1/completions"
ADAPTER = LoRA("sql", "/adapters/sql", 1)


def answer(token_ids: list[int], **fields: Any) -> dict[str, Any]:
    """A 0.18+ render answer (GenerateRequest), with the fields keys depend on."""
    return {"request_id": "chatcmpl-0", "token_ids": token_ids, "features": None,
            "sampling_params": {"max_tokens": 16}, "model": None, "cache_salt": None,
            **fields}


def features(hashes: dict[str, list[str]],
             spans: dict[str, list[tuple[int, int]]]) -> dict[str, Any]:
    return {"mm_hashes": hashes,
            "mm_placeholders": {m: [{"offset": o, "length": n} for o, n in s]
                                for m, s in spans.items()},
            "kwargs_data": None, "mm_metadata": None}


@pytest.mark.parametrize(("version", "shape"), [
    ("0.15.0", "engine-prompts"), ("0.16.0", "engine-prompts"), ("0.17.1", "engine-prompts"),
    ("0.18.0", "generate-request"), ("0.24.0", "generate-request"),
    ("0.31.0", "generate-request"), ("0.33.0", "generate-request"), ("0.31", "generate-request"),
])
def test_shape_per_release(version: str, shape: str) -> None:
    assert render_response_shape(version).name == shape


def test_releases_without_render_endpoints_are_refused() -> None:
    with pytest.raises(RenderEndpointError, match="no render endpoints") as caught:
        RenderResponseParser(vllm_version="0.14.1")
    assert caught.value.field == "vllm_version"
    with pytest.raises(UnknownVersionError):
        RenderResponseParser(vllm_version="0.99.0")


def test_render_paths() -> None:
    assert RENDER_PATHS == {CHAT: CHAT + "/render", CMPL: CMPL + "/render"}


# --- 0.18+ answers -----------------------------------------------------------------------


def test_chat_answer_gives_ids_salt_and_model() -> None:
    (prompt,) = RenderResponseParser().parse(
        CHAT, 200, answer([5, 6, 7], model="m", cache_salt="tenant"))
    assert list(prompt.token_ids) == [5, 6, 7]
    assert prompt.request.cache_salt == "tenant"
    assert prompt.request.lora is None
    assert (prompt.model, prompt.prompt) == ("m", None)


def test_completions_answer_is_one_prompt_per_item_and_render_path_is_accepted() -> None:
    prompts = RenderResponseParser().parse(CMPL + "/render", 200,
                                           [answer([1, 2]), answer([3])])
    assert [list(p.token_ids) for p in prompts] == [[1, 2], [3]]


def test_features_become_mm_items_in_prompt_order() -> None:
    feats = features({"image": ["img-b", "img-a"], "audio": ["aud"]},
                     {"image": [(10, 4), (2, 3)], "audio": [(6, 2)]})
    (prompt,) = RenderResponseParser().parse(CHAT, 200, answer(list(range(20)), features=feats))
    assert prompt.request.mm_items == (MMItem("img-a", 2, 3), MMItem("aud", 6, 2),
                                       MMItem("img-b", 10, 4))


@pytest.mark.parametrize("tower", [False, True])
def test_adapter_and_tower_connector_prefix(tower: bool) -> None:
    parser = RenderResponseParser(loras=[ADAPTER], served_model_names=["base"],
                                  enable_tower_connector_lora=tower)
    feats = features({"image": ["h"]}, {"image": [(0, 2)]})
    (prompt,) = parser.parse(CHAT, 200, answer([1, 2, 3], model="sql", features=feats))
    assert prompt.request.lora == ADAPTER
    assert prompt.request.mm_items == (MMItem("sql:h" if tower else "h", 0, 2),)
    (base,) = parser.parse(CHAT, 200, answer([1, 2, 3], model="base", features=feats))
    assert base.request.lora is None
    assert base.request.mm_items == (MMItem("h", 0, 2),)


def test_body_model_is_used_when_the_answer_has_none() -> None:
    parser = RenderResponseParser(loras=[ADAPTER])
    (prompt,) = parser.parse(CHAT, 200, answer([1], model=None), model="sql")
    assert prompt.request.lora == ADAPTER


def test_unknown_model_is_refused_when_served_names_are_known() -> None:
    parser = RenderResponseParser(served_model_names=["base"])
    with pytest.raises(RenderEndpointError, match="LoRA path is unknown") as caught:
        parser.parse(CHAT, 200, answer([1], model="runtime-adapter"))
    assert caught.value.field == "response.model"
    # Without served names such a model counts as the base model.
    (prompt,) = RenderResponseParser().parse(CHAT, 200, answer([1], model="anything"))
    assert prompt.request.lora is None


def test_negative_ids_in_an_answer_are_kept_for_the_api_rules() -> None:
    # The engine core hashes them; the release's API rules (hash's default) refuse them.
    (prompt,) = RenderResponseParser().parse(CHAT, 200, answer([1, -2]))
    assert list(prompt.token_ids) == [1, -2]


@pytest.mark.parametrize(("payload", "field"), [
    ([], "response"),
    (answer([]), "response.token_ids"),
    (answer([1, 2.0]), "response.token_ids"),  # type: ignore[list-item]
    (answer([1, True]), "response.token_ids"),
    (answer("123"), "response.token_ids"),  # type: ignore[arg-type]
    (answer([1], cache_salt=5), "response.cache_salt"),
    (answer([1], model=["m"]), "response.model"),
    (answer([1], features=features({"image": ["h"]}, {"video": [(0, 1)]})),
     "response.features"),
    (answer([1, 2], features=features({"image": ["h", "i"]}, {"image": [(0, 1)]})),
     "response.features.mm_hashes.image"),
    (answer([1, 2], features=features({"image": [""]}, {"image": [(0, 1)]})),
     "response.features.mm_hashes.image[0]"),
    (answer([1, 2], features=features({"image": ["h"]}, {"image": [(0, 0)]})),
     "response.features.mm_placeholders.image[0].length"),
    (answer([1, 2], features=features({"image": ["h"]}, {"image": [(-1, 1)]})),
     "response.features.mm_placeholders.image[0].offset"),
    (answer([1, 2], features=features({"image": ["h"]}, {"image": [(1, 5)]})),
     "response.features"),
    (answer([1, 2, 3], features=features({"image": ["h", "i"]}, {"image": [(0, 2), (1, 2)]})),
     "response.features"),
    (answer([1], features=[]), "response.features"),
])
def test_malformed_answers_are_refused(payload: Any, field: str) -> None:
    with pytest.raises(RenderEndpointError) as caught:
        RenderResponseParser().parse(CHAT, 200, payload)
    assert caught.value.field == field
    assert caught.value.status == 200


def test_completions_answer_must_be_a_list() -> None:
    with pytest.raises(RenderEndpointError) as caught:
        RenderResponseParser().parse(CMPL, 200, answer([1]))
    assert caught.value.field == "response"


# --- errors ---------------------------------------------------------------------------------


def test_4xx_is_the_renderers_request_error() -> None:
    error = {"error": {"message": "Input should be a valid list", "type": "Bad Request",
                       "param": "body.messages.2.content", "code": 400}}
    with pytest.raises(RenderRequestError) as caught:
        RenderResponseParser().parse(CHAT, 400, error)
    assert (caught.value.field, caught.value.status) == ("messages[2].content", 400)
    assert caught.value.reason == "Input should be a valid list"


@pytest.mark.parametrize(("status", "payload"), [
    (500, {"error": {"message": "boom", "type": "InternalServerError", "param": None,
                     "code": 500}}),
    (502, "Bad Gateway"),
    (400, {"detail": "not vLLM's error object"}),
])
def test_other_errors_are_endpoint_errors(status: int, payload: Any) -> None:
    with pytest.raises(RenderEndpointError) as caught:
        RenderResponseParser().parse(CHAT, status, payload)
    assert caught.value.status == status


def test_unknown_endpoint() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        RenderResponseParser().parse("/v1/responses", 200, answer([1]))
    assert caught.value.field == "endpoint"


# --- 0.15-0.17 answers ----------------------------------------------------------------------


def test_engine_prompts_chat_and_completions() -> None:
    parser = RenderResponseParser(vllm_version="0.16.0", loras=[ADAPTER])
    conversation = [{"role": "user", "content": "hi"}]
    engine_prompt = {"prompt_token_ids": [4, 5], "prompt": "<user>hi", "cache_salt": "s"}
    (prompt,) = parser.parse(CHAT, 200, [conversation, [engine_prompt]], model="sql")
    assert list(prompt.token_ids) == [4, 5]
    assert (prompt.prompt, prompt.request.cache_salt) == ("<user>hi", "s")
    assert prompt.request.lora == ADAPTER
    prompts = RenderResponseParser(vllm_version="0.17.1").parse(
        CMPL, 200, [{"type": "token", "prompt_token_ids": [1]}, {"prompt_token_ids": [2, 3]}])
    assert [list(p.token_ids) for p in prompts] == [[1], [2, 3]]


@pytest.mark.parametrize(("endpoint", "payload", "field"), [
    (CHAT, {"prompt_token_ids": [1]}, "response"),
    (CHAT, [[], []], "response[1]"),
    (CHAT, [[], [{"prompt_token_ids": [1]}, {"prompt_token_ids": [2]}]], "response[1]"),
    (CMPL, [{"type": "multimodal", "prompt_token_ids": [1]}], "response[0]"),
    (CMPL, [{"type": "embeds", "prompt_embeds": "..."}], "response[0]"),
    (CMPL, [{"prompt": "text only"}], "response[0].prompt_token_ids"),
])
def test_engine_prompts_malformed(endpoint: str, payload: Any, field: str) -> None:
    with pytest.raises(RenderEndpointError) as caught:
        RenderResponseParser(vllm_version="0.15.0").parse(endpoint, 200, payload)
    assert caught.value.field == field


# --- the parser itself ----------------------------------------------------------------------


def test_parser_is_immutable_and_checks_its_adapters() -> None:
    parser = RenderResponseParser()
    with pytest.raises(FrozenError):
        parser.vllm_version = "0.18.0"
    with pytest.raises(InvalidRequestError, match="given twice"):
        RenderResponseParser(loras=[ADAPTER, LoRA("sql", "/other", 2)])
    with pytest.raises(InvalidRequestError):
        RenderResponseParser(loras=[("sql", "/p")])  # type: ignore[list-item]
