"""Replay other releases' answers for the Python-tokenizer and CodeLlama corpora.

tests/render/releases/<release>/real_py_*vectors.jsonl hold what vLLM 0.29.0's, 0.30.0's,
0.32.0's and 0.33.0's (its overlay; ``ANSWERED``) render servers answered for the bodies
of tests/render/real_py_*bodies.jsonl (tools/build_python_bodies.py ``--keep-release``);
each is replayed with that release's
``--vllm-version``. The CodeLlama bodies after an infilling text (``after-fill/``) and the
infilling texts themselves are left to test_real_py_codellama_vectors.py.
"""

from __future__ import annotations

import pytest
from render_cases import (
    GPT2_PY_FOLDERS,
    GPT2_PY_RELEASES,
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_cases,
    render_cases,
    server_renderer,
)

from prefixkey.render import VERIFIED_RELEASES, RenderUnsupportedError
from prefixkey.render._hf_python import PYTHON_CODECS

CORPORA = ("real_py_", "real_py_ctc_", "real_py_vocab_", "real_py_codellama_")
#: The releases whose answers to each corpus are kept (0.33.0: its overlay).
ANSWERED = {"real_py_": ("0.29.0", "0.30.0", "0.32.0", "0.33.0"),
            "real_py_ctc_": ("0.30.0", "0.32.0", "0.33.0"),
            "real_py_vocab_": ("0.29.0", "0.30.0", "0.32.0", "0.33.0"),
            "real_py_codellama_": ("0.29.0", "0.30.0", "0.32.0", "0.33.0")}
RELEASES = sorted({release for answered in ANSWERED.values() for release in answered})
#: (release, corpus) whose server did not start: vLLM 0.29.0's registry answers
#: "Model architectures ['Wav2Vec2ForCTC'] are not supported for now" (its harvest).
NOT_STARTED = {("0.29.0", "real_py_ctc_")}
INFILLING = {"code_llama/completion-fill", "code_llama/completion-fill-no-specials",
             "code_llama/completion-fill-start",
             "code_llama/completion-fill-start-no-specials", "code_llama/chat-fill"}


def _replayed(release: str) -> list[RenderCase]:
    return [case for corpus in CORPORA if release in ANSWERED[corpus]
            for case in release_cases(corpus, release)
            if not case.id.startswith("code_llama/after-fill/") and case.id not in INFILLING]


@pytest.mark.parametrize("corpus", CORPORA)
def test_the_releases_answered_every_body(corpus: str) -> None:
    kept = (RENDER_DIR / "releases").glob(f"*/{corpus}vectors.jsonl")
    assert sorted(p.parent.name for p in kept) == list(ANSWERED[corpus])
    assert not {r for r, c in NOT_STARTED if c == corpus} & set(ANSWERED[corpus])
    for release in ANSWERED[corpus]:
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


@pytest.mark.parametrize("corpus", [c for c in CORPORA if c != "real_py_codellama_"])
def test_each_class_opens_the_releases_that_answered_its_corpus(corpus: str) -> None:
    """A reproduced class renders at 0.31.0 and the releases whose answers to its corpus
    (or to its GPT-2 twin's, real_py_gpt2_) are kept; any other verified release refuses
    it, naming the release (CodeLlama's corpus is a rebuild's, not a Python class's)."""
    for case in {c.folder(): c for c in render_cases(corpus)}.values():
        r = server_renderer(case, "0.31.0")
        cls = r.folder.tokenizer_decision.tokenizer_class
        twin = GPT2_PY_RELEASES if cls in GPT2_PY_FOLDERS.values() else frozenset()
        answered = {"0.31.0", *ANSWERED[corpus], *twin}
        assert cls is not None and PYTHON_CODECS[cls].releases == frozenset(answered), cls
        for release in sorted(set(VERIFIED_RELEASES) - answered):
            if (release, corpus) in NOT_STARTED:
                continue
            with pytest.raises(RenderUnsupportedError, match=f"not vLLM {release}'s"):
                server_renderer(case, release)
