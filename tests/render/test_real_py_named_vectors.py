"""Replay vLLM 0.31.0's rendering of folders of an architecture vLLM starts for (GPT-2)
whose tokenizer_config.json names a Python tokenizer of a model type vLLM does not start
for: SpeechT5Tokenizer and BartphoTokenizer (render/_hf_python.py ``sentencepiece``
records), ProphetNetTokenizer (``wordpiece``), VitsTokenizer (``vits_chars``),
MyT5Tokenizer (``bytes`` rewritten by its byte_maps.json), GPTNeoXJapaneseTokenizer
(``subword_japanese``) and ClvpTokenizer (``clvp_bpe``).

``real_py_named_bodies.jsonl`` (tools/build_python_bodies.py ``--named``) holds chat and
completions bodies over tests/render/real/speecht5_named and bartpho_named
(sentencepiece 0.2.1's test model; Bartpho's dict.txt its pieces,
tests/real_models.py's ``fairseq_dict``), prophetnet_named (bert-base-uncased's
vocabulary from llama.cpp's GGUF as prophetnet.tokenizer), vits_named and vits_raw_named
(a Wav2Vec2 CTC vocab.json, committed; phonemize off, normalized with blanks, and raw
without blanks for Romanian; vits_phonemize_named with its default phonemize, refused
here), myt5_named (a byte_maps.json of six rules written for the test: no MyT5 maps are
in a package registry) and gpt_neox_japanese_named (the bert-base-uncased vocabulary
with GPTNeoXJapaneseTokenizer's special and byte lines after it, ``byte_tokens``, and a
one-emoji emoji.json), clvp_named (Qwen3's byte-level BPE as vocab.json and merges.txt,
tests/real_models.py's ``bpe_files``, its bodies with the normalizer's own texts too):
real vocabularies under these classes' formats, not their own.
``real_py_named_vectors.jsonl`` is what vLLM's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status.

The classes refused instead (CpmTokenizer, TapasTokenizer, RagTokenizer,
and VitsTokenizer's phonemizer and uroman options) are refused naming why, as
transformers 5.17 in vLLM 0.31.0's venv fails or as prefixkey does not reproduce them.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from render_cases import (
    NAMED_PY_FOLDERS,
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    each_case,
    each_release_case,
    kept_vectors,
    real_renderer,
    release_table,
    render_cases,
)

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_python import PYTHON_CODECS

CORPUS = "real_py_named_"
#: VitsTokenizer with its default phonemize: vLLM's answers, for a folder refused here.
PHONEMIZE = "vits_phonemize_named"
CASES = tuple(c for c in render_cases(CORPUS) if c.real != PHONEMIZE)


def _renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, NAMED_PY_FOLDERS)


@pytest.mark.parametrize(("folder", "cls"), sorted(NAMED_PY_FOLDERS.items()))
def test_each_folder_takes_its_python_codec(folder: str, cls: str) -> None:
    decision = _renderer(folder).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("python", cls)
    assert decision.recipe == PYTHON_CODECS[cls].name
    assert PYTHON_CODECS[cls].borrowed


@each_case(CASES)
def test_vllm_rendering_of_tokenizer_class_named_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


def test_vits_default_phonemizer_is_refused_where_vllm_answers_every_body_with_an_error(
        ) -> None:
    """vLLM 0.31.0 starts for the folder (transformers loads VitsTokenizer) but every
    text it encodes raises ImportError (no phonemizer in its install)."""
    cases = [c for c in render_cases(CORPUS) if c.real == PHONEMIZE]
    assert len(cases) == len([c for c in CASES if c.real == "vits_named"])
    assert {c.status for c in cases} - {200} and all(c.error is not None for c in cases)
    with pytest.raises(RenderUnsupportedError, match=re.escape(
            "phonemize True: VitsTokenizer with it needs phonemizer")):
        Renderer(ServerOptions(model=str(cases[0].folder()), max_model_len=512))


#: The other releases whose render servers answered the corpus (tests/render/releases/,
#: tools/build_python_bodies.py ``--keep-release``; 0.33.0: its overlay).
RELEASES = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")


def test_the_releases_answered_every_body_and_are_the_classes_releases() -> None:
    for release in RELEASES:
        assert set(kept_vectors(release, CORPUS)) == {c.id for c in render_cases(CORPUS)}
    for cls in set(NAMED_PY_FOLDERS.values()):
        assert PYTHON_CODECS[cls].releases == frozenset({"0.31.0", *RELEASES})


# The phonemizing folder is refused at every release (above).
@each_release_case(release_table(CORPUS, dict.fromkeys(RELEASES, frozenset({PHONEMIZE}))))
def test_a_release_renders_the_corpus(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


def _edited_folder(tmp_path: Path, folder: str, **config: Any) -> Path:
    """The real folder copied with tokenizer_config.json's keys set (None: removed)."""
    case = next(c for c in CASES if c.real == folder)
    target = tmp_path / folder
    shutil.copytree(case.folder(), target)
    path = target / "tokenizer_config.json"
    document = {**json.loads(path.read_text("utf-8")), **config}
    path.write_text(json.dumps({k: v for k, v in document.items() if v is not None}), "utf-8")
    return target


@pytest.mark.parametrize(("folder", "config", "text"), [
    # VitsTokenizer's default phonemize: transformers' encode raises ImportError in
    # vLLM 0.31.0's venv ("VitsTokenizer requires the phonemizer library").
    ("vits_named", {"phonemize": True}, "phonemize True: VitsTokenizer with it needs "
     "phonemizer (espeak phonemization), which vLLM's install does not have: encoding"),
    ("gpt_neox_japanese_named", {"do_clean_text": True}, "do_clean_text True: "
     "GPTNeoXJapaneseTokenizer with it (URLs, e-mail addresses"),
    ("vits_named", {"is_uroman": True}, "is_uroman True: VitsTokenizer with it romanizes"),
    ("speecht5_named", {"normalize": True}, "normalize is not reproduced for "
     "SpeechT5Tokenizer"),
    ("bartpho_named", {"sp_model_kwargs": {"enable_sampling": True}},
     "sp_model_kwargs is not reproduced for BartphoTokenizer"),
    ("prophetnet_named", {"do_basic_tokenize": False}, "do_basic_tokenize False: "
     "ProphetNetTokenizer with it is not reproduced")])
def test_settings_beyond_the_records_are_refused(tmp_path: Path, folder: str,
                                                 config: dict[str, Any], text: str) -> None:
    with pytest.raises(RenderUnsupportedError, match=re.escape(text)):
        Renderer(ServerOptions(model=str(_edited_folder(tmp_path, folder, **config)),
                               max_model_len=512))


def test_a_blank_line_in_bartphos_dictionary_is_transformers_error(tmp_path: Path) -> None:
    folder = _edited_folder(tmp_path, "bartpho_named")
    with (folder / "dict.txt").open("a", encoding="utf-8") as file:
        file.write("\n")
    with pytest.raises(ModelFolderError, match=r"dict\.txt.*line 997 is blank"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))


def test_myt5_rules_of_other_than_hex_bytes_are_refused(tmp_path: Path) -> None:
    folder = _edited_folder(tmp_path, "myt5_named")
    maps = json.loads((folder / "byte_maps.json").read_text("utf-8"))
    maps["merge_map"]["61"] = "zz"
    (folder / "byte_maps.json").write_text(json.dumps(maps), "utf-8")
    with pytest.raises(RenderUnsupportedError, match=r"merge_map\['61'\]: only rules of "
                       "two-digit hex bytes"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))


def test_an_amount_clvps_normalizer_fails_on_is_refused() -> None:
    # transformers 5.17: "$,5" → int(",5") raises ValueError in _expand_dollars.
    with pytest.raises(RenderUnsupportedError, match=re.escape(
            "ClvpTokenizer's normalizer raises ValueError on the amount $,5")):
        _renderer("clvp_named").render("/v1/completions", {
            "model": "real-clvp_named", "prompt": "pay $,5 now"})


def test_a_clvp_merge_vocab_json_cannot_hold_is_refused(tmp_path: Path) -> None:
    folder = _edited_folder(tmp_path, "clvp_named")
    with (folder / "merges.txt").open("a", encoding="utf-8") as file:
        file.write("\u4e00\u4e01 zz\n")
    with pytest.raises(RenderUnsupportedError, match=r"merges\.txt: line \d+ is not two "
                       "symbols whose join vocab.json holds too"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))


def test_vits_without_a_token_of_id_0_is_refused(tmp_path: Path) -> None:
    folder = _edited_folder(tmp_path, "vits_named")
    vocab = json.loads((folder / "vocab.json").read_text("utf-8"))
    (folder / "vocab.json").write_text(json.dumps({k: v + 1 for k, v in vocab.items()}),
                                       "utf-8")
    with pytest.raises(RenderUnsupportedError, match="no token has id 0"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))


@pytest.mark.parametrize(("cls", "text"), [
    # Each as transformers 5.17 fails in vLLM 0.31.0's venv with such a folder.
    ("CpmTokenizer", 'imports rjieba (Chinese word segmentation), which vLLM\'s install '
     'does not have: loading it raises ImportError and vLLM\'s render server does not '
     'start ("You need to install rjieba'),
    ("TapasTokenizer", 'needs pandas, which vLLM\'s install does not have: loading it '
     'raises "ImportError: Pandas is required for the TAPAS tokenizer"'),
    ("RagTokenizer", "needs question_encoder and generator sub-configurations: a config "
     "without them raises ValueError, and vLLM 0.31.0 does not start for a gpt2 "
     "config.json holding them")])
def test_the_classes_not_reproduced_are_refused_naming_why(tmp_path: Path, cls: str,
                                                           text: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}), "utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": cls}),
                                                    "utf-8")
    with pytest.raises(RenderUnsupportedError, match=re.escape(f"{cls} ") + ".*"
                       + re.escape(text)):
        Renderer(ServerOptions(model=str(tmp_path), max_model_len=512))
