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
here are decoded from the wire format by render/_protobuf.py, so no protobuf runtime is
needed.
"""

from __future__ import annotations

import operator
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from ._eras import GenericSpm
from ._errors import ModelFolderError, RenderUnsupportedError
from ._hf_rebuilds import MBART50_CODES, MBART_CODES, REBUILDS
from ._protobuf import DEPTH, Messages, WireError, fields

__all__ = [
    "BACKEND",
    "CONVERSIONS",
    "CONVERTED_RELEASES",
    "GENERIC",
    "MODEL_PROTO",
    "Conversion",
    "SpmModel",
    "Vocabulary",
    "converted_vocabulary",
    "files_read",
    "generic_build",
    "generic_inputs",
    "generic_specials",
    "generic_spm_tokenizer",
    "inherited_specials",
    "read_spm_model",
    "rebuilding_class",
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


#: sentencepiece_model.proto's message fields (sentencepiece 0.2's, whose module
#: transformers parses with): ModelProto's 1 pieces, 2 trainer_spec, 3 normalizer_spec,
#: 5 denormalizer_spec; none of them holds a message.
MODEL_PROTO: Final[Messages] = MappingProxyType(
    {number: MappingProxyType({}) for number in (1, 2, 3, 5)})
_FLOAT: Final = struct.Struct("<f")
#: A field's wire type and how its value reads (protobuf keeps a field of another wire
#: type, or an enum's unknown value, as an unknown field: the field keeps its value).
_READERS: Final[Mapping[str, tuple[int, Callable[[Any], Any]]]] = MappingProxyType({
    "string": (2, lambda v: v.decode("utf-8")),
    "bytes": (2, bytes),
    "float": (5, lambda v: _FLOAT.unpack(v)[0]),
    "int32": (0, lambda v: (v & 0xFFFFFFFF) - ((v & 0x80000000) << 1)),
    "bool": (0, bool),
    "Type": (0, lambda v: v if 1 <= v <= 6 else None),  # SentencePiece.Type
    "ModelType": (0, lambda v: v if 1 <= v <= 4 else None),  # TrainerSpec.ModelType
})
#: The fields read (each: its name, its type): a SentencePiece piece's, TrainerSpec's
#: (model_type, byte_fallback, the unk/bos/eos ids and pieces), NormalizerSpec's charsmap.
_PIECE_FIELDS: Final = {1: ("piece", "string"), 2: ("score", "float"), 3: ("type", "Type")}
_TRAINER_FIELDS: Final = {
    3: ("model_type", "ModelType"), 35: ("byte_fallback", "bool"), 40: ("unk_id", "int32"),
    41: ("bos_id", "int32"), 42: ("eos_id", "int32"), 45: ("unk_piece", "string"),
    46: ("bos_piece", "string"), 47: ("eos_piece", "string")}
_NORMALIZER_FIELDS: Final = {
    2: ("precompiled_charsmap", "bytes"), 3: ("add_dummy_prefix", "bool"),
    4: ("remove_extra_whitespaces", "bool"), 5: ("escape_whitespaces", "bool")}


def _merge(into: dict[str, Any], message: list[tuple[int, int, int | bytes]],
           wanted: Mapping[int, tuple[str, str]]) -> dict[str, Any]:
    """A message's wanted fields merged into ``into`` as protobuf merges a message: the
    last value of each field read wins."""
    for number, wire, value in message:
        name, kind = wanted.get(number, ("", ""))
        if name and wire == _READERS[kind][0]:
            read = _READERS[kind][1](value)
            if read is not None:
                into[name] = read
    return into


def _piece(value: bytes) -> tuple[str, float, int]:
    """A ``SentencePiece`` message: (piece, score, type). The layout every writer uses
    (each field once, in order: a piece under 128 bytes, a score, a type or none) is read
    directly: tens of thousands of pieces; any other through :func:`_merge`."""
    size = len(value)
    if size > 1 and value[0] == 0x0A and value[1] < 0x80:  # field 1, length-delimited
        at = 2 + value[1]
        if at + 5 <= size and value[at] == 0x15:  # field 2, fixed32
            if at + 5 == size:
                return value[2:at].decode("utf-8"), _FLOAT.unpack_from(value, at + 1)[0], 1
            if at + 7 == size and value[at + 5] == 0x18 and 1 <= value[at + 6] <= 6:
                return (value[2:at].decode("utf-8"), _FLOAT.unpack_from(value, at + 1)[0],
                        value[at + 6])  # field 3, a varint: a known SentencePiece.Type
    read = _merge({"piece": "", "score": 0.0, "type": 1}, fields(value, DEPTH - 1),
                  _PIECE_FIELDS)
    return read["piece"], read["score"], read["type"]


def read_spm_model(path: Path) -> SpmModel:
    """A SentencePiece model file's pieces, trainer and normalizer fields.

    ModelProto: 1 pieces (:data:`_PIECE_FIELDS`), 2 trainer_spec (:data:`_TRAINER_FIELDS`),
    3 normalizer_spec (:data:`_NORMALIZER_FIELDS`). A file that is no such message is what
    transformers then reads as a tiktoken file: :func:`tiktoken_conversion`.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelFolderError(path.name, f"cannot be read: {exc}") from None
    pieces: list[tuple[str, float, int]] = []
    settings: dict[str, Any] = {}
    try:
        for number, wire, value in fields(data):
            if number not in MODEL_PROTO or wire != 2:
                continue
            assert isinstance(value, bytes)
            if number == 1:
                pieces.append(_piece(value))
                continue
            # Parsed as the parser parses a message field (none of MODEL_PROTO's holds one).
            message = fields(value, DEPTH - 1)
            if number == 2:
                _merge(settings, message, _TRAINER_FIELDS)
            elif number == 3:
                _merge(settings, message, _NORMALIZER_FIELDS)
    except (WireError, UnicodeDecodeError):
        raise tiktoken_conversion(path) from None
    if not pieces:
        raise tiktoken_conversion(path)
    return SpmModel(pieces=tuple(pieces), **settings)


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
    appended, ``extra_ids`` of them from the highest down. ``optional``: entries put
    after the head unless their text is ``"None"`` or an earlier optional entry's
    (PegasusConverter's mask tokens); ``numbered``: entries ``(format, first, keyword,
    default, score)`` put after those, ``format`` over ``first`` up to the keyword's value
    (PegasusConverter's ``<unk_{i}>``, to ``offset``). ``own_extras``: the class's
    ``__init__`` replaces the model's control and user-defined pieces (its
    ``additional_special_tokens``) with its own list when that keyword's value is not
    among them (PegasusTokenizer's ``mask_token_sent``). A BPE vocabulary's ``head``
    tokens take the first ids and the file's pieces follow, those already among them
    left out (NllbConverter), or, with ``offset``, each piece keeps its own id plus
    ``offset`` over the head (SeamlessM4TTokenizer.convert_from_spm_model). ``default``:
    the vocabulary the class's ``__init__`` builds without the file (its ``vocab``
    default, a BPE without merges); None: the folder is refused. ``init``: the class whose
    ``__init__`` the class inherits (its own has none, so it loads tokenizer.json as it
    is). Over vocabulary files that class's rebuild record builds it; over a
    SentencePiece model transformers builds the generic backend's tokenizer instead
    (:func:`generic_build`), and the inherited ``__init__`` adds its named tokens.
    """

    vocab_file: str
    model: str | None
    merges_file: str | None = None
    head: tuple[tuple[str, str | None, float], ...] = ()
    skip: int = 0
    tail: tuple[tuple[str, str | None, float], ...] = ()
    sentinels: bool = False
    optional: tuple[tuple[str, str | None, float], ...] = ()
    numbered: tuple[str, int, str, int, float] | None = None
    own_extras: tuple[str, str] | None = None
    offset: int | None = None
    default: tuple[str, ...] | None = None
    init: str | None = None


#: The generic backend's class, whose ``__init__`` a class without its own may inherit.
BACKEND: Final = "TokenizersBackend"
#: The generic backend's: TokenizersBackend's own vocabulary file, the file's model type.
GENERIC: Final = Conversion("tokenizer.model", None, init=BACKEND)
_BYTE_LEVEL: Final = Conversion("vocab.json", "BPE", merges_file="merges.txt")
_WORDPIECE: Final = Conversion("vocab.txt", "WordPiece")
_XLM_R: Final = Conversion(
    "sentencepiece.bpe.model", "Unigram",
    head=(("bos_token", "<s>", 0.0), ("pad_token", "<pad>", 0.0), ("eos_token", "</s>", 0.0),
          ("unk_token", "<unk>", 0.0)), skip=3, tail=(("mask_token", "<mask>", 0.0),))

#: The language codes MBartConverter / MBart50Converter append (convert_slow_tokenizer's
#: MBART_LANGUAGES, MBART50_LANGUAGES: the rebuild records' codes).
_MBART_TAIL: Final = tuple(("", code, 0.0) for code in MBART_CODES)
_MBART50_TAIL: Final = tuple(("", code, 0.0) for code in MBART50_CODES)
_FAIRSEQ_HEAD: Final = (("bos_token", "<s>", 0.0), ("pad_token", "<pad>", 0.0),
                        ("eos_token", "</s>", 0.0), ("unk_token", "<unk>", 0.0))

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
    # Classes whose vocab_files_names lists tokenizer.json only: from_pretrained hands
    # them the folder's tokenizer.model (its pattern for a folder without tokenizer.json).
    **dict.fromkeys(("GemmaTokenizer", "Siglip2Tokenizer"), Conversion("tokenizer.model", "BPE")),
    "XGLMTokenizer": Conversion("tokenizer.model", "Unigram"),
    "CodeLlamaTokenizer": Conversion("tokenizer.model", "BPE"),
    # Its BPE model over whatever the model file holds (generated merges).
    "ReformerTokenizer": Conversion("spiece.model", "BPE"),
    "BigBirdTokenizer": Conversion("spiece.model", "Unigram"),
    "DebertaV2Tokenizer": Conversion("spm.model", "Unigram"),
    "BarthezTokenizer": Conversion("sentencepiece.bpe.model", None),
    "RemBertTokenizer": Conversion("sentencepiece.model", "Unigram"),
    # Its converter's defaults name the mask tokens the other way round from the class's.
    "PegasusTokenizer": Conversion(
        "spiece.model", "Unigram",
        head=(("pad_token", "<pad>", 0.0), ("eos_token", "</s>", 0.0)),
        optional=(("mask_token", "<mask_1>", 0.0), ("mask_token_sent", "<mask_2>", 0.0)),
        skip=2, numbered=("<unk_{}>", 2, "offset", 103, -100.0),
        own_extras=("mask_token_sent", "<mask_1>")),
    # No __init__ of its own (models/fnet/tokenization_fnet.py): AlbertTokenizer's.
    "FNetTokenizer": Conversion("spiece.model", "Unigram", init="AlbertTokenizer"),
    # MBartConverter, MBart50Converter, XLMRobertaConverter (LayoutXLM's): the fairseq
    # tokens first, the model's first three pieces dropped, the codes and mask appended.
    "MBartTokenizer": replace(_XLM_R, tail=(*_MBART_TAIL, ("mask_token", "<mask>", 0.0))),
    "MBart50Tokenizer": replace(_XLM_R, head=(("cls_token", "<s>", 0.0), *_FAIRSEQ_HEAD[1:]),
                                tail=(*_MBART50_TAIL, ("mask_token", "<mask>", 0.0))),
    "LayoutXLMTokenizer": _XLM_R,
    # NllbConverter re-numbers the BPE vocabulary after its four tokens;
    # SeamlessM4TTokenizer.convert_from_spm_model shifts every piece's id by one over its
    # own four (no converter re-orders it).
    "NllbTokenizer": Conversion("sentencepiece.bpe.model", "BPE", head=_FAIRSEQ_HEAD),
    "SeamlessM4TTokenizer": Conversion(
        "sentencepiece.bpe.model", "BPE", offset=1,
        head=(("", "<pad>", 0.0), ("", "<unk>", 0.0), ("", "<s>", 0.0), ("", "</s>", 0.0))),
    # No converter of their own: the model's pieces as they are (MLuke's model type is
    # the file's).
    "UdopTokenizer": Conversion("spiece.model", "Unigram"),
    "Tipsv2Tokenizer": Conversion("tokenizer.model", "BPE"),
    # VideoPrismConverter is T5Converter's: the sentinels appended.
    "VideoPrismTokenizer": Conversion("spiece.model", "Unigram", sentinels=True),
    "LasrTokenizer": Conversion("spiece.model", "Unigram"),
    "MLukeTokenizer": Conversion("sentencepiece.bpe.model", None),
    # TokenizersBackend's vocabulary file; without it, its __init__'s one-token default.
    "Qwen3_5Tokenizer": Conversion("tokenizer.model", "BPE", default=("<|endoftext|>",)),
    # Its __init__ builds its own vocabulary: no file is read (EsmcTokenizer names none).
    "EsmcTokenizer": Conversion("tokenizer.model", "BPE", default=()),
    # No __init__ of its own: TokenizersBackend's (its vocabulary file, the file's type).
    "ParakeetTokenizer": GENERIC,
    "ConvBertTokenizer": replace(_WORDPIECE, init="BertTokenizer"),
    **dict.fromkeys(("GPT2Tokenizer", "Qwen2Tokenizer", "RobertaTokenizer", "CodeGenTokenizer",
                     "GPTNeoXTokenizer", "CohereTokenizer", "CLIPTokenizer",
                     "OpenAIGPTTokenizer", "HerbertTokenizer", "DebertaTokenizer",
                     "BlenderbotTokenizer", "NougatTokenizer", "MarkupLMTokenizer",
                     "LayoutLMv3Tokenizer", "LukeTokenizer",
                     "WhisperTokenizer"), _BYTE_LEVEL),
    **dict.fromkeys(("BertTokenizer", "DistilBertTokenizer", "DPRQuestionEncoderTokenizer",
                     "DPRContextEncoderTokenizer", "LayoutLMv2Tokenizer", "FunnelTokenizer",
                     "MPNetTokenizer", "SplinterTokenizer", "DPRReaderTokenizer"),
                    _WORDPIECE),
})
#: The releases whose render servers' answers for converted folders were replayed, per
#: source (tests/render/real_conv_vectors.jsonl, real_conv_spm_vectors.jsonl,
#: real_conv_files_vectors.jsonl and their releases/ copies); the others are refused.
#: transformers 5.24 (vLLM 0.29.0, 0.30.0) builds the generic backend's tokenizer from a
#: SentencePiece model otherwise (the era's ``generic_spm``, :func:`generic_spm_tokenizer`):
#: 76 of the generic folders' 78 texts got other ids than at 0.31.0, the rebuilding
#: classes' all the same. vLLM 0.33.0 (its overlay) answered every corpus as 0.32.0, and
#: 0.29.0 the vocabulary-file folders it starts for as 0.30.0 and 0.31.0.
CONVERTED_RELEASES: Final = MappingProxyType({
    "sentencepiece": frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}),
    "generic": frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}),
    "files": frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})})


def generic_build(conversion: Conversion) -> bool:
    """Whether transformers builds the generic backend's tokenizer from the folder's model
    file (``_convert_from_sentencepiece``: TokenizersBackend itself, or a class without
    an ``__init__`` of its own, over a SentencePiece model)."""
    return conversion.init is not None and conversion.vocab_file.endswith(".model")


def conversion_releases(tokenizer_class: str) -> frozenset[str]:
    """The releases a class's conversion was replayed against."""
    conversion = CONVERSIONS.get(tokenizer_class, GENERIC)
    if generic_build(conversion):
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
    #: The model file's precompiled charsmap (b"": none), as the extractor hands it.
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
    into two pieces of the vocabulary, by the piece's id, then the parts' lengths.

    Its per-piece sort by the parts' ids never decides (a piece's splits differ in the
    left part's length), so a vocabulary listed by increasing id (every converted one)
    gives its merges in listing order, cut by cut, without a sort.
    """
    ids = list(vocab.values())
    if all(map(operator.lt, ids, ids[1:])):
        return [(piece[:cut], piece[cut:]) for piece in vocab for cut in range(1, len(piece))
                if piece[:cut] in vocab and piece[cut:] in vocab]
    # Python's sort is stable: merges of equal keys keep the vocabulary's order.
    found = sorted(((rank, cut, len(piece) - cut, piece[:cut], piece[cut:])
                    for piece, rank in vocab.items() for cut in range(1, len(piece))
                    if piece[:cut] in vocab and piece[cut:] in vocab), key=lambda m: m[:3])
    return [(m[3], m[4]) for m in found]


def _entries(spec: tuple[tuple[str, str | None, float], ...],
             init: Mapping[str, Any]) -> list[tuple[str, float]]:
    """A converter's entries: a keyword's value (``str()`` of it), else its default."""
    return [(str(init.get(key, default)) if key else str(default), score)
            for key, default, score in spec]


def _count(init: Mapping[str, Any], key: str, default: int) -> int:
    """A converter's count keyword (``extra_ids``, ``offset``)."""
    count = init.get(key, default)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ModelFolderError("tokenizer_config.json",
                               f"{key} must be a non-negative integer, got {count!r}")
    return count


def _bpe_head(vocab: Mapping[str, int], head: list[str],
              offset: int | None) -> dict[str, int]:
    """A BPE vocabulary under the converter's ``head`` tokens: the pieces numbered on after
    them, skipping those among them, or (``offset``) each at its own id plus ``offset``."""
    out = {token: i for i, token in enumerate(head)}
    for piece, rank in vocab.items():
        if offset is not None:
            out[piece] = rank + offset
        elif piece not in out:
            out[piece] = len(out)
    return out


def spm_vocabulary(path: Path, conversion: Conversion, init: Mapping[str, Any]) -> Vocabulary:
    """SentencePieceExtractor.extract and the converter's convert_from_spm, over the
    folder's model file (``init``: tokenizer_config.json's keywords)."""
    spm = read_spm_model(path)
    kind = conversion.model or ("Unigram" if spm.model_type == _UNIGRAM else "BPE")
    scores = [(piece, score) for piece, score, _ in spm.pieces]
    added = tuple((piece, kind_ == _CONTROL) for piece, _, kind_ in spm.pieces
                  if kind_ in (_CONTROL, _USER_DEFINED))
    # The extractor hands the class the model's charsmap as it is: b"" when it has none
    # (which each class's ``is not None`` test lets through to Precompiled, which fails).
    charsmap = spm.precompiled_charsmap
    if kind == "BPE":
        vocab = {piece: i for i, (piece, _) in enumerate(scores)}
        if len(vocab) != len(scores):
            raise RenderUnsupportedError(path.name, (
                "the SentencePiece model repeats a piece, which the conversion to a BPE "
                "vocabulary merges; not reproduced"))
        merges = generate_merges(vocab)  # over the model's own ids
        if conversion.head:
            vocab = _bpe_head(vocab, [t for t, _ in _entries(conversion.head, init)],
                              conversion.offset)
        return Vocabulary(file=path.name, bpe=(vocab, merges), charsmap=charsmap,
                          added=added, model=spm)
    if conversion.head or conversion.tail or conversion.skip:
        head = _entries(conversion.head, init)
        optional = _entries(conversion.optional, init)
        head += [entry for at, entry in enumerate(optional) if entry[0] != "None"
                 and entry[0] not in (text for text, _ in optional[:at])]
        if conversion.numbered is not None:
            form, first, key, default, score = conversion.numbered
            end = _count(init, key, default)
            head += [(form.format(i), score) for i in range(first, end)]
        scores = [*head, *scores[conversion.skip:], *_entries(conversion.tail, init)]
    if conversion.sentinels:
        count = _count(init, "extra_ids", 100)
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
    if path.is_file() and conversion.default == ():
        # from_pretrained hands a class naming no vocabulary file the folder's
        # tokenizer.model anyway: converted, its control pieces dropped by EsmcTokenizer.
        raise RenderUnsupportedError(path.name, (
            f"converted: {tokenizer_class} builds its own vocabulary, but transformers "
            f"also hands it the folder's {path.name} converted, which prefixkey does not "
            "reproduce"))
    if not path.is_file() and conversion.default is not None:
        return Vocabulary(file=path.name, model=None, bpe=(
            {token: i for i, token in enumerate(conversion.default)}, []))
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

    try:  # the paths to the constructor, as the class passes them (from_file is slower)
        if merges is None:
            return Vocabulary(file=path.name, read=models.WordPiece(str(path)))
        return Vocabulary(file=path.name, read=models.BPE(vocab=str(path), merges=str(merges)))
    except Exception as exc:  # tokenizers raises a bare Exception
        raise ModelFolderError(path.name, f"cannot be read: {exc}") from None


def rebuilding_class(tokenizer_class: str) -> str:
    """The class whose rebuild record builds the class's tokenizer without tokenizer.json
    (its own, or over vocabulary files the one whose ``__init__`` it inherits:
    ``Conversion.init``; the generic build has none)."""
    conversion = CONVERSIONS.get(tokenizer_class)
    return (conversion.init if conversion is not None and conversion.init
            and not generic_build(conversion) else tokenizer_class)


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


def inherited_specials(conversion: Conversion) -> dict[str, str]:
    """The named tokens the ``__init__`` a generic build's class inherits passes on (its
    signature's defaults, the rebuild record's; TokenizersBackend's has none)."""
    record = REBUILDS.get(conversion.init or "")
    return {key: value for key, value in (record.defaults if record else {}).items()
            if value is not None}


def generic_specials(vocabulary: Vocabulary) -> dict[str, str]:
    """The named tokens the generic backend takes from the model file when the folder
    gives none (its trainer's bos / eos / unk pieces, each when its id is set)."""
    spm = vocabulary.model
    assert spm is not None
    return {name: piece or default for name, id_, piece, default in (
        ("bos_token", spm.bos_id, spm.bos_piece, "<s>"),
        ("eos_token", spm.eos_id, spm.eos_piece, "</s>"),
        ("unk_token", spm.unk_id, spm.unk_piece, "<unk>")) if id_ >= 0}
