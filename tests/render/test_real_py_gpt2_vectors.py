"""Replay vLLM 0.29.0's and 0.31.0's rendering of GPT-2 folders naming the Python classes
whose own architectures vLLM 0.29.0 starts none of.

MarianTokenizer, M2M100Tokenizer, PLBartTokenizer and Speech2TextTokenizer (encoder-decoder
model types), BlenderbotSmallTokenizer and Wav2Vec2CTCTokenizer: their corpora's folders
(real_py_spm_, real_py_bpe_, real_py_ctc_) are of architectures vLLM 0.29.0's server does
not start for, so it answered none of them, yet it tokenizes a folder of an architecture
it starts (GPT-2) whose ``tokenizer_config.json`` names one of these classes.
``real_py_gpt2_bodies.jsonl`` (tools/build_python_bodies.py ``--gpt2``) is each class's
folder with only ``config.json`` GPT-2's (``tokenizer_class`` added where the model type
named the class), with its corpus's bodies; ``real_py_gpt2_vectors.jsonl`` is what vLLM
0.31.0's render server answered, and tests/render/releases/0.29.0/ keeps 0.29.0's
(``--keep-release``). Every 200 must give the same ids, every error an error with the
same status, at each release (render/_hf_python.py ``PythonCodec.releases``).
"""

from __future__ import annotations

import pytest
from render_cases import (
    GPT2_PY_FOLDERS,
    GPT2_PY_RELEASES,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.render._hf_python import PYTHON_CODECS

CORPUS = "real_py_gpt2_"
CASES = render_cases(CORPUS)
KEPT = sorted(GPT2_PY_RELEASES - {"0.31.0"})


def test_the_corpus_covers_every_twin_and_both_answers() -> None:
    assert {c.name for c in CASES} == set(GPT2_PY_FOLDERS)
    for folder in GPT2_PY_FOLDERS:
        assert {200, 400} <= {c.status for c in CASES if c.name == folder}, folder


@pytest.mark.parametrize(("folder", "cls"), sorted(GPT2_PY_FOLDERS.items()))
def test_each_twin_takes_its_class_and_the_releases_that_answered_it(folder: str,
                                                                     cls: str) -> None:
    case = next(c for c in CASES if c.name == folder)
    decision = server_renderer(case).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("python", cls)
    assert (PYTHON_CODECS[cls].releases or frozenset()) >= GPT2_PY_RELEASES, cls


@pytest.mark.parametrize("release", KEPT)
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


@each_release_case(release_table(CORPUS, dict.fromkeys(sorted(GPT2_PY_RELEASES), ())))
def test_vllm_rendering_of_the_twins_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
