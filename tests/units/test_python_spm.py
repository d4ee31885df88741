"""The SentencePiece Python classes (render/_python_spm.py): what a folder may set.

Each case copies a real folder of tests/render/real/*_py (composed from the fetch cache:
skipped without it) and changes one setting: what transformers 5.17's class would encode
otherwise is a typed refusal naming the setting, never other ids; a broken file is a
ModelFolderError naming it. What the folders do encode is replayed against vLLM's answers
in tests/render/test_real_py_spm_vectors.py.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import real_models

from prefixkey.render import (
    ModelFolderError,
    Renderer,
    RenderUnsupportedError,
    ServerOptions,
    _hf_decision,
)
from prefixkey.render._eras import verified_releases
from prefixkey.render._hf_decision import TokenizerPath, check_release_codec
from prefixkey.render._hf_python import PYTHON_CODECS
from prefixkey.render._python_spm import _GPT_SW3_WHITESPACES, CLEAN, _gpt_sw3_whitespace


def copied(tmp_path: Path, real: str, name: str = "folder", **settings: Any) -> Path:
    """A copy of the real folder, its tokenizer_config.json updated (None: key removed)."""
    target = tmp_path / name
    shutil.copytree(real_models.folder(real), target,
                    ignore=shutil.ignore_patterns(".*"))
    path = target / "tokenizer_config.json"
    config = json.loads(path.read_text("utf-8"))
    config.update(settings)
    path.write_text(json.dumps({k: v for k, v in config.items() if v is not None}), "utf-8")
    return target


def refusal(path: Path) -> RenderUnsupportedError:
    with pytest.raises(RenderUnsupportedError) as info:
        Renderer(ServerOptions(model=str(path)))
    return info.value


@pytest.mark.parametrize(("real", "settings", "words"), [
    ("gpt_sw3_py", {"legacy": False}, "legacy false"),
    ("bert_generation_py", {"sp_model_kwargs": {"enable_sampling": True}}, "sp_model_kwargs"),
    ("bert_generation_py", {"split_special_tokens": True}, "split_special_tokens"),
    ("siglip_py", {"eos_token": "<eos>"}, "eos_token"),
    ("siglip_py", {"unk_token": {"content": "<unk>", "lstrip": False}}, "unk_token"),
    ("m2m_100_py", {"src_lang": "xx"}, "src_lang 'xx'"),
    ("m2m_100_py", {"additional_special_tokens": ["<x>"]}, "additional_special_tokens"),
    ("plbart_py", {"language_codes": "multi"}, "language_codes 'multi'"),
    ("marian_py", {"added_tokens_decoder": {"5": {"content": "<x>"}}},
     "added_tokens_decoder['5']"),
    ("siglip_py", {"added_tokens_decoder": {"2": {
        "content": "</s>", "lstrip": True, "rstrip": True, "single_word": True}}},
     "added_tokens_decoder['2']"),
    ("speech_to_text_py", {"lang_codes": "mustc"}, "lang_codes"),
])
def test_a_setting_the_class_would_encode_otherwise_is_refused_naming_it(
        tmp_path: Path, real: str, settings: dict[str, Any], words: str) -> None:
    error = refusal(copied(tmp_path, real, **settings))
    assert words in str(error)
    assert "tokenizer_config.json" in str(error)


def test_the_settings_that_change_no_encoding_are_accepted(tmp_path: Path) -> None:
    """GPTSw3Tokenizer's do_lower_case / remove_space / keep_accents and Marian's
    target-side settings change only decoding, and Marian does not read legacy
    (transformers 5.17's code)."""
    gpt = copied(tmp_path, "gpt_sw3_py", "gpt", do_lower_case=True, remove_space=True,
                 keep_accents=False, sp_model_kwargs={})
    marian = copied(tmp_path, "marian_py", "marian", separate_vocabs=True,
                    target_lang="de", target_vocab_file="x.json", legacy=False)
    for folder in (gpt, marian):
        assert Renderer(ServerOptions(model=str(folder))).folder.tokenizer_decision.recipe


def test_a_legacy_added_tokens_file_is_refused(tmp_path: Path) -> None:
    """Without an added_tokens_decoder, from_pretrained hands the file's tokens to the
    Python class at their ids: not reproduced (render/_python_tokenizer.py)."""
    folder = copied(tmp_path, "bert_generation_py", added_tokens_decoder=None)
    (folder / "added_tokens.json").write_text('{"<new>": 1000}', "utf-8")
    assert "Python class BertGenerationTokenizer at their ids" in str(refusal(folder))



def test_a_gpt_sw3_7b_path_takes_other_defaults_so_is_refused(tmp_path: Path) -> None:
    error = refusal(copied(tmp_path, "gpt_sw3_py", "gpt-sw3-7b-instruct"))
    assert "'gpt-sw3-7b'" in str(error)


@pytest.mark.parametrize(("real", "file"), [
    ("bert_generation_py", "spiece.model"), ("marian_py", "source.spm"),
    ("m2m_100_py", "vocab.json")])
def test_a_missing_or_broken_file_is_an_error_naming_it(tmp_path: Path, real: str,
                                                        file: str) -> None:
    folder = copied(tmp_path, real)
    (folder / file).write_bytes(b"garbage")
    with pytest.raises(ModelFolderError, match=file.replace(".", r"\.")):
        Renderer(ServerOptions(model=str(folder)))
    (folder / file).unlink()
    with pytest.raises(ModelFolderError, match=file.replace(".", r"\.")):
        Renderer(ServerOptions(model=str(folder)))


def test_every_recipe_names_known_clean_steps() -> None:
    for codec in PYTHON_CODECS.values():
        if codec.spm is not None:
            assert set(codec.spm.clean) <= set(CLEAN), codec.name


def test_gpt_sw3_spaces_of_an_unread_transformers_release_are_refused() -> None:
    assert sorted(_GPT_SW3_WHITESPACES) == ["5.17.0", "5.19.0", "5.24.0"]
    assert _gpt_sw3_whitespace({}, "5.19.0")("a\u2003b\u3000c") == "a b c"
    assert _gpt_sw3_whitespace({}, "5.17.0")("a\u2003b\u3000c") == "a\u2003b c"
    with pytest.raises(RenderUnsupportedError, match=r"transformers 5\.25\.0"):
        _gpt_sw3_whitespace({}, "5.25.0")


def test_a_release_the_corpus_was_not_harvested_from_refuses_the_class(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python class's corpus is now replayed at every verified release (MarianTokenizer's
    at 0.29.0 in folders of an architecture that release starts for: real_py_gpt2_); a
    class whose answers lack a release is refused there."""
    assert all(c.releases == frozenset(verified_releases()) for c in PYTHON_CODECS.values())
    codec = replace(PYTHON_CODECS["MarianTokenizer"],
                    releases=frozenset(verified_releases()) - {"0.29.0"})
    monkeypatch.setattr(_hf_decision, "PYTHON_CODECS", {**PYTHON_CODECS, "MarianTokenizer": codec})
    decision = TokenizerPath("python", "MarianTokenizer", "why", codec.name)
    for release in sorted(codec.releases or ()):
        check_release_codec(release, decision)
    with pytest.raises(RenderUnsupportedError, match=r"not vLLM 0\.29\.0's; not verified"):
        check_release_codec("0.29.0", decision)
