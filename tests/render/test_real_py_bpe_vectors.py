"""Replay vLLM 0.31.0's rendering of folders whose tokenizer is a fastBPE-style Python
tokenizer (CTRLTokenizer, BlenderbotSmallTokenizer: render/_hf_python.py's ``bpe_words``).

``real_py_bpe_bodies.jsonl`` (tools/build_python_bodies.py ``--bpe``) holds chat and
completions bodies over tests/render/real/ctrl_rule (model type ctrl) and
blenderbot_small_rule (blenderbot-small, its decoder-only architecture): OpenAI CLIP's
real merges written as these classes' vocab.json/merges.txt (tests/real_models.py's
``clip_fastbpe``: a real vocabulary under the classes' format, not their own).
``real_py_bpe_vectors.jsonl`` is what vLLM's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. The files are fetched into a cache: without it these tests skip,
under CI they fetch.

tests/render/releases/<release>/real_py_bpe_vectors.jsonl hold vLLM 0.29.0's and 0.32.0's
answers for the same bodies (tools/build_python_bodies.py ``--keep-release``), replayed
with that ``--vllm-version``; vLLM 0.29.0 does not start for blenderbot-small's
architectures (its harvest: "not supported for now"), so that folder is refused there.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_covers_both_answers,
    assert_replays,
    real_renderer,
    render_cases,
)

from prefixkey.errors import PrefixKeyError
from prefixkey.render import Renderer, RenderRequestError, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_python import PYTHON_CODECS

CASES = render_cases("real_py_bpe_")
FOLDER_CLASSES = {"ctrl_rule": "CTRLTokenizer",
                  "blenderbot_small_rule": "BlenderbotSmallTokenizer"}


def test_the_corpus_covers_both_bpe_classes_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)
    assert {c for c, codec in PYTHON_CODECS.items() if codec.unit == "bpe_words"} == set(
        FOLDER_CLASSES.values())


@pytest.mark.parametrize(("folder", "cls"), sorted(FOLDER_CLASSES.items()))
def test_each_folder_takes_its_python_codec(folder: str, cls: str) -> None:
    decision = real_renderer(CASES, folder, 512).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("python", cls)
    assert decision.recipe == PYTHON_CODECS[cls].name


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_vllm_rendering_of_fastbpe_folders_replays(case: RenderCase) -> None:
    assert case.real is not None
    assert_replays(real_renderer(CASES, case.real, 512), case)


RELEASES = ("0.29.0", "0.32.0")
#: (release, folder) whose server did not start.
NOT_STARTED = {("0.29.0", "blenderbot_small_rule")}


def _vectors(release: str) -> dict[str, dict[str, Any]]:
    path = RENDER_DIR / "releases" / release / "real_py_bpe_vectors.jsonl"
    return {v["id"]: v for v in map(json.loads, path.read_text("utf-8").splitlines())}


@lru_cache(maxsize=1)
def _release_renderer(release: str, folder: str) -> Renderer:
    case = next(c for c in CASES if c.real == folder)
    return Renderer(ServerOptions(model=str(case.folder()), served_model_name=case.served_names,
                                  max_model_len=512, vllm_version=release))


def test_the_releases_answered_every_body_of_the_folders_they_start_for() -> None:
    for release in RELEASES:
        assert set(_vectors(release)) == {c.id for c in CASES
                                          if (release, c.real) not in NOT_STARTED}


@pytest.mark.parametrize(("release", "folder"), sorted(NOT_STARTED))
def test_a_folder_the_release_does_not_start_for_is_refused(release: str, folder: str) -> None:
    case = next(c for c in CASES if c.real == folder)
    with pytest.raises(RenderUnsupportedError, match=f"vLLM {release} does not start"):
        Renderer(ServerOptions(model=str(case.folder()), served_model_name=case.served_names,
                               max_model_len=512, vllm_version=release))


@pytest.mark.parametrize(("release", "case"), [
    pytest.param(r, c, id=f"{r}/{c.id}") for r in RELEASES for c in CASES
    if (r, c.real) not in NOT_STARTED])
def test_a_release_renders_the_fastbpe_corpus(release: str, case: RenderCase) -> None:
    vector = _vectors(release)[case.id]
    assert case.real is not None
    r = _release_renderer(release, case.real)
    if vector["status"] == 200:
        ids: Any = [list(x.token_ids) for x in r.render(case.endpoint, case.body)]
        assert (ids[0] if case.endpoint == "/v1/chat/completions" else ids) == \
            vector["token_ids"]
        return
    with pytest.raises(PrefixKeyError) as info:
        r.render(case.endpoint, case.body)
    assert isinstance(info.value, RenderRequestError), info.value
    assert info.value.status == vector["status"]
