"""The generic backend's build over a SentencePiece model, in each transformers release's
form (render/_eras.py ``generic_spm``), on what the real corpus's models lack.

tests/render/test_real_conv_vectors.py replays vLLM's own answers for two real models
(no user-defined pieces, no renamed ones, ``legacy`` unset). Here small models trained
with sentencepiece (user-defined pieces, BPE and Unigram, no dummy prefix) under
tokenizer_config.json variants (``legacy`` false, pieces renamed or swapped by
``added_tokens_decoder``) are loaded by transformers itself in each release's scratch
vLLM install (tests/vllm_venvs.py, as vLLM's tokenizer loads them:
``AutoTokenizer.from_pretrained(folder, truncation_side="left")``), and prefixkey must
give the same ids, or fail where transformers fails. Skipped without the installs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

sentencepiece = pytest.importorskip("sentencepiece")

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ("Hello world", " Hello  world ", "hello<u1>world ab", "▁lead and trail  ",
         "ab ab<u1><u1>x", "<s>a</s> b", "line\nbreak\ttab", "")
#: name -> (model type, user-defined pieces, trainer options, tokenizer_config.json).
FOLDERS: dict[str, tuple[str, list[str], dict[str, Any], dict[str, Any]]] = {
    "bpe_user": ("bpe", ["<u1>", "ab"], {}, {}),
    "bpe_user_nonlegacy": ("bpe", ["<u1>", "ab"], {}, {"legacy": False}),
    "bpe_renamed": ("bpe", [], {}, {"added_tokens_decoder": {
        "3": {"content": "<pad>", "special": True, "normalized": False},
        "1": {"content": "</s>", "special": True, "normalized": False},
        "2": {"content": "<s>", "special": True, "normalized": False}}}),
    "bpe_no_prefix": ("bpe", ["<u1>"], {"add_dummy_prefix": False,
                                        "remove_extra_whitespaces": False}, {}),
    "unigram_user": ("unigram", ["<u1>", "ab"], {}, {}),
    "unigram_decoder": ("unigram", [], {}, {"added_tokens_decoder": {
        "1": {"content": "<s>", "special": True, "normalized": False}}}),
}


def _folder(root: Path, name: str) -> Path:
    kind, user, options, config = FOLDERS[name]
    folder = root / name
    folder.mkdir()
    (root / "corpus.txt").write_text("hello world of ab and trail\n" + __doc__ * 20, "utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(root / "corpus.txt"), model_prefix=str(folder / "tokenizer"),
        vocab_size=120, model_type=kind, user_defined_symbols=user, minloglevel=2,
        **options)
    (folder / "tokenizer.vocab").unlink()
    (folder / "config.json").write_text(json.dumps(
        {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
         "max_position_embeddings": 512}), "utf-8")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", **config}), "utf-8")
    return folder


@pytest.mark.parametrize("release", ["0.29.0", "0.30.0", "0.31.0", "0.32.0"])
def test_the_generic_build_is_transformers_own(release: str, tmp_path: Path) -> None:
    from vllm_venvs import assert_builds_as_transformers

    assert_builds_as_transformers(release, [_folder(tmp_path, name) for name in FOLDERS],
                                  TEXTS, cwd=tmp_path,
                                  test="tests/units/test_generic_spm_builds.py")
