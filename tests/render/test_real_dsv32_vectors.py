"""Replay vLLM's rendering of DeepSeek-V3.2 bodies (tokenizer mode ``deepseek_v32``).

``real_dsv32_vectors.jsonl`` is what vLLM 0.31.0's render server answered for each body
of ``real_dsv32_bodies.jsonl`` (tools/build_real_dsv32_bodies.py, tools/harvest_render.py)
over the real folder ``tests/render/real/deepseek_v32``: DeepSeek-V3's tokenizer files
(fetched into the test cache, tests/real_models.py; V3.2's own are in no registry) under
a config.json naming ``DeepseekV32ForCausalLM``, for which vLLM switches to its mode
``deepseek_v32`` (render/_encoders.py, render/_deepseek_v32.py). The other releases'
answers are kept under ``releases/<release>/``. Every body must replay at every
release: the same ids, or a typed error with vLLM's status and, for the encoder's own
refusals, its message.
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from render_cases import RenderCase, each_case, kept_case, render_cases

from prefixkey.errors import PrefixKeyError
from prefixkey.render import (
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
    ServerOptions,
)
from prefixkey.render._deepseek_v32 import encode_messages
from prefixkey.render._encoders import ENCODER_MODES

CORPUS = "real_dsv32_"
CASES = render_cases(CORPUS)
#: The releases whose answers are kept beside 0.31.0's.
KEPT = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")
#: Bodies vLLM refuses that prefixkey refuses as not reproduced, on every path (not this
#: mode's): an image part for a model without a verified image processor (vLLM: "… is
#: not a multimodal model").
UNSUPPORTED = {"deepseek_v32/image-part": "messages[0].content[0]"}


def options(case: RenderCase, release: str) -> ServerOptions:
    server = case.server
    return ServerOptions(
        model=str(case.folder()), served_model_name=tuple(case.served_names),
        max_model_len=server.get("--max-model-len"),
        exclude_tools_when_tool_choice_none=server.get(
            "--exclude-tools-when-tool-choice-none", False),
        default_chat_template_kwargs=server.get("--default-chat-template-kwargs", {}),
        vllm_version=release)


@cache
def renderer(server: str, release: str) -> Renderer:
    case = next(c for c in CASES if json.dumps(c.server, sort_keys=True) == server)
    return Renderer(options(case, release))


def _replays(case: RenderCase, release: str) -> None:
    r = renderer(json.dumps(case.server, sort_keys=True), release)
    if case.status == 200:
        rendered = r.render(case.endpoint, case.body)
        ids = [list(x.token_ids) for x in rendered]
        assert ids == (case.token_ids if case.endpoint == "/v1/completions"
                       else [case.token_ids])
        return
    with pytest.raises(PrefixKeyError) as info:
        r.render(case.endpoint, case.body)
    if case.id in UNSUPPORTED:
        assert isinstance(info.value, RenderUnsupportedError), info.value
        assert info.value.field == UNSUPPORTED[case.id]
        return
    assert not isinstance(info.value, RenderUnsupportedError), info.value
    assert isinstance(info.value, RenderRequestError), info.value
    assert info.value.status == case.status, (info.value, case.error)
    assert case.error is not None
    if info.value.field == "messages" and case.endpoint == "/v1/chat/completions":
        assert info.value.reason == case.error["message"]


def test_the_corpus_is_whole() -> None:
    assert 100 <= len(CASES) <= 130
    assert {c.status for c in CASES} == {200, 400, 500}
    assert {c.real for c in CASES} == {"deepseek_v32"}
    assert ENCODER_MODES["deepseek_v32"].releases == {"0.31.0", *KEPT}


@each_case(CASES)
def test_vllm_dsv32_rendering_replays(case: RenderCase) -> None:
    _replays(case, "0.31.0")


@pytest.mark.parametrize("release", KEPT)
def test_each_release_replays(release: str) -> None:
    for case in CASES:
        _replays(kept_case(case, release, CORPUS), release)


def test_the_folder_takes_the_mode_and_tokenizer_json_as_is() -> None:
    """The hub class (LlamaTokenizerFast) is not consulted: TokenizersBackend as is."""
    decision = renderer(json.dumps(CASES[0].server, sort_keys=True), "0.31.0") \
        .folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class, decision.mode) == (
        "as_is", "TokenizersBackend", "deepseek_v32")


@pytest.mark.parametrize(("messages", "thinking", "text"), [
    ([{"role": "user", "content": "Hi"}], "chat",
     "<\uff5cbegin▁of▁sentence\uff5c><\uff5cUser\uff5c>Hi<\uff5cAssistant\uff5c></think>"),
    ([{"role": "user", "content": "Hi"}], "thinking",
     "<\uff5cbegin▁of▁sentence\uff5c><\uff5cUser\uff5c>Hi<\uff5cAssistant\uff5c><think>"),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo",
                                          "reasoning": "r"}], "thinking",
     "<\uff5cbegin▁of▁sentence\uff5c><\uff5cUser\uff5c>Hi<\uff5cAssistant\uff5c><think>r</think>Yo"
     "<\uff5cend▁of▁sentence\uff5c>"),
])
def test_the_format_on_its_own(messages: list[dict[str, str]], thinking: str,
                               text: str) -> None:
    """The encoder alone (the texts the replayed ids decode to)."""
    assert encode_messages(messages, thinking_mode=thinking,  # type: ignore[arg-type]
                           drop_thinking=messages[-1]["role"] == "user") == text
