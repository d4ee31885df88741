"""``prefixkey render``: OpenAI bodies in, request-format lines (token ids) out.

Each input line is ``{"id", "endpoint", "body", …}`` (with
``placeholder_token_ids`` when the body has images: per image, the token ids
the model's processor puts in the prompt); each output line is a
request-format line (docs/request-format.md): the input's other fields, then
``token_ids`` and the ``lora``, ``cache_salt`` and ``mm_items`` the body
implies, plus ``prompt`` (the rendered chat text), so that
``prefixkey render … | prefixkey hash`` composes. The server flags are
vLLM's own; :func:`add_render_options` and :func:`renderer_or_refusal` are
shared with ``prefixkey hash --model-dir``, whose per-line expansion is
:func:`rendered_lines`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from typing import IO, Any, Final

from ..errors import InvalidRequestError, PrefixKeyError
from ..jsonl import JsonLimits, bounded_lines, error_record, parse_json_line
from ._common import Commands, add_limit_options, fail, input_name, json_limits, open_input, warn

__all__ = ["RefusedRenderer", "add_render_options", "options_from_args", "register",
           "rendered_lines", "renderer_or_refusal"]

_NO_RENDER = "needs the render extra: pip install 'prefixkey[render]'"
# A line's fields that are the renderer's input, not the request line's.
_RENDER_INPUTS: Final = ("endpoint", "body", "placeholder_token_ids")
# vLLM reads --max-model-len as a human-readable int: k/m/g/t are powers of 1000 (decimals
# allowed), K/M/G/T powers of 1024; -1 and "auto" mean the model's own length.
_LENGTH: Final = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_SCALE: Final = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
                 "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _max_model_len(text: str) -> int | None:
    text = text.strip()
    if text in ("auto", "-1"):
        return None
    match = _LENGTH.fullmatch(text)
    try:
        if match is None:
            return int(text)
        number, suffix = match.groups()
        if suffix.isupper():
            return int(number) * _SCALE[suffix]  # no decimals with binary suffixes
        return int(float(number) * _SCALE[suffix])
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a length: {text!r}") from None


def add_render_options(cmd: argparse.ArgumentParser, *, required: bool) -> None:
    """The model folder and the vLLM server flags that change rendering."""
    group = cmd.add_argument_group("rendering (vLLM 0.31 server flags)")
    group.add_argument("--model-dir", required=required, metavar="DIR",
                       help="the local model folder the server serves (config.json, "
                       "tokenizer files, chat template)")
    group.add_argument("--model", metavar="NAME",
                       help="vLLM's --model as the server was given it (default: the folder "
                       "as given); the served name unless --served-model-name says otherwise")
    group.add_argument("--served-model-name", action="append", metavar="NAME",
                       help="a served name (repeat for several)")
    group.add_argument("--tokenizer", metavar="DIR", help="vLLM's --tokenizer: a local folder")
    group.add_argument("--tokenizer-mode", default="auto", metavar="MODE",
                       help="vLLM's --tokenizer-mode (auto, hf, or mistral: rendered with "
                       "mistral_common, extra 'mistral'; the others are refused)")
    group.add_argument("--vllm-version", default="0.31.0", metavar="X",
                       help="the server's vLLM release (default 0.31.0; the releases verified "
                       "for rendering: docs/render-releases.md); hash: also the release of "
                       "lines without vllm_version")
    group.add_argument("--chat-template", metavar="FILE",
                       help="vLLM's --chat-template: a file, or the template itself")
    group.add_argument("--chat-template-content-format", default="auto",
                       choices=("auto", "string", "openai"),
                       help="how message content reaches the template (default: auto, "
                       "detected from the template)")
    group.add_argument("--default-chat-template-kwargs", metavar="JSON",
                       help="vLLM's --default-chat-template-kwargs (a JSON object)")
    group.add_argument("--trust-request-chat-template", action="store_true",
                       help="use a body's chat_template (else vLLM's 400)")
    group.add_argument("--max-model-len", type=_max_model_len, metavar="N",
                       help="the context length, as vLLM reads it (32k, 32K, auto; default: "
                       "the folder's)")
    group.add_argument("--enable-auto-tool-choice", action="store_true",
                       help="accept tools without tool_choice (needs --tool-call-parser)")
    group.add_argument("--tool-call-parser", metavar="NAME",
                       help="vLLM's --tool-call-parser (it decides which tool_choice values "
                       "are accepted, not the ids)")
    group.add_argument("--exclude-tools-when-tool-choice-none", action="store_true",
                       help="leave tools out of the template when tool_choice is none")
    group.add_argument("--lora-modules", action="append", default=[], metavar="NAME=PATH",
                       help="a static LoRA adapter, NAME=PATH or vLLM's JSON form (repeat for "
                       "several)")
    media = cmd.add_argument_group("image parts (docs/multimodal.md)")
    media.add_argument("--allowed-local-media-path", metavar="DIR",
                       help="file:// image URLs load only from under this folder (none: no file)")
    media.add_argument("--allowed-media-domains", nargs="+", metavar="HOST",
                       help="the hosts http(s) image URLs may name (the caller fetches them)")
    media.add_argument("--mm-hasher-algorithm", default="blake3",
                       choices=("blake3", "sha256", "sha512"),
                       help="vLLM's --mm-hasher-algorithm (default blake3)")
    media.add_argument("--media-io-kwargs", metavar="JSON",
                       help='vLLM\'s --media-io-kwargs, e.g. \'{"image": {...}}\'')
    media.add_argument("--mm-processor-kwargs", metavar="JSON",
                       help='vLLM\'s --mm-processor-kwargs, e.g. \'{"max_pixels": 401408}\'')
    media.add_argument("--limit-mm-per-prompt", metavar="JSON",
                       help='vLLM\'s --limit-mm-per-prompt, e.g. \'{"image": 2}\'')
    media.add_argument("--trust-request-mm-kwargs", action="store_true",
                       help="a body's own mm_processor_kwargs are taken (else vLLM's 400)")


def _harmony_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    """The replica's gpt-oss settings, read as vLLM reads its environment: the edge is the
    only place prefixkey reads them (set them as the replica has them)."""
    from ..render import ModelFolderError

    flag = environ.get("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS", "0")
    try:
        system_instructions = bool(int(flag))  # vLLM's own parse: an int, nonzero is on
    except ValueError:
        raise ModelFolderError("VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS",
                               f"must be an integer (vLLM will not start), got {flag!r}"
                               ) from None
    return {"gpt_oss_harmony_system_instructions": system_instructions,
            "system_start_date": environ.get("VLLM_SYSTEM_START_DATE")}


def options_from_args(args: argparse.Namespace,
                      environ: Mapping[str, str] | None = None) -> Any:
    """The ServerOptions the flags describe (raises PrefixKeyError or ImportError).

    ``environ`` (default ``os.environ``) gives the replica's
    ``VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS`` and ``VLLM_SYSTEM_START_DATE``.
    """
    from ..render import ModelFolderError, ServerOptions

    kwargs: Any = None
    if args.default_chat_template_kwargs is not None:
        try:
            kwargs = json.loads(args.default_chat_template_kwargs)
        except json.JSONDecodeError as exc:
            raise ModelFolderError("--default-chat-template-kwargs", f"not JSON: {exc}") from None
    media_io_kwargs: Any = {}
    if args.media_io_kwargs is not None:
        try:
            media_io_kwargs = json.loads(args.media_io_kwargs)
        except json.JSONDecodeError as exc:
            raise ModelFolderError("--media-io-kwargs", f"not JSON: {exc}") from None
    json_flags: dict[str, Any] = {}
    for flag, name in (("--mm-processor-kwargs", "mm_processor_kwargs"),
                       ("--limit-mm-per-prompt", "limit_mm_per_prompt")):
        value = getattr(args, name, None)
        if value is not None:
            try:
                json_flags[name] = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ModelFolderError(flag, f"not JSON: {exc}") from None
    options = ServerOptions(
        model=args.model or args.model_dir,
        served_model_name=tuple(args.served_model_name or ()),
        tokenizer=args.tokenizer,
        tokenizer_mode=args.tokenizer_mode,
        max_model_len=args.max_model_len,
        chat_template=args.chat_template,
        chat_template_content_format=args.chat_template_content_format,
        default_chat_template_kwargs=kwargs,
        trust_request_chat_template=args.trust_request_chat_template,
        enable_auto_tool_choice=args.enable_auto_tool_choice,
        tool_call_parser=args.tool_call_parser,
        exclude_tools_when_tool_choice_none=args.exclude_tools_when_tool_choice_none,
        lora_modules=ServerOptions.lora_modules_from(args.lora_modules),
        allowed_local_media_path=args.allowed_local_media_path,
        allowed_media_domains=tuple(args.allowed_media_domains or ()),
        mm_hasher_algorithm=args.mm_hasher_algorithm,
        media_io_kwargs=media_io_kwargs,
        trust_request_mm_kwargs=getattr(args, "trust_request_mm_kwargs", False),
        **json_flags,
        vllm_version=args.vllm_version,
        **_harmony_environment(os.environ if environ is None else environ),
    )
    return options


class RefusedRenderer:
    """A folder that cannot be rendered exactly: every body gets the same typed error.

    Like every other command, ``render`` (and ``hash --model-dir``) then answers one
    error record per input line and exits 1, so a pipeline keeps its line count.
    """

    def __init__(self, error: PrefixKeyError) -> None:
        self.error = error

    def render(self, endpoint: str, body: Any, **_: Any) -> tuple[Any, ...]:
        raise self.error


def renderer_or_refusal(args: argparse.Namespace, command: str) -> Any:
    """The Renderer the options describe, or a RefusedRenderer for a folder it cannot render.

    Bad flags, and folders vLLM itself would not start with (``ModelFolderError``), still
    raise: those are usage errors (exit 2). A ``RenderUnsupportedError`` of the folder
    (a tokenizer or renderer prefixkey does not reproduce) answers every line instead.
    """
    from ..render import Renderer, RenderUnsupportedError

    options = options_from_args(args)
    try:
        return Renderer(options, args.model_dir)
    except RenderUnsupportedError as exc:
        warn(command, f"every body will be an error record: {exc}")
        return RefusedRenderer(exc)


def _lora_json(lora: Any) -> dict[str, Any] | None:
    if lora is None:
        return None
    return {"name": lora.name, "path": lora.path, "int_id": lora.int_id}


def _mm_json(items: Iterable[Any]) -> list[dict[str, Any]]:
    return [{"identifier": m.identifier, "offset": m.offset, "length": m.length} for m in items]


def _render_body(renderer: Any, obj: Mapping[str, Any]) -> tuple[Any, ...]:
    if "endpoint" not in obj or "body" not in obj:
        raise InvalidRequestError("endpoint" if "endpoint" not in obj else "body", "is required")
    endpoint = obj["endpoint"]
    if not isinstance(endpoint, str):
        raise InvalidRequestError("endpoint", "must be a string")
    placeholders = obj.get("placeholder_token_ids")
    if placeholders is None:
        return tuple(renderer.render(endpoint, obj["body"]))
    from ..render import Renderer

    if isinstance(renderer, RefusedRenderer):
        raise renderer.error
    if not isinstance(renderer, Renderer):
        raise InvalidRequestError("placeholder_token_ids", "the render endpoint places images "
                                  "itself: leave it out with --render-url")
    return tuple(renderer.render(endpoint, obj["body"], placeholder_token_ids=placeholders))


def _prompt_list(obj: Mapping[str, Any]) -> bool:
    """Whether a completions body's ``prompt`` is a list of prompts (not one id list)."""
    prompt = obj["body"].get("prompt") if isinstance(obj["body"], Mapping) else None
    return (obj["endpoint"] == "/v1/completions" and isinstance(prompt, list)
            and any(isinstance(p, (str, list)) for p in prompt))


def render_record(renderer: Any, obj: Any,
                  warnings: list[str] | None = None) -> dict[str, Any]:
    """One ``prefixkey render`` output line for one decoded input line (the rendering's
    warnings appended to ``warnings``)."""
    if not isinstance(obj, Mapping):
        raise InvalidRequestError("<line>", f"must be a JSON object, got {type(obj).__name__}")
    rendered = _render_body(renderer, obj)
    if warnings is not None:
        warnings.extend(rendered[0].warnings)
    record = {k: v for k, v in obj.items() if k not in _RENDER_INPUTS}
    first = rendered[0]
    ids = [list(r.token_ids) for r in rendered]
    record["token_ids"] = ids if _prompt_list(obj) else ids[0]
    record["lora"] = _lora_json(first.request.lora)
    record["cache_salt"] = first.request.cache_salt
    record["mm_items"] = _mm_json(first.request.mm_items)
    if first.prompt is not None:
        record["prompt"] = first.prompt
    return record


def _merge_field(line: dict[str, Any], name: str, value: Any) -> None:
    """A body-implied value wins over the line's none; two different values are an error."""
    given = line.get(name)
    if value is None:
        return
    if given is not None and given != value:
        raise InvalidRequestError(name, f"the line says {given!r} but the body implies "
                                  f"{value!r}")
    line[name] = value


def rendered_lines(renderer: Any, obj: Any,
                   warnings: list[str] | None = None) -> list[dict[str, Any]]:
    """``hash --model-dir``: a line with ``endpoint`` + ``body`` as request lines to hash.

    A line without them passes unchanged. The token ids are TokenIds (checked
    once, by the renderer); a list of prompts gives one line per prompt, with
    ids ``"<id>#<n>"``. The rendering's warnings are appended to ``warnings``.
    """
    if not isinstance(obj, dict) or ("endpoint" not in obj and "body" not in obj):
        return [obj]
    if "token_ids" in obj:
        raise InvalidRequestError("token_ids", "give token_ids or endpoint + body, not both")
    rendered = _render_body(renderer, obj)
    if warnings is not None:
        warnings.extend(w for w in rendered[0].warnings if w not in warnings)
    lines = []
    for n, item in enumerate(rendered):
        line = {k: v for k, v in obj.items() if k not in _RENDER_INPUTS}
        line["token_ids"] = item.token_ids
        _merge_field(line, "lora", _lora_json(item.request.lora))
        _merge_field(line, "cache_salt", item.request.cache_salt)
        _merge_field(line, "mm_items", _mm_json(item.request.mm_items) or None)
        if _prompt_list(obj):
            line["id"] = f"{obj.get('id')}#{n}"
        lines.append(line)
    return lines


def _render_lines(renderer: Any, lines: Iterable[bytes], out: IO[str],
                  limits: JsonLimits) -> tuple[int, int, str]:
    count = failures = 0
    first = ""
    for number, raw in enumerate(bounded_lines(lines, limits), start=1):
        if not raw.strip():
            continue
        count += 1
        request_id: Any = None
        try:
            obj = parse_json_line(raw, limits)
            if isinstance(obj, dict):
                request_id = obj.get("id")
            warnings: list[str] = []
            record = render_record(renderer, obj, warnings)
            for warning in warnings:
                warn("render", f"line {number}: {warning}")
        except PrefixKeyError as exc:
            record = error_record(exc, request_id, number)
            if not failures:
                hint = record["error"].get("hint")
                first = (f"line {number}: {type(exc).__name__}: {exc}"
                         + (f"; hint: {hint}" if hint else ""))
            failures += 1
        out.write(json.dumps(record) + "\n")
    return count, failures, first


def _run(args: argparse.Namespace) -> int:
    try:
        renderer = renderer_or_refusal(args, "render")
    except PrefixKeyError as exc:  # a MissingExtraError names its extra (mistral)
        return fail("render", exc)
    except ImportError:
        return fail("render", _NO_RENDER)
    with open_input(args.file) as source:
        count, failures, first = _render_lines(renderer, source, sys.stdout, json_limits(args))
    if not count:
        warn("render", f"no requests in {input_name(args.file)} (empty input), nothing rendered")
    if failures:
        print(f"prefixkey render: {failures} request(s) could not be rendered (first: {first})",
              file=sys.stderr)
    return 1 if failures else 0


def register(commands: Commands) -> None:
    """Add ``prefixkey render``."""
    cmd = commands.add_parser(
        "render", help="render OpenAI bodies into token ids as vLLM 0.31 does (docs/render.md)")
    cmd.add_argument("file", nargs="?", default="-",
                     help="JSON Lines of {id, endpoint, body}, or - for stdin")
    add_render_options(cmd, required=True)
    add_limit_options(cmd)
    cmd.set_defaults(run=_run)
