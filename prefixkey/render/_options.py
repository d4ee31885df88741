"""The vLLM server flags that change rendering, as one frozen record.

A :class:`~prefixkey.render.Renderer` must be built with the flags the
replica runs with: each field is spelled as the ``vllm serve`` flag it
mirrors (``served_model_name`` is ``--served-model-name``). Flags that do not
change token ids (ports, parallelism, sampling defaults) are not here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Literal

from ..core._checks import int_refusal
from ._encoders import ENCODER_MODES
from ._eras import render_release, verified_releases
from ._errors import ModelFolderError, RenderUnsupportedError

__all__ = ["VERIFIED_RELEASES", "LoRAModule", "ServerOptions", "parse_lora_module"]

#: vLLM releases whose rendering prefixkey reproduces (checked against harvested vectors;
#: the render eras of prefixkey/render/_eras.py).
VERIFIED_RELEASES: Final = verified_releases()

ContentFormat = Literal["auto", "string", "openai"]
_CONTENT_FORMATS: Final = ("auto", "string", "openai")
# --tokenizer-mode values rendered in process ("mistral": prefixkey/render/_mistral.py).
_RENDERED_MODES: Final = ("auto", "hf", "mistral", *ENCODER_MODES)


@dataclass(frozen=True, slots=True)
class LoRAModule:
    """One ``--lora-modules`` entry: the adapter name a body's ``model`` may give, and its path."""

    name: str
    path: str
    base_model_name: str | None = None


def parse_lora_module(text: str) -> LoRAModule:
    """One ``--lora-modules`` value: ``NAME=PATH`` or vLLM's JSON form.

    As vLLM's own parser: ``=`` without ``,`` is the old form, anything else
    is JSON with ``name``, ``path`` and optional ``base_model_name``.
    """
    if "=" in text and "," not in text:
        name, path = text.split("=", 1)
        return LoRAModule(name, path)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        raise ModelFolderError("--lora-modules", f"invalid JSON format: {text!r}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not isinstance(
            obj.get("path"), str) or set(obj) - {"name", "path", "base_model_name"}:
        raise ModelFolderError(
            "--lora-modules", f"needs NAME=PATH or {{\"name\": …, \"path\": …}}, got {text!r}"
        )
    base = obj.get("base_model_name")
    if base is not None and not isinstance(base, str):
        raise ModelFolderError("--lora-modules", "base_model_name must be a string")
    return LoRAModule(obj["name"], obj["path"], base)


def _limits(value: Any) -> Mapping[str, int]:
    """``--limit-mm-per-prompt`` as vLLM parses it: a count, or ``{"count": n, …}``."""
    if not isinstance(value, Mapping):
        raise ModelFolderError("--limit-mm-per-prompt", "must be a JSON object")
    limits: dict[str, int] = {}
    for modality, limit in value.items():
        count = limit.get("count") if isinstance(limit, Mapping) else limit
        if not isinstance(modality, str) or type(count) is not int or count < 0:
            raise ModelFolderError(f"--limit-mm-per-prompt {modality}",
                                   f"must be an int >= 0 or {{\"count\": int}}, got {limit!r}")
        limits[modality] = count
    return MappingProxyType(limits)


def _frozen_kwargs(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ModelFolderError("--default-chat-template-kwargs", "must be a JSON object")
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True)
class ServerOptions:
    """The ``vllm serve`` flags that decide a request's token ids (vLLM 0.31).

    ``model`` is ``--model`` as the server was given it, a folder or a hub
    name (a body's ``model`` must name it unless ``served_model_name`` lists
    the names). ``chat_template`` is a file path or the template text, as vLLM
    takes it. ``lora_modules`` are the static adapters; their int ids follow
    their order from 1, as vLLM assigns them. ``allowed_local_media_path``,
    ``allowed_media_domains``, ``mm_hasher_algorithm`` and ``media_io_kwargs``
    (per modality, e.g. ``{"image": {...}}``) decide image parts' identifiers
    and which URLs load (docs/multimodal.md); ``mm_processor_kwargs``,
    ``limit_mm_per_prompt`` and ``trust_request_mm_kwargs`` how images expand and how
    many a prompt may carry.
    """

    model: str
    served_model_name: tuple[str, ...] = ()
    tokenizer: str | None = None
    tokenizer_mode: str = "auto"
    max_model_len: int | None = None
    chat_template: str | None = None
    chat_template_content_format: ContentFormat = "auto"
    default_chat_template_kwargs: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}))
    trust_request_chat_template: bool = False
    enable_auto_tool_choice: bool = False
    tool_call_parser: str | None = None
    exclude_tools_when_tool_choice_none: bool = False
    lora_modules: tuple[LoRAModule, ...] = ()
    allowed_local_media_path: str | None = None
    allowed_media_domains: tuple[str, ...] = ()
    mm_hasher_algorithm: str = "blake3"
    media_io_kwargs: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: ``--mm-processor-kwargs``: the processor kwargs every request starts from.
    mm_processor_kwargs: Mapping[str, Any] = field(
        default_factory=lambda: MappingProxyType({}))
    #: ``--limit-mm-per-prompt``: items per prompt and modality (999 for one not named).
    limit_mm_per_prompt: Mapping[str, int] = field(
        default_factory=lambda: MappingProxyType({}))
    #: ``--trust-request-mm-kwargs``: a body's own mm_processor_kwargs / media_io_kwargs
    #: are taken (else vLLM 0.31+ answers 400).
    trust_request_mm_kwargs: bool = False
    vllm_version: str = "0.31.0"
    #: gpt-oss (Harmony): ``VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS``, and the date
    #: ``VLLM_SYSTEM_START_DATE`` pins (None: the replica's local date per request).
    gpt_oss_harmony_system_instructions: bool = False
    system_start_date: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ModelFolderError("--model", "must be a non-empty name or path")
        names: object = self.served_model_name  # a caller may pass one name as a str
        if isinstance(names, str):
            object.__setattr__(self, "served_model_name", (self.served_model_name,))
        object.__setattr__(self, "lora_modules", tuple(self.lora_modules))
        object.__setattr__(self, "default_chat_template_kwargs",
                           _frozen_kwargs(self.default_chat_template_kwargs))
        object.__setattr__(self, "allowed_media_domains", tuple(self.allowed_media_domains))
        if not isinstance(self.media_io_kwargs, Mapping) or not all(
                isinstance(v, Mapping) for v in self.media_io_kwargs.values()):
            raise ModelFolderError("--media-io-kwargs", "must be a JSON object of objects, "
                                   "one per modality")
        object.__setattr__(self, "media_io_kwargs", MappingProxyType(
            {k: MappingProxyType(dict(v)) for k, v in self.media_io_kwargs.items()}))
        if not isinstance(self.mm_processor_kwargs, Mapping) or not all(
                isinstance(k, str) for k in self.mm_processor_kwargs):
            raise ModelFolderError("--mm-processor-kwargs", "must be a JSON object")
        object.__setattr__(self, "mm_processor_kwargs",
                           MappingProxyType(dict(self.mm_processor_kwargs)))
        object.__setattr__(self, "limit_mm_per_prompt",
                           _limits(self.limit_mm_per_prompt))
        if type(self.trust_request_mm_kwargs) is not bool:
            raise ModelFolderError("--trust-request-mm-kwargs", "must be a bool")
        if type(self.gpt_oss_harmony_system_instructions) is not bool:
            raise ModelFolderError("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS", "must be a bool")
        if self.system_start_date is not None and not isinstance(self.system_start_date, str):
            raise ModelFolderError("VLLM_SYSTEM_START_DATE", "must be a string or None")
        if self.chat_template_content_format not in _CONTENT_FORMATS:
            raise ModelFolderError(
                "--chat-template-content-format",
                f"must be one of {', '.join(_CONTENT_FORMATS)}, "
                f"got {self.chat_template_content_format!r}",
            )
        refusal = int_refusal(self.max_model_len, optional=True)
        if refusal is not None:
            raise ModelFolderError("--max-model-len", refusal)
        if self.enable_auto_tool_choice and not self.tool_call_parser:
            # vLLM refuses to start so.
            raise ModelFolderError(
                "--enable-auto-tool-choice", "needs --tool-call-parser (vLLM will not start)")
        render_release(self.vllm_version)  # the render era; unverified releases refused
        if not isinstance(self.tokenizer_mode, str):
            raise ModelFolderError("--tokenizer-mode", "must be a string")
        # vLLM lowercases the mode (ModelConfig._lowercase_tokenizer_mode).
        object.__setattr__(self, "tokenizer_mode", self.tokenizer_mode.lower())
        if self.tokenizer_mode not in _RENDERED_MODES:
            raise RenderUnsupportedError(
                "--tokenizer-mode",
                f"{self.tokenizer_mode!r} is not rendered here (only "
                f"{', '.join(_RENDERED_MODES)}: a Jinja chat template and a Hugging Face "
                "tokenizer, mistral_common for 'mistral', a Python encoder for "
                f"{', '.join(repr(m) for m in ENCODER_MODES)})",
            )

    @property
    def served_names(self) -> tuple[str, ...]:
        """The names a body's ``model`` may give for the base model."""
        return self.served_model_name or (self.model,)

    @staticmethod
    def lora_modules_from(values: Sequence[str]) -> tuple[LoRAModule, ...]:
        """``--lora-modules`` values as given on a command line (empty ones skipped, as vLLM)."""
        return tuple(parse_lora_module(v) for v in values if v)
