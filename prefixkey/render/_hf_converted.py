"""The vocabulary transformers converts from a folder without ``tokenizer.json``.

transformers 5.17 (vLLM 0.31's) loads such a folder through
``TokenizersBackend.convert_to_native_format``: a SentencePiece ``*.model`` file (the
class's ``vocab_files_names``) is read by ``SentencePieceExtractor`` into the pieces and
scores (a Unigram vocabulary) or a vocabulary and generated merges (a BPE one), the
pieces the model marks control or user-defined (its ``additional_special_tokens``) and its
precompiled charsmap; a class's converter may re-order the vocabulary
(``convert_from_spm``); then the class's own ``__init__`` builds its tokenizer over them,
the same rebuild render/_hf_rebuilds.py records for a tokenizer.json's vocabulary. The
generic backend (TokenizersBackend) instead builds a tokenizer from the model file
(``SpmConverter.build_tokenizer_from_spm_proto``). Here is that second source of a
vocabulary, as :class:`Vocabulary`, which render/_tokenizer.py feeds to the same records.

The model file is a protobuf message (sentencepiece_model.proto); its few fields read
here are decoded from the wire format directly, so no protobuf runtime is needed.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from ._eras import GenericSpm
from ._errors import ModelFolderError, RenderUnsupportedError

__all__ = [
    "CONVERSIONS",
    "CONVERTED_RELEASES",
    "GENERIC",
    "Conversion",
    "SpmModel",
    "Vocabulary",
    "converted_vocabulary",
    "files_read",
    "generic_inputs",
    "generic_specials",
    "generic_spm_tokenizer",
    "read_spm_model",
    "spm_vocabulary",
]

#: sentencepiece_model.proto's ``SentencePiece.Type``: NORMAL, CONTROL and USER_DEFINED.
_NORMAL, _CONTROL, _USER_DEFINED = 1, 3, 4
#: ``TrainerSpec.ModelType``: UNIGRAM (the default) and BPE.
_UNIGRAM, _BPE = 1, 2


@dataclass(frozen=True, slots=True)
class SpmModel:
    """The fields of a SentencePiece ``ModelProto`` the conversion reads, with the
    proto's defaults for the fields a file leaves out."""

    #: (piece, score, type) in id order.
    pieces: tuple[tuple[str, float, int], ...]
    model_type: int = _UNIGRAM
    byte_fallback: bool = False
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    precompiled_charsmap: bytes = b""
    #: NormalizerSpec's switches (transformers 5.24's generic backend follows them).
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


def _malformed(what: str) -> ModelFolderError:
    """A wire-format fault (caught by :func:`read_spm_model`, never raised out of it)."""
    return ModelFolderError("tokenizer.model", f"not a protobuf message: {what}")


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _malformed("a varint runs past the data")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """A message's (field number, value): a varint, or the bytes of a length-delimited or
    fixed-size field."""
    out: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            out.append((number, value))
            continue
        if wire == 2:
            size, at = _varint(data, at)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
        else:
            raise _malformed(f"wire type {wire}")
        if at + size > len(data):
            raise _malformed("a field runs past the data")
        out.append((number, data[at:at + size]))
        at += size
    return out


def _int32(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise _malformed("a length-delimited id")
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise _malformed("a varint piece")
    return value.decode("utf-8")


#: TrainerSpec's fields read: model_type, byte_fallback, the unk/bos/eos ids and pieces.
_TRAINER_FIELDS: Final = {3: "model_type", 35: "byte_fallback", 40: "unk_id", 41: "bos_id",
                          42: "eos_id", 45: "unk_piece", 46: "bos_piece", 47: "eos_piece"}
#: NormalizerSpec's switches read (2, precompiled_charsmap, is read apart).
_NORMALIZER_FIELDS: Final = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces",
                             5: "escape_whitespaces"}


def read_spm_model(path: Path) -> SpmModel:
    """A SentencePiece model file's pieces, trainer and normalizer fields.

    ModelProto: 1 pieces (1 piece, 2 score, 3 type), 2 trainer_spec (:data:`_TRAINER_FIELDS`),
    3 normalizer_spec (2 precompiled_charsmap, :data:`_NORMALIZER_FIELDS`). A file that is
    no such message is what transformers then reads as a tiktoken file:
    :func:`tiktoken_conversion`.
    """
    pieces: list[tuple[str, float, int]] = []
    settings: dict[str, Any] = {}
    charsmap = b""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFolderError(path.name, f"cannot be read: {exc}") from None
    try:
        for number, value in _fields(data):
            if not isinstance(value, bytes):
                continue
            if number == 1:
                piece, score, kind = "", 0.0, 1
                for field, item in _fields(value):
                    if field == 1:
                        piece = _text(item)
                    elif field == 2 and isinstance(item, bytes) and len(item) == 4:
                        score = struct.unpack("<f", item)[0]
                    elif field == 3 and isinstance(item, int):
                        kind = item
                pieces.append((piece, score, kind))
            elif number == 2:
                for field, item in _fields(value):
                    name = _TRAINER_FIELDS.get(field)
                    if name is not None:
                        settings[name] = (_text(item) if name.endswith("_piece") else
                                         bool(item) if name == "byte_fallback" else _int32(item))
            elif number == 3:
                spec = _fields(value)
                charsmap = b"".join(v for f, v in spec
                                    if f == 2 and isinstance(v, bytes)) or charsmap
                settings.update({_NORMALIZER_FIELDS[f]: bool(v) for f, v in spec
                                if f in _NORMALIZER_FIELDS and isinstance(v, int)})
    except (ModelFolderError, UnicodeDecodeError):
        raise tiktoken_conversion(path) from None
    if not pieces:
        raise tiktoken_conversion(path)
    return SpmModel(pieces=tuple(pieces), precompiled_charsmap=charsmap, **settings)


@dataclass(frozen=True, slots=True)
class Conversion:
    """How one class reads a folder without tokenizer.json (transformers 5.17).

    ``vocab_file`` / ``merges_file``: its ``vocab_files_names``; a ``.model`` vocabulary
    file is a SentencePiece model, converted; otherwise ``tokenizers`` reads the files
    (``BPE(vocab=path, merges=path)``, ``WordPiece(vocab=path)``) as the class's
    ``__init__`` is handed their paths. ``model``: the class's ``model`` (None: the model
    file's own type decides); ``head`` / ``skip`` / ``tail``: its converter's
    ``convert_from_spm`` re-ordering, the entries put first (each a ``*_token`` keyword
    with its default, or a literal text, and a score), how many of the file's first pieces
    it drops, the entries appended; ``sentinels``: T5Converter's ``<extra_id_{i}>`` pieces
    appended, ``extra_ids`` of them from the highest down.
    """

    vocab_file: str
    model: str | None
    merges_file: str | None = None
    head: tuple[tuple[str, str | None, float], ...] = ()
    skip: int = 0
    tail: tuple[tuple[str, str | None, float], ...] = ()
    sentinels: bool = False


_BYTE_LEVEL: Final = Conversion("vocab.json", "BPE", merges_file="merges.txt")
_WORDPIECE: Final = Conversion("vocab.txt", "WordPiece")
_XLM_R: Final = Conversion(
    "sentencepiece.bpe.model", "Unigram",
    head=(("bos_token", "<s>", 0.0), ("pad_token", "<pad>", 0.0), ("eos_token", "</s>", 0.0),
          ("unk_token", "<unk>", 0.0)), skip=3, tail=(("mask_token", "<mask>", 0.0),))

#: The rebuilding classes whose conversion is reproduced, and the generic backend's
#: (``GENERIC``), read from transformers 5.17's classes and convert_slow_tokenizer.py's
#: converters.
CONVERSIONS: Final[Mapping[str, Conversion]] = MappingProxyType({
    "LlamaTokenizer": Conversion("tokenizer.model", "BPE"),
    "T5Tokenizer": Conversion("spiece.model", "Unigram", sentinels=True),
    "AlbertTokenizer": Conversion("spiece.model", "Unigram"),
    "XLNetTokenizer": Conversion("spiece.model", "Unigram"),
    "XLMRobertaTokenizer": _XLM_R,
    "CamembertTokenizer": Conversion(
        "sentencepiece.bpe.model", None,
        head=(("", "<s>NOTUSED", 0.0), ("pad_token", "<pad>", 0.0), ("", "</s>NOTUSED", 0.0),
              ("unk_token", "<unk>", 0.0), ("", "<unk>NOTUSED", -100.0)), skip=1,
        tail=(("mask_token", "<mask>", 0.0),)),
    **dict.fromkeys(("GPT2Tokenizer", "Qwen2Tokenizer", "RobertaTokenizer", "CodeGenTokenizer",
                     "GPTNeoXTokenizer", "CohereTokenizer", "CLIPTokenizer",
                     "OpenAIGPTTokenizer", "HerbertTokenizer", "DebertaTokenizer",
                     "BlenderbotTokenizer", "NougatTokenizer", "MarkupLMTokenizer",
                     "LayoutLMv3Tokenizer", "WhisperTokenizer"), _BYTE_LEVEL),
    **dict.fromkeys(("BertTokenizer", "DistilBertTokenizer", "DPRQuestionEncoderTokenizer",
                     "DPRContextEncoderTokenizer", "LayoutLMv2Tokenizer", "FunnelTokenizer",
                     "MPNetTokenizer", "SplinterTokenizer"), _WORDPIECE),
})
GENERIC: Final = Conversion("tokenizer.model", None)
#: The releases whose render servers' answers for converted folders were replayed, per
#: source (tests/render/real_conv_vectors.jsonl, real_conv_files_vectors.jsonl and their
#: releases/ copies); the others are refused. transformers 5.24 (vLLM 0.29.0, 0.30.0)
#: builds the generic backend's tokenizer from a SentencePiece model otherwise (the
#: era's ``generic_spm``, :func:`generic_spm_tokenizer`): 76 of the generic folders' 78
#: texts got other ids than at 0.31.0, the rebuilding classes' all the same.
CONVERTED_RELEASES: Final = MappingProxyType({
    "sentencepiece": frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0"}),
    "generic": frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0"}),
    "files": frozenset({"0.30.0", "0.31.0", "0.32.0"})})


def conversion_releases(tokenizer_class: str) -> frozenset[str]:
    """The releases a class's conversion was replayed against."""
    conversion = CONVERSIONS.get(tokenizer_class)
    if conversion is None:
        return CONVERTED_RELEASES["generic"]
    return CONVERTED_RELEASES[
        "sentencepiece" if conversion.vocab_file.endswith(".model") else "files"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Vocabulary:
    """What a class's ``__init__`` gets from convert_to_native_format: a Unigram's
    (piece, score) list, a BPE's vocabulary and merges, or a WordPiece vocabulary; the
    charsmap; the model file's control and user-defined pieces
    (``additional_special_tokens``)."""

    #: The file converted (its name, for errors).
    file: str
    unigram: list[tuple[str, float]] | None = None
    bpe: tuple[dict[str, int], list[tuple[str, str]]] | None = None
    #: The ``tokenizers`` model read from vocabulary files, as the class's ``__init__``
    #: reads them from the paths it is handed (BPE or WordPiece).
    read: Any = None
    charsmap: bytes | None = None
    #: (text, special): control pieces are special, user-defined ones are not.
    added: tuple[tuple[str, bool], ...] = ()
    #: The SentencePiece model read (None: vocabulary files).
    model: SpmModel | None = None

    @property
    def kind(self) -> str:
        """The model's kind: Unigram, BPE or WordPiece."""
        if self.unigram is not None:
            return "Unigram"
        return "BPE" if self.bpe is not None else type(self.read).__name__


def generate_merges(vocab: Mapping[str, int]) -> list[tuple[str, str]]:
    """tokenization_utils_base.generate_merges without scores: every split of a piece
    into two pieces of the vocabulary, by the piece's id, then the parts' lengths."""
    found: list[tuple[int, int, int, int, int, str, str]] = []
    for piece, rank in vocab.items():
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                found.append((rank, len(left), len(right), vocab[left], vocab[right],
                              left, right))
    # Python's sort is stable: the local (left id, right id) order stays within a key.
    found.sort(key=lambda m: (m[0], m[3], m[4]))
    found.sort(key=lambda m: (m[0], m[1], m[2]))
    return [(m[5], m[6]) for m in found]


def _entries(spec: tuple[tuple[str, str | None, float], ...],
             init: Mapping[str, Any]) -> list[tuple[str, float]]:
    """A converter's entries: a keyword's value (``str()`` of it), else its default."""
    return [(str(init.get(key, default)) if key else str(default), score)
            for key, default, score in spec]


def spm_vocabulary(path: Path, conversion: Conversion, init: Mapping[str, Any]) -> Vocabulary:
    """SentencePieceExtractor.extract and the converter's convert_from_spm, over the
    folder's model file (``init``: tokenizer_config.json's keywords)."""
    spm = read_spm_model(path)
    kind = conversion.model or ("Unigram" if spm.model_type == _UNIGRAM else "BPE")
    scores = [(piece, score) for piece, score, _ in spm.pieces]
    added = tuple((piece, kind_ == _CONTROL) for piece, _, kind_ in spm.pieces
                  if kind_ in (_CONTROL, _USER_DEFINED))
    charsmap = spm.precompiled_charsmap or None
    if kind == "BPE":
        vocab = {piece: i for i, (piece, _) in enumerate(scores)}
        if len(vocab) != len(scores):
            raise RenderUnsupportedError(path.name, (
                "the SentencePiece model repeats a piece, which the conversion to a BPE "
                "vocabulary merges; not reproduced"))
        return Vocabulary(file=path.name, bpe=(vocab, generate_merges(vocab)),
                          charsmap=charsmap, added=added, model=spm)
    if conversion.head or conversion.tail or conversion.skip:
        scores = [*_entries(conversion.head, init), *scores[conversion.skip:],
                  *_entries(conversion.tail, init)]
    if conversion.sentinels:
        count = init.get("extra_ids", 100)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise ModelFolderError("tokenizer_config.json",
                                   f"extra_ids must be a non-negative integer, got {count!r}")
        scores += [(f"<extra_id_{i}>", 0.0) for i in range(count - 1, -1, -1)]
    return Vocabulary(file=path.name, unigram=scores, charsmap=charsmap, added=added,
                      model=spm)


def tiktoken_conversion(path: Path) -> RenderUnsupportedError:
    """The hook for a ``.model`` file transformers reads as tiktoken's (one that is no
    SentencePiece model; the name ``tiktoken.model`` is no class's vocabulary file here):
    TikTokenConverter builds the whole tokenizer, which prefixkey does not reproduce."""
    return RenderUnsupportedError(path.name, (
        "converted: it is no SentencePiece model, so transformers converts it as a "
        "tiktoken file (tiktoken conversion, TikTokenConverter), which prefixkey does not "
        "reproduce"))


def converted_vocabulary(folder: Path, tokenizer_class: str,
                         init: Mapping[str, Any]) -> Vocabulary:
    """The vocabulary the class converts from the folder's files (its decision is
    ``converted``, so the class is in :data:`CONVERSIONS` or is the generic backend)."""
    conversion = CONVERSIONS.get(tokenizer_class, GENERIC)
    path = folder / conversion.vocab_file
    if not path.is_file():
        raise RenderUnsupportedError("tokenizer.json", (
            f"converted: the folder has neither tokenizer.json nor {conversion.vocab_file}, "
            f"so {tokenizer_class} builds its tokenizer from its default vocabulary (or "
            "fails), which prefixkey does not reproduce"))
    if path.suffix == ".model":
        return spm_vocabulary(path, conversion, init)
    merges = None if conversion.merges_file is None else folder / conversion.merges_file
    if merges is not None and not merges.is_file():
        # The class then builds BPE(vocab=<path>, merges=[]), which tokenizers refuses.
        raise ModelFolderError(merges.name, (
            f"{path.name} without {merges.name} (and no tokenizer.json): transformers fails "
            f"to build the {tokenizer_class} (\"`vocab` and `merges` must be both be from "
            "memory or both filenames\"), so vLLM does not start"))
    # Imported here: the decision and docs read this module's tables without tokenizers.
    from tokenizers import models

    try:
        if merges is None:
            return Vocabulary(file=path.name, read=models.WordPiece.from_file(str(path)))
        return Vocabulary(file=path.name, read=models.BPE.from_file(str(path), str(merges)))
    except Exception as exc:  # tokenizers raises a bare Exception
        raise ModelFolderError(path.name, f"cannot be read: {exc}") from None


def files_read(conversion: Conversion) -> str:
    """The files a conversion reads, for the decision's reason."""
    if conversion.vocab_file.endswith(".model"):
        return f"the vocabulary of the folder's {conversion.vocab_file} (a SentencePiece model)"
    return "the folder's " + " and ".join(
        f for f in (conversion.vocab_file, conversion.merges_file) if f)


def _renamed(vocab: Mapping[str, int], renamed: Mapping[int, Any],
             build: GenericSpm) -> dict[str, int]:
    """The BPE vocabulary with its pieces renamed as ``added_tokens_decoder`` says:
    ``extracted`` renames each in turn onto a name not yet taken; ``spec`` renames every
    piece at once, but not onto a piece keeping its own id (two pieces may swap names)."""
    names = {index: str(token) for index, token in renamed.items()}
    if build == "spec":
        kept = {piece for piece, index in vocab.items() if index not in names}
        return {(names[i] if i in names and names[i] not in kept else piece): i
                for piece, i in vocab.items()}
    out = dict(vocab)
    by_id = {i: piece for piece, i in out.items()}
    for index, new in names.items():
        current = by_id.get(index)
        if current and current != new and new not in out:
            out[new] = out.pop(current)
            by_id[index] = new
    return out


def _scored_merges(spm: SpmModel, by_id: Mapping[int, str]) -> list[tuple[str, str]]:
    """build_tokenizer_from_spm_proto's merges: every split of a normal piece into two
    normal pieces, by the piece's score (highest first), then its id."""
    normal = {by_id[i]: (score, i) for i, (_, score, kind) in enumerate(spm.pieces)
              if kind == _NORMAL and i in by_id}
    ranked = [(-score, i, token[:cut], token[cut:]) for token, (score, i) in normal.items()
              for cut in range(1, len(token))
              if token[:cut] in normal and token[cut:] in normal]
    return [(left, right) for _, _, left, right in sorted(ranked)]


def generic_inputs(vocabulary: Vocabulary, decoder: Mapping[int, Any], build: GenericSpm
                   ) -> tuple[list[tuple[str, bool]], dict[int, Any]]:
    """What ``_convert_from_sentencepiece`` hands the generic backend's ``__init__``
    besides its tokenizer: the model file's control and user-defined pieces (``spec``:
    the control ones only, user-defined pieces are the model's), and
    ``added_tokens_decoder`` (``spec``, with a dummy prefix: every token matched on the
    raw text, ``normalized`` false, so each chunk between them gets its own prefix)."""
    spm = vocabulary.model
    assert spm is not None  # the generic backend converts a SentencePiece model only
    if build == "extracted":
        return list(vocabulary.added), dict(decoder)
    user_defined = {piece for piece, _, kind in spm.pieces if kind == _USER_DEFINED}
    added = [(text, special) for text, special in vocabulary.added if text not in user_defined]
    if spm.add_dummy_prefix:
        from tokenizers import AddedToken

        decoder = {i: AddedToken(**{**t.__getstate__(), "normalized": False})
                   if isinstance(t, AddedToken) else t for i, t in decoder.items()}
    return added, dict(decoder)


def generic_spm_tokenizer(vocabulary: Vocabulary, renamed: Mapping[int, Any],
                          build: GenericSpm, legacy: object = True) -> Any:
    """SpmConverter.build_tokenizer_from_spm_proto: the generic backend's tokenizer over
    the model file, its BPE pieces first renamed as ``added_tokens_decoder`` says, as the
    release's transformers builds it (``build``: render/_eras.py ``generic_spm``;
    ``legacy``: tokenizer_config.json's, which ``spec`` reads)."""
    # Imported here: the decision and docs read this module's tables without tokenizers.
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    spm = vocabulary.model
    assert spm is not None  # the generic backend converts a SentencePiece model only
    user_defined: list[str] = []
    if vocabulary.bpe is not None:
        vocab = _renamed(vocabulary.bpe[0], renamed, build)
        merges = vocabulary.bpe[1]
        if build == "spec":
            by_id = {i: piece for piece, i in vocab.items()}
            user_defined = [by_id[i] for i, (_, _, kind) in enumerate(spm.pieces)
                            if kind == _USER_DEFINED and i in by_id]
            merges = _scored_merges(spm, by_id)
        try:
            tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=spm.unk_piece,
                                       fuse_unk=True, byte_fallback=spm.byte_fallback,
                                       dropout=None, ignore_merges=bool(user_defined)))
        except Exception as exc:  # tokenizers raises a bare Exception
            # ``extracted``: the merges were generated before the renames, so a renamed
            # piece they use is gone from the vocabulary, and transformers fails alike.
            raise ModelFolderError("tokenizer_config.json", (
                f"added_tokens_decoder renames pieces of the SentencePiece model "
                f"{vocabulary.file}, and transformers fails to build its BPE model ({exc}): "
                "vLLM does not start")) from None
    else:
        if renamed and build == "extracted":
            # transformers renames the pieces through ``vocab.items()``, which a Unigram
            # (piece, score) list lacks: the load fails.
            raise ModelFolderError("tokenizer_config.json", (
                f"added_tokens_decoder beside the Unigram SentencePiece model "
                f"{vocabulary.file}: transformers fails to convert it (no tokenizer.json)"))
        assert vocabulary.unigram is not None
        if build == "spec":  # 5.24 renames no Unigram piece
            user_defined = [piece for piece, _, kind in spm.pieces if kind == _USER_DEFINED]
        tok = Tokenizer(models.Unigram(vocabulary.unigram, unk_id=spm.unk_id,
                                       byte_fallback=spm.byte_fallback))
    precompiled: list[Any] = ([normalizers.Precompiled(vocabulary.charsmap)]
                              if vocabulary.charsmap else [])
    replace = normalizers.Replace(" ", "\u2581")
    if build == "extracted":
        tok.normalizer = normalizers.Sequence([*precompiled, replace])
        tok.decoder = decoders.Sequence(
            [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
            if spm.byte_fallback else [decoders.Replace("\u2581", " ")])
        return tok
    # SentencePiece's own order: the charsmap, extra spaces removed (spaces only), spaces
    # escaped, and a text already starting with "▁" still given its dummy prefix (legacy).
    steps: list[Any] = list(precompiled)
    if spm.remove_extra_whitespaces:
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""),
                  normalizers.Replace(Regex(" {2,}"), " ")]
    if spm.escape_whitespaces:
        steps.append(replace)
    if spm.add_dummy_prefix and legacy:
        steps.append(normalizers.Replace(Regex("\\A\u2581"), "\u2581\u2581"))
    tok.normalizer = normalizers.Sequence(steps)
    # The dummy prefix, then the user-defined pieces isolated (emitted whole, never merged).
    splits: list[Any] = []
    if spm.add_dummy_prefix:
        splits.append(pre_tokenizers.Metaspace(
            replacement="\u2581", prepend_scheme="always" if legacy else "first", split=False))
    if user_defined:
        pattern = "|".join(re.escape(p) for p in sorted(user_defined, key=len, reverse=True))
        splits.append(pre_tokenizers.Split(Regex(pattern), behavior="isolated"))
    if splits:
        tok.pre_tokenizer = pre_tokenizers.Sequence(splits)
    parts: list[Any] = [decoders.Replace("\u2581", " ")]
    if spm.byte_fallback:
        parts.append(decoders.ByteFallback())
    if spm.add_dummy_prefix:
        parts += [decoders.Fuse(), decoders.Strip(content=" ", left=1)]
    elif spm.byte_fallback:
        parts.append(decoders.Fuse())
    tok.decoder = decoders.Sequence(parts)
    return tok


def generic_specials(vocabulary: Vocabulary) -> dict[str, str]:
    """The named tokens the generic backend takes from the model file when the folder
    gives none (its trainer's bos / eos / unk pieces, each when its id is set)."""
    spm = vocabulary.model
    assert spm is not None
    return {name: piece or default for name, id_, piece, default in (
        ("bos_token", spm.bos_id, spm.bos_piece, "<s>"),
        ("eos_token", spm.eos_id, spm.eos_piece, "</s>"),
        ("unk_token", spm.unk_id, spm.unk_piece, "<unk>")) if id_ >= 0}
