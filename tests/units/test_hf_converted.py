"""Folders without tokenizer.json (render/_hf_converted.py): what is read, what is refused.

The SentencePiece model file is read from its wire format; here it is checked against the
protobuf message sentencepiece's own ``sentencepiece_model_pb2`` parses (protobuf is a dev
dependency only). Each refusal is a folder vLLM 0.31 would not load the same way: a file
transformers reads as tiktoken, a missing vocabulary or merges file, a class whose
conversion is not reproduced. What the converted folders encode is replayed against
vLLM's answers in tests/render/test_real_conv_vectors.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import real_models

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_converted import generate_merges, read_spm_model


def copied(tmp_path: Path, real: str, drop: tuple[str, ...] = (), **config: Any) -> Path:
    """A copy of a real converted folder, files dropped, tokenizer_config.json updated."""
    target = tmp_path / real
    shutil.copytree(real_models.folder(real), target, ignore=shutil.ignore_patterns(".*"))
    for name in drop:
        (target / name).unlink()
    path = target / "tokenizer_config.json"
    current = json.loads(path.read_text("utf-8")) if path.is_file() else {}
    path.write_text(json.dumps({**current, **config}), "utf-8")
    return target


@pytest.mark.parametrize(("real", "name"), [("conv_t5", "spiece.model"),
                                            ("conv_llama", "tokenizer.model")])
def test_the_model_file_reads_as_protobuf_parses_it(real: str, name: str) -> None:
    model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    path = real_models.folder(real) / name
    proto = model_pb2.ModelProto()
    proto.ParseFromString(path.read_bytes())
    read = read_spm_model(path)
    assert read.pieces == tuple((p.piece, p.score, p.type) for p in proto.pieces)
    spec = proto.trainer_spec
    assert (read.model_type, read.byte_fallback, read.unk_id, read.bos_id, read.eos_id) == (
        spec.model_type, spec.byte_fallback, spec.unk_id, spec.bos_id, spec.eos_id)
    assert (read.unk_piece, read.bos_piece, read.eos_piece) == (
        spec.unk_piece, spec.bos_piece, spec.eos_piece)
    assert read.precompiled_charsmap == proto.normalizer_spec.precompiled_charsmap


def test_generated_merges_follow_the_merged_piece_id_then_the_parts_lengths() -> None:
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4, "abc": 5}
    assert generate_merges(vocab) == [("a", "b"), ("b", "c"), ("a", "bc"), ("ab", "c")]


def test_a_file_transformers_reads_as_tiktoken_is_refused_naming_it(tmp_path: Path) -> None:
    """A tokenizer.model that is no SentencePiece model: transformers falls back to
    TikTokenConverter (the tiktoken conversion hook)."""
    folder = copied(tmp_path, "conv_llama_nobos", drop=("tokenizer.model",))
    (folder / "tokenizer.model").write_text("SGVsbG8= 0\nd29ybGQ= 1\n", "utf-8")
    with pytest.raises(RenderUnsupportedError, match="TikTokenConverter"):
        Renderer(ServerOptions(model=str(folder)))


def test_a_folder_without_its_vocabulary_file_is_refused(tmp_path: Path) -> None:
    folder = copied(tmp_path, "conv_t5", drop=("spiece.model",))
    with pytest.raises(RenderUnsupportedError, match=r"neither tokenizer\.json nor spiece\.model"):
        Renderer(ServerOptions(model=str(folder)))


def test_vocab_json_without_merges_fails_as_transformers_does(tmp_path: Path) -> None:
    folder = copied(tmp_path, "conv_gpt2", drop=("merges.txt",))
    with pytest.raises(ModelFolderError, match="vLLM does not start") as info:
        Renderer(ServerOptions(model=str(folder)))
    assert info.value.field == "merges.txt"


def test_a_generic_unigram_model_renamed_by_added_tokens_fails(tmp_path: Path) -> None:
    folder = copied(tmp_path, "conv_generic", added_tokens_decoder={
        "3": {"content": "<x>", "special": True}})
    with pytest.raises(ModelFolderError, match="fails to convert"):
        Renderer(ServerOptions(model=str(folder)))


def test_a_class_whose_conversion_is_not_reproduced_is_refused(tmp_path: Path) -> None:
    folder = copied(tmp_path, "conv_gpt2", tokenizer_class="WhisperTokenizer")
    with pytest.raises(RenderUnsupportedError, match="does not reproduce for this class"):
        Renderer(ServerOptions(model=str(folder)))


def test_a_model_without_a_charsmap_fails_a_class_building_one(tmp_path: Path) -> None:
    """NllbTokenizer builds a Precompiled normalizer over the extracted charsmap whenever
    one is passed, and SentencePieceExtractor passes the proto's, empty for Mistral 7B's
    model: tokenizers refuses it ("Cannot parse precompiled_charsmap"), so transformers
    fails to load the folder (checked with transformers 5.17)."""
    folder = copied(tmp_path, "conv_nllb", drop=("sentencepiece.bpe.model",))
    shutil.copy(real_models.folder("conv_llama") / "tokenizer.model",
                folder / "sentencepiece.bpe.model")
    with pytest.raises(ModelFolderError, match="vLLM does not start") as info:
        Renderer(ServerOptions(model=str(folder)))
    assert info.value.field == "sentencepiece.bpe.model"


def test_a_class_building_its_own_vocabulary_beside_a_model_file_is_refused(
        tmp_path: Path) -> None:
    """EsmcTokenizer names no vocabulary file, but from_pretrained hands it a folder's
    tokenizer.model converted, whose pieces it then drops from its special tokens."""
    folder = copied(tmp_path, "conv_esmc")
    shutil.copy(real_models.folder("conv_llama") / "tokenizer.model", folder)
    with pytest.raises(RenderUnsupportedError, match="also hands it"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))
