"""Mistral's own format (``--tokenizer-mode mistral``): bodies rendered with mistral_common.

vLLM 0.31 renders such a folder without a Jinja template: its ``MistralTokenizer``
(``tokenizers/mistral.py``) wraps transformers' ``MistralCommonBackend`` around
``mistral_common``'s ``MistralTokenizer`` (validation mode ``test``), and its
``MistralRenderer`` (``renderers/mistral.py``) hands the body's messages, as the
request model holds them, to ``ChatCompletionRequest.from_openai`` and
``encode_chat_completion``. What vLLM does around that call is reproduced here,
the library call itself is mistral_common's (extra ``mistral``):

- before rendering (``renderers/online_renderer.py``): every assistant message gets a
  ``tool_calls`` list (empty when it has none), tool-call ids and ``tool_call_id``\\ s
  longer than 9 characters keep their last 9, a body's ``chat_template`` or
  ``chat_template_kwargs`` is a 400, and ``tool_choice`` needs no tool parser;
- the call: vLLM's own checks of ``add_generation_prompt`` / ``continue_final_message``
  against the last message, transformers' adaptation of list contents (parts without a
  ``type`` dropped), ``from_openai(messages, tools, continue_final_message,
  reasoning_effort=None)``; whatever mistral_common raises is vLLM's 400 with its text;
- completions: ``MistralCommonBackend.__call__``: the text encoded without BOS, cut on
  the tokenizer's ``truncation_side`` (vLLM loads it "left" for a generative runner,
  "right" for a pooling one) to leave room for the BOS, then the BOS (when
  ``add_special_tokens``);
- then vLLM's own truncation (the side the body names, else the tokenizer's) and length
  checks;
- images (a Pixtral folder: ``params.json`` with a vision encoder, a tokenizer file with
  an image config): vLLM's message parse loads each image first (identifier, loaded
  size, item limit: render/_media.py), then mistral_common opens the URL again and writes
  the image's tokens itself; vLLM's processor finds them (render/_vision/_pixtral.py).
  mistral_common's image encoder is replaced, on this renderer's own tokenizer, by one
  that writes the same tokens from the size the image's bytes open at (no pixels are
  resized: a 1024-px image would cost more than its identifier).

A folder without ``config.json`` is read in Mistral's format, as vLLM's
``MistralConfigParser`` reads ``params.json`` (``--config-format mistral``; ``auto``
takes it when the folder has no config.json): the context length is its
``max_position_embeddings`` (default 128000) bounded by ``max_seq_len``.

A folder with Mistral's tokenizer files and ``--tokenizer-mode auto`` is refused
(:func:`check_auto_mode`): vLLM takes the mistral mode only when the folder also has
``consolidated*.safetensors`` weights, which a router's copy of it usually lacks.
"""

from __future__ import annotations

import copy
import fnmatch
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from .._extras import needs_extra
from ..core import LoRA, MMItem
from ..errors import MissingExtraError
from ._chat import (
    NO_CHAT_TEMPLATE,
    ContentParts,
    check_tool_choice,
    dump_tools,
    parse_messages,
)
from ._eras import RENDER_ERAS, render_era, render_release
from ._errors import ModelFolderError, RenderRequestError, RenderUnsupportedError
from ._fields import BodyFields, TokenizeParams
from ._folder import (
    _context_length,
    _not_a_folder,
    _read_json,
    check_config_loads,
    config_architectures,
    hf_loads_mistral_common,
)
from ._media import ImageChat, ImageParts, MediaFetcher
from ._options import ServerOptions
from ._reuse import checked_reused_ids, reused_prompt_ids, text_vocab_size
from ._runner import refuse_unknown_side, runner_type, tokenizer_side
from ._vision import FAMILIES, ImageSize, VisionFamily, VisionFolder, family_architecture
from ._vision._pixtral import PROCESSOR_KEYS
from ._vllm_startup import check_vllm_starts

__all__ = ["MISTRAL_COMMON_VERIFIED", "MistralRenderer", "check_auto_mode"]

#: The mistral_common versions whose rendering is verified against each vLLM release's
#: render server (tests/render/real_mistral_vectors.jsonl): its encoding decides the ids.
MISTRAL_COMMON_VERIFIED: Final = MappingProxyType({
    release: verified.mistral_common
    for era in RENDER_ERAS for release, verified in era.verified.items()})
# File names vLLM's auto mode looks for (tokenizers/registry.py, repo_utils.py): Mistral's
# tokenizer files, and the weights without which auto mode is not mistral.
_TOKENIZER_PATTERNS: Final = ("tekken.json", "tokenizer.model.v*")
_WEIGHTS_PATTERN: Final = "consolidated*.safetensors"
# vLLM keeps the last 9 characters of longer tool-call ids (truncate_tool_call_ids).
_TOOL_CALL_ID_LENGTH: Final = 9
# The first instruct version whose requests carry model settings (reasoning_effort is
# passed to mistral_common only from there): no tokenizer file of it is verified here.
_SETTINGS_VERSION: Final = 15
# --default-chat-template-kwargs that reach vLLM's MistralTokenizer.apply_chat_template
# and change its result (tokenization arguments); the others are ignored by it.
# (vLLM's own tokenize=True wins over the server's; max_length acts only with these.)
_CALL_KWARGS: Final = ("padding", "truncation")
# The URL an image part carries to mistral_common here: its size as the bytes open.
_GRID_URL: Final = "prefixkey-image-size:"
# params.json keys that change what vLLM derives from it in ways not verified here.
_PARAMS_UNVERIFIED: Final = ("yarn", "llama_4_scaling", "rope_scaling", "quantization")
_PARAMS_DEFAULT_LENGTH: Final = 128_000  # MistralConfigParser without config.json


def _params_config(file: Path) -> dict[str, Any]:
    """The config.json keys prefixkey reads, as vLLM derives them from ``params.json``
    (``MistralConfigParser``, ``adapt_config_dict``): a vision encoder makes it
    ``PixtralForConditionalGeneration`` with the text keys in ``text_config``."""
    params = _read_json(file, "params.json")
    for key in _PARAMS_UNVERIFIED:
        if params.get(key):
            raise RenderUnsupportedError(f"params.json {key}", "changes the config vLLM "
                                         "derives in a way prefixkey does not reproduce")
    length = params.get("max_position_embeddings", _PARAMS_DEFAULT_LENGTH)
    text = {"max_position_embeddings": length, "max_seq_len": params.get("max_seq_len", length),
            "vocab_size": params.get("vocab_size")}
    multimodal = params.get("multimodal")
    vision = params.get("vision_encoder") or (
        multimodal.get("vision_encoder_args") if isinstance(multimodal, dict) else None)
    if multimodal and not vision:
        raise RenderUnsupportedError("params.json multimodal", "only a vision encoder "
                                     "(Pixtral) is reproduced")
    if vision:
        return {"architectures": ["PixtralForConditionalGeneration"], "text_config": text}
    return {"architectures": ["MistralForCausalLM"], **text}


class _ForeignImage(Exception):
    """mistral_common met an image part the renderer did not load."""


class _SizeEncoder:
    """mistral_common's image encoder for this renderer: an image chunk's tokens from the
    size its URL carries (:data:`_GRID_URL`), by the family's rule, without pixels."""

    def __init__(self, family: VisionFamily, original: Any, encoding: Any) -> None:
        self._family = family
        self._original = original
        self._encoding = encoding  # mistral_common's ImageEncoding
        self._empty = importlib.import_module("numpy").zeros((3, 0, 0), dtype="float32")

    def __getattr__(self, name: str) -> Any:  # image_config, special_ids, …
        return getattr(self._original, name)

    def __call__(self, chunk: Any) -> Any:
        url = chunk.get_url() if hasattr(chunk, "get_url") else None
        if not isinstance(url, str) or not url.startswith(_GRID_URL):
            raise _ForeignImage
        width, height = (int(v) for v in url.removeprefix(_GRID_URL).split("x"))
        tokens = list(self._family.expansion(ImageSize(width, height), {}))
        return self._encoding(tokens=tokens, image=self._empty)


def _opened_size(data: bytes) -> tuple[int, int]:
    """The size mistral_common's ``Image.open`` of the bytes gives (no EXIF transpose)."""
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return int(width), int(height)


def _files(folder: Path, pattern: str) -> list[Path]:
    """Files under ``folder`` (at any depth) whose name matches, as vLLM lists a local repo."""
    return [p for p in folder.rglob("*") if p.is_file() and fnmatch.fnmatch(p.name, pattern)]


def check_auto_mode(options: ServerOptions, model_dir: str) -> str:
    """The mode vLLM's ``auto`` resolves to for this folder: ``"mistral"``, ``"auto"``
    (Hugging Face), or a refusal when the folder's copy cannot tell; ``"hf_mistral"`` for
    mode hf where the release's transformers loads MistralCommonBackend
    (render/_folder.py ``hf_loads_mistral_common``: vLLM 0.29).

    vLLM (tokenizers/registry.py ``resolve_tokenizer_args``) takes the mistral mode only
    when the tokenizer folder has ``consolidated*.safetensors`` weights and a tekken.json
    or tokenizer.model.v* file. A tokenizer-only copy of a Mistral folder lacks the
    weights, so which mode the server runs depends on a file the copy does not have.
    """
    folder = Path(options.tokenizer or model_dir)
    if options.tokenizer_mode.lower() == "hf" and folder.is_dir():
        config = next((c for c in (folder / "config.json", Path(model_dir) / "config.json")
                       if c.is_file()), None)
        model_type = "" if config is None else str(
            _read_json(config, "config.json").get("model_type", ""))
        if hf_loads_mistral_common(folder, model_type, options.vllm_version) and not (
                folder / "tokenizer.json").is_file():  # beside one: not harvested (refused)
            return "hf_mistral"
    if options.tokenizer_mode != "auto" or not folder.is_dir():
        return options.tokenizer_mode
    found = [p for pattern in _TOKENIZER_PATTERNS for p in _files(folder, pattern)]
    if not found:
        return "auto"
    if _files(folder, _WEIGHTS_PATTERN):
        return "mistral"
    name = found[0].relative_to(folder)
    raise RenderUnsupportedError(
        "--tokenizer-mode",
        f"the folder has Mistral's tokenizer file {str(name)!r} and no "
        "consolidated*.safetensors weights, so vLLM 0.31's auto mode depends on the "
        "server's own folder: with those weights it renders with mistral_common (mode "
        "mistral); without them it takes the Hugging Face mode (transformers 5 converts "
        "tekken.json into a tokenizer without chat template and without BOS; for "
        "tokenizer.model.v* alone the server does not start). Pass the server's "
        "--tokenizer-mode (mistral, or hf)",
    )


def _check_hf_chat_template(options: ServerOptions, folder: Path) -> None:
    """Refuse mode hf over MistralCommonBackend with a chat template (the server's, or the
    folder's): what vLLM 0.29 renders, and whether it starts, with one was not harvested
    (its answers without one: real_tiktoken_029_vectors.jsonl)."""
    config = folder / "tokenizer_config.json"
    found = ("--chat-template" if options.chat_template is not None
             else "chat_template.jinja" if (folder / "chat_template.jinja").is_file()
             else "chat_template.json" if (folder / "chat_template.json").is_file()
             else "tokenizer_config.json" if config.is_file()
             and "chat_template" in _read_json(config, "tokenizer_config.json") else None)
    if found is not None:
        raise RenderUnsupportedError(found, (
            f"vLLM {options.vllm_version}'s tokenizer mode hf loads the folder's tekken.json "
            "with transformers' MistralCommonBackend; its chat with a chat template is not "
            "verified"))


def _hf_chat_refusal(fields: BodyFields) -> None:
    """Chat in mode hf over MistralCommonBackend without a template (vLLM 0.29): vLLM's
    hf renderer finds none, as for any Hugging Face tokenizer without one; a request's
    own template is not verified."""
    if fields.chat_template is not None:
        raise RenderUnsupportedError("chat_template", (
            "a request's chat template over transformers' MistralCommonBackend (mode hf, "
            "vLLM 0.29) is not verified"))
    raise RenderRequestError("chat_template", NO_CHAT_TEMPLATE)


def _import_mistral_common(vllm_version: str) -> Any:
    """mistral_common's modules: a MissingExtraError without the ``mistral`` extra, a
    refusal for a version not verified."""
    with needs_extra("mistral", "--tokenizer-mode mistral"):
        library = importlib.import_module("mistral_common")
        mistral = importlib.import_module("mistral_common.tokens.tokenizers.mistral")
    version = getattr(library, "__version__", "?")
    verified = render_release(vllm_version).mistral_common
    if version not in verified:
        raise RenderUnsupportedError(
            "mistral_common", f"version {version} is not verified for vLLM {vllm_version} "
            f"(verified: {', '.join(verified) or 'none'}); its encoding decides the ids")
    return mistral


class MistralRenderer:
    """The mistral mode of a :class:`~prefixkey.render.Renderer`: one folder, one tokenizer.

    ``lora_for`` is the renderer's check of a body's ``model`` (the served names and
    adapters), run where vLLM runs it.
    """

    def __init__(self, options: ServerOptions, model_dir: str,
                 lora_for: Callable[[Any], LoRA | None], option: str = "--model",
                 media_fetcher: MediaFetcher | None = None, *, hf_chat: bool = False) -> None:
        mistral = _import_mistral_common(options.vllm_version)
        #: Mode hf over MistralCommonBackend (vLLM 0.29, :func:`check_auto_mode`): its
        #: completions are mistral_common's, its chat transformers' template path.
        self._hf_chat = hf_chat
        self._mode = "hf (MistralCommonBackend)" if hf_chat else "mistral"
        validation = importlib.import_module("mistral_common.protocol.instruct.validator")
        utils = importlib.import_module("mistral_common.tokens.tokenizers.utils")
        self._request_cls = importlib.import_module(
            "mistral_common.protocol.instruct.request").ChatCompletionRequest
        self.options = options
        self._lora_for = lora_for
        path = Path(model_dir)
        if not path.is_dir():  # ``option``: the flag that named it (--model, --model-dir)
            raise ModelFolderError(option, _not_a_folder(model_dir, "a local model folder"))
        has_params = (path / "params.json").is_file()
        if not (path / "config.json").is_file() and not has_params:
            raise ModelFolderError("config.json", f"missing in {model_dir!r} (vLLM needs it, "
                                   "or Mistral's params.json)")
        if has_params and _files(path, _WEIGHTS_PATTERN):
            raise RenderUnsupportedError(
                "params.json", "with consolidated weights vLLM reads Mistral's native "
                "config, whose context length prefixkey does not derive")
        config = (_read_json(path / "config.json", "config.json")
                  if (path / "config.json").is_file() else _params_config(path / "params.json"))
        if (path / "config.json").is_file():  # read as transformers' config (vLLM's "hf")
            check_config_loads(config, path, options.vllm_version)
        self.max_model_len = _context_length(config, {}, options.max_model_len)
        self._vocab_size = text_vocab_size(config)
        architectures = config_architectures(config, options.vllm_version)
        check_vllm_starts(architectures, str(config.get("model_type", "")), options.vllm_version)
        self._runner = runner_type(architectures, options.vllm_version)
        for name in _CALL_KWARGS:
            if options.default_chat_template_kwargs.get(name) not in (None, "auto", False):
                raise RenderUnsupportedError(
                    "--default-chat-template-kwargs", f"{name!r} changes what vLLM's "
                    "Mistral tokenizer returns, which is not reproduced")
        tokenizer_dir = Path(options.tokenizer or model_dir)
        if not tokenizer_dir.is_dir():
            raise ModelFolderError("--tokenizer", _not_a_folder(str(tokenizer_dir),
                                                                "a local folder"))
        try:  # the file transformers' MistralCommonBackend.from_pretrained picks
            chosen = utils.get_one_valid_tokenizer_file(
                [str(p) for p in sorted(tokenizer_dir.iterdir())])
        except ValueError as exc:  # vLLM does not start
            raise ModelFolderError("--tokenizer-mode", f"{self._mode}: {exc}") from None
        self.tokenizer_file = Path(chosen)
        if self.tokenizer_file.name != "tekken.json" and \
                importlib.util.find_spec("sentencepiece") is None:
            raise MissingExtraError(f"--tokenizer-mode mistral with {self.tokenizer_file.name}",
                                    "mistral", "sentencepiece")
        try:
            self._mistral = mistral.MistralTokenizer.from_file(
                chosen, mode=validation.ValidationMode.test)
        except Exception as exc:  # vLLM does not start: the library's reason
            raise ModelFolderError("--tokenizer-mode", f"{self._mode}: the folder's "
                                   f"tokenizer does not load: {exc}") from None
        if hf_chat:
            _check_hf_chat_template(options, tokenizer_dir)
        self._instruct = self._mistral.instruct_tokenizer
        self._tokenizer = self._instruct.tokenizer
        self.version = int(str(self._tokenizer.version.value).split("v")[-1])
        if self.version >= _SETTINGS_VERSION:
            raise RenderUnsupportedError(
                self.tokenizer_file.name, f"instruct version v{self.version} (model settings "
                "such as reasoning_effort reach mistral_common) is not verified")
        #: vLLM's bound on characters per token: the longest vocabulary entry.
        self.max_chars_per_token: int = max(len(t) for t in self._tokenizer.vocab())
        self.bos_id: int = self._tokenizer.bos_id
        self._images = self._image_chat(options, config, media_fetcher)

    def _image_chat(self, options: ServerOptions, config: Mapping[str, Any],
                    fetch: MediaFetcher | None) -> ImageChat | None:
        """The image path of a vision folder whose tokenizer encodes images, else None
        (image parts are then refused as on any text model)."""
        architecture = family_architecture(config)
        encoder = getattr(self._instruct, "image_encoder", None)
        if architecture is None or architecture not in FAMILIES or encoder is None:
            return None
        image_config, ids = encoder.image_config, encoder.special_ids
        values = dict(zip(PROCESSOR_KEYS, (
            image_config.image_patch_size, image_config.max_image_size,
            image_config.spatial_merge_size, ids.img, ids.img_break, ids.img_end), strict=True))
        vision = VisionFolder(config, {}, values, lambda text: None, lambda text: [])
        images = ImageChat(options, config, fetch, vision)
        family = FAMILIES[architecture](vision)
        encoding = importlib.import_module("mistral_common.tokens.tokenizers.image").ImageEncoding
        # This renderer's own tokenizer: mistral_common reads the attribute per chunk.
        self._instruct.image_encoder = _SizeEncoder(family, encoder, encoding)
        return images

    # ------------------------------------------------------------------------- chat

    def chat(self, body: Any, placeholder_token_ids: Any
             ) -> tuple[BodyFields, list[int], tuple[MMItem, ...]]:
        """The body's fields, its ids and its images' items, as vLLM's chat render answers
        (or its error)."""
        fields = BodyFields.chat(body, render_era(self.options.vllm_version).cache_salt)
        self._lora_for(fields.model)
        if self._hf_chat:
            _hf_chat_refusal(fields)
        if placeholder_token_ids is not None and self._images is None:
            raise RenderUnsupportedError("placeholder_token_ids", "images are not rendered "
                                         "in the mistral mode without a vision folder")
        tools = dump_tools(body.get("tools"))
        # A Mistral tokenizer needs no tool parser: only the request model's checks run.
        choice = check_tool_choice(body, tools, True, True)
        messages = _vllm_messages(body.get("messages"))
        if fields.chat_template is not None or fields.chat_template_kwargs is not None:
            raise RenderRequestError("chat_template", "chat_template is not supported for "
                                     "Mistral tokenizers. (parameter=chat_template)")
        if tools is not None and choice == "none" and \
                self.options.exclude_tools_when_tool_choice_none:
            tools = None
        for name in ("mm_processor_kwargs", "media_io_kwargs"):
            if body.get(name) and render_era(self.options.vllm_version).request_mm_kwargs \
                    == "refused" and not self.options.trust_request_mm_kwargs:
                raise RenderRequestError(name, f"Per-request {name} are disabled by default")
        parts = self._content_parts(body)
        tok_params = self._tokenize_params(fields)
        reused = reused_prompt_ids(fields.reused_token_ids,
                                   render_era(self.options.vllm_version).reused_ids, body,
                                   self._vocab_size)
        if reused is not None:
            return fields, checked_reused_ids(
                reused, tok_params, images=placeholder_token_ids is not None), ()
        # vLLM's own parse of the messages (content format 'string') runs first (it loads
        # the images), and turns the tool calls' arguments into objects in the request's
        # own messages.
        _take_arguments(messages, parse_messages(messages, "string", parts))
        # The size mistral_common opens each image at: the hasher's decode read it.
        sizes = ({id(part): image.opened_size or _opened_size(data) for (part, data), image
                  in zip(parts.sources, parts.images, strict=True)}
                 if isinstance(parts, ImageParts) else {})
        ids = tok_params.post_tokenization(self._encode_chat(messages, tools, fields, sizes),
                                           self)
        if self._images is None or not isinstance(parts, ImageParts) or not (
                parts.images or placeholder_token_ids is not None):
            return fields, ids, ()
        # The processor: each image's tokens from vLLM's loaded size, found in the prompt.
        ids, items = self._images.place(ids, parts, placeholder_token_ids)
        return fields, ids, items

    def _content_parts(self, body: Any) -> ContentParts:
        """The body's image collector (a vision folder), else the text-only parts."""
        if self._images is None:
            return ContentParts()
        if body.get("media_io_kwargs"):
            raise RenderUnsupportedError("media_io_kwargs", "a request's own media_io_kwargs "
                                         "are not reproduced")
        kwargs = body.get("mm_processor_kwargs")
        if kwargs is not None and not isinstance(kwargs, dict):
            raise RenderRequestError("mm_processor_kwargs", "must be an object")
        return self._images.parts(kwargs)

    def _encode_chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                     fields: BodyFields,
                     sizes: Mapping[int, tuple[int, int]] | None = None) -> list[int]:
        """``safe_apply_chat_template`` → MistralTokenizer → MistralCommonBackend."""
        if not messages:  # vLLM reads messages[-1] first
            raise RenderRequestError("messages", "list index out of range")
        add_generation_prompt = fields.add_generation_prompt
        continue_final = fields.continue_final_message
        last = messages[-1]
        if add_generation_prompt and last.get("role") == "assistant":
            raise RenderRequestError(
                "messages", "Cannot set `add_generation_prompt` to True when the last message "
                "is from the assistant. Consider using `continue_final_message` instead.")
        if continue_final and last.get("role") != "assistant":
            raise RenderRequestError(
                "messages", "Cannot set `continue_final_message` to True when the last "
                "message is not from the assistant.")
        adapted = [_adapt_message(m, sizes or {}) for m in messages]
        try:
            request = self._request_cls.from_openai(
                messages=adapted, tools=tools, continue_final_message=continue_final,
                reasoning_effort=None)
            tokens: list[int] = self._mistral.encode_chat_completion(request).tokens
        except _ForeignImage:
            raise RenderUnsupportedError(
                "messages", "mistral_common met an image part vLLM's message parse does "
                "not load; render it with vLLM's render endpoint") from None
        except Exception as exc:  # vLLM answers 400 with the library's text, whatever it is
            raise RenderRequestError("messages", str(exc)) from None
        return list(tokens)

    # ------------------------------------------------------------------- completions

    def completion(self, body: Any) -> tuple[BodyFields, list[list[int]]]:
        """The body's fields and each prompt's ids (``MistralCommonBackend.__call__``)."""
        fields = BodyFields.completion(
            body, render_era(self.options.vllm_version).cache_salt)
        self._lora_for(fields.model)
        params = self._tokenize_params(fields)
        out = []
        for prompt in fields.prompts:
            if isinstance(prompt, str):
                ids = self._encode_text(params.pre_tokenization(prompt, self), params)
            else:
                ids = prompt
            out.append(params.post_tokenization(ids, self))
        return fields, out

    def _tokenize_params(self, fields: BodyFields) -> TokenizeParams:
        """The request's length bounds and truncation, this era's rules applied."""
        era = render_era(self.options.vllm_version)
        params = fields.tokenize_params(
            self.max_model_len, clamped=era.output_budget == "clamped",
            unset_generates=era.unset_output_generates,
            tokenizer_side=tokenizer_side(self._runner))
        refuse_unknown_side(params, self._runner)
        return params

    def _encode_text(self, text: str, params: TokenizeParams) -> list[int]:
        try:
            ids: list[int] = self._tokenizer.encode(text, bos=False, eos=False)
        except Exception as exc:  # SentencePiece on a lone surrogate: not a ValueError,
            # so not vLLM's 400 either; no ids to reproduce.
            raise RenderUnsupportedError("prompt", f"mistral_common cannot encode it "
                                         f"({type(exc).__name__}: {exc})") from None
        # vLLM's encode kwargs (TokenizeParams.get_encode_kwargs): a truncation length,
        # except when the body names a side (then the whole text, sliced after).
        length: int | None
        if params.truncation_side is not None and params.truncate_prompt_tokens is not None:
            length = None
        elif params.truncate_prompt_tokens is not None:
            length = params.truncate_prompt_tokens
            if length < 0:
                length = params.truncate_to
        else:
            length = params.max_input_tokens + 1
        special = 1 if params.add_special_tokens else 0
        if length and len(ids) + special > length:  # transformers: `if ... max_length and`
            # truncate_sequences, on the side vLLM loads the tokenizer with
            cut = len(ids) + special - length
            ids = ids[cut:] if params.tokenizer_side == "left" else ids[:len(ids) - cut]
        return [self.bos_id, *ids] if special else ids


def _vllm_messages(messages: Any) -> Any:
    """The messages as vLLM hands them to the tokenizer: assistant ``tool_calls`` always a
    list, long tool-call ids cut to their last 9 characters (copies: the body is not
    changed). Anything else is left for the checks that follow."""
    if not isinstance(messages, list):
        return messages
    out: list[Any] = []
    for message in messages:
        if not isinstance(message, dict):
            out.append(message)
            continue
        message = dict(message)
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls")
            calls = [] if calls is None else calls
            if isinstance(calls, list):
                calls = [_cut_call_id(c) for c in calls]
            message["tool_calls"] = calls
        elif role in ("tool", "tool_results"):
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and len(call_id) > _TOOL_CALL_ID_LENGTH:
                message["tool_call_id"] = call_id[-_TOOL_CALL_ID_LENGTH:]
        out.append(message)
    return out


def _cut_call_id(call: Any) -> Any:
    call = copy.deepcopy(call)  # its arguments are replaced below
    if isinstance(call, dict) and isinstance(call.get("id"), str) and \
            len(call["id"]) > _TOOL_CALL_ID_LENGTH:
        call["id"] = call["id"][-_TOOL_CALL_ID_LENGTH:]
    return call


def _take_arguments(messages: list[dict[str, Any]],
                    conversation: list[dict[str, Any]]) -> None:
    """The tool calls' arguments as vLLM's message parse leaves them in the request: an
    object (``{}`` for malformed or non-object JSON). It shares the call objects with the
    request's messages, which mistral_common then reads."""
    for message, parsed in zip(messages, conversation, strict=True):
        calls, done_calls = message.get("tool_calls") or [], parsed.get("tool_calls", [])
        for call, done in zip(calls, done_calls, strict=True):
            call["function"]["arguments"] = done["function"]["arguments"]


def _adapt_message(message: Mapping[str, Any], sizes: Mapping[int, tuple[int, int]]) -> Any:
    """transformers' ``_maybe_adapt_message``: list contents without untyped parts; an
    image part loaded by the renderer (``sizes``: by the part's identity) carries its
    opened size to :class:`_SizeEncoder` instead of its URL."""
    content = message.get("content")
    if not content or isinstance(content, str):
        return message
    parts = []
    for part in content:
        if not isinstance(part, dict):
            raise RenderRequestError("messages", f"'{type(part).__name__}' object has no "
                                     "attribute 'get'")
        if not part.get("type"):
            continue
        if part["type"] in ("image", "audio"):
            raise RenderUnsupportedError("messages", f"a {part['type']!r} part is not "
                                         "rendered in the mistral mode")
        size = sizes.get(id(part))
        image_url = part.get("image_url")
        if size is not None and part["type"] == "image_url" and isinstance(image_url, dict):
            part = {**part, "image_url": {**image_url, "url": f"{_GRID_URL}{size[0]}x{size[1]}"}}
        parts.append(part)
    return {**message, "content": parts}
