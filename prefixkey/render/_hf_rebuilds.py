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

__all__ = ["REBUILDS", "Rebuild"]

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
    #: ``roberta``: a RobertaProcessing over the ``sep_token`` and ``cls_token`` the class
    #: sets after its ``super().__init__``.
    post_processor: Literal["file", "update", "roberta"] = "file"
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
    # models/code_llama/tokenization_code_llama.py: LlamaTokenizer's pipeline with
    # prepend_scheme from add_prefix_space alone, unk_token in the BPE model, a Strip
    # decoder, bos added by update_post_processor, and the infilling tokens appended to
    # additional_special_tokens. Its call also reformats a text holding fill_token
    # (refused per text: render/_tokenizer.py's infill_token).
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
                        ("<FILL_ME>", "fill_token"))),
})
