"""Replay vLLM's rendering of DeepSeek-V4/V4.1 bodies (tokenizer modes ``deepseek_v4``,
``deepseek_v41``).

``real_dsv4_vectors.jsonl`` is what vLLM 0.31.0's render server answered for each body
of ``real_dsv4_bodies.jsonl`` (tools/build_real_dsv4_bodies.py, tools/harvest_render.py)
over the real folders ``tests/render/real/deepseek_v4*``: DeepSeek-V3's tokenizer files
(fetched into the test cache, tests/real_models.py; V4's own are in no registry) under a
config.json naming ``DeepseekV4ForCausalLM`` or ``DeepseekV41ForCausalLM``, for which
vLLM switches to its mode ``deepseek_v4`` or ``deepseek_v41`` (render/_encoders.py,
render/_deepseek_v4.py, render/_deepseek_v41.py).
The other releases' answers are kept under ``releases/<release>/``. Every body must
replay at every release its mode names: the same ids, or a typed error with vLLM's
status and, for the encoders' own refusals, its message.
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
from prefixkey.render._encoders import ENCODER_MODES

CORPUS = "real_dsv4_"
CASES = render_cases(CORPUS)
#: The releases whose answers are kept beside 0.31.0's.
KEPT = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")
#: The folders' modes.
MODES = {"deepseek_v4": "deepseek_v4", "deepseek_v41": "deepseek_v41"}
#: Media parts over V4.1, which vLLM's registry calls multimodal: it counts the parts
#: ("At most 0 audio(s) …") and loads the images, which prefixkey does not reproduce.
UNSUPPORTED = frozenset(c.id for c in CASES if c.id.startswith("deepseek_v41/chat-media-"))


def options(case: RenderCase, release: str) -> ServerOptions:
    server = case.server
    return ServerOptions(
        model=str(case.folder()), served_model_name=tuple(case.served_names),
        max_model_len=server.get("--max-model-len"), vllm_version=release)


@cache
def renderer(server: str, release: str) -> Renderer:
    case = next(c for c in CASES if json.dumps(c.server, sort_keys=True) == server)
    return Renderer(options(case, release))


def _verified(case: RenderCase, release: str) -> bool:
    assert case.real is not None
    return release in ENCODER_MODES[MODES[case.real]].releases


def _replays(case: RenderCase, release: str) -> None:
    if not _verified(case, release):
        # vLLM before 0.30 has no deepseek_v41 mode: prefixkey refuses the folder.
        with pytest.raises(RenderUnsupportedError):
            renderer(json.dumps(case.server, sort_keys=True), release)
        return
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
        return
    assert not isinstance(info.value, RenderUnsupportedError), info.value
    assert isinstance(info.value, RenderRequestError), info.value
    assert info.value.status == case.status, (info.value, case.error)
    assert case.error is not None
    if case.endpoint == "/v1/chat/completions" and not case.error["message"].startswith(
            "Invalid task:"):  # vLLM lists the task names in a per-process order
        assert info.value.reason == case.error["message"]


def test_the_corpus_is_whole() -> None:
    assert {c.real for c in CASES} == set(MODES)
    assert {c.status for c in CASES} >= {200, 400}
    assert ENCODER_MODES["deepseek_v4"].releases == {"0.31.0", *KEPT}


@each_case(CASES)
def test_vllm_dsv4_rendering_replays(case: RenderCase) -> None:
    _replays(case, "0.31.0")


@pytest.mark.parametrize("release", KEPT)
def test_each_release_replays(release: str) -> None:
    for case in CASES:
        # A release without the mode has no answers kept (0.29's server does not start
        # for the V4.1 folder): prefixkey must refuse the folder there.
        _replays(kept_case(case, release, CORPUS) if _verified(case, release) else case,
                 release)


@pytest.mark.parametrize("folder", sorted(MODES))
def test_the_folder_takes_the_mode_and_tokenizer_json_as_is(folder: str) -> None:
    case = next(c for c in CASES if c.real == folder)
    decision = renderer(json.dumps(case.server, sort_keys=True), "0.31.0") \
        .folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class, decision.mode) == (
        "as_is", "TokenizersBackend", MODES[folder])


def test_the_conditional_generation_architecture_is_refused() -> None:
    """vLLM switches it to deepseek_v4 too, but its render server does not start for it
    (0.31 on CPU: "does not support `--runner generate`"): not verified."""
    from prefixkey.render._hf_decision import decide_tokenizer

    decision = decide_tokenizer(
        model_type="deepseek_v4", architectures=["DeepseekV4ForConditionalGeneration"],
        tokenizer_mode="auto", tokenizer_config={}, config={}, name="x",
        has_tokenizer_json=True)
    assert decision.path == "refused"
    assert "verified here for DeepseekV4ForCausalLM only" in decision.why


def test_media_parts_are_vllms_400_over_v4_and_refused_over_v41() -> None:
    media = [c for c in CASES if "/chat-media-" in c.id]
    assert {c.real for c in media} == set(MODES)
    for case in media:
        assert case.status in (400, 500) and case.error is not None
        text_only = case.real == "deepseek_v4"
        assert ("is not a multimodal model" in case.error["message"]) == text_only, case.id
