"""The Renderer: an OpenAI body in, the token ids vLLM 0.31's server computes out.

Built once per replica configuration (model folder + :class:`ServerOptions`):
it holds the folder's tokenizer and compiled templates, and renders each
``/v1/chat/completions`` or ``/v1/completions`` body as vLLM's online
renderer does (``renderers/online_renderer.py``, ``renderers/hf.py``,
``renderers/params.py``): template resolution, kwargs merging and filtering,
tokenization with ``add_special_tokens`` as the body says, then truncation
and the context-length check. The ids come out as
:class:`~prefixkey.core.TokenIds` inside a :class:`~prefixkey.core.Request`
(with the body's LoRA and ``cache_salt``), ready for a hasher.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Final

import jinja2

from ..core import LoRA, MMItem, Request, TokenIds, check_token_ids
from ..errors import InvalidRequestError
from ._chat import (
    NO_CHAT_TEMPLATE,
    ContentParts,
    check_tool_choice,
    dump_tools,
    parse_messages,
)
from ._encoders import ImageOrder, encode_request, encoder_mode
from ._eras import render_era, render_release
from ._errors import RenderRequestError, RenderUnsupportedError
from ._fields import BodyFields, TokenizeParams, dropped_kwarg_warning
from ._folder import ModelFolder, config_architectures, load_server_template, processor_configs
from ._harmony import HarmonyChat, check_messages, is_harmony_model
from ._media import ImageChat, ImageParts, MediaFetcher
from ._mistral import MistralRenderer, check_auto_mode
from ._options import ServerOptions
from ._processor_startup import nested_feature_extractor
from ._python_folder import build_folder_tokenizer
from ._reuse import checked_reused_ids, reused_prompt_ids, text_vocab_size
from ._runner import refuse_unknown_side, runner_type, tokenizer_side
from ._startup_probe import check_startup_probe
from ._template import (
    HF_BASE_PARAMS,
    ChatTemplate,
    ChatTemplateSyntaxError,
    Clock,
    TemplateEnvironment,
)
from ._template_bounds import TemplateLimitError, render_bounded
from ._tokenizer import HfTokenizer
from ._vision import FAMILIES, MISTRAL_FORMAT, VisionFolder, family_architecture

__all__ = ["CHAT_ENDPOINT", "COMPLETIONS_ENDPOINT", "Rendered", "Renderer"]

CHAT_ENDPOINT: Final = "/v1/chat/completions"
COMPLETIONS_ENDPOINT: Final = "/v1/completions"
_CONTINUE_TAG: Final = "CONTINUE_FINAL_MESSAGE_TAG "
# apply_chat_template's own parameters and render_jinja_template's: a chat_template_kwargs
# entry of one of these names does not reach the template as a variable.
_CALL_PARAMS: Final = HF_BASE_PARAMS | {"conversations", "messages"}
# chat_template_kwargs names handled before the template's are kept: no warning for them.
_HANDLED_KWARGS: Final = frozenset({"chat_template", "tools", "tokenize"})
_UNSUPPORTED_CALL_KWARGS: Final = ("padding", "truncation", "max_length", "return_tensors",
                                   "tokenizer_kwargs", "return_assistant_tokens_mask")


@dataclass(frozen=True, slots=True)
class Rendered:
    """One engine prompt: the request to hash, and the text the template produced (chat)."""

    request: Request
    #: The rendered chat text; None for completions and for ids given verbatim.
    prompt: str | None
    #: The body's model name (the served name or a LoRA adapter's).
    model: str
    #: What the caller should know: a ``chat_template_kwargs`` name the chat template
    #: does not take (vLLM drops it without a word; often a misspelling).
    warnings: tuple[str, ...] = ()

    @property
    def token_ids(self) -> TokenIds:
        """The request's ids (already TokenIds: returned as they are)."""
        return check_token_ids(self.request.token_ids)


class Renderer:
    """Renders OpenAI bodies into the token ids vLLM 0.31.0 computes, for one model folder.

    Build one per replica configuration and reuse it: the folder, its
    tokenizer and its templates (compiled on first use) are read once.
    ``model_dir`` is the local folder holding the model's files when ``options.model`` is a name
    (a hub id the server downloaded); by default ``options.model`` is the
    folder. ``clock`` is what templates' ``strftime_now`` reads (tests pin it), and
    for gpt-oss the local date Harmony's system message carries unless
    ``options.system_start_date`` pins it.
    ``content_parts`` handles parts other than text; by default image parts are
    rendered as vLLM does (:mod:`._media`, docs/multimodal.md) and others refused.
    ``media_fetcher`` (e.g. :func:`fetch_media_url`) loads http(s) image URLs from
    ``options.allowed_media_domains``; without it, or without domains, they are a
    :class:`~prefixkey.errors.RemoteMediaError` for the caller to fetch.
    Rendering is thread-safe: share one Renderer between threads (docs/render.md,
    "Sharing a Renderer"); building one costs seconds for a real model's tokenizer.
    With ``tokenizer_mode="mistral"`` (docs/render-mistral.md) mistral_common holds the
    tokenizer, and ``folder`` and ``tokenizer`` are not set.
    """

    def __init__(self, options: ServerOptions, model_dir: str | None = None, *,
                 clock: Clock = datetime.now, content_parts: ContentParts | None = None,
                 media_fetcher: MediaFetcher | None = None) -> None:
        self.options = options
        self._era = render_era(options.vllm_version)
        self._loras = {m.name: LoRA(m.name, m.path, i)
                       for i, m in enumerate(options.lora_modules, start=1)}
        self._mistral: MistralRenderer | None = None
        mode = check_auto_mode(options, model_dir or options.model)
        if mode in ("mistral", "hf_mistral"):
            self._mistral = MistralRenderer(options, model_dir or options.model, self.lora_for,
                                            "--model" if model_dir is None else "--model-dir",
                                            media_fetcher, hf_chat=mode == "hf_mistral")
            self._server_template = (None if options.chat_template is None
                                     else load_server_template(options.chat_template))
            self._check_startup_probe()
            return
        self.folder = ModelFolder.load(model_dir or options.model, options.tokenizer,
                                       options.max_model_len,
                                       "--model" if model_dir is None else "--model-dir",
                                       name=options.tokenizer or options.model,
                                       tokenizer_mode=options.tokenizer_mode,
                                       vllm_version=options.vllm_version)
        self.tokenizer: HfTokenizer = build_folder_tokenizer(
            self.folder, render_release(options.vllm_version).transformers,
            self._era.generic_spm, self._era.specials_merge)
        self._vocab_size = text_vocab_size(self.folder.config)
        self._runner = runner_type(
            config_architectures(self.folder.config, options.vllm_version),
            options.vllm_version, st_pooling=self.folder.sentence_transformers.pooling)
        self._env = TemplateEnvironment(clock)
        self._clock = clock
        #: Built on the first template a request carries (bounded: see _template_bounds).
        self._request_env: TemplateEnvironment | None = None
        self._parts = content_parts or ContentParts()
        preprocessor, processor = processor_configs(self.folder.path)
        self._images = (ImageChat(options, self.folder.config, media_fetcher,
                                  self._vision_folder(preprocessor, processor),
                                  nested_feature_extractor(processor) or preprocessor)
                        if content_parts is None else None)
        self._server_template = (None if options.chat_template is None
                                 else load_server_template(options.chat_template))
        self._has_tool_parser = options.tool_call_parser is not None
        self._harmony = (HarmonyChat(
            system_instructions=options.gpt_oss_harmony_system_instructions,
            start_date=options.system_start_date, clock=clock,
            vllm_version=options.vllm_version)
            if is_harmony_model(self.folder.config) else None)
        #: The tokenizer mode's Python encoder (render/_encoders.py), else None: Jinja.
        self._encoder = encoder_mode(self.folder.tokenizer_decision.mode)
        #: The largest reused id vLLM's tokenizer admits, where reproduced: a tokenizers
        #: library one (not a Python class's, an encoder mode's, nor MLuke's own count).
        self._max_token_id = (
            self.tokenizer.max_token_id if type(self.tokenizer) is HfTokenizer
            and self._encoder is None
            and self.folder.tokenizer_decision.tokenizer_class != "MLukeTokenizer" else None)
        self._trusted_sources = frozenset(self._folder_templates())
        # Templates compile on use, as vLLM's do (one that does not compile is each chat
        # body's 400, completions render); only its start-up probe stops the server.
        self._check_startup_probe()

    def _check_startup_probe(self) -> None:
        """What the era's start-up probe renders (render/_startup_probe.py), in its order."""
        release = self.options.vllm_version
        server = self._server_template
        probed: list[tuple[str, Callable[[], str | None]]]
        if self._mistral is not None or self._era.startup_probe == "server":
            probed = [("--chat-template's template", lambda: server)]
        else:
            probed = [(f"the template a body {what} resolves to",
                       partial(self._probe_template, tools))
                      for what, tools in (("without tools", None), ("with tools", []))]
        check_startup_probe(release, probed)

    def _probe_template(self, tools: list[dict[str, Any]] | None) -> str | None:
        try:
            return self._resolve_template(self._server_template, tools)
        except RenderRequestError:
            return None  # no template: the probe's "merge", nothing rendered

    @property
    def max_model_len(self) -> int:
        if self._mistral is not None:
            return self._mistral.max_model_len
        return self.folder.max_model_len

    def _vision_folder(self, preprocessor: dict[str, Any], processor: dict[str, Any]
                       ) -> VisionFolder | None:
        """What the folder's vision family reads, from its two processor files (None
        without a verified family)."""
        architecture = family_architecture(self.folder.config)
        if architecture not in FAMILIES or architecture in MISTRAL_FORMAT:
            return None
        tokenizer = self.tokenizer
        return VisionFolder(
            self.folder.config, preprocessor, processor, tokenizer.tokenizer.token_to_id,
            lambda text: tokenizer.encode(text, add_special_tokens=False))

    def _folder_templates(self) -> list[str]:
        found = self.folder.chat_template
        sources = list(found.values()) if isinstance(found, dict) else [found] if found else []
        if self.folder.processor_chat_template is not None:
            sources.append(self.folder.processor_chat_template)
        return [*sources, *([self._server_template] if self._server_template else [])]

    # ------------------------------------------------------------------ public entry points

    def render(self, endpoint: str, body: Any, *,
               placeholder_token_ids: Any = None) -> tuple[Rendered, ...]:
        """Render a body for ``/v1/chat/completions`` or ``/v1/completions``.

        ``placeholder_token_ids`` (chat only): per image part in order, the token
        ids the model's processor puts in the prompt for it (docs/multimodal.md).
        """
        if endpoint == CHAT_ENDPOINT:
            return (self.render_chat(body, placeholder_token_ids=placeholder_token_ids),)
        if placeholder_token_ids is not None:
            raise InvalidRequestError("placeholder_token_ids", f"only {CHAT_ENDPOINT} bodies "
                                      "carry images")
        if endpoint == COMPLETIONS_ENDPOINT:
            return self.render_completion(body)
        raise InvalidRequestError("endpoint", f"must be {CHAT_ENDPOINT!r} or "
                                  f"{COMPLETIONS_ENDPOINT!r}, got {endpoint!r}")

    def lora_for(self, model: Any) -> LoRA | None:
        """The adapter a body's ``model`` names (None for the base model); 404 otherwise."""
        if model is None or model == "" or model in self.options.served_names:
            return None
        if not isinstance(model, str):
            raise RenderRequestError("model", "must be a string")
        lora = self._loras.get(model)
        if lora is None:
            raise RenderRequestError("model", f"The model `{model}` does not exist.",
                                     status=404, hint=self._served_hint())
        return lora

    def _served_hint(self) -> str:
        """What the options serve, for a body naming another model."""
        names = ", ".join(repr(n) for n in self.options.served_names)
        adapters = ", ".join(repr(n) for n in self._loras)
        loras = f" and the LoRA adapters {adapters} (--lora-modules)" if adapters else ""
        return (f"these options serve {names} (--served-model-name, else --model){loras}; "
                "give the server's --served-model-name (or --lora-modules) as it was started")

    def render_chat(self, body: Any, *, placeholder_token_ids: Any = None) -> Rendered:
        """The engine prompt vLLM renders for a chat-completions body.

        With image parts, ``placeholder_token_ids`` gives each image's expansion
        (see :meth:`render`); the request's ``mm_items`` then hold each image's
        identifier and where its expansion lies.
        """
        if self._mistral is not None:
            fields, ids, mm_items = self._mistral.chat(body, placeholder_token_ids)
            return self._result(ids, None, fields, self.lora_for(fields.model), mm_items)
        fields = BodyFields.chat(body, self._era.cache_salt)
        if self._harmony is not None:
            return self._render_harmony(body, fields, placeholder_token_ids)
        lora = self.lora_for(fields.model)
        request_mm_kwargs = self._request_mm_kwargs(body)
        tools = dump_tools(body.get("tools"))
        choice = check_tool_choice(body, tools, self._has_tool_parser,
                                   self.options.enable_auto_tool_choice)
        if tools is not None and choice == "none" and \
                self.options.exclude_tools_when_tool_choice_none:
            tools = None
        request_template = fields.chat_template
        user_kwargs = fields.chat_template_kwargs
        if not self.options.trust_request_chat_template and (
                request_template is not None or (user_kwargs or {}).get("chat_template")
                is not None):
            raise RenderRequestError(
                "chat_template", "Chat template is passed with request, but "
                "--trust-request-chat-template is not set. Refused request with untrusted "
                "chat template.")
        tok_params = self._tokenize_params(fields)
        reused = reused_prompt_ids(fields.reused_token_ids, self._era.reused_ids, body,
                                   self._vocab_size, max_token_id=self._max_token_id)
        if reused is not None:
            return self._result(checked_reused_ids(
                reused, tok_params, images=placeholder_token_ids is not None), None, fields, lora)
        kwargs = self._chat_kwargs(fields, tools)
        parts = (self._parts if self._images is None
                 else self._images.parts(request_mm_kwargs))
        if self._encoder is not None:
            text_or_ids, warnings = self._apply_encoder(body.get("messages"), kwargs, parts)
        else:
            text_or_ids, warnings = self._apply_template(body.get("messages"), request_template,
                                                         kwargs, parts, user_kwargs or {})
        if isinstance(text_or_ids, str):
            ids = self._tokenize(text_or_ids, tok_params, "messages")
            prompt: str | None = text_or_ids
        else:
            ids, prompt = tok_params.post_tokenization(text_or_ids, self.tokenizer), None
        if isinstance(parts, ImageParts) and parts.first_clip is not None:
            # Whisper's audio (render/_audio.py): its answer is decided by the decoder ids.
            assert self._images is not None and self._images.audio is not None
            self._images.audio.answer(parts.first_clip, len(ids))
        if not isinstance(parts, ImageParts) or self._images is None or not (
                parts.images or placeholder_token_ids is not None):
            return self._result(ids, prompt, fields, lora, warnings=warnings)
        ids, mm_items = self._images.place(ids, parts, placeholder_token_ids)
        if len(ids) >= self.max_model_len:
            # The engine's input check (v1/engine/input_processor.py), after the processor.
            suggestion = ("Make sure that `max_model_len` is no smaller than the number of text "
                          "tokens plus multimodal tokens. For image inputs, the number of image "
                          "tokens depends on the number of images, and possibly their aspect "
                          "ratios as well.")
            over = ("" if len(ids) > self.max_model_len else " plus the number of requested "
                    "output tokens (at least 1)")
            raise RenderRequestError("messages", f"The decoder prompt (length {len(ids)})"
                                     f"{over} is longer than the maximum model length of "
                                     f"{self.max_model_len}. {suggestion}")
        return self._result(ids, prompt, fields, lora, mm_items, warnings)

    def _request_mm_kwargs(self, body: Any) -> dict[str, Any]:
        """The body's own processor kwargs, where vLLM takes them (``validate_request_mm_kwargs``:
        0.31+ only under ``--trust-request-mm-kwargs``)."""
        for name in ("mm_processor_kwargs", "media_io_kwargs"):
            if body.get(name) and self._era.request_mm_kwargs == "refused" and \
                    not self.options.trust_request_mm_kwargs:
                kind = "preprocessing" if name == "mm_processor_kwargs" else "media loading"
                raise RenderRequestError(
                    name, f"Per-request {name} are disabled by default because they can "
                    f"change multimodal {kind} resource usage. Start the server with "
                    "--trust-request-mm-kwargs only when clients are trusted.")
        if body.get("media_io_kwargs"):
            raise RenderUnsupportedError("media_io_kwargs", "a request's own media_io_kwargs "
                                         "are not reproduced")
        kwargs = body.get("mm_processor_kwargs")
        if kwargs is None:
            return {}
        if not isinstance(kwargs, dict):
            raise RenderRequestError("mm_processor_kwargs", "must be an object")
        return kwargs

    def render_completion(self, body: Any) -> tuple[Rendered, ...]:
        """The engine prompts vLLM renders for a completions body, one per prompt."""
        if self._mistral is not None:
            fields, prompts = self._mistral.completion(body)
            lora = self.lora_for(fields.model)
            return tuple(self._result(ids, None, fields, lora) for ids in prompts)
        fields = BodyFields.completion(body, self._era.cache_salt)
        lora = self.lora_for(fields.model)
        tok_params = self._tokenize_params(fields)
        results = []
        for prompt in fields.prompts:
            if isinstance(prompt, str):
                ids = self._tokenize(prompt, tok_params, "prompt")
            else:
                ids = tok_params.post_tokenization(prompt, self.tokenizer)
            results.append(self._result(ids, None, fields, lora))
        if self.folder.encoder_decoder:
            self._encoder_decoder_completion()
        return tuple(results)

    def _encoder_decoder_completion(self) -> None:
        """A completions body over an encoder-decoder config, once its prompts were
        checked: what the era's render server answers (render/_eras.py). vLLM's
        render_completion_request takes the encoder prompt's ids (extract_target_prompt),
        which the completion renderer leaves empty; chat renders as for any model
        (real_encdec_ corpus). Building that pair first takes the decoder start token id:
        the config's, else the tokenizer's bos id; without either vLLM's renderer raises a
        RuntimeError, which its server answers with a 500 (``get_dec_start_token_id``)."""
        if self._era.encoder_decoder_completions is None:
            raise RenderUnsupportedError("prompt", (
                f"a completions body over an encoder-decoder config "
                f"({self.folder.config.get('model_type')!r}) was not harvested from vLLM "
                f"{self.options.vllm_version}'s render server; not verified"))
        if not self.folder.decoder_start and not self.tokenizer.special_tokens_map.get(
                "bos_token"):
            raise RenderRequestError("prompt", "Cannot find decoder start token id or <BOS>",
                                     status=500)
        raise RenderRequestError("prompt", "No token_ids rendered")

    def _render_harmony(self, body: Any, fields: BodyFields,
                        placeholder_token_ids: Any) -> Rendered:
        """A gpt-oss chat body (render/_harmony.py): Harmony messages, no chat template,
        no truncation; the serving layer's context-length bound (``get_max_tokens``)."""
        assert self._harmony is not None
        messages = check_messages(body.get("messages"))
        tools = dump_tools(body.get("tools"))
        choice = check_tool_choice(body, tools, True, self.options.enable_auto_tool_choice)
        lora = self.lora_for(fields.model)
        if placeholder_token_ids is not None:
            raise RenderUnsupportedError("placeholder_token_ids", "image parts are not "
                                         "rendered on the Harmony path")
        reused = reused_prompt_ids(fields.reused_token_ids, self._era.reused_ids, body,
                                   self._vocab_size, max_token_id=self._max_token_id,
                                   messages_checked=False)
        if reused is not None:
            ids = list(check_token_ids(reused, field="kv_transfer_params.prompt_token_ids"))
        else:
            if tools is not None and choice == "none" and \
                    self.options.exclude_tools_when_tool_choice_none:
                tools = None
            ids = self._harmony.render(messages, tools, fields.reasoning_effort)
        self._check_serving_length(len(ids), fields)
        return self._result(ids, None, fields, lora)

    def _check_serving_length(self, length: int, fields: BodyFields) -> None:
        """``get_max_tokens`` (entrypoints/serve/utils/api_utils.py): the truncation size
        caps the length counted (the ids are not truncated); no room left for one output
        token makes the derived ``max_tokens`` 0, which SamplingParams refuses."""
        limit = fields.truncate_prompt_tokens
        if limit is not None:
            length = min(length, self.max_model_len if limit == -1 else limit)
        if length > self.max_model_len:
            raise RenderRequestError("messages", f"Input length ({length}) exceeds model's "
                                     f"maximum context length ({self.max_model_len}).")
        if length == self.max_model_len:
            raise RenderRequestError("max_tokens", "max_tokens must be at least 1, got 0.")

    # ------------------------------------------------------------------------- the steps

    def _result(self, ids: list[int], prompt: str | None, fields: BodyFields,
                lora: LoRA | None, mm_items: tuple[MMItem, ...] = (),
                warnings: tuple[str, ...] = ()) -> Rendered:
        if not ids:
            raise RenderRequestError("messages" if fields.is_chat else "prompt",
                                     "No token_ids rendered")
        token_ids = check_token_ids(ids)  # tokenizer output: ints >= 0, checked at C speed
        return Rendered(Request(token_ids, lora=lora, cache_salt=fields.cache_salt,
                                mm_items=mm_items), prompt,
                        fields.model or self.options.served_names[0], warnings)

    def _tokenize_params(self, fields: BodyFields) -> TokenizeParams:
        """The request's length bounds and truncation, this era's rules applied."""
        params = fields.tokenize_params(
            self.max_model_len, clamped=self._era.output_budget == "clamped",
            unset_generates=self._era.unset_output_generates,
            tokenizer_side=tokenizer_side(self._runner))
        refuse_unknown_side(params, self._runner)
        return params

    def _tokenize(self, text: str, params: TokenizeParams, field: str) -> list[int]:
        text = params.pre_tokenization(text, self.tokenizer)
        length = params.encode_max_length()
        try:
            if length is None:
                ids = self.tokenizer.encode(text, add_special_tokens=params.add_special_tokens)
            else:
                ids = self.tokenizer.encode_truncated(
                    text, add_special_tokens=params.add_special_tokens, max_length=length,
                    side=params.tokenizer_side)  # as vLLM loads the tokenizer
        except TypeError:
            # The tokenizer takes UTF-8 and answers a str it cannot convert (a lone
            # surrogate) with a bare TypeError; checked here, not on every text.
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise RenderRequestError(field, f"is not valid Unicode (lone surrogate at "
                                         f"character {exc.start} of the text to tokenize)"
                                         ) from None
            raise
        return params.post_tokenization(ids, self.tokenizer)

    def _chat_kwargs(self, fields: BodyFields, tools: list[dict[str, Any]] | None
                     ) -> dict[str, Any]:
        """The chat-template kwargs as vLLM merges them (request > body flags > server)."""
        extra: dict[str, Any] = {
            "add_generation_prompt": fields.add_generation_prompt,
            "continue_final_message": fields.continue_final_message,
            "documents": fields.documents,
            "reasoning_effort": fields.reasoning_effort,
        }
        user = fields.chat_template_kwargs or {}
        if fields.reasoning_effort is not None and "enable_thinking" not in user:
            extra["enable_thinking"] = fields.reasoning_effort != "none"
        request_kwargs = _merge(user, extra)
        defaults = _merge(dict(self.options.default_chat_template_kwargs),
                          {"tools": tools, "tokenize": False})
        return _merge(defaults, request_kwargs)

    def _resolve_template(self, given: str | None, tools: list[dict[str, Any]] | None) -> str:
        """vLLM's template order: the given one (a folder template's name or a text), else
        without tools the processor's (a vision family's folder), else the tokenizer's
        (``tool_use`` with tools when it has named ones, else ``default``)."""
        folder = self.folder.chat_template
        if given is not None:
            if isinstance(folder, dict) and given in folder:
                return folder[given]
            return given
        if tools is None and self.folder.processor_chat_template is not None:
            return self.folder.processor_chat_template  # the processor's wins without tools
        if isinstance(folder, dict):
            if tools is not None and "tool_use" in folder:
                return folder["tool_use"]
            if "default" in folder:
                return folder["default"]
        elif folder is not None:
            return folder
        raise RenderRequestError("chat_template", NO_CHAT_TEMPLATE)

    def _apply_template(self, messages: Any, request_template: str | None,
                        kwargs: dict[str, Any], parts: ContentParts,
                        user_kwargs: Mapping[str, Any]) -> tuple[str | list[int], tuple[str, ...]]:
        """``safe_apply_chat_template``: the rendered text (or ids, with ``tokenize``), and
        a warning per name of the body's ``user_kwargs`` the template does not take."""
        tools = kwargs.pop("tools", None)
        if tools is not None and not (isinstance(tools, list)
                                      and all(isinstance(t, dict) for t in tools)):
            raise RenderRequestError("chat_template_kwargs.tools", "Tools should either be a "
                                     "JSON schema, or a callable function")
        tokenize = kwargs.pop("tokenize", False)
        # A (trusted) request's kwargs may carry a template: it renders when neither the
        # body nor the server gives one, but vLLM detects the content format without it.
        given = request_template or self._server_template
        rendering = given if given is not None else kwargs.pop("chat_template", None)
        kwargs.pop("chat_template", None)
        if rendering is not None and not isinstance(rendering, str):
            raise RenderRequestError("chat_template_kwargs.chat_template", "must be a string")
        source = self._resolve_template(rendering, tools)
        # A template the request carries (trusted) renders within bounds; the folder's and
        # the server's as vLLM renders them (docs/render.md, "Request templates").
        from_request = source not in self._trusted_sources
        template = self._compile(source, bounded=from_request)
        content_format: str = self.options.chat_template_content_format
        if content_format == "auto":
            detected = template if rendering is given else self._format_template(tools)
            content_format = ("string" if detected is None
                              else detected.namespace_format if self._era.content_format_aliases
                              else detected.detected_format)
        conversation = parse_messages(messages, content_format, parts)
        if any(m["role"] == "developer" for m in conversation) and \
                not template.supports_developer:
            conversation = _consolidate_system(_developer_to_system(conversation))
        accepted = template.accepted_kwargs
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
        warnings = tuple(dropped_kwarg_warning(str(name), accepted) for name in user_kwargs
                         if name not in accepted and name not in _HANDLED_KWARGS)
        if tokenize and any(kwargs.get(k) for k in (*_UNSUPPORTED_CALL_KWARGS, "return_dict")):
            raise RenderUnsupportedError("chat_template_kwargs", "tokenize with padding, "
                                         "truncation or dict returns is not reproduced")
        text = self._render_template(template, conversation, tools, kwargs)
        if tokenize:
            return self.tokenizer.encode(text, add_special_tokens=False), warnings
        return text, warnings

    def _apply_encoder(self, messages: Any, kwargs: dict[str, Any], parts: ContentParts
                       ) -> tuple[str | list[int], tuple[str, ...]]:
        """An encoder mode's ``apply_chat_template`` (render/_encoders.py): the conversation
        (in 'string' format unless the mode's request encoder parses it otherwise), the text
        (or with ``tokenize`` its ids, no special tokens)."""
        assert self._encoder is not None
        release = render_release(self.options.vllm_version).release
        order = ImageOrder()
        text = encode_request(self._encoder, messages,
                              lambda fmt: parse_messages(messages, fmt, parts), kwargs, release,
                              order)
        if isinstance(parts, ImageParts):
            parts.order = order.indices
        if not kwargs.get("tokenize", True):
            return text, ()
        if any(name in kwargs for name in ("truncation", "max_length")):
            raise RenderUnsupportedError("chat_template_kwargs", "tokenize with truncation "
                                         "is not reproduced")
        return self.tokenizer.encode(text, add_special_tokens=False), ()

    def _compile(self, source: str, bounded: bool = False) -> ChatTemplate:
        try:
            if bounded:
                if self._request_env is None:
                    self._request_env = TemplateEnvironment(self._clock, bounded=True)
                return self._request_env.compile(source)
            return self._env.compile(source)
        except ChatTemplateSyntaxError as exc:
            # vLLM compiles a template on use and answers each chat body with the error.
            raise RenderRequestError("chat_template", str(exc), hint=(
                f"the chat template does not compile ({exc.kind or 'a Jinja error'})")
            ) from None

    def _format_template(self, tools: list[dict[str, Any]] | None) -> ChatTemplate | None:
        """The folder's template vLLM reads the content format from (None: 'string')."""
        try:
            source = self._resolve_template(None, tools)
        except RenderRequestError:
            return None
        try:
            return self._env.compile(source)
        except ChatTemplateSyntaxError:
            return None  # vLLM logs it and takes 'string'

    def _render_template(self, template: ChatTemplate, conversation: list[dict[str, Any]],
                         tools: list[dict[str, Any]] | None, kwargs: dict[str, Any]) -> str:
        """transformers' ``apply_chat_template`` + ``render_jinja_template`` for one chat."""
        for name in ("self", "conversation", "conversations", "messages"):
            if name in kwargs:
                raise RenderRequestError(f"chat_template_kwargs.{name}",
                                         "clashes with a parameter of apply_chat_template")
        documents = kwargs.pop("documents", None)
        add_generation_prompt = kwargs.pop("add_generation_prompt", False)
        continue_final = kwargs.pop("continue_final_message", False)
        if kwargs.pop("return_assistant_tokens_mask", False):
            raise RenderRequestError("chat_template_kwargs.return_assistant_tokens_mask",
                                     "`return_assistant_tokens_mask=True` requires "
                                     "`return_dict=True` and `tokenize=True`")
        for name in ("padding", "truncation", "max_length", "return_tensors", "return_dict",
                     "tokenizer_kwargs"):
            kwargs.pop(name, None)  # tokenization arguments: unused when tokenize is false
        if not conversation:
            raise RenderRequestError("messages", "Cannot apply chat template to an empty "
                                     "conversation. Provide at least one message.")
        if continue_final and add_generation_prompt:
            raise RenderRequestError("continue_final_message", "continue_final_message and "
                                     "add_generation_prompt are not compatible.")
        if documents is not None and not all(isinstance(d, dict) for d in documents):
            raise RenderRequestError("documents", "Documents should be a list of dicts with "
                                     "'title' and 'text' keys!")
        chat = conversation
        final: str | None = None
        if continue_final:
            key = continue_final if isinstance(continue_final, str) else "content"
            chat, final = _tag_final_message(conversation, key, template.source)
        variables = {**self.tokenizer.special_tokens_map, **kwargs}
        try:
            if template.bounded:
                text = render_bounded(lambda: template.template.generate(
                    messages=chat, tools=tools, documents=documents,
                    add_generation_prompt=add_generation_prompt, **variables))
            else:
                text = template.template.render(messages=chat, tools=tools,
                                                documents=documents,
                                                add_generation_prompt=add_generation_prompt,
                                                **variables)
        except TemplateLimitError as exc:
            raise RenderRequestError("chat_template", str(exc)) from None
        except jinja2.TemplateError as exc:
            raise RenderRequestError("messages", str(exc)) from None
        except Exception as exc:
            # vLLM answers 400 with the exception's own text for whatever a template raises
            # (safe_apply_chat_template's VLLMValidationError).
            raise RenderRequestError("messages", str(exc),
                                     hint=f"the chat template raised {type(exc).__name__}"
                                     ) from None
        if final is not None:
            text = _cut_at_tag(text, final)
        return text


def _merge(defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """vLLM's ``merge_kwargs``: overrides win, except their None and "auto" values."""
    return {**defaults, **{k: v for k, v in overrides.items() if not _unset(v)}}


def _unset(value: Any) -> bool:
    # ``v in (None, "auto")``, for the JSON values kwargs hold: only a string equals "auto".
    return value is None or (isinstance(value, str) and value == "auto")


def _developer_to_system(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in conversation:
        if message["role"] == "developer":
            message = {**message, "role": "system"}
            message.pop("tools", None)
        out.append(message)
    return out


def _consolidate_system(conversation: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """vLLM merges system messages into one at the front when any is not first."""
    contents: list[str] = []
    others: list[dict[str, Any]] = []
    merge = False
    for i, message in enumerate(conversation):
        if message["role"] != "system":
            others.append(message)
            continue
        if i > 0 or contents:
            merge = True
        content = message.get("content", "")
        if isinstance(content, list):
            content = "\n".join(
                p["text"] if isinstance(p, dict) else p for p in content
                if (isinstance(p, dict) and "text" in p) or isinstance(p, str))
        if content:
            contents.append(content)
    if not merge:
        return conversation
    return [{"role": "system", "content": "\n\n".join(contents)}, *others]


def _tag_final_message(conversation: list[dict[str, Any]], key: str, source: str
                       ) -> tuple[list[dict[str, Any]], str]:
    """Mark the final message's end, as transformers does for continue_final_message."""
    chat = copy.deepcopy(conversation)
    final = chat[-1].get(key)
    if final is None:
        raise RenderRequestError("continue_final_message", f"continue_final_message is set "
                                 f"but the final message has no \"{key}\" to continue!")
    if key not in source:
        raise RenderRequestError("continue_final_message", f"continue_final_message is set "
                                 f"to \"{key}\" but this is not an accepted field in the "
                                 "chat_template")
    if isinstance(final, (list, tuple)):
        for block in reversed(final):
            if "text" in block:
                text = block["text"]
                block["text"] = text + _CONTINUE_TAG
                return chat, text
        raise RenderRequestError("continue_final_message", "continue_final_message is set but "
                                 "we could not find any text to continue in the final message!")
    chat[-1][key] = final + _CONTINUE_TAG
    return chat, final


def _cut_at_tag(text: str, final: str) -> str:
    if final.strip() not in text or _CONTINUE_TAG.strip() not in text:
        raise RenderRequestError("continue_final_message", "continue_final_message is set but "
                                 "the final message does not appear in the chat after applying "
                                 "the chat template!")
    at = text.rindex(_CONTINUE_TAG.strip())
    if text[at:at + len(_CONTINUE_TAG)] == _CONTINUE_TAG:
        return text[:at]
    return text[:at].rstrip()
