"""Replay vLLM's rendering of a Python tokenizer class with added tokens (issue 19).

``real_pyadded_bodies.jsonl`` (tools/build_real_pyadded_bodies.py) holds the bodies of
test_real_wu_vectors.py, and texts holding the added and named tokens in both cases, over
two tests/render/real/ folders made from roc_bert_rule (RoCBertTokenizer, a Python
word-piece class): ``pyadded_wp`` with transformers' legacy ``added_tokens.json`` (no
``added_tokens_decoder``: from_pretrained hands its tokens to the class at their ids),
``st_py_lower`` with a sentence-transformers ``do_lower_case`` (vLLM adds the named tokens
lowercased through the class's ``_add_tokens``): render/_python_tokenizer.py
``PythonTokenizer.with_added``. The vectors are what vLLM 0.31.0's render server answered
(tools/harvest_render.py), the releases/ copies what the other releases' did: every 200
must give the same ids, every vLLM error an error with the same status.
tests/units/test_python_added_tokens.py compares more word-piece classes with vLLM's
``get_tokenizer`` itself.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from real_models import folder as real_folder
from render_cases import (
    RenderCase,
    assert_server_replays,
    each_case,
    each_release_case,
    real_renderer,
    release_table,
    render_cases,
)

from prefixkey.render import Renderer, ServerOptions
from prefixkey.render._python_tokenizer import PythonTokenizer

CASES = render_cases("real_pyadded_")
#: Each folder and the file it carries beside roc_bert_rule's.
FOLDERS = {"pyadded_wp": "added_tokens.json", "st_py_lower": "sentence_bert_config.json"}
#: The releases whose answers were kept (releases/<release>/real_pyadded_vectors.jsonl),
#: and the folders each did not harvest.
KEPT: dict[str, tuple[str, ...]] = {"0.29.0": (), "0.30.0": (), "0.32.0": (), "0.33.0": ()}
#: The text each folder's corpus encodes with its added tokens.
ADDED_TEXT = "completion-added-no-specials"


def test_the_corpus_covers_every_folder() -> None:
    assert {c.real for c in CASES} == set(FOLDERS)
    assert {200, 400} <= {c.status for c in CASES}


@pytest.mark.parametrize(("real", "file"), sorted(FOLDERS.items()))
def test_each_folder_is_a_python_class_with_its_file(real: str, file: str,
                                                     tmp_path: Path) -> None:
    """The file is read: without it the added-token text is other ids."""
    r = real_renderer(CASES, real)
    assert r.folder.tokenizer_decision.path == "python"
    assert isinstance(r.tokenizer, PythonTokenizer)
    case = next(c for c in CASES if c.real == real and c.id.endswith(ADDED_TEXT))
    assert case.token_ids and isinstance(case.token_ids[0], list)
    folder = tmp_path / real
    shutil.copytree(real_folder(real), folder, ignore=shutil.ignore_patterns(".*"))
    (folder / file).unlink()
    renderer = Renderer(ServerOptions(model=str(folder), max_model_len=512))
    assert renderer.tokenizer.encode(case.body["prompt"], add_special_tokens=False) \
        != case.token_ids[0]


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)



@each_release_case(release_table("real_pyadded_", KEPT))
def test_other_releases_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
