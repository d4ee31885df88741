"""Replay each release's rendering of a tokenizer folder given to vLLM under a name that
matches a TokenizersBackend name pattern of some releases' transformers only.

``naver-clova-ix/donut-*`` is one of transformers 5.24's and 5.19's
``MODEL_IDS_TO_TOKENIZERS_BACKEND`` (vLLM 0.29, 0.30, 0.32, 0.33), not of 5.17's (0.31):
there AutoTokenizer loads tokenizer.json as it is, at 0.31 the class rules rebuild it for
the hub GPT2Tokenizer. ``real_name_bodies.jsonl`` (tools/build_real_name_bodies.py) serves
the folder as ``--tokenizer naver-clova-ix/donut-base``; ``real_name_vectors.jsonl`` is vLLM
0.31.0's render server's answers, tests/render/releases/<release>/ the other releases'. A
release whose answers were replayed here decides drifted patterns with its own list
(``VerifiedRelease.hf_names_replayed``, render/_hf_decision.py ``release_drift``).
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
    server_renderer,
)

from prefixkey.render import RenderUnsupportedError
from prefixkey.render._eras import render_release
from prefixkey.render._hf_decision import release_drift, release_facts

sys.path.insert(0, str(RENDER_DIR.parent.parent / "tools"))
from build_real_name_bodies import NAME

CORPUS = "real_name_"
CASES = render_cases(CORPUS)
#: The releases whose servers answered the corpus: each one's (path, class).
DECISIONS = {"0.29.0": ("as_is", "TokenizersBackend"), "0.30.0": ("as_is", "TokenizersBackend"),
             "0.31.0": ("rebuilt", "GPT2Tokenizer"), "0.32.0": ("as_is", "TokenizersBackend"),
             "0.33.0": ("as_is", "TokenizersBackend")}
KEPT = sorted(set(DECISIONS) - {"0.31.0"})


@pytest.mark.parametrize("release", KEPT)
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


@pytest.mark.parametrize("release", sorted(DECISIONS))
def test_the_name_takes_its_releases_own_pattern_list(release: str) -> None:
    case = CASES[0]
    assert case.server["--tokenizer"] == NAME
    decision = server_renderer(case, release).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == DECISIONS[release]
    listed = "naver-clova-ix/donut-*" in release_facts(release).BACKEND_NAME_PATTERNS
    assert listed is (release != "0.31.0")
    assert NAME in render_release(release).hf_names_replayed or release == "0.31.0"
    assert not release_drift(release)[1]


@each_release_case(release_table(CORPUS, {r: set() for r in sorted(DECISIONS)}))
def test_vllm_rendering_under_a_drifted_name_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


def test_a_release_without_a_replayed_name_refuses_the_drifted_pattern(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from prefixkey.render import _hf_decision

    monkeypatch.setattr(_hf_decision, "render_release",
                        lambda v: replace(render_release(v), hf_names_replayed=frozenset()))
    _hf_decision.release_drift.cache_clear()
    try:
        assert _hf_decision.release_drift("0.32.0")[1] == {"naver-clova-ix/donut-*"}
        with pytest.raises(RenderUnsupportedError, match=(
                r"^--tokenizer: the name 'naver-clova-ix/donut-base' matches a "
                r"TokenizersBackend name pattern of only one of transformers 5\.19\.0")):
            _hf_decision.check_release_drift("0.32.0", "qwen3", NAME)
    finally:
        monkeypatch.undo()
        _hf_decision.release_drift.cache_clear()
