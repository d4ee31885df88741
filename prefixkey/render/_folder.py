"""A model folder as vLLM 0.31 reads it for rendering: configuration, templates, context length.

Only what decides token ids is read: ``config.json`` (its ``model_type``
picks tokenizer overrides and special renderers; its length keys bound the
prompt), ``tokenizer_config.json``, ``special_tokens_map.json``, the chat
templates (``chat_template.jinja``, ``additional_chat_templates/*.jinja``, or
the template inside ``tokenizer_config.json``). Folders vLLM renders with
something other than a Jinja template and a Hugging Face tokenizer are
refused here, before any request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ._encoders import check_encoder_release
from ._eras import render_era, render_release
from ._errors import ModelFolderError, RenderUnsupportedError
from ._hf_decision import (
    TokenizerPath,
    byte_level_backend,
    check_release_codec,
    check_release_conversion,
    check_release_drift,
    decide_tokenizer,
    release_facts,
)
from ._hf_tiktoken import converted_source
from ._processor_startup import (
    PROCESSOR_FILES,
    check_processor_files,
    rendered_processor_files,
    unrendered_processor,
)
from ._sentence_transformers import SentenceTransformers, read_sentence_transformers
from ._vision import FAMILIES, UNVERIFIED, family_architecture
from ._vllm_startup import check_vllm_starts

__all__ = ["ModelFolder", "check_config_loads", "load_server_template", "processor_configs",
           "rope_variant"]

# config.json keys vLLM 0.31 reads for the context length; it takes the smallest
# (transformers_utils/model_arch_config_convertor.py), then model_max_length wins.
_LENGTH_KEYS: Final = (
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len",
)
# RoPE types whose max_position_embeddings is already scaled (config/model.py).
_PRESCALED_ROPE: Final = frozenset({
    "su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling",
})
# Model types with a chat template bundled in vLLM's wheel, used when the folder has none.
_BUNDLED_FALLBACK_TEMPLATES: Final = frozenset({
    "blip-2", "clip", "colpali", "deepseek_ocr", "deepseek_ocr2", "unlimited-ocr",
    "deepseek_vl_v2", "minicpmv", "minicpmv4_6", "paligemma", "siglip", "siglip2",
})
# Files whose presence means a processor (its own chat template) or Mistral's native
# format: none rendered here. (Mistral's tokenizer files: _check_mistral_files; a
# processor's chat_template.json: _check_processor_template; added_tokens.json is read
# as transformers reads it: render/_hf_specials.py; sentence-transformers files:
# _sentence_transformers.py.)
_REFUSED_FILES: Final = {
    "processor_config.json": "a processor config (the processor's chat template wins)",
    "preprocessor_config.json": "a multimodal preprocessor config",
    "params.json": "Mistral's native format",
}


_NO_SENTENCE_TRANSFORMERS: Final = SentenceTransformers()


def _read_json(path: Path, name: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ModelFolderError(name, f"cannot be read as JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ModelFolderError(name, "must hold a JSON object")
    return value


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelFolderError(name, f"cannot be read: {exc}") from None


def _image_processor_files(path: Path, config: dict[str, Any]) -> frozenset[str]:
    """The processor files a folder may have: those of a vision family prefixkey expands.

    vLLM reads them through the model's processor (render/_vision); the processor's chat
    template, when it has one, is :func:`_processor_template`'s. An unverified vision
    architecture's folder is refused by name.
    """
    architecture = family_architecture(config)
    if architecture is None:
        return frozenset()
    if architecture in UNVERIFIED:
        family, why = UNVERIFIED[architecture]
        for file in ("processor_config.json", "preprocessor_config.json", "chat_template.json"):
            if (path / file).exists():
                raise RenderUnsupportedError(
                    file, f"{family} ({architecture}): its image processor is {why} here; "
                    "render it with vLLM's render endpoint")
        return frozenset()
    return frozenset({"processor_config.json", "preprocessor_config.json", "chat_template.json"})


def _processor_template(path: Path, config: dict[str, Any]) -> str | None:
    """The chat template vLLM 0.31 takes from the model's processor, when it has one.

    ``resolve_chat_template`` prefers ``AutoProcessor``'s template over the tokenizer's
    for a body without tools; transformers 5 loads it from ``processor_config.json``'s
    ``chat_template``, else the legacy ``chat_template.json``, else ``chat_template.jinja``
    (with ``additional_chat_templates/``). Only a vision family's folder loads a processor.
    """
    architecture = family_architecture(config)
    if architecture not in FAMILIES:
        return None
    processor = path / "processor_config.json"
    if processor.is_file():
        value = _read_json(processor, "processor_config.json").get("chat_template")
        if value is not None:
            return _single_template(value, "processor_config.json chat_template")
    legacy = path / "chat_template.json"
    if legacy.is_file():
        if (path / "additional_chat_templates").is_dir():
            # transformers refuses the combination, so vLLM's processor fails to load
            # and it falls back to the tokenizer's template.
            return None
        return _single_template(_read_json(legacy, "chat_template.json").get("chat_template"),
                                "chat_template.json chat_template")
    if (path / "additional_chat_templates").is_dir():
        raise RenderUnsupportedError("additional_chat_templates",
                                     "a processor with several chat templates")
    if (path / "chat_template.jinja").is_file():
        return _read_text(path / "chat_template.jinja", "chat_template.jinja")
    return None


def _check_processor_template(tokenizer_path: Path, tokenizer_model_config: dict[str, Any],
                              tokenizer_config: dict[str, Any], vllm_version: str) -> None:
    """Refuse a ``chat_template.json`` that vLLM's renderer may render with.

    For a body without tools vLLM asks ``AutoProcessor`` for the tokenizer folder (its
    ``name_or_path``) and renders with the template of the processor it gets, if that is
    a ``ProcessorMixin``; only a processor reads ``chat_template.json`` (the tokenizer
    reads tokenizer_config.json's template and ``chat_template.jinja``). AutoProcessor
    builds one from a processor file (refused or a vision family's: :data:`_REFUSED_FILES`),
    a ``processor_class`` in tokenizer_config.json or config.json, or the model type's
    entry in transformers' ``PROCESSOR_MAPPING`` (the release's facts); else it falls back
    to the tokenizer, and the file is never read (real_files_vectors.jsonl).
    """
    if not (tokenizer_path / "chat_template.json").is_file():
        return
    model_type = str(tokenizer_model_config.get("model_type", ""))
    if model_type in release_facts(vllm_version).PROCESSOR_TYPES:
        why = f"model_type {model_type!r} has a processor class in transformers"
    elif tokenizer_config.get("processor_class") or tokenizer_model_config.get(
            "processor_class"):
        why = "the folder names a processor_class"
    elif (tokenizer_path / "video_preprocessor_config.json").is_file():
        why = "the folder has a video processor config"
    else:
        return
    raise RenderUnsupportedError("chat_template.json", (
        f"{why}, so vLLM {vllm_version}'s AutoProcessor lookup builds a processor, which "
        "reads this file as the chat template it renders bodies without tools with: not "
        "verified"))


def processor_configs(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``preprocessor_config.json`` and ``processor_config.json`` ({} when absent)."""
    found = []
    for name in ("preprocessor_config.json", "processor_config.json"):
        found.append(_read_json(path / name, name) if (path / name).is_file() else {})
    return found[0], found[1]


def _single_template(value: Any, field: str) -> str:
    if not isinstance(value, str):
        raise RenderUnsupportedError(field, "only a single template string is reproduced")
    return value


def load_server_template(value: str) -> str:
    """``--chat-template`` as vLLM loads it: a readable file's text, else the value itself.

    A value without ``{``, ``}`` or a newline that is not a file names one of
    vLLM's bundled templates, which prefixkey does not ship.
    """
    try:
        with open(value, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        if not any(c in value for c in "{}\n"):
            raise RenderUnsupportedError(
                "--chat-template",
                f"{value!r} is not a readable file, so vLLM would look it up among its own "
                "bundled templates, which prefixkey does not copy",
            ) from None
        return value


def _context_length(config: dict[str, Any], tokenizer_config: dict[str, Any],
                    max_model_len: int | None, max_seq_length: int | None = None) -> int:
    """The context length vLLM 0.31 derives (config/model.py ``_get_and_verify_max_len``).

    A multimodal config's own ``text_config`` holds the language model's keys (vLLM reads
    ``hf_text_config``); ``model_max_length`` stays the top level's. A sentence-transformers
    encoder config's ``max_seq_length`` replaces what the config gives, RoPE scaled or not.
    """
    text_config = config.get("text_config")
    lengths = text_config if isinstance(text_config, dict) else config
    derived: float = float("inf")
    for key in _LENGTH_KEYS:
        value = lengths.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            derived = min(derived, value)
    if isinstance(config.get("model_max_length"), int) and config["model_max_length"]:
        derived = config["model_max_length"]
    tokenizer_max = tokenizer_config.get("model_max_length")
    if isinstance(tokenizer_max, (int, float)) and not isinstance(tokenizer_max, bool):
        derived = min(derived, tokenizer_max)
    if derived == float("inf"):
        if max_model_len is not None:
            return max_model_len
        if max_seq_length is not None:  # vLLM's default 2048 is replaced in turn
            return max_seq_length
        raise RenderUnsupportedError(
            "config.json", "has no context-length key (max_position_embeddings, …), so vLLM "
            "takes its model class's default, which prefixkey does not know")
    rope = lengths.get("rope_parameters", lengths.get("rope_scaling"))
    if isinstance(rope, dict) and rope:
        layers = rope.values() if all(isinstance(v, dict) for v in rope.values()) else [rope]
        factor: Any = 1.0
        for layer in layers:
            if layer is None:
                continue
            kind = layer.get("rope_type", layer.get("type", "default"))
            if kind not in _PRESCALED_ROPE:
                factor = layer.get("factor", factor)
            if kind == "longrope":
                raise RenderUnsupportedError("config.json", "LongRoPE context lengths are not "
                                             "derived here")
        derived *= 1.0 if factor is None else float(factor)
    if max_seq_length is not None:
        derived = max_seq_length
    if max_model_len is None:
        return int(derived)
    if max_model_len > derived:
        raise ModelFolderError(
            "--max-model-len", f"{max_model_len} exceeds the model's context length "
            f"{int(derived)} (vLLM will not start)")
    return max_model_len


#: What vLLM's server exits with when its config reader (transformers' ``AutoConfig``)
#: cannot load config.json, by whether its ``auto_map`` names an ``AutoConfig`` (the model's
#: own code, which it runs only with --trust-remote-code): its ModelConfig's validation
#: error, whose value error is transformers' (``{model_type}``, ``{path}``: the folder's).
_CONFIG_LOAD_ERRORS: Final = {
    False: "The checkpoint you are trying to load has model type `{model_type}` but "
           "Transformers does not recognize this architecture",
    True: "The repository {path} contains custom code which must be executed to correctly "
          "load the model",
}


#: How a config.json gives its RoPE parameters, by the variant names of the facts'
#: ``ROPE_LOAD_FAILURES`` (tools/extract_hf_tokenizers.py ``ROPE_VARIANTS``, the minimal
#: config.json each release's config reader was run on).
_ROPE_VARIANT_TEXT: Final = {
    "absent": "it gives no rope_parameters (the config class's default is taken)",
    "null": "its rope_parameters is null (the config class's default is taken)",
    "layer_none": "its rope_parameters leaves a layer type null (no RoPE for those layers)",
    "layers": "its rope_parameters gives several layer types their own",
}


def rope_variant(config: dict[str, Any]) -> str | None:
    """Which of the probed RoPE variants a config.json's top-level ``rope_parameters``
    is, or None when it gives them otherwise (loaded as given: not probed). A per-layer
    mapping is a probed variant only with the probed layer types (its failure can be a
    layer type the mapping lacks), and ``layer_none`` only with full_attention's null."""
    if "rope_parameters" not in config:
        return "absent"
    rope = config["rope_parameters"]
    if rope is None:
        return "null"
    if not isinstance(rope, dict) or set(rope) != {"sliding_attention", "full_attention"}:
        return None
    if not isinstance(rope["sliding_attention"], dict):
        return None
    full = rope["full_attention"]
    return "layer_none" if full is None else "layers" if isinstance(full, dict) else None


def check_config_loads(config: dict[str, Any], path: Path, vllm_version: str) -> None:
    """Refuse a config.json vLLM's config reader does not load: a ``model_type`` neither
    transformers' config mapping nor vLLM's own config registry (registered with
    ``AutoConfig`` first) has, which no server of the release starts for (prefixkey runs
    no remote code: ``--trust-remote-code`` is not an option here); or RoPE fields the
    release's config reader fails on for that type (the facts' ``ROPE_LOAD_FAILURES``:
    e.g. transformers 5.24's BeamConfig default leaves full_attention None, which vLLM
    0.29's ``patch_legacy_rope_type`` cannot iterate)."""
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise ModelFolderError("config.json", "has no model_type")
    facts = release_facts(vllm_version)
    if model_type in facts.CONFIG_MODEL_TYPES or model_type in facts.VLLM_CONFIG_TYPES:
        variant = rope_variant(config)
        failure = facts.ROPE_LOAD_FAILURES.get(f"{model_type}:{variant}")
        if variant is not None and failure is not None:
            raise ModelFolderError("config.json", (
                f"{_ROPE_VARIANT_TEXT[variant]}: vLLM {vllm_version}'s config "
                f"reader fails on model_type {model_type!r}'s RoPE parameters (its config "
                "class's and vLLM's patching of them), so its server does not start "
                f"({failure})"))
        return
    auto_map = config.get("auto_map")
    remote = isinstance(auto_map, dict) and "AutoConfig" in auto_map
    raise ModelFolderError("config.json", (
        f"model_type {model_type!r} is in neither transformers "
        f"{render_release(vllm_version).transformers}'s config mapping nor vLLM "
        f"{vllm_version}'s own config registry, so its server does not start "
        "(ValidationError: 1 validation error for ModelConfig; Value error, "
        + _CONFIG_LOAD_ERRORS[remote].format(model_type=model_type, path=path) + ")"))


def config_architectures(config: dict[str, Any], vllm_version: str) -> tuple[str, ...]:
    """The architectures vLLM reads: config.json's ``architectures`` (the strings among
    them), or when it names none, the one its config reader fills in (``get_config``): the
    model type's transformers base class (``MODEL_MAPPING_NAMES``, the release's facts)."""
    found = config.get("architectures")
    if found:
        return tuple(a for a in found if isinstance(a, str)) if isinstance(found, list) else ()
    model_type = str(config.get("model_type", ""))
    base = release_facts(vllm_version).BASE_MODELS.get(model_type)
    if isinstance(base, str):
        return (base,)
    if base is None:
        why = (f"model_type {model_type!r} has no base class in transformers, so vLLM's config "
               "reader leaves them unset (with a warning)")
    else:
        why = (f"vLLM's config reader takes model_type {model_type!r}'s transformers base "
               f"classes {list(base)} as one architecture")
    raise RenderUnsupportedError("config.json", (
        f"it names no architectures, and {why}: what vLLM {vllm_version} then runs is not "
        "verified"))


def _decide(tokenizer_path: Path, config: dict[str, Any], tokenizer_model_config: dict[str, Any],
            tokenizer_config: dict[str, Any], name: str, mode: str,
            vllm_version: str) -> TokenizerPath:
    """The folder's tokenizer path; everything but as-is and reproduced rebuilds refused."""
    model_type = str(tokenizer_model_config.get("model_type", ""))
    mistral_files = (tokenizer_path / "tekken.json").exists() or any(
        tokenizer_path.glob("tokenizer.model.v*"))
    has_tokenizer_json = (tokenizer_path / "tokenizer.json").is_file()
    decision = decide_tokenizer(
        model_type=model_type,
        architectures=list(config_architectures(config, vllm_version)),
        tokenizer_mode=mode, tokenizer_config=tokenizer_config,
        config=tokenizer_model_config, name=name,
        has_tokenizer_json=has_tokenizer_json,
        mistral_auto=mistral_files and any(tokenizer_path.glob("consolidated*.safetensors")),
        converted=None if has_tokenizer_json else converted_source(tokenizer_path),
        facts=release_facts(vllm_version))
    decision = byte_level_backend(
        vllm_version, decision, model_type=model_type,
        tokenizer_config=tokenizer_config, config=tokenizer_model_config,
        tokenizer_json=tokenizer_path / "tokenizer.json")
    if decision.path != "mistral":  # render/_mistral.py checks its own folders
        # Whatever the path, no ids for a folder the release's server does not start for
        # (and for a folder refused anyway, that reason first when it holds).
        check_vllm_starts(config_architectures(config, vllm_version),
                          str(config.get("model_type", "")),
                          vllm_version, unknown_refused=decision.reproduced)
    if decision.mode is not None:
        check_encoder_release(decision.mode, vllm_version)
    elif decision.path not in ("mistral", "refused"):
        # The release's AutoTokenizer rules (an encoder mode's tokenizer skips them).
        _check_hf_mistral_format(tokenizer_path, model_type, vllm_version)
        check_release_drift(vllm_version, model_type, name)
    if decision.path not in ("mistral", "refused"):
        check_release_codec(vllm_version, decision)
        check_release_conversion(vllm_version, decision)
    if decision.reproduced:
        return decision
    field = {"converted": "tokenizer.json",
             "mistral": "--tokenizer-mode"}.get(decision.path, _blamed(decision))
    raise RenderUnsupportedError(field, f"{decision.path}: {decision.why}")


def _check_mistral_files(folder: Path, mode: str) -> None:
    """Refuse, saying what vLLM 0.31 does, a tokenizer folder holding Mistral's own
    tokenizer files (``tekken.json``, ``tokenizer.model.v*``) outside the mistral mode.

    In the hf mode transformers reads them only without ``tokenizer.json`` (beside it,
    vLLM 0.31's answers were those of the folder without them): it converts
    ``tekken.json`` (MistralConverter, render/_hf_tiktoken.py), and for
    ``tokenizer.model.v*`` alone it looks for a file named ``tokenizer.model.`` and fails,
    so the server does not start.
    """
    found = sorted(p.name for p in (folder / "tekken.json", *folder.glob("tokenizer.model.v*"))
                   if p.is_file())
    if not found:
        return
    if mode.lower() != "hf":  # auto: render/_mistral.py check_auto_mode decides first
        raise RenderUnsupportedError(
            "--tokenizer-mode", f"the folder has Mistral's tokenizer file {found[0]!r}, which "
            "vLLM reads in its tokenizer mode mistral (rendered with mistral_common); in mode "
            f"{mode!r} it is not rendered here")
    if (folder / "tokenizer.json").is_file():
        return  # transformers loads tokenizer.json and leaves Mistral's files unread
    if "tekken.json" in found:
        return  # converted (render/_hf_tiktoken.py), as the folder's decision says
    raise ModelFolderError(
        found[0], "with --tokenizer-mode hf and no tokenizer.json vLLM does not start: "
        f"transformers looks for a file 'tokenizer.model.' beside {found[0]!r} and builds no "
        "tokenizer; Mistral's SentencePiece files are read in --tokenizer-mode mistral")


def hf_loads_mistral_common(folder: Path, model_type: str, vllm_version: str) -> bool:
    """Whether the release's hf mode passes no ``mistral_format=False`` (0.29:
    ``RenderEra.hf_mistral_format``) and the tokenizer folder has a tekken.json and a model
    type registering MistralCommonBackend: transformers 5.24 then loads MistralCommonBackend
    (mistral_common's tokenizer), not a Hugging Face one, tokenizer.json or not
    (render/_mistral.py renders the folder without one so: its answers were harvested)."""
    registered = release_facts(vllm_version).REGISTERED_CLASS.get(model_type) or ""
    return (not render_era(vllm_version).hf_mistral_format
            and (folder / "tekken.json").is_file()
            and registered.removesuffix("Fast") == "MistralCommonBackend")


def _check_hf_mistral_format(folder: Path, model_type: str, vllm_version: str) -> None:
    """Refuse a folder :func:`hf_loads_mistral_common` gives to mistral_common as a Hugging
    Face one: the Renderer takes one without tokenizer.json to render/_mistral.py first,
    so this is a folder with one beside its tekken.json, not harvested."""
    if hf_loads_mistral_common(folder, model_type, vllm_version):
        raise RenderUnsupportedError("--tokenizer-mode", (
            f"vLLM {vllm_version}'s tokenizer mode hf passes no mistral_format=False, so "
            f"transformers {render_release(vllm_version).transformers} loads model_type "
            f"{model_type!r}'s MistralCommonBackend over the folder's tekken.json "
            "(mistral_common's tokenizer), whose answers beside a tokenizer.json were not "
            "harvested; not verified"))


def _blamed(decision: TokenizerPath) -> str:
    """The file whose value decided a refusal (its reason names it)."""
    if "tokenizer_config.json" in decision.why or "auto_map" in decision.why:
        return "tokenizer_config.json"
    if decision.why.startswith("tokenizer_class"):
        return "tokenizer_config.json"
    return "config.json"


def _is_encoder_decoder(config: dict[str, Any], model_type: str, vllm_version: str) -> bool:
    """vLLM's ``is_encoder_decoder``: the flag of the config, or of its text config, as
    transformers builds them (config.json's value, else the model type's class default)."""
    types = release_facts(vllm_version).ENCODER_DECODER_TYPES
    text = config.get("text_config")
    return bool(config.get("is_encoder_decoder", model_type in types)) or (
        isinstance(text, dict) and bool(text.get("is_encoder_decoder",
                                                 text.get("model_type") in types)))


def _has_decoder_start(config: dict[str, Any], model_type: str, vllm_version: str) -> bool:
    """Whether vLLM's config has a ``decoder_start_token_id`` (``get_dec_start_token_id``
    reads it before the tokenizer's bos): config.json's, else its type's class default."""
    if "decoder_start_token_id" in config:
        return config["decoder_start_token_id"] is not None
    return model_type in release_facts(vllm_version).DECODER_START_TYPES


@dataclass(frozen=True, slots=True)
class ModelFolder:
    """The files of one model folder (and tokenizer folder) that rendering reads."""

    path: Path
    tokenizer_path: Path
    config: dict[str, Any]
    #: The config.json transformers reads when it picks the tokenizer class (the
    #: tokenizer folder's, with ``--tokenizer``).
    tokenizer_model_config: dict[str, Any]
    tokenizer_config: dict[str, Any]
    special_tokens_map: dict[str, Any] | None
    #: The folder's template: a string, a dict of named templates, or None.
    chat_template: str | dict[str, str] | None
    max_model_len: int
    #: The path vLLM's tokenizer takes (render/_hf_decision.py): as is or rebuilt here.
    tokenizer_decision: TokenizerPath
    #: A vision family's processor template, which bodies without tools render with.
    processor_chat_template: str | None = None
    #: vLLM's ``is_encoder_decoder`` (:func:`_is_encoder_decoder`): it answers a
    #: completion with the encoder prompt's token ids, which its renderer leaves empty.
    encoder_decoder: bool = False
    #: Whether the config gives a decoder start token id (:func:`_has_decoder_start`);
    #: without one vLLM takes the tokenizer's bos id for an encoder-decoder prompt.
    decoder_start: bool = True
    #: What its sentence-transformers files change (render/_sentence_transformers.py).
    sentence_transformers: SentenceTransformers = _NO_SENTENCE_TRANSFORMERS

    @property
    def tokenizer_model_type(self) -> str:
        return str(self.tokenizer_model_config.get("model_type", ""))

    @classmethod
    def load(cls, model: str, tokenizer: str | None, max_model_len: int | None,
             option: str = "--model", *, name: str | None = None,
             tokenizer_mode: str = "auto", vllm_version: str) -> ModelFolder:
        """Read a local model folder; refuse what vLLM would not render with Jinja.

        ``option`` is the flag (``--model`` or ``--model-dir``) that named ``model``;
        ``name`` is the ``--tokenizer`` or ``--model`` string the server was given (a hub
        name transformers matches against its name patterns); by default the folder path.
        """
        path = Path(model)
        tokenizer_path = Path(tokenizer) if tokenizer else path
        if not path.is_dir():
            raise ModelFolderError(option, _not_a_folder(model, "a local model folder"))
        if not tokenizer_path.is_dir():
            raise ModelFolderError("--tokenizer", _not_a_folder(str(tokenizer), "a local folder"))
        if not (path / "config.json").is_file():
            raise ModelFolderError("config.json", f"missing in {model!r} (vLLM needs it)")
        config = _read_json(path / "config.json", "config.json")
        check_config_loads(config, path, vllm_version)
        model_type = str(config["model_type"])
        architectures = config_architectures(config, vllm_version)
        allowed = (_image_processor_files(path, config)
                   | rendered_processor_files(architectures, vllm_version))
        unrendered = unrendered_processor(architectures, vllm_version)
        for folder in {path, tokenizer_path}:
            for file, why in _REFUSED_FILES.items():
                if (folder / file).exists() and not (folder == path and file in allowed):
                    raise RenderUnsupportedError(file, (
                        unrendered if unrendered is not None and file in PROCESSOR_FILES
                        else f"the folder has {why}"))
        _check_mistral_files(tokenizer_path, tokenizer_mode)
        tokenizer_config = (
            _read_json(tokenizer_path / "tokenizer_config.json", "tokenizer_config.json")
            if (tokenizer_path / "tokenizer_config.json").is_file() else {})
        special_tokens_map = (
            _read_json(tokenizer_path / "special_tokens_map.json", "special_tokens_map.json")
            if (tokenizer_path / "special_tokens_map.json").is_file() else None)
        template = cls._templates(tokenizer_path, tokenizer_config)
        if template is None and model_type in _BUNDLED_FALLBACK_TEMPLATES:
            raise RenderUnsupportedError(
                "chat_template", f"the folder has none, so vLLM uses the template it bundles "
                f"for model_type {model_type!r}, which prefixkey does not copy")
        era = render_era(vllm_version)
        st = read_sentence_transformers(path, tokenizer_path,
                                        pooling_modules=era.st_pooling_modules,
                                        encoder_keys=era.st_encoder_keys)
        length = _context_length(config, tokenizer_config, max_model_len, st.max_seq_length)
        tokenizer_model_config = config
        if tokenizer_path != path:
            if not (tokenizer_path / "config.json").is_file():
                raise RenderUnsupportedError(
                    "--tokenizer", "the tokenizer folder has no config.json, so transformers "
                    "picks the tokenizer class without a model type")
            tokenizer_model_config = _read_json(tokenizer_path / "config.json",
                                                "--tokenizer config.json")
        if "chat_template.json" not in allowed or tokenizer_path != path:
            _check_processor_template(tokenizer_path, tokenizer_model_config,
                                      tokenizer_config, vllm_version)
        # The processor vLLM's renderer loads at start-up comes from the model folder.
        check_processor_files(architectures, path, vllm_version)
        decision = _decide(tokenizer_path, config, tokenizer_model_config, tokenizer_config,
                           name or str(tokenizer or model), tokenizer_mode, vllm_version)
        return cls(path, tokenizer_path, config, tokenizer_model_config, tokenizer_config,
                   special_tokens_map, template, length, decision,
                   _processor_template(tokenizer_path, config),
                   _is_encoder_decoder(config, model_type, vllm_version),
                   _has_decoder_start(config, model_type, vllm_version), st)

    @staticmethod
    def _templates(folder: Path, tokenizer_config: dict[str, Any]) -> str | dict[str, str] | None:
        """The chat template(s) as transformers 5 loads them: files first, then the config."""
        templates: dict[str, str] = {}
        if (folder / "chat_template.jinja").is_file():
            templates["default"] = _read_text(folder / "chat_template.jinja",
                                              "chat_template.jinja")
        extra = folder / "additional_chat_templates"
        if extra.is_dir():
            for file in sorted(extra.glob("*.jinja")):
                templates[file.name.removesuffix(".jinja")] = _read_text(
                    file, f"additional_chat_templates/{file.name}")
        if len(templates) == 1 and "default" in templates:
            return templates["default"]
        if templates:
            return templates
        value = tokenizer_config.get("chat_template")
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, list) and all(
                isinstance(t, dict) and isinstance(t.get("name"), str)
                and isinstance(t.get("template"), str) for t in value):
            return {t["name"]: t["template"] for t in value}
        raise ModelFolderError("tokenizer_config.json",
                               "chat_template must be a string or a list of {name, template}")


def _not_a_folder(given: str, what: str) -> str:
    """Why ``given`` cannot be read as a folder: it is missing, a file, or a hub name."""
    path = Path(given)
    if path.exists():
        return f"{given!r} is not a folder ({what} is needed)"
    if not path.is_absolute() and not given.startswith(".") and len(path.parts) == 2:
        # "org/name": a hub id, as vLLM's --model takes it.
        return (f"{given!r} does not exist here (a hub name? prefixkey reads no hub: "
                "give the downloaded folder)")
    return f"{given!r} does not exist"
