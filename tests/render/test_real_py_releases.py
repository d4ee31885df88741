"""Replay other releases' answers for the Python-tokenizer and CodeLlama corpora.

tests/render/releases/<release>/real_py_*vectors.jsonl hold what vLLM 0.29.0's, 0.30.0's
and 0.32.0's render servers answered for the bodies of tests/render/real_py_*bodies.jsonl
(tools/build_python_bodies.py ``--keep-release``); each is replayed with that release's
``--vllm-version``. The CodeLlama bodies after an infilling text (``after-fill/``) and the
infilling texts themselves are left to test_real_py_codellama_vectors.py.
"""

from __future__ import annotations

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_cases,
    render_cases,
    server_renderer,
)

from prefixkey.render import RenderUnsupportedError

CORPORA = ("real_py_", "real_py_ctc_", "real_py_vocab_", "real_py_codellama_")
RELEASES = sorted(p.parent.name for p in (RENDER_DIR / "releases").glob("*/real_py_vectors.jsonl"))
#: (release, corpus) whose server did not start: vLLM 0.29.0's registry answers
#: "Model architectures ['Wav2Vec2ForCTC'] are not supported for now" (its harvest).
NOT_STARTED = {("0.29.0", "real_py_ctc_")}
INFILLING = {"code_llama/completion-fill", "code_llama/completion-fill-no-specials",
             "code_llama/completion-fill-start",
             "code_llama/completion-fill-start-no-specials", "code_llama/chat-fill"}


def _replayed(release: str) -> list[RenderCase]:
    return [case for corpus in CORPORA if (release, corpus) not in NOT_STARTED
            for case in release_cases(corpus, release)
            if not case.id.startswith("code_llama/after-fill/") and case.id not in INFILLING]


def test_the_releases_answered_every_body() -> None:
    assert RELEASES == ["0.29.0", "0.30.0", "0.32.0"]
    for release in RELEASES:
        for corpus in CORPORA:
            if (release, corpus) in NOT_STARTED:
                assert not (RENDER_DIR / "releases" / release / f"{corpus}vectors.jsonl"
                            ).exists()
                continue
            assert set(kept_vectors(release, corpus)) == {c.id for c in render_cases(corpus)}


@pytest.mark.parametrize(("release", "corpus"), sorted(NOT_STARTED))
def test_a_folder_the_release_does_not_start_for_is_refused(release: str,
                                                            corpus: str) -> None:
    for case in render_cases(corpus):
        with pytest.raises(RenderUnsupportedError, match=f"vLLM {release} does not start"):
            server_renderer(case, release)


@each_release_case({release: _replayed(release) for release in RELEASES})
def test_a_release_renders_the_python_corpora(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)

