"""Replay vLLM 0.31.0's rendering of folders whose tokenizer is a reproduced Python
tokenizer (ByT5Tokenizer, PerceiverTokenizer, CanineTokenizer, Wav2Vec2CTCTokenizer,
EsmTokenizer, MgpstrTokenizer, DiaTokenizer: render/_hf_python.py).

``real_py_bodies.jsonl``, ``real_py_ctc_bodies.jsonl`` and ``real_py_vocab_bodies.jsonl``
(tools/build_python_bodies.py, ``--ctc``, ``--vocab``) hold chat and completions bodies
over tests/render/python_models/* (committed: small files); their ``*vectors.jsonl`` are
what vLLM's render server answered (tools/harvest_render.py): every 200 must give the
same ids, every vLLM error an error with the same status.
"""

from __future__ import annotations

import pytest
from render_cases import (
    NAMED_PY_FOLDERS,
    RenderCase,
    assert_server_replays,
    each_case,
    real_renderer,
    render_cases,
)

from prefixkey.render import Renderer
from prefixkey.render._hf_python import PYTHON_CODECS

CASES = (render_cases("real_py_") + render_cases("real_py_ctc_")
         + render_cases("real_py_vocab_"))
FOLDER_CLASSES = {"byt5": "ByT5Tokenizer", "perceiver": "PerceiverTokenizer",
                  "canine": "CanineTokenizer", "wav2vec2": "Wav2Vec2CTCTokenizer",
                  "wav2vec2_lower": "Wav2Vec2CTCTokenizer", "esm": "EsmTokenizer",
                  "mgpstr": "MgpstrTokenizer", "dia": "DiaTokenizer"}


def renderer(folder: str) -> Renderer:
    return real_renderer(CASES, folder)


def test_the_corpus_covers_every_codec_and_both_answers() -> None:
    assert {c.id.split("/")[0] for c in CASES} == set(FOLDER_CLASSES)
    # The SentencePiece, fastBPE and WordPiece classes have their own corpora
    # (test_real_py_spm_vectors.py, test_real_py_bpe_wp_vectors.py).
    assert set(FOLDER_CLASSES.values()) == {
        c for c, codec in PYTHON_CODECS.items()
        if codec.spm is None and codec.unit not in ("bpe_words", "wordpiece")
        and c not in NAMED_PY_FOLDERS.values()}
    for folder in FOLDER_CLASSES:
        assert {c.status for c in CASES if c.id.startswith(folder + "/")} >= {200, 400}


@pytest.mark.parametrize(("folder", "cls"), sorted(FOLDER_CLASSES.items()))
def test_each_folder_takes_its_python_codec(folder: str, cls: str) -> None:
    decision = renderer(folder).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("python", cls)
    assert decision.recipe == PYTHON_CODECS[cls].name


@each_case(CASES)
def test_vllm_rendering_of_python_tokenizer_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)
