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
    GENERIC,
    MODEL_PROTO,
    SpmModel,
    generate_merges,
    generic_build,
    inherited_specials,
    read_spm_model,
    rebuilding_class,
    spm_vocabulary,
)
from prefixkey.render._hf_facts import CLASSES
from prefixkey.render._hf_rebuilds import REBUILDS
from prefixkey.render._protobuf import is_message


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


def assert_reads_as_parsed(read: SpmModel, proto: Any) -> None:
    """What read_spm_model read is what protobuf's parse holds."""
    assert read.pieces == tuple((p.piece, p.score, p.type) for p in proto.pieces)
    spec = proto.trainer_spec
    assert (read.model_type, read.byte_fallback, read.unk_id, read.bos_id, read.eos_id) == (
        spec.model_type, spec.byte_fallback, spec.unk_id, spec.bos_id, spec.eos_id)
    assert (read.unk_piece, read.bos_piece, read.eos_piece) == (
        spec.unk_piece, spec.bos_piece, spec.eos_piece)
    assert read.precompiled_charsmap == proto.normalizer_spec.precompiled_charsmap


@pytest.mark.parametrize(("real", "name"), [("conv_t5", "spiece.model"),
                                            ("conv_llama", "tokenizer.model"),
                                            ("conv_gemma3", "tokenizer.model"),
                                            ("conv_pegasus", "spiece.model")])
def test_the_model_file_reads_as_protobuf_parses_it(real: str, name: str) -> None:
    model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    path = real_models.folder(real) / name
    proto = model_pb2.ModelProto()
    proto.ParseFromString(path.read_bytes())
    assert_reads_as_parsed(read_spm_model(path), proto)


def _varint(value: int) -> bytes:
    out = b""
    while value > 0x7F:
        out, value = out + bytes([value & 0x7F | 0x80]), value >> 7
    return out + bytes([value])


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _message(number: int, body: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(body)) + body


def _groups(number: int, depth: int) -> bytes:
    return _tag(number, 3) * depth + _tag(number, 4) * depth


#: Fields appended to a real model file: whether protobuf's parse (the one transformers
#: runs; when it fails transformers reads the file as tiktoken's) accepts each is asked of
#: protobuf itself, and what it holds when it does.
WIRE_CASES = {
    "a group of an undeclared field": _tag(99, 3) + _tag(1, 0) + b"\x05" + _tag(99, 4),
    "groups nested": _tag(99, 3) + _groups(98, 2) + _tag(99, 4),
    "a group of a declared message field": _groups(1, 1),
    "a group inside a piece": _message(1, _message(1, b"x") + _groups(7, 1)),
    "groups 100 deep": _groups(9, 100),
    "groups 101 deep": _groups(9, 101),
    "groups 99 deep in a piece": _message(1, _groups(9, 99)),
    "groups 100 deep in a piece": _message(1, _groups(9, 100)),
    "a group closed by another number": _tag(99, 3) + _tag(98, 4),
    "a group not closed": _tag(99, 3),
    "a group closed, not open": _tag(99, 4),
    "field number 0": _tag(0, 0) + b"\x01",
    "wire type 6": _tag(99, 6),
    "a varint of 10 bytes": _tag(99, 0) + b"\xff" * 9 + b"\x01",
    "a varint of 11 bytes": _tag(99, 0) + b"\x80" * 10 + b"\x00",
    "a fixed32 cut": _tag(99, 5) + b"\x00\x00",
    "a piece given as a varint": _tag(1, 0) + b"\x07",
    "a piece's text given as a varint": _message(1, _tag(1, 0) + b"\x03"),
    "a piece's score given as 4 length-delimited bytes": _message(
        1, _message(1, b"y") + _message(2, b"\x00\x00\x80\x3f")),
    "a piece of an unknown type": _message(1, _message(1, b"z") + _tag(3, 0) + b"\x09"),
    "a malformed piece": _message(1, _tag(1, 6)),
    "a malformed denormalizer_spec": _message(5, _tag(1, 6)),
    "a malformed undeclared field 4": _message(4, _tag(1, 6)),
    "trainer ids past 32 bits, an unknown model type": _message(
        2, _tag(40, 0) + _varint((1 << 32) + 5) + _tag(41, 0) + _varint((1 << 64) - 1)
        + _tag(3, 0) + b"\x09" + _tag(35, 0) + b"\x02"),
    "an unk_id given as bytes": _message(2, _message(40, b"")),
    "a charsmap given twice": _message(3, _message(2, b"ab") + _message(2, b"cd")),
}


@pytest.mark.parametrize("case", WIRE_CASES)
def test_the_wire_format_reads_as_protobuf_parses_it(case: str, tmp_path: Path) -> None:
    """One reader (render/_protobuf.py) for both of transformers' readings: the fields of
    a SentencePiece model, and whether a ``.model`` file is one (else tiktoken's)."""
    model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")
    path = tmp_path / "spiece.model"
    path.write_bytes((real_models.folder("conv_t5") / "spiece.model").read_bytes()
                     + WIRE_CASES[case])
    proto = model_pb2.ModelProto()
    try:
        proto.ParseFromString(path.read_bytes())
    except Exception:  # protobuf's DecodeError
        parsed = False
    else:
        parsed = True
    assert is_message(path.read_bytes(), MODEL_PROTO) is parsed
    # The folder decision walks the top level only: it never sends a model protobuf
    # parses to the tiktoken converter (a fault inside a piece is refused when read).
    assert is_message(path.read_bytes(), {}) or not parsed
    if not parsed:
        with pytest.raises(RenderUnsupportedError, match="TikTokenConverter"):
            read_spm_model(path)
        return
    assert_reads_as_parsed(read_spm_model(path), proto)


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
    folder = copied(tmp_path, "conv_gpt2", tokenizer_class="RoFormerTokenizer")
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
    ({"mask_token_sent": "<s>"}, "hold the mask_token_sent token")])
def test_pegasus_keeping_its_own_extras_otherwise_is_refused(
        tmp_path: Path, config: dict[str, Any], match: str) -> None:
    """PegasusTokenizer replaces the model's control pieces with its own extra tokens
    unless its mask_token_sent is among them (a folder's own list wins over both:
    real_convgap_ corpus)."""
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


def test_a_class_without_its_own_init_takes_one_rule() -> None:
    """transformers builds the generic backend's tokenizer for TokenizersBackend and for
    each class without an __init__ of its own (the facts' ``as_is`` kind) over a
    SentencePiece model, then the inherited __init__'s named tokens; over vocabulary files
    the inherited class's rebuild runs."""
    own_init_missing = {name for name, (cls, kind) in CLASSES.items()
                        if kind == "as_is" and name == cls and not name.endswith("Fast")}
    assert own_init_missing == {name for name, c in CONVERSIONS.items() if c.init}
    assert generic_build(GENERIC) and not inherited_specials(GENERIC)
    for name in own_init_missing:
        conversion = CONVERSIONS[name]
        assert conversion.init is not None
        generic = generic_build(conversion)
        assert generic == conversion.vocab_file.endswith(".model"), name
        assert rebuilding_class(name) == (name if generic else conversion.init)
        assert inherited_specials(conversion) == {
            k: v for k, v in (REBUILDS[conversion.init].defaults
                              if conversion.init in REBUILDS else {}).items() if v is not None}
    assert inherited_specials(CONVERSIONS["FNetTokenizer"])["cls_token"] == "[CLS]"
