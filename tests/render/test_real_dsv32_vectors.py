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
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from render_cases import (
    RenderCase,
    assert_server_replays,
    each_case,
    each_release_case,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.render import (
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
    ServerOptions,
)
from prefixkey.render._deepseek_v32 import encode_messages
from prefixkey.render._encoders import ENCODER_MODES, check_encoder_release

CORPUS = "real_dsv32_"
CASES = render_cases(CORPUS)
#: The releases whose answers are kept beside 0.31.0's.
KEPT = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")
#: The bodies with media parts: vLLM's 400 for a text-only model, its message given.
MEDIA = frozenset({"deepseek_v32/image-part", *(
    f"deepseek_v32/media-{kind}" for kind in ("audio-part", "video-part", "audio-url-part",
                                              "image-after-text", "image-later-turn"))})


def _same_reason(case: RenderCase, error: RenderRequestError) -> bool:
    """The encoder's own refusals of the messages, and the media parts', carry vLLM's message."""
    return case.id in MEDIA or (error.field == "messages"
                                and case.endpoint == "/v1/chat/completions")


def test_the_corpus_is_whole() -> None:
    assert 100 <= len(CASES) <= 130
    assert {c.status for c in CASES} == {200, 400, 500}
    assert {c.real for c in CASES} == {"deepseek_v32"}
    assert ENCODER_MODES["deepseek_v32"].releases == {"0.31.0", *KEPT}


@each_case(CASES)
def test_vllm_dsv32_rendering_replays(case: RenderCase) -> None:
    assert_server_replays(case, same_reason=_same_reason)


@each_release_case(release_table(CORPUS, dict.fromkeys(KEPT, ())))
def test_each_release_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release, same_reason=_same_reason)


def test_the_folder_takes_the_mode_and_tokenizer_json_as_is() -> None:
    """The hub class (LlamaTokenizerFast) is not consulted: TokenizersBackend as is."""
    decision = server_renderer(CASES[0]).folder.tokenizer_decision
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


def _default_renderer() -> Renderer:
    return server_renderer(CASES[0])


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"tools": {"type": "function"}}, "chat_template_kwargs.tools"),
    ({"tools": ["not a tool"]}, "chat_template_kwargs.tools"),
    ({"tokenize": True, "max_length": 4}, "chat_template_kwargs"),
])
def test_what_is_not_reproduced_is_refused(kwargs: dict[str, object], field: str) -> None:
    body = {"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": kwargs}
    with pytest.raises(RenderUnsupportedError) as info:
        _default_renderer().render_chat(body)
    assert info.value.field == field


def test_the_mode_given_renders_any_folder_so(tmp_path: Path) -> None:
    """``--tokenizer-mode deepseek_v32`` picks the mode whatever the architecture."""
    folder = tmp_path / "v3"
    shutil.copytree(CASES[0].folder(), folder)
    config = json.loads((folder / "config.json").read_text("utf-8"))
    (folder / "config.json").write_text(json.dumps(
        {**config, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"}))
    body = {"messages": [{"role": "user", "content": "Hi"}]}
    given = Renderer(ServerOptions(model=str(folder), tokenizer_mode="deepseek_v32",
                                   max_model_len=2048))
    assert given.folder.tokenizer_decision.mode == "deepseek_v32"
    assert given.render_chat(body).token_ids == _default_renderer().render_chat(body).token_ids


def test_a_release_not_replayed_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    row = ENCODER_MODES["deepseek_v32"]
    monkeypatch.setitem(ENCODER_MODES, "deepseek_v32",
                        replace(row, releases=frozenset({"0.32.0"})))
    with pytest.raises(RenderUnsupportedError, match="not verified"):
        check_encoder_release("deepseek_v32", "0.31.0")
    check_encoder_release("deepseek_v32", "0.32.0")


def test_every_tracked_media_part_was_harvested() -> None:
    """Each part type answered as vLLM's 400 here has its own harvested body."""
    from prefixkey.render._media import _TRACKED_PARTS

    seen = {part["type"] for case in CASES if case.id in MEDIA
            for message in case.body["messages"] if isinstance(message["content"], list)
            for part in message["content"] if part["type"] != "text"}
    assert seen == _TRACKED_PARTS
    assert all(c.status == 400 and "is not a multimodal model" in (c.error or {})["message"]
               for c in CASES if c.id in MEDIA)
