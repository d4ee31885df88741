"""The WordPiece and Unigram rebuilds' refusals, on small folders built at test time.

What vLLM answers for those classes is replayed on real vocabularies
(test_real_wu_vectors.py); these are the folders transformers itself refuses, or that
prefixkey does not reproduce, each a typed error naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from render_folders import build_folder
from tokenizers import Tokenizer, models, pre_tokenizers

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_rebuilds import Rebuild

#: A tiny SentencePiece-style Unigram vocabulary (T5's first ids).
UNIGRAM = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -1.0), ("a", -2.0),
           ("▁a", -1.5), ("b", -2.5)]


def _unigram_folder(root: Path, tokenizer_config: dict[str, object]) -> Path:
    folder = root / "unigram"
    folder.mkdir()
    tok = Tokenizer(models.Unigram(UNIGRAM, unk_id=2, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_positions": 512}))
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return folder


def _render(folder: Path) -> list[int]:
    r = Renderer(ServerOptions(model=str(folder), served_model_name=("m",)))
    return list(r.render("/v1/completions", {"model": "m", "prompt": "a b"})[0].token_ids)


def test_a_wordpiece_class_over_a_bpe_vocabulary_is_refused(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, "generic",
                          tokenizer_config={"tokenizer_class": "BertTokenizer"})
    with pytest.raises(RenderUnsupportedError, match="over a WordPiece vocabulary only"):
        _render(folder)


def test_a_unigram_class_over_a_bpe_vocabulary_is_refused(tmp_path: Path) -> None:
    folder = build_folder(tmp_path, "generic",
                          tokenizer_config={"tokenizer_class": "XLMRobertaTokenizer"})
    with pytest.raises(RenderUnsupportedError, match="over a Unigram vocabulary only"):
        _render(folder)


def test_t5_sentinels_that_disagree_with_extra_ids_are_transformers_refusal(
        tmp_path: Path) -> None:
    folder = _unigram_folder(tmp_path, {"tokenizer_class": "T5Tokenizer", "extra_ids": 3,
                                        "additional_special_tokens": ["<extra_id_0>"]})
    with pytest.raises(ModelFolderError, match="extra_ids is 3"):
        _render(folder)


def test_t5_beside_extra_special_tokens_is_refused(tmp_path: Path) -> None:
    folder = _unigram_folder(tmp_path, {"tokenizer_class": "T5Tokenizer",
                                        "extra_special_tokens": ["<x>"]})
    with pytest.raises(RenderUnsupportedError, match="extra_special_tokens"):
        _render(folder)


def test_albert_without_its_cls_token_in_the_vocabulary_fails_as_transformers_does(
        tmp_path: Path) -> None:
    """AlbertTokenizer looks [CLS] up in the bare model before super().__init__."""
    folder = _unigram_folder(tmp_path, {"tokenizer_class": "AlbertTokenizer"})
    with pytest.raises(ModelFolderError, match="cls_token '\\[CLS\\]' is not in the vocab"):
        _render(folder)


def test_a_recipe_names_exactly_one_model() -> None:
    common: dict[str, Any] = {"name": "x", "normalizer": None, "pre_tokenizer": None,
                              "decoder": None, "defaults": {}}
    with pytest.raises(ValueError, match="exactly one"):
        Rebuild(**common)
    with pytest.raises(ValueError, match="exactly one"):
        Rebuild(bpe={}, model=("BPE", {}), **common)
    assert Rebuild(bpe={"fuse_unk": True}, **common).model_spec == ("BPE", {"fuse_unk": True})
