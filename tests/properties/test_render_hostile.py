"""Any JSON body renders or fails with a typed error: never a traceback, never a hang.

Bodies are drawn around the shapes vLLM reads (messages, parts, tools, prompts,
kwargs), with arbitrary JSON in every slot, lone surrogates included (JSON's
``\\ud800`` escapes decode to them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from render_folders import build_folder

from prefixkey.errors import PrefixKeyError
from prefixkey.render import Renderer, ServerOptions

# Any code point, surrogates and the folder's special-token texts made frequent.
PIECES = st.one_of(st.characters(codec=None, exclude_categories=()), st.sampled_from(
    ["\ud800", "\udfff", "<|im_start|>", "<|endoftext|>", "{{", "\n", " "]))
TEXT = st.lists(PIECES, max_size=12).map("".join)
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**64) | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
PART = st.one_of(TEXT, JSON, st.fixed_dictionaries({"type": st.sampled_from(
    ["text", "refusal", "image_url", "thinking", "tool_reference", "nope"]), "text": JSON}))
ROLES = st.sampled_from(["user", "assistant", "system", "tool", "developer"])
# Mostly well-formed, so that hostile values also reach the template and the tokenizer.
MESSAGE = st.fixed_dictionaries(
    {"role": st.one_of(ROLES, ROLES, ROLES, JSON),
     "content": st.one_of(TEXT, TEXT, TEXT, JSON, st.lists(PART, max_size=3))},
    optional={"tool_calls": st.lists(st.fixed_dictionaries(
        {"type": JSON, "function": st.one_of(JSON, st.fixed_dictionaries(
            {"name": JSON, "arguments": st.one_of(TEXT, JSON)}))}), max_size=2),
        "name": JSON, "tool_call_id": JSON},
)
FIELDS = st.sampled_from([
    "model", "tools", "tool_choice", "add_generation_prompt", "continue_final_message",
    "add_special_tokens", "documents", "chat_template_kwargs", "reasoning_effort",
    "truncate_prompt_tokens", "truncation_side", "max_tokens", "max_completion_tokens",
    "cache_salt", "kv_transfer_params", "temperature", "n", "prompt", "suffix", "echo",
])
EXTRA = st.one_of(st.just({}), st.just({}), st.dictionaries(FIELDS, JSON, max_size=3))
CHAT = st.builds(lambda messages, extra: {"messages": messages, **extra},
                 st.one_of(st.lists(MESSAGE, min_size=1, max_size=4), JSON), EXTRA)
COMPLETION = st.builds(lambda prompt, extra: {"prompt": prompt, **extra},
                       st.one_of(TEXT, st.lists(st.one_of(TEXT, st.integers(-1, 3000),
                                                          st.lists(st.integers(0, 3000))))),
                       EXTRA)


@pytest.fixture(scope="module")
def renderer(tmp_path_factory: pytest.TempPathFactory) -> Renderer:
    folder: Path = build_folder(tmp_path_factory.mktemp("models"), "generic")
    return Renderer(ServerOptions(model=str(folder), max_model_len=512,
                                  enable_auto_tool_choice=True, tool_call_parser="hermes"))


@settings(max_examples=300, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(endpoint=st.sampled_from(["/v1/chat/completions", "/v1/completions"]),
       chat=CHAT, completion=COMPLETION)
def test_any_body_renders_or_is_a_typed_error(renderer: Renderer, endpoint: str,
                                              chat: dict[str, Any],
                                              completion: dict[str, Any]) -> None:
    body = chat if endpoint == "/v1/chat/completions" else completion
    try:
        rendered = renderer.render(endpoint, body)
    except PrefixKeyError:
        return
    assert rendered and all(len(r.token_ids) > 0 for r in rendered)


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb"])
def test_a_lone_surrogate_is_a_typed_error(renderer: Renderer, text: str) -> None:
    for endpoint, body in (("/v1/chat/completions",
                            {"messages": [{"role": "user", "content": text}]}),
                           ("/v1/completions", {"prompt": text})):
        with pytest.raises(PrefixKeyError) as info:
            renderer.render(endpoint, body)
        assert "surrogate" in str(info.value)
