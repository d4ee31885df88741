"""A chat-completions body's messages and tools, as vLLM 0.31 hands them to the template.

Follows ``vllm/entrypoints/chat_utils.py`` (``parse_chat_messages`` and
``_postprocess_messages``) and the request model's validators
(``entrypoints/openai/chat_completion/protocol.py``): text parts become
``{"type": "text", "text": …}`` in 'openai' format or are joined with
newlines in 'string' format; tool messages' list content is joined; tool-call
arguments become objects (``{}`` when they are not a JSON object); tools are
dumped as vLLM's models dump them (``"description": null`` kept, ``strict``
and ``defer_loading`` only when set). Parts other than text go through
:class:`ContentParts`, which refuses them; images of the architectures
``prefixkey.render._media`` reproduces go through its ``ImageParts`` instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from ._errors import RenderRequestError, RenderUnsupportedError

__all__ = ["NO_CHAT_TEMPLATE", "ContentParts", "check_tool_choice", "dump_tools",
           "message_objects", "parse_messages"]

#: transformers' error (vLLM's 400) for a chat without any template to apply.
NO_CHAT_TEMPLATE: Final = (
    "As of transformers v4.44, default chat template is no longer allowed, so you must "
    "provide a chat template if the tokenizer does not define one.")

# Part types whose payload is text (chat_utils.py MM_PARSER_MAP), and the key holding it.
_TEXT_PARTS: Final = {
    "text": "text", "input_text": "text", "output_text": "text", "refusal": "refusal",
    "thinking": "thinking",
}
# Responses API part types: a message made only of these is refused by vLLM's request
# model (observed on its render server: "input_text", "output_text"); beside a "text"
# part they render as text.
_RESPONSES_PARTS: Final = frozenset({"input_text", "output_text"})
# Parts that carry media or embeddings (chat_utils.py), by type or by their payload key.
_MEDIA_PARTS: Final = frozenset({
    "image_url", "input_image", "image_embeds", "audio_embeds", "video_embeds", "prompt_embeds",
    "image_pil", "audio_url", "input_audio", "video_url",
})
_MEDIA_KEYS: Final = ("image_url", "image_pil", "image_embeds", "audio_embeds", "video_embeds",
                      "prompt_embeds", "audio_url", "input_audio", "video_url")
# The fields vLLM's content-part types declare (chat_utils._KNOWN_CONTENT_PART_FIELDS):
# any other field of a text part reaches an 'openai' template with it.
_KNOWN_PART_FIELDS: Final = frozenset({
    "audio_embeds", "audio_url", "closed", "data", "file", "image_embeds", "image_pil",
    "image_url", "input_audio", "name", "prompt_cache_breakpoint", "refusal", "text",
    "thinking", "type", "uuid", "video_embeds", "video_url",
})


class ContentParts:
    """How content parts other than text are rendered: refused (the images of the
    architectures prefixkey reproduces are a subclass's, ``_media.ImageParts``).

    A subclass may return the part as the template should see it (``wrap`` is
    True in 'openai' format) or the placeholder text ('string' format).
    """

    def media_part(self, part_type: str, part: Mapping[str, Any], field: str, *,
                   wrap: bool) -> Any:
        raise RenderUnsupportedError(
            field, f"a {part_type!r} content part needs vLLM's multimodal processor "
            "(placeholder tokens, item hashes), which prefixkey does not run yet")

    def join_texts(self, parts: list[Any]) -> str:
        """A message's content in 'string' format: its parts' texts, one per line."""
        return "\n".join(parts)

    def finish(self) -> None:
        """The end of the parse: what vLLM does once every part is counted (loads them)."""


def _anchors(part: Any) -> bool:
    """A part beside which vLLM's request model lets Responses API parts through."""
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    return kind in ("text", "refusal", "thinking") and isinstance(part.get(kind), str)


def _part_type(part: Mapping[str, Any], field: str) -> str:
    part_type = part.get("type")
    if part_type is None or part.get("uuid") is not None:
        for key in _MEDIA_KEYS:
            if key in part:
                return key
        if "tool_reference" in part:
            return "tool_reference"
        if part_type is None:
            raise RenderRequestError(f"{field}.type", "Missing 'type' field in multimodal part.")
    if not isinstance(part_type, str):
        raise RenderRequestError(f"{field}.type", "Invalid 'type' field in multimodal part.")
    return part_type


def _parse_part(part: Any, field: str, wrap: bool, media: ContentParts) -> Any:
    """One content part: the dict or text the template sees, or None to skip it."""
    if isinstance(part, str):
        return {"type": "text", "text": part} if wrap else part
    if not isinstance(part, dict):
        raise RenderRequestError(field, f"must be an object or a string, got "
                                 f"{type(part).__name__}")
    part_type = _part_type(part, field)
    if part_type in _TEXT_PARTS:
        text = part.get(_TEXT_PARTS[part_type])
        if text is None and part_type in ("text", "refusal"):
            return None  # vLLM skips a text part without text
        if not isinstance(text, str):
            raise RenderRequestError(f"{field}.{_TEXT_PARTS[part_type]}", "must be a string")
        if not wrap:
            return text
        return {"type": "text", "text": text,
                **{k: v for k, v in part.items() if k not in _KNOWN_PART_FIELDS}}
    if part_type == "tool_reference":
        name = part.get("name")
        return {"type": "tool_reference", "name": name} if wrap else name
    if part_type in _MEDIA_PARTS:
        return media.media_part(part_type, part, field, wrap=wrap)
    raise RenderRequestError(f"{field}.type", f"Unsupported chat content part type: "
                             f"{part_type!r}.")


def _tool_call(call: Any, field: str) -> Any:
    """One tool call as vLLM's request model validates and orders it (id, function, type)."""
    if not isinstance(call, dict):
        raise RenderRequestError(field, "assistant tool_calls entries must be objects.")
    kind = call.get("type")
    if kind != "function":
        if kind != "custom":  # neither of vLLM's tool-call models validates it
            raise RenderRequestError(field, "a tool call's type must be 'function' or "
                                     "'custom'")
        return call  # a custom tool call passes validation, then vLLM refuses it (below)
    function = call.get("function")
    if not isinstance(call.get("id"), str) or not isinstance(function, dict) or not all(
            isinstance(function.get(k), str) for k in ("name", "arguments")):
        raise RenderRequestError(field, "a function tool call needs a string id and a function "
                                 "with string name and arguments")
    known = ("id", "function", "type")
    ordered_function = {"arguments": function["arguments"], "name": function["name"],
                        **{k: v for k, v in function.items() if k not in ("arguments", "name")}}
    return {"id": call["id"], "function": ordered_function, "type": "function",
            **{k: v for k, v in call.items() if k not in known}}


def _tool_calls(value: Any, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise RenderRequestError(field, "must be an array")
    return [_tool_call(call, f"{field}[{i}]") for i, call in enumerate(value)]


def message_objects(messages: Any) -> Iterator[tuple[str, dict[str, Any], str]]:
    """``(field, message, role)`` of each message, checked to be an object with a role."""
    if not isinstance(messages, list):
        raise RenderRequestError("messages", "must be an array of messages")
    for i, message in enumerate(messages):
        field = f"messages[{i}]"
        if not isinstance(message, dict):
            raise RenderRequestError(field, "must be an object")
        role = message.get("role")
        if not isinstance(role, str):
            raise RenderRequestError(f"{field}.role", "must be a string")
        yield field, message, role


def parse_messages(messages: Any, content_format: str,
                   media: ContentParts) -> list[dict[str, Any]]:
    """The conversation the template renders (the body's ``messages`` unchanged)."""
    wrap = content_format == "openai"
    conversation: list[dict[str, Any]] = []
    for field, message, role in message_objects(messages):
        content = message.get("content")
        if content is None and "content" in message and role != "assistant":
            raise RenderRequestError(f"{field}.content", f"cannot be null for role {role!r}")
        if content is None:
            parts: list[Any] = []
        elif isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            parts = content
            responses = next((j for j, p in enumerate(parts) if isinstance(p, dict)
                              and isinstance(p.get("type"), str)
                              and p["type"] in _RESPONSES_PARTS), None)
            if responses is not None and not any(_anchors(p) for p in parts):
                # vLLM 0.31's request model accepts these parts only beside a text, refusal
                # or thinking part carrying its text (observed on its render server: alone,
                # beside a bare string or a text part without text, they fail validation).
                raise RenderRequestError(
                    f"{field}.content", "validation errors for ValidatorIterator: Input "
                    f"should be 'text' [type=literal_error, input_value="
                    f"{parts[responses]['type']!r}]", position=responses)
        else:
            raise RenderRequestError(f"{field}.content", "must be a string, an array of "
                                     "parts or null")
        parsed = [q for j, p in enumerate(parts)
                  if (q := _parse_part(p, f"{field}.content[{j}]", wrap, media)) is not None]
        out: dict[str, Any] = {"role": role,
                               "content": parsed if wrap else media.join_texts(parsed)}
        if role == "assistant":
            if message.get("tool_calls") is not None:
                out["tool_calls"] = _tool_calls(message["tool_calls"], f"{field}.tool_calls")
            reasoning = message.get("reasoning")
            if reasoning is None:  # the deprecated name, which vLLM renames
                reasoning = message.get("reasoning_content")
            if reasoning is not None:
                out["reasoning"] = reasoning
                out["reasoning_content"] = reasoning
        elif role == "tool":
            if "tool_call_id" in message:
                out["tool_call_id"] = message["tool_call_id"]
            if isinstance(out["content"], list) and not any(
                    isinstance(item, dict) and item.get("type") != "text"
                    for item in out["content"]):
                texts = [item.get("text", "") for item in out["content"]
                         if isinstance(item, dict) and item.get("type") == "text"]
                out["content"] = "\n".join(texts) if texts else ""
        if isinstance(message.get("name"), str):
            out["name"] = message["name"]
        if isinstance(message.get("task"), str):
            out["task"] = message["task"]
        if role == "developer":
            out["tools"] = _developer_tools(message.get("tools"))
        conversation.append(out)
    _postprocess(conversation)
    media.finish()
    return conversation


# The fields of openai's FunctionDefinition TypedDict, in its order: vLLM's request model
# validates a developer message's tools into it (other keys dropped).
_FUNCTION_FIELDS: Final = ("name", "description", "parameters", "strict")


def _developer_tools(tools: Any) -> Any:
    """A developer message's ``tools`` as vLLM's request model validates them (each
    function's fields in FunctionDefinition's order; the DeepSeek-V3.2 format writes
    them as JSON). Other shapes are left as given."""
    if not isinstance(tools, list) or not all(
            isinstance(t, dict) and isinstance(t.get("function"), dict) for t in tools):
        return tools
    return [{**t, "function": {k: t["function"][k] for k in _FUNCTION_FIELDS
                               if k in t["function"]}} for t in tools]


def _postprocess(conversation: list[dict[str, Any]]) -> None:
    """Tool-call arguments as objects, as chat templates expect them."""
    for i, message in enumerate(conversation):
        if message["role"] != "assistant" or "tool_calls" not in message:
            continue
        calls = message["tool_calls"]
        if not calls:
            del message["tool_calls"]  # templates then take the plain assistant path
            continue
        for j, call in enumerate(calls):
            function = call.get("function")
            if call.get("type", "function") != "function" or not isinstance(function, dict):
                raise RenderRequestError(
                    f"messages[{i}].tool_calls", "chat completions only support assistant "
                    "tool_calls of type 'function'.", position=j)
            arguments = function.get("arguments")
            if not arguments:
                function["arguments"] = {}
                continue
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except json.JSONDecodeError:
                    arguments = None  # malformed history: vLLM coerces it to {}
                except (RecursionError, ValueError) as exc:
                    # Valid JSON Python's parser gives up on (nesting past the
                    # recursion limit, an int past 4,300 digits): not vLLM's {}.
                    raise RenderUnsupportedError(
                        f"messages[{i}].tool_calls[{j}].function.arguments",
                        "a JSON string Python's json parser refuses "
                        f"({type(exc).__name__}: {str(exc)[:120]})") from None
            function["arguments"] = arguments if isinstance(arguments, dict) else {}


def _tool_dump(tool: Any, i: int) -> dict[str, Any]:
    field = f"tools[{i}]"
    if not isinstance(tool, dict):
        raise RenderRequestError(field, "must be an object")
    if tool.get("type", "function") != "function":
        raise RenderRequestError(f"{field}.type", "must be 'function'")
    function = tool.get("function")
    if not isinstance(function, dict):
        raise RenderRequestError(f"{field}.function", "is required (an object)")
    name = function.get("name")
    if not isinstance(name, str):
        raise RenderRequestError(f"{field}.function.name", "must be a string")
    description = function.get("description")
    if description is not None and not isinstance(description, str):
        raise RenderRequestError(f"{field}.function.description", "must be a string or null")
    parameters = function.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        raise RenderRequestError(f"{field}.function.parameters", "must be an object or null")
    strict = function.get("strict")
    defer = function.get("defer_loading")
    tool_defer = tool.get("defer_loading")
    for value, where in ((strict, "function.strict"), (defer, "function.defer_loading"),
                         (tool_defer, "defer_loading")):
        if value is not None and not isinstance(value, bool):
            raise RenderUnsupportedError(f"{field}.{where}", "only true, false or null are "
                                         "reproduced (pydantic's coercions are not)")
    if defer is None:
        defer = tool_defer
    dumped_function: dict[str, Any] = {"name": name, "description": description,
                                       "parameters": parameters}
    if strict is not None:
        dumped_function["strict"] = strict
    if defer is not None:
        dumped_function["defer_loading"] = defer
    dumped: dict[str, Any] = {"type": "function", "function": dumped_function}
    if tool_defer is not None:
        dumped["defer_loading"] = tool_defer
    return dumped


def dump_tools(tools: Any) -> list[dict[str, Any]] | None:
    """The body's ``tools`` as ``[tool.model_dump() for tool in request.tools]``."""
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise RenderRequestError("tools", "must be an array")
    if not tools:
        raise RenderRequestError("tools", "`tools` must not be an empty array. Either provide "
                                 "at least one tool or omit the field entirely.")
    return [_tool_dump(tool, i) for i, tool in enumerate(tools)]


def check_tool_choice(body: Mapping[str, Any], tools: list[dict[str, Any]] | None,
                      has_tool_parser: bool, auto_tools: bool) -> Any:
    """The request's ``tool_choice`` after vLLM's validation (protocol + online renderer)."""
    # Absent, it is "auto" with tools and "none" without.
    choice = body.get("tool_choice", "auto" if tools else "none")
    if choice is not None and choice != "none":
        if tools is None:
            raise RenderRequestError("tool_choice", "When using `tool_choice`, `tools` must be "
                                     "set.")
        if isinstance(choice, dict):
            function = choice.get("function")
            if not isinstance(function, dict):
                raise RenderRequestError("tool_choice.function", "Invalid value for `function` "
                                         "in `tool_choice`!")
            name = function.get("name")
            if not isinstance(name, str) or not name:
                raise RenderRequestError("tool_choice.function.name",
                                         "Invalid `name` in `function` in `tool_choice`!")
            if not any(t["function"]["name"] == name for t in tools):
                raise RenderRequestError("tool_choice", "The tool specified in `tool_choice` "
                                         "does not match any of the specified `tools`")
        elif choice not in ("auto", "required"):
            raise RenderRequestError("tool_choice", f"Invalid value for `tool_choice`: "
                                     f"{choice}! Only named tools, \"none\", \"auto\" or "
                                     "\"required\" are supported.")
        if not has_tool_parser:
            if choice == "auto" and not auto_tools:
                raise RenderRequestError("tool_choice", '"auto" tool choice requires '
                                         "--enable-auto-tool-choice and --tool-call-parser "
                                         "to be set")
            if choice != "auto":
                raise RenderRequestError("tool_choice", "a tool_choice other than \"auto\" "
                                         "requires --tool-call-parser to be set")
    return choice
