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
from prefixkey.render._hf_converted import (
    CONVERSIONS,
    generate_merges,
    read_spm_model,
    spm_vocabulary,
)


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
                                            ("conv_llama", "tokenizer.model"),
                                            ("conv_gemma3", "tokenizer.model"),
                                            ("conv_pegasus", "spiece.model")])
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


def test_a_model_without_charsmap_fails_the_classes_that_build_precompiled(
        tmp_path: Path) -> None:
    """SentencePieceExtractor hands the class the model's charsmap as it is, b"" when it
    has none, and ReformerTokenizer (like every class testing ``is not None``) builds
    ``Precompiled(b"")``, which fails: transformers 5.17 cannot load such a folder, so
    vLLM does not start (Mistral 7B's BPE model as a Reformer spiece.model)."""
    folder = copied(tmp_path, "conv_reformer", drop=("spiece.model",))
    shutil.copy(real_models.folder("conv_llama") / "tokenizer.model", folder / "spiece.model")
    with pytest.raises(ModelFolderError, match="Cannot parse precompiled_charsmap"):
        Renderer(ServerOptions(model=str(folder)))


@pytest.mark.parametrize(("config", "match"), [
    ({"additional_special_tokens": ["<x>"]}, "beside the PegasusTokenizer class's own list"),
    ({"mask_token_sent": "<s>"}, "hold the mask_token_sent token")])
def test_pegasus_keeping_its_own_extras_otherwise_is_refused(
        tmp_path: Path, config: dict[str, Any], match: str) -> None:
    """PegasusTokenizer replaces the model's control pieces with its own extra tokens
    unless its mask_token_sent is among them; a folder's own list beside it is not
    reproduced either."""
    folder = copied(tmp_path, "conv_pegasus", **config)
    with pytest.raises(RenderUnsupportedError, match=match):
        Renderer(ServerOptions(model=str(folder)))


@pytest.mark.parametrize(("config", "first"), [
    ({}, ["<pad>", "</s>", "<mask_1>", "<mask_2>", "<unk_2>"]),
    ({"mask_token": None}, ["<pad>", "</s>", "<mask_2>", "<unk_2>"]),
    ({"mask_token_sent": "<mask_1>"}, ["<pad>", "</s>", "<mask_1>", "<unk_2>"]),
    ({"mask_token": "<m>", "mask_token_sent": None}, ["<pad>", "</s>", "<m>", "<unk_2>"])])
def test_pegasus_converter_puts_its_optional_mask_tokens_then_unk_entries_first(
        config: dict[str, Any], first: list[str]) -> None:
    """PegasusConverter.convert_from_spm: pad and eos, each mask token unless "None" (or
    the first one again), <unk_2> … <unk_{offset-1}>, then the model's pieces from 2 on."""
    path = real_models.folder("conv_pegasus") / "spiece.model"
    for offset in (103, 5):
        vocabulary = spm_vocabulary(path, CONVERSIONS["PegasusTokenizer"],
                                    {**config, "offset": offset})
        assert vocabulary.unigram is not None
        pieces = [piece for piece, _ in vocabulary.unigram]
        head = len(first) - 1
        assert pieces[:head] == first[:-1]
        assert pieces[head:head + offset - 2] == [f"<unk_{i}>" for i in range(2, offset)]
        assert pieces[head + offset - 2:] == [p for p, _, _ in read_spm_model(path).pieces][2:]
