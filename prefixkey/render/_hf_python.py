"""The Python tokenizers prefixkey reproduces: byte and code point tokenizers, as data.

transformers' Python tokenizers (``PythonBackend`` subclasses, no ``tokenizers`` backend)
are refused in general: each is its own code. A few need no vocabulary file at all:
their ids are the text's UTF-8 bytes or code points plus a fixed offset, around a few
added tokens. Each :class:`PythonCodec` records what one class's ``__init__``,
``_tokenize``, ``_convert_token_to_id`` and ``build_inputs_with_special_tokens`` do in
transformers 5.17 (the install vLLM 0.31 runs); render/_python_tokenizer.py applies
``PythonBackend``'s rules to it. Nothing here imports ``tokenizers``: the decision
(render/_hf_decision.py) and the docs table read it freely.

A folder is reproduced only when its ``tokenizer_config.json`` (and
``special_tokens_map.json``) leave the class's defaults as they are: any other setting
is refused, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from ._errors import RenderUnsupportedError

__all__ = ["PYTHON_CODECS", "Added", "PythonCodec", "SentencePieceRecipe", "check_folder"]


@dataclass(frozen=True, slots=True)
class Added:
    """One added token as the class's tokenizer holds it (``added_tokens_decoder``)."""

    content: str
    id: int
    #: The ``*_token`` attribute it is (None: an additional special token).
    attribute: str | None = None
    lstrip: bool = False
    rstrip: bool = False


@dataclass(frozen=True, slots=True)
class PythonCodec:
    """What one Python tokenizer class does (transformers 5.17)."""

    #: The recipe's name (docs, decisions).
    name: str
    #: ``bytes``: each UTF-8 byte is one token; ``code_points``: each character is;
    #: ``vocab_chars``: each character is, looked up in the folder's ``vocab.json``
    #: (Wav2Vec2CTCTokenizer: its multi-character entries are added tokens stripping
    #: the whitespace around them, spaces become ``word_delimiter_token``, and
    #: ``do_lower_case`` upper-cases the text).
    #: ``vocab_words``: the text is split on every vocabulary entry, the rest on
    #: whitespace, each word looked up (EsmTokenizer). ``sentencepiece``: the
    #: ``sentencepiece`` library encodes each piece with the folder's model, as ``spm``
    #: records (render/_python_spm.py).
    unit: Literal["bytes", "code_points", "vocab_chars", "vocab_words", "sentencepiece"]
    #: Added to a byte's value or a code point to make its id.
    offset: int
    added: tuple[Added, ...]
    #: ``build_inputs_with_special_tokens`` of one sequence: ``eos_if_absent`` appends
    #: ``eos_token`` unless the ids end with it (ByT5); ``cls_sep`` / ``cls_eos`` wrap
    #: them; ``none`` adds nothing (``special_tokens_pattern="none"``; a ``sentencepiece``
    #: codec's recipe says what it adds).
    wrap: Literal["eos_if_absent", "cls_sep", "cls_eos", "none"]
    #: The vocabulary file of the ``vocab_*`` units (vocab.json, or vocab.txt by line).
    vocab_file: str | None = None
    #: Which tokens the text is split on besides the named special tokens: ``multichar``
    #: every multi-character vocabulary entry, stripping whitespace around it (its
    #: ``__init__`` adds them so), ``vocab`` every entry, ``specials`` none.
    split_on: Literal["specials", "multichar", "vocab"] = "specials"
    #: The ``__init__`` settings read from tokenizer_config.json, with their defaults
    #: (a ``sentencepiece`` codec's None: any value, which changes nothing encoded).
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: ``sentencepiece``: what the class does around its SentencePiece model.
    spm: SentencePieceRecipe | None = None
    #: The vLLM releases whose answers for the class were replayed (None: every verified
    #: release's were); another release refuses it.
    releases: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class SentencePieceRecipe:
    """What one SentencePiece Python class does around ``SentencePieceProcessor.encode``.

    ``PythonBackend.tokenize`` splits the text on the added tokens (and, for
    ``SentencePieceBackend`` subclasses, on every special token), strips around those
    that ask, and hands every other piece to the class's ``_tokenize``; each token's id
    is the added token's, else the class's ``_convert_token_to_id``.
    """

    #: The model file ``vocab_files_names`` names (Marian: its source side's).
    model_file: str
    #: ``sentencepiece``: a ``SentencePieceBackend`` subclass (each special token splits
    #: the text; an added token only when the model lacks it, then after the model's
    #: pieces); ``python``: a ``PythonBackend`` one (the special tokens are added tokens,
    #: with their vocabulary id, else after it).
    backend: Literal["sentencepiece", "python"]
    #: A token's id: ``model`` the model's (``piece_to_id``, its unknown id for others);
    #: ``vocab_json`` the folder's vocab.json, else its ``unk_token``'s; ``fairseq`` the
    #: model's plus one (its id 0, unknown, is ``unk_token``'s), the four fairseq specials
    #: 0-3 and the language codes after the model (PLBart).
    ids: Literal["model", "vocab_json", "fairseq"]
    #: ``_tokenize``'s clean-up of a piece before the model encodes it, in order (the
    #: steps of render/_python_spm.py's ``CLEAN``).
    clean: tuple[str, ...] = ()
    #: SiglipTokenizer: ``tokenize`` encodes ``"▁" + text`` (each ``▁`` a space) and
    #: drops a lone first ``▁`` before a special token; ``_tokenize`` encodes
    #: ``unk_token + piece`` and drops the pieces of ``unk_token``.
    metaspace_prefix: bool = False
    #: MarianTokenizer: a piece starting ``>>…<<`` keeps that code as one token.
    language_code_tokens: bool = False
    #: The special tokens ``build_inputs_with_special_tokens`` puts before and after the
    #: ids: ``*_token`` attributes, or ``src_lang`` (the source language's code).
    prefix: tuple[str, ...] = ()
    suffix: tuple[str, ...] = ()
    #: ``eos_token`` only when the ids do not end with it (SiglipTokenizer).
    suffix_if_absent: bool = False
    #: The special tokens strip the whitespace on both sides (SiglipTokenizer's
    #: ``AddedToken(lstrip=True, rstrip=True)``).
    strip_specials: bool = False
    #: Per ``language_codes`` setting, each ``src_lang`` accepted → its code's token, in
    #: id order: M2M100's ids follow vocab.json and are not split out of a text; PLBart's
    #: follow the model's (plus one) and are special tokens.
    languages: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    #: PLBart "base": ``<mask>`` has the id after the language codes.
    mask_after_languages: bool = False
    #: A name (``name_or_path``: the folder's path as vLLM passes it) holding one of
    #: these makes ``__init__`` take other defaults (GPTSw3Tokenizer's "gpt-sw3-7b": its
    #: pad and bos tokens); refused.
    other_defaults_for: tuple[str, ...] = ()


def _byt5_added() -> tuple[Added, ...]:
    # __init__: pad/eos/unk at 0-2 with lstrip and rstrip; extra_ids=125 sentinels
    # "<extra_id_N>" added after the 256 bytes (ids 259 + N).
    return (Added("<pad>", 0, "pad_token", True, True), Added("</s>", 1, "eos_token", True, True),
            Added("<unk>", 2, "unk_token", True, True),
            *(Added(f"<extra_id_{n}>", 259 + n) for n in range(125)))


#: FAIRSEQ_LANGUAGE_CODES of models/m2m_100/tokenization_m2m_100.py.
_M2M100_CODES: Final = (
    "af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd "
    "gl gu ha he hi hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg "
    "mk ml mn mr ms my ne nl no ns oc or pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw "
    "ta th tl tn tr uk ur uz vi wo xh yi yo zh zu")
_WMT21_CODES: Final = "en ha is ja cs ru zh de"

#: The releases the SentencePiece classes' corpus (real_py_spm_) was harvested from; vLLM
#: 0.29.0 starts none of the encoder-decoder architectures (Marian, M2M100, PLBart,
#: Speech2Text), so those classes were not harvested there.
_SPM_RELEASES: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0"})
_SPM_ENCODER_DECODER_RELEASES: Final = _SPM_RELEASES - {"0.29.0"}

#: Each reproduced class (transformers 5.17) and what it does.
PYTHON_CODECS: Final[Mapping[str, PythonCodec]] = MappingProxyType({
    "ByT5Tokenizer": PythonCodec("byt5", "bytes", 3, _byt5_added(), "eos_if_absent"),
    "PerceiverTokenizer": PythonCodec("perceiver", "bytes", 6, (
        Added("[PAD]", 0, "pad_token"), Added("[BOS]", 1, "bos_token"),
        Added("[EOS]", 2, "eos_token"), Added("[MASK]", 3, "mask_token"),
        Added("[CLS]", 4, "cls_token"), Added("[SEP]", 5, "sep_token")), "cls_sep"),
    # Code points; the specials are private-use code points (their id is their value).
    # __init__ asks lstrip for the mask token, but the added token PythonBackend
    # registers for it has no strip flags (its added_tokens_decoder, read back).
    "CanineTokenizer": PythonCodec("canine", "code_points", 0, (
        Added("\ue000", 0xE000, "bos_token"), Added("\ue001", 0xE001, "eos_token"),
        Added("\ue001", 0xE001, "sep_token"), Added("\ue000", 0xE000, "cls_token"),
        Added("\x00", 0, "pad_token"), Added("\ue003", 0xE003, "mask_token")),
        "cls_sep"),
    # models/wav2vec2/tokenization_wav2vec2.py (every audio CTC model type registers it).
    "Wav2Vec2CTCTokenizer": PythonCodec(
        "wav2vec2_ctc", "vocab_chars", 0, (), "none", "vocab.json", "multichar",
        MappingProxyType({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                          "pad_token": "<pad>", "word_delimiter_token": "|",
                          "do_lower_case": False, "replace_word_delimiter_char": " ",
                          "target_lang": None})),
    # models/mgp_str/tokenization_mgp_str.py: characters, the named tokens split out.
    "MgpstrTokenizer": PythonCodec(
        "mgpstr", "vocab_chars", 0, (), "none", "vocab.json", "specials",
        MappingProxyType({"unk_token": "[GO]", "bos_token": "[GO]", "eos_token": "[s]",
                          "pad_token": "[GO]"})),
    # models/esm/tokenization_esm.py: every vocabulary entry is a no-split token.
    "EsmTokenizer": PythonCodec(
        "esm", "vocab_words", 0, (), "cls_eos", "vocab.txt", "vocab",
        MappingProxyType({"unk_token": "<unk>", "cls_token": "<cls>", "pad_token": "<pad>",
                          "mask_token": "<mask>", "eos_token": "<eos>"})),
    # models/dia/tokenization_dia.py: UTF-8 bytes, offset 0, beside three added tokens.
    "DiaTokenizer": PythonCodec("dia", "bytes", 0, (
        Added("<pad>", 0, "pad_token"), Added("<pad>", 0, "unk_token"), Added("[S1]", 1),
        Added("[S2]", 2)), "none"),
    # SentencePiece classes (render/_python_spm.py), each over the folder's model file.
    # models/gpt_sw3/tokenization_gpt_sw3.py: preprocess_text, then the model; its
    # do_lower_case, remove_space and keep_accents change nothing it encodes.
    "GPTSw3Tokenizer": PythonCodec(
        "gpt_sw3", "sentencepiece", 0, (), "none", settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "<|endoftext|>", "unk_token": "<unk>",
            "pad_token": "<pad>", "do_lower_case": None, "remove_space": None,
            "keep_accents": None}),
        releases=_SPM_RELEASES, spm=SentencePieceRecipe(
            "spiece.model", "sentencepiece", "model",
            clean=("drop_non_printing", "gpt_sw3_whitespace", "nfc"),
            other_defaults_for=("gpt-sw3-7b",))),
    # models/bert_generation/tokenization_bert_generation.py: the model as it is.
    "BertGenerationTokenizer": PythonCodec(
        "bert_generation", "sentencepiece", 0, (), "none", settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
            "pad_token": "<pad>", "sep_token": "<::::>"}),
        releases=_SPM_RELEASES, spm=SentencePieceRecipe("spiece.model", "sentencepiece", "model")),
    # models/siglip/tokenization_siglip.py: canonicalize_text, the unk-prefixed encode,
    # its special tokens stripping the whitespace around them, eos added when absent.
    "SiglipTokenizer": PythonCodec(
        "siglip", "sentencepiece", 0, (), "none", settings=MappingProxyType({
            "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>",
            "do_lower_case": True, "model_max_length": None}),
        releases=_SPM_RELEASES, spm=SentencePieceRecipe(
            "spiece.model", "sentencepiece", "model", clean=(
                "lower_if_do_lower_case", "drop_punctuation", "squeeze_whitespace", "strip"),
            metaspace_prefix=True, strip_specials=True, suffix=("eos_token",),
            suffix_if_absent=True)),
    # models/marian/tokenization_marian.py: the source model, a leading >>lang<< kept;
    # source_lang / target_lang / separate_vocabs change only decoding and targets.
    "MarianTokenizer": PythonCodec(
        "marian", "sentencepiece", 0, (), "none", "vocab.json", settings=MappingProxyType({
            "unk_token": "<unk>", "eos_token": "</s>", "pad_token": "<pad>",
            "source_lang": None, "target_lang": None, "separate_vocabs": None,
            "target_vocab_file": None, "model_max_length": None}),
        releases=_SPM_ENCODER_DECODER_RELEASES, spm=SentencePieceRecipe(
            "source.spm", "python", "vocab_json", language_code_tokens=True,
            suffix=("eos_token",))),
    # models/m2m_100/tokenization_m2m_100.py: the source language's code, the text, eos;
    # the codes' ids follow vocab.json (they are not split out of a text).
    "M2M100Tokenizer": PythonCodec(
        "m2m_100", "sentencepiece", 0, (), "none", "vocab.json", settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
            "pad_token": "<pad>", "unk_token": "<unk>", "src_lang": "en", "tgt_lang": None,
            "language_codes": "m2m100", "num_madeup_words": None, "model_max_length": None}),
        releases=_SPM_ENCODER_DECODER_RELEASES, spm=SentencePieceRecipe(
            "sentencepiece.bpe.model", "python", "vocab_json", prefix=("src_lang",),
            suffix=("eos_token",), languages=MappingProxyType({
                key: MappingProxyType({code: f"__{code}__" for code in codes.split()})
                for key, codes in (("m2m100", _M2M100_CODES), ("wmt21", _WMT21_CODES))}))),
    # models/plbart/tokenization_plbart.py: fairseq ids, the text, eos and the source
    # language's code (none without src_lang); "base" codes only (its <mask> after them).
    "PLBartTokenizer": PythonCodec(
        "plbart", "sentencepiece", 0, (), "none", settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
            "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>",
            "language_codes": "base", "src_lang": None, "tgt_lang": None,
            "model_max_length": None}),
        releases=_SPM_ENCODER_DECODER_RELEASES, spm=SentencePieceRecipe(
            "sentencepiece.bpe.model", "sentencepiece", "fairseq",
            suffix=("eos_token", "src_lang"), languages=MappingProxyType({
                "base": MappingProxyType({
                    **{code: f"__{code}__" for code in ("java", "python", "en_XX")},
                    **{f"__{code}__": f"__{code}__" for code in ("java", "python", "en_XX")},
                })}), mask_after_languages=True)),
    # models/speech_to_text/tokenization_speech_to_text.py: the model, then eos (no
    # lang_codes); do_upper_case / do_lower_case change only decoding.
    "Speech2TextTokenizer": PythonCodec(
        "speech_to_text", "sentencepiece", 0, (), "none", "vocab.json",
        settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>",
            "unk_token": "<unk>", "do_upper_case": None, "do_lower_case": None,
            "tgt_lang": None, "model_max_length": None}),
        releases=_SPM_ENCODER_DECODER_RELEASES, spm=SentencePieceRecipe(
            "sentencepiece.bpe.model", "python", "vocab_json", suffix=("eos_token",))),
})
# tokenizer_config.json keys that change nothing these classes encode.
_INERT: Final = frozenset({
    "tokenizer_class", "model_max_length", "clean_up_tokenization_spaces", "chat_template",
    "name_or_path", "special_tokens_map_file", "padding_side", "truncation_side",
    "model_input_names", "extra_special_tokens", "additional_special_tokens",
    "added_tokens_decoder", "extra_ids", "add_prefix_space", "backend", "processor_class",
})


def _content(value: Any) -> Any:
    return value.get("content") if isinstance(value, Mapping) else value


def check_folder(codec_class: str, tokenizer_config: Mapping[str, Any],
                 special_tokens_map: Mapping[str, Any] | None) -> None:
    """Refuse a folder whose settings differ from what the codec records."""
    codec = PYTHON_CODECS[codec_class]
    if codec.spm is not None:
        _check_spm(codec_class, codec, tokenizer_config, special_tokens_map)
        return
    if codec.vocab_file is not None:
        for source, settings in (("tokenizer_config.json", tokenizer_config),
                                 ("special_tokens_map.json", special_tokens_map or {})):
            for key, value in settings.items():
                if key == "target_lang" and value is not None:
                    raise RenderUnsupportedError(source, "target_lang (a nested multilingual "
                                                 "vocabulary) is not reproduced")
                if key in codec.settings:
                    continue
                if key in _INERT - {"additional_special_tokens", "extra_special_tokens",
                                    "added_tokens_decoder", "extra_ids", "add_prefix_space"}:
                    continue
                if key in ("additional_special_tokens", "extra_special_tokens") and not value:
                    continue
                raise RenderUnsupportedError(source, f"{key} is not reproduced for {codec_class}")
        return
    named = {a.attribute: a for a in codec.added if a.attribute}
    extras = [a.content for a in codec.added if a.attribute is None]
    for source, settings in (("tokenizer_config.json", tokenizer_config),
                             ("special_tokens_map.json", special_tokens_map or {})):
        for key, value in settings.items():
            if key in named:
                if (_content(value) != named[key].content
                        or (isinstance(value, Mapping) and any(
                            value.get(flag, default) != default for flag, default in (
                                ("lstrip", named[key].lstrip),
                                ("rstrip", named[key].rstrip))))):
                    raise RenderUnsupportedError(source, (
                        f"{key} {value!r}: only {codec_class}'s default "
                        f"{named[key].content!r} is reproduced"))
            elif key in ("additional_special_tokens", "extra_special_tokens"):
                if value not in (None, []) and [_content(v) for v in value] != extras:
                    raise RenderUnsupportedError(source, (
                        f"{key}: only {codec_class}'s own "
                        f"{'sentinels' if extras else 'none'} are reproduced"))
            elif key == "extra_ids":
                if value != len(extras):
                    raise RenderUnsupportedError(source, (
                        f"extra_ids {value!r}: only {codec_class}'s default {len(extras)} "
                        "is reproduced"))
            elif key == "added_tokens_decoder":
                for index, token in (value or {}).items():
                    known = [a for a in codec.added if str(a.id) == str(index)
                             and a.content == _content(token)]
                    if not known:
                        raise RenderUnsupportedError(source, (
                            f"added_tokens_decoder[{index!r}] is not one of "
                            f"{codec_class}'s own tokens"))
            elif key == "add_prefix_space":
                if value:
                    raise RenderUnsupportedError(source, "add_prefix_space is not reproduced")
            elif key not in _INERT and key.endswith("_token") and value is not None:
                raise RenderUnsupportedError(source, (
                    f"{key} {value!r}: {codec_class} has no such token here"))
            elif key not in _INERT and not key.endswith("_token"):
                raise RenderUnsupportedError(source, (
                    f"{key} is not reproduced for {codec_class}"))


def _check_spm_setting(codec_class: str, codec: PythonCodec, source: str, key: str,
                       value: Any, language_codes: str) -> None:
    spm = codec.spm
    assert spm is not None
    default = codec.settings[key]
    if key.endswith("_token"):
        flags = value if isinstance(value, Mapping) else {}
        strips = spm.strip_specials or (key == "mask_token" and spm.mask_after_languages)
        if _content(value) != default or any(
                flags.get(flag, strips) != strips for flag in ("lstrip", "rstrip")):
            raise RenderUnsupportedError(source, (
                f"{key} {value!r}: only {codec_class}'s default {default!r} is reproduced"))
    elif key == "language_codes" and value not in spm.languages:
        raise RenderUnsupportedError(source, (
            f"language_codes {value!r}: only {sorted(spm.languages)} are reproduced for "
            f"{codec_class}"))
    elif key == "src_lang" and value not in spm.languages.get(language_codes, {}):
        raise RenderUnsupportedError(source, (
            f"src_lang {value!r} is not one of the {language_codes!r} language codes: "
            f"{codec_class} does not load"))


def _check_spm(codec_class: str, codec: PythonCodec, tokenizer_config: Mapping[str, Any],
               special_tokens_map: Mapping[str, Any] | None) -> None:
    """A SentencePiece class's folder: its settings, with the values reproduced."""
    spm = codec.spm
    assert spm is not None
    language_codes = str(tokenizer_config.get("language_codes")
                         or codec.settings.get("language_codes"))
    for source, settings in (("tokenizer_config.json", tokenizer_config),
                             ("special_tokens_map.json", special_tokens_map or {})):
        for key, value in settings.items():
            if key in codec.settings:
                if value is not None:
                    _check_spm_setting(codec_class, codec, source, key, value,
                                       language_codes)
            elif key == "legacy":
                # SentencePieceBackend drops the model's dummy prefix for legacy false;
                # a PythonBackend class does not read it.
                if value is False and spm.backend == "sentencepiece":
                    raise RenderUnsupportedError(source, f"legacy false is not reproduced "
                                                 f"for {codec_class}")
            elif key == "added_tokens_decoder" and source == "tokenizer_config.json":
                continue  # checked against the tokens the class adds (render/_python_spm.py)
            elif key in ("additional_special_tokens", "extra_special_tokens"):
                # None, or the language codes' tokens in their order (M2M100 and PLBart
                # folders list them): anything else is an added token not reproduced.
                codes = list(dict.fromkeys(spm.languages.get(language_codes, {}).values()))
                if value and [_content(v) for v in value] != codes:
                    raise RenderUnsupportedError(source, (
                        f"{key}: only none or {codec_class}'s language codes, in their "
                        "order, are reproduced"))
            elif key in _INERT - {"additional_special_tokens", "extra_special_tokens",
                                  "added_tokens_decoder", "extra_ids", "add_prefix_space"}:
                continue
            elif value not in (None, False, [], {}):
                raise RenderUnsupportedError(source, f"{key} is not reproduced for {codec_class}")
