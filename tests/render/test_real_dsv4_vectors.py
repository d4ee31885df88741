"""Replay vLLM's rendering of DeepSeek-V4/V4.1 bodies (tokenizer modes ``deepseek_v4``,
``deepseek_v41``).

``real_dsv4_vectors.jsonl`` is what vLLM 0.31.0's render server answered for each body
of ``real_dsv4_bodies.jsonl`` (tools/build_real_dsv4_bodies.py, tools/harvest_render.py)
over the real folders ``tests/render/real/deepseek_v4*``: DeepSeek-V3's tokenizer files
(fetched into the test cache, tests/real_models.py; V4's own are in no registry) under a
config.json naming ``DeepseekV4ForCausalLM`` or ``DeepseekV41ForCausalLM``, for which
vLLM switches to its mode ``deepseek_v4`` or ``deepseek_v41`` (render/_encoders.py,
render/_deepseek_v4.py, render/_deepseek_v41.py).
The ``deepseek_v41_image`` and ``deepseek_v41_vision`` folders add the V4.1 processor's
image token to that tokenizer (at 129264, the id vLLM requires) and carry the image bodies
(render/_vision/_deepseek_v41.py; the ``_image`` folder also served with
``--trust-request-mm-kwargs`` and with ``--mm-processor-kwargs``); over ``deepseek_v41``
(no such token) and ``deepseek_v41_otherid`` (the token at 129265) every image is vLLM's
400. vLLM 0.30 has no ``--trust-request-mm-kwargs`` (it takes a body's own kwargs always):
its answers for the ``trusted-`` bodies come from a server without the flag. The other
releases' answers are kept under ``releases/<release>/``. Every body must replay at every
release its mode names: the same ids, or a typed error with vLLM's status and, for the
encoders' own refusals, its message.
"""

from __future__ import annotations

import pytest
from render_cases import (
    RenderCase,
    assert_server_replays,
    each_case,
    each_release_case,
    real_renderer,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.errors import RemoteMediaError
from prefixkey.render import ModelFolderError, RenderRequestError, RenderUnsupportedError
from prefixkey.render._encoders import ENCODER_MODES

CORPUS = "real_dsv4_"
CASES = render_cases(CORPUS)
#: The releases whose answers are kept beside 0.31.0's.
KEPT = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")
#: The folders' modes.
MODES = {"deepseek_v4": "deepseek_v4", "deepseek_v41": "deepseek_v41",
         "deepseek_v41_image": "deepseek_v41", "deepseek_v41_vision": "deepseek_v41",
         "deepseek_v41_otherid": "deepseek_v41"}
V41_FOLDERS = frozenset(f for f, mode in MODES.items() if mode == "deepseek_v41")
#: The releases kept without a mode's answers: vLLM 0.29 has no deepseek_v41 mode (its
#: server does not start for the V4.1 folders: neither its config registry nor transformers
#: 5.24's config mapping has model_type deepseek_v41), and prefixkey refuses the folders.
NOT_VERIFIED = {"0.29.0": V41_FOLDERS}
#: An https image over V4.1: vLLM fetches it (here it answered 500, having no network);
#: prefixkey fetches nothing unless the caller opts in (RemoteMediaError).
REMOTE = frozenset(c.id for c in CASES if c.real in V41_FOLDERS
                   and c.id.endswith("/chat-media-image-later-turn"))
#: An image by its uuid alone: a server whose processor cache has not seen the uuid
#: answers 400 "Cache miss ..." (the "uuid-only" bodies), one that has renders it with the
#: cached image's grid ("-seen": an earlier body sent it); prefixkey, which cannot see the
#: replica's cache, refuses both once the checks before that lookup pass.
CACHE_MISS = "Cache miss for image at index"
UUID_ONLY = frozenset(c.id for c in CASES if c.id.endswith("/chat-image-uuid-only-seen")
                      or (c.error is not None and CACHE_MISS in c.error["message"]))


def _same_reason(case: RenderCase, error: RenderRequestError) -> bool:
    """The chat refusals carry vLLM's message, but for its task names, which vLLM lists
    in a per-process order."""
    assert case.error is not None
    return (case.endpoint == "/v1/chat/completions"
            and not case.error["message"].startswith("Invalid task:"))


def test_the_corpus_is_whole() -> None:
    assert {c.real for c in CASES} == set(MODES)
    assert {c.status for c in CASES} >= {200, 400}
    for folder, mode in MODES.items():
        assert ENCODER_MODES[mode].releases == {
            "0.31.0", *(r for r in KEPT if folder not in NOT_VERIFIED.get(r, ()))}


def _replays(case: RenderCase, release: str | None = None) -> None:
    if case.id in REMOTE:
        with pytest.raises(RemoteMediaError):
            server_renderer(case, release).render(case.endpoint, case.body)
        return
    if case.id in UUID_ONLY:
        assert case.status == 200 if case.id.endswith("-seen") else case.status == 400
        with pytest.raises(RenderUnsupportedError, match=CACHE_MISS):
            server_renderer(case, release).render(case.endpoint, case.body)
        return
    assert_server_replays(case, release, same_reason=_same_reason)


@each_case(CASES)
def test_vllm_dsv4_rendering_replays(case: RenderCase) -> None:
    _replays(case)


@each_release_case(release_table(CORPUS, {r: NOT_VERIFIED.get(r, ()) for r in KEPT}))
def test_each_release_replays(release: str, case: RenderCase) -> None:
    _replays(case, release)


IMAGE_CASES = [c for c in CASES if c.status == 200 and c.endpoint == "/v1/chat/completions"
               and c.response.get("features") and c.id not in UUID_ONLY]


@each_case(IMAGE_CASES)
def test_each_image_lies_where_vllm_placed_it(case: RenderCase) -> None:
    """Each image's item: vLLM's placeholder range (``features.mm_placeholders``), and
    its identifier where it is the body's uuid (the others hash the server's --model
    path, the harvesting machine's: the same only over the same cache path)."""
    (rendered,) = server_renderer(case).render(case.endpoint, case.body)
    features = case.response["features"]
    assert [(m.offset, m.length) for m in rendered.request.mm_items] == [
        (p["offset"], p["length"]) for p in features["mm_placeholders"]["image"]]
    for item, name in zip(rendered.request.mm_items, features["mm_hashes"]["image"],
                          strict=True):
        if len(name) != 64:  # a uuid
            assert item.identifier == name


@pytest.mark.parametrize(("release", "folder"), [
    (release, folder) for release, folders in NOT_VERIFIED.items() for folder in sorted(folders)])
def test_a_release_without_the_mode_is_refused(release: str, folder: str) -> None:
    with pytest.raises(ModelFolderError, match=f"nor vLLM {release}'s own config registry"):
        real_renderer(CASES, folder, release)


@pytest.mark.parametrize("folder", sorted(MODES))
def test_the_folder_takes_the_mode_and_tokenizer_json_as_is(folder: str) -> None:
    case = next(c for c in CASES if c.real == folder)
    decision = server_renderer(case).folder.tokenizer_decision
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


def test_media_parts_are_text_only_over_v4_and_counted_over_v41() -> None:
    """V4 is text-only in vLLM's registry; V4.1 is multimodal: images only (audio and
    video: "At most 0 …"), and its corpus has images vLLM rendered."""
    media = [c for c in CASES if "/chat-media-" in c.id]
    assert {c.real for c in media} == set(MODES) - {"deepseek_v41_otherid"}  # images only
    for case in media:
        assert case.status in (400, 500) and case.error is not None
        text_only = case.real == "deepseek_v4"
        assert ("is not a multimodal model" in case.error["message"]) == text_only, case.id
        if "audio" in case.id or "video" in case.id:
            assert case.error["message"].startswith("At most 0 ") != text_only, case.id
    assert {c.real for c in IMAGE_CASES} == {"deepseek_v41_image", "deepseek_v41_vision"}
