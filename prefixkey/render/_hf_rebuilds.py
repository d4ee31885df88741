"""What each rebuilding transformers class builds from tokenizer.json: facts, as data.

A transformers 5 tokenizer class with its own ``__init__`` (Qwen2Tokenizer, GPT2Tokenizer,
…) does not load ``tokenizer.json`` as it is: it keeps the file's vocabulary and merges
(and, unless the class sets its own, the post-processor) and builds the model options,
normalizer, pre-tokenizer and decoder itself. Each :class:`Rebuild` below records what
one class's ``__init__`` in transformers 5.17 (the install vLLM 0.31 runs) builds, as
``tokenizers`` component specs that render/_tokenizer.py instantiates; nothing here
imports ``tokenizers``, so the decision (render/_hf_decision.py) and the docs table read
it freely. A class missing from :data:`REBUILDS` is refused: encoding with another
pipeline would give ids that look right and are not.

A component spec is ``(name, kwargs)`` for ``tokenizers.<kind>.<name>(**kwargs)``, or
``("Sequence", [spec, …])``; a kwarg value ``("Regex", pattern)`` is a ``tokenizers.Regex``,
and a string starting with ``$`` is a value the class
derives from ``tokenizer_config.json`` (render/_tokenizer.py's ``_DERIVED``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, Literal

__all__ = ["REBUILDS", "VERIFIED_WITH", "Rebuild"]

Spec = tuple[str, Any]  # (name, kwargs) or ("Sequence", [Spec, ...])

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
class Rebuild:
    """What one class's ``__init__`` builds around tokenizer.json's vocabulary."""

    #: The recipe's name (docs, decisions).
    name: str
    #: The ``tokenizers.models.BPE`` options the class passes (the rest: BPE's defaults).
    bpe: Mapping[str, Any]
    normalizer: Spec | None
    pre_tokenizer: Spec | None
    decoder: Spec | None
    #: The named-token defaults of the class's ``__init__`` signature (None: no default).
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
    #: ``template``: a TemplateProcessing of ``template`` (single, pair), whose
    #: ``{name}`` are the class's named tokens after its ``super().__init__``.
    #: ``bert``: a BertProcessing over ``processor_tokens`` with the ids ``processor_ids``.
    post_processor: Literal["file", "update", "roberta", "prefix", "template", "bert"] = "file"
    add_bos_token: bool = False
    add_eos_token: bool = False
    #: Qwen2Tokenizer ends its ``__init__`` with ``add_tokens`` of every special token.
    readd_specials: bool = False
    #: CohereTokenizer ends its ``__init__`` with ``_post_init()``: every special token
    #: added again as special (a plain string one with ``normalized=False``).
    post_init: bool = False
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
    #: ``template``'s (single, pair) sequences.
    template: tuple[str, str] = ("", "")
    #: ``bert``'s ids for ``processor_tokens`` (the class writes them as literals).
    processor_ids: tuple[int, int] = (0, 0)
    #: AddedToken flags the class gives a named token passed as a string (a mask token
    #: that takes the space before it), by keyword.
    token_flags: Mapping[str, Mapping[str, bool]] = field(
        default_factory=lambda: MappingProxyType({}))
    #: CodeLlamaTokenizer's ``_encode_plus`` splits a text at its fill token (default,
    #: keyword) into an infilling pair: not reproduced, such a text is refused.
    infilling: tuple[str, str] | None = None


#: GPT2Tokenizer's recipe (CodeGenTokenizer's too, but for its name).
_GPT2: Final = Rebuild(
    name="gpt2",
    bpe=_BYTE_LEVEL_BPE,
    normalizer=None,
    pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space"}),
    decoder=_BYTE_LEVEL_DECODER,
    defaults={"unk_token": _ENDOFTEXT, "bos_token": _ENDOFTEXT, "eos_token": _ENDOFTEXT,
              "pad_token": None})

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
        bpe={"dropout": None, "unk_token": "$unk_token", "continuing_subword_prefix": None,
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
        bpe={**_BYTE_LEVEL_BPE, "end_of_word_suffix": "</w>", "unk_token": "$unk_token"},
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
        bpe={**_BYTE_LEVEL_BPE, "end_of_word_suffix": "</w>", "unk_token": "$unk_token"},
        normalizer=("BertNormalizer", {"lowercase": True}),
        pre_tokenizer=("BertPreTokenizer", {}),
        decoder=("BPEDecoder", {"suffix": "</w>"}),
        defaults={"unk_token": "<unk>"}),
    # models/herbert/tokenization_herbert.py: the same over a case-keeping normalizer,
    # then BertProcessing with the literal ids 2 (sep) and 0 (cls).
    "HerbertTokenizer": Rebuild(
        name="herbert",
        bpe={"dropout": None, "unk_token": "$unk_token", "continuing_subword_prefix": None,
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
        post_processor="template",
        template=("{cls_token} $A {sep_token}",
                  "{cls_token} $A {sep_token} {sep_token} $B {sep_token}")),
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
        token_flags=MappingProxyType({"mask_token": MappingProxyType(
            {"lstrip": True, "rstrip": False, "normalized": False})})),
    # models/siglip2/tokenization_siglip2.py: Gemma's byte-fallback BPE, lowercased first
    # (the class prepends Lowercase to its normalizer after super().__init__).
    "Siglip2Tokenizer": Rebuild(
        name="siglip2",
        bpe={"dropout": None, "unk_token": "$unk_token", "continuing_subword_prefix": None,
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
        post_processor="template",
        template=("{bos_token}:0 $A:0 {eos_token}:0", "$A:0 $B:1")),
    # models/code_llama/tokenization_code_llama.py: Llama's byte-fallback BPE without
    # its legacy rule; the infilling tokens join the extra specials; add_bos_token=True
    # is passed to super(), so the post-processor is rebuilt (<s> $A).
    "CodeLlamaTokenizer": Rebuild(
        name="code_llama",
        bpe={"dropout": None, "unk_token": "$unk_token", "continuing_subword_prefix": None,
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
    "RobertaTokenizer": Rebuild(
        name="roberta",
        bpe=_BYTE_LEVEL_BPE,
        normalizer=None,
        pre_tokenizer=("ByteLevel", {"add_prefix_space": "$add_prefix_space"}),
        decoder=_BYTE_LEVEL_DECODER,
        defaults={"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>",
                  "cls_token": "<s>", "unk_token": "<unk>", "pad_token": "<pad>",
                  "mask_token": "<mask>"},
        post_processor="roberta"),
})

#: The files each class's rebuild was replayed on against vLLM's render servers
#: (tests/render/real/; docs/render-tokenizers.md prints it): ``real`` for the model
#: family's own published tokenizer files, ``built`` for a tokenizer.json built from a
#: model's real BPE files as Hugging Face's were, ``borrowed`` for another model's real
#: vocabulary under the class's name (the class's own pipeline, not its own vocabulary).
VERIFIED_WITH: Final[Mapping[str, tuple[Literal["real", "built", "borrowed"], str]]] = (
    MappingProxyType({
        "Qwen2Tokenizer": ("real", "Qwen3's tokenizer files"),
        "LlamaTokenizer": ("real", "Llama 2's tokenizer files"),
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
        "CodeLlamaTokenizer": ("borrowed", "Llama 2's vocabulary (Code Llama's base)"),
    }))
