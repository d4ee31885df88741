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
"""

from __future__ import annotations

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_replays,
    real_renderer,
    render_cases,
)

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
