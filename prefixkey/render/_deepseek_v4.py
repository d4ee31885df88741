"""DeepSeek-V4's chat prompt (vLLM tokenizer mode ``deepseek_v4``): a Python encoder.

vLLM 0.29 on gives ``DeepseekV4ForCausalLM`` and ``DeepseekV4ForConditionalGeneration``
the tokenizer mode ``deepseek_v4`` (config/model.py): the tokenizer is
``TokenizersBackend.from_pretrained`` and chat bodies are rendered by an encoder
(tokenizers/deepseek_v4_encoding.py) whose string is encoded without special tokens.
The renderer hands it vLLM's parsed conversation (renderers/deepseek_v4.py:
'string' content format before 0.31, 'openai' from 0.31), so :func:`render_prompt`
takes that conversation. The facts reproduced (checked against vLLM's own encoder
by tests/render/test_deepseek_prompts.py over tests/render/deepseek_prompts*.jsonl):

- The prompt opens with the BOS text. Tool messages are merged into user turns as
  ``<tool_result>…</tool_result>`` blocks (a tool or user message right after a
  merged user turn joins it, parts separated by a blank line), ordered by the ids
  of the previous assistant message's tool calls.
- In thinking mode, with ``drop_thinking`` and no message carrying tools, earlier
  turns lose their reasoning and developer messages before the last user turn go.
- The first message is preceded by the reasoning-effort text (thinking mode).
  Assistant turns are ``[reasoning</think>]content[DSML tool calls]<eos>``; a user
  or developer turn (or a system turn that ends the conversation or precedes an
  assistant turn) followed by nothing or an assistant turn opens ``<\uff5cAssistant\uff5c>``
  then ``<think>`` or ``</think>``. Messages may carry a ``task`` (its special token).
- Request level: thinking is on unless ``thinking``/``enable_thinking`` is set
  false; the request's ``reasoning_effort`` overrides ``chat_template_kwargs``'s and
  sets ``enable_thinking`` (``"none"``: off) unless the kwargs have one; efforts map
  to ``low`` (low, minimal, medium), ``max``, or ``high`` (anything else); request
  tools go to the first system message from 0.31 (a new first message before).

Errors vLLM's encoder raises are :class:`RenderRequestError` with the status its
server answers (ValueError 400, NotImplementedError 501, others 500) and its message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ._deepseek_v32 import without_thinking
from ._errors import RenderRequestError, RenderUnsupportedError

__all__ = [
    "DIALECT_V4",
    "V4_RELEASES",
    "Dialect",
    "V4Release",
    "encode_messages",
    "encode_request",
    "encode_with",
    "render_prompt",
    "request_kwargs",
    "thinking_default_on",
    "v4_release",
]

BOS: Final = "<\uff5cbegin▁of▁sentence\uff5c>"
EOS: Final = "<\uff5cend▁of▁sentence\uff5c>"
THINK: Final = "<think>"
END_THINK: Final = "</think>"
DSML: Final = "\uff5cDSML\uff5c"
USER: Final = "<\uff5cUser\uff5c>"
ASSISTANT: Final = "<\uff5cAssistant\uff5c>"
SYSTEM: Final = "<\uff5cSystem\uff5c>"
LATEST_REMINDER: Final = "<\uff5clatest_reminder\uff5c>"
IMAGE: Final = "<\uff5cdeepseek_image\uff5c>"
TASK_TOKENS: Final = {name: f"<\uff5c{name}\uff5c>" for name in
                      ("action", "query", "authority", "domain", "title", "read_url")}
# Roles without_thinking keeps before the last user turn (assistants lose their reasoning).
_KEPT_ROLES: Final = frozenset({"user", "system", "tool", "latest_reminder",
                                "direct_search_results"})
_RESPONSE_FORMAT: Final = ("## Response Format:\n\nYou MUST strictly adhere to the "
                           "following schema to reply:\n")

_V4_EFFORT_TEXT: Final = {
    "low": "",
    "high": (
        "Reasoning Effort: Absolute maximum with no shortcuts permitted.\n"
        "You MUST be very thorough in your thinking and comprehensively decompose the "
        "problem to resolve the root cause, rigorously stress-testing your logic against "
        "all potential paths, edge cases, and adversarial scenarios.\n"
        "Explicitly write out your entire deliberation process, documenting every "
        "intermediate step, considered alternative, and rejected hypothesis to ensure "
        "absolutely no assumption is left unchecked.\n\n"),
    "max": (
        "Reasoning Effort: Beyond maximum — exhaustive, relentless, and uncompromising.\n"
        "You MUST reason with the utmost depth and rigor, leaving absolutely nothing to "
        "chance: exhaustively decompose the problem into its most fundamental components, "
        "trace every causal chain to its root, and resolve the underlying cause rather "
        "than any surface symptom.\n"
        "Do not stop reasoning until you have independently verified the solution from "
        "multiple angles and are certain that no assumption remains unchecked and no error "
        "remains undiscovered.\n\n"),
}


def _fail(kind: type[BaseException], message: str, field: str = "messages") -> RenderRequestError:
    """vLLM's answer to an exception of ``kind`` out of its encoder
    (entrypoints/serve/exception_handling/error_response.py)."""
    status = (400 if issubclass(kind, (ValueError, TypeError, OverflowError))
              else 501 if issubclass(kind, NotImplementedError) else 500)
    return RenderRequestError(field, message, status=status)


def _tools_text(block: str, invoke: str, parameter: str, schemas: str) -> str:
    def tag(name: str) -> str:
        return f"{DSML}{name}"
    return (
        "## Tools\n\nYou have access to a set of tools to help answer the user's question. "
        f"You can invoke tools by writing a \"<{tag(block)}>\" block like the following:\n\n"
        f"<{tag(block)}>\n<{tag(invoke)} name=\"$TOOL_NAME\">\n"
        f"<{tag(parameter)} name=\"$PARAMETER_NAME\" string=\"true|false\">$PARAMETER_VALUE"
        f"</{tag(parameter)}>\n...\n</{tag(invoke)}>\n<{tag(invoke)} name=\"$TOOL_NAME2\">\n"
        f"...\n</{tag(invoke)}>\n</{tag(block)}>\n\n"
        "String parameters should be specified as is and set `string=\"true\"`. For all "
        "other types (numbers, booleans, arrays, objects), pass the value in JSON format "
        "and set `string=\"false\"`.\n\n"
        f"If thinking_mode is enabled (triggered by {THINK}), you MUST output your complete "
        f"reasoning inside {THINK}...{END_THINK} BEFORE any tool calls or final response."
        f"\n\nOtherwise, output directly after {END_THINK} with tool calls or final "
        f"response.\n\n### Available Tool Schemas\n\n{schemas}\n\nYou MUST strictly follow "
        "the above defined tool name and parameter schemas to invoke tool calls.\n")


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Dialect:
    """What V4 and V4.1's encoders do differently (one record each)."""

    name: str
    #: DSML tag names: tool-call block, invoke, parameter.
    block_tag: str
    invoke_tag: str
    parameter_tag: str
    #: The message key holding an assistant turn's reasoning.
    reasoning_key: str
    #: The effort prefix of the first message in thinking mode; raises on a bad effort
    #: (checked at every message, as vLLM's encoder does).
    effort_prefix: Callable[[Any], str]
    #: Whether a first system message (or an effort prefix) opens with ``<\uff5cSystem\uff5c>``
    #: and a later system message is a turn of its own (V4.1).
    system_turns: bool
    #: How content lists are flattened by the encoder (None: not at all).
    flatten_joiner: str | None
    #: The exception kind of the encoder's own checks (ValueError in V4, assert in V4.1).
    check_error: type[BaseException]
    #: Tool-call arguments: parsed strictly (V4) or tolerantly (V4.1).
    tolerant_arguments: bool
    #: A user turn made only of tool results does not count as the last user turn (0.33).
    tool_only_user_is_turn: bool = True
    #: Messages an unknown role raises with, and its exception kind.
    unknown_role: tuple[type[BaseException], str] = (ValueError, "Invalid role: {role}")


def _v4_effort(effort: Any) -> str:
    effort = effort or "low"
    if effort not in _V4_EFFORT_TEXT:
        raise _fail(ValueError, f"Invalid reasoning effort: {effort}, expected one of "
                    f"{list(_V4_EFFORT_TEXT)}")
    return _V4_EFFORT_TEXT[effort]


DIALECT_V4: Final = Dialect(
    name="deepseek_v4", block_tag="tool_calls", invoke_tag="invoke",
    parameter_tag="parameter", reasoning_key="reasoning", effort_prefix=_v4_effort,
    system_turns=False, flatten_joiner="\n\n", check_error=ValueError,
    tolerant_arguments=False)


def _flatten(content: Any, joiner: str | None) -> Any:
    if joiner is None or not isinstance(content, list):
        return content
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            parts.append(str(block))
        elif block.get("type") in ("image", "image_url"):
            parts.append(IMAGE)
        elif block.get("type") == "text":
            parts.append(block.get("text", ""))
        else:
            raise _fail(ValueError, f"Unsupported content block type: {block.get('type')!r}")
    return joiner.join(parts)


def _merge_tools(messages: Sequence[Mapping[str, Any]], d: Dialect) -> list[dict[str, Any]]:
    """Tool messages become tool-result blocks of user turns; consecutive turns merge."""
    merged: list[dict[str, Any]] = []
    for source in messages:
        msg = copy.deepcopy(dict(source))
        role = msg.get("role")
        last = merged[-1] if merged else None
        joinable = last is not None and last.get("role") == "user" and "content_blocks" in last
        if role == "tool":
            block = {"type": "tool_result", "tool_use_id": msg.get("tool_call_id", ""),
                     "content": msg.get("content", ""), **_images_of(msg)}
            if joinable:
                assert last is not None
                last["content_blocks"].append(block)
            else:
                merged.append({"role": "user", "content_blocks": [block]})
        elif role == "user":
            if d.system_turns:  # V4.1 keeps the message and its own blocks
                blocks = msg.get("content_blocks")
                if blocks is None:
                    blocks = [{"type": "text", "text": msg.get("content", ""),
                               **_images_of(msg)}]
                if joinable and last is not None and last.get("task") is None:
                    last["content_blocks"].extend(blocks)
                else:
                    msg["content_blocks"] = blocks
                    merged.append(msg)
                continue
            text = _flatten(msg.get("content", ""), d.flatten_joiner)
            text_block = {"type": "text", "text": text}
            if joinable and last is not None and last.get("task") is None:
                last["content_blocks"].append(text_block)
            else:
                new = {"role": "user", "content": text, "content_blocks": [text_block]}
                new.update({k: msg[k] for k in ("task", "wo_eos", "mask") if k in msg})
                merged.append(new)
        else:
            merged.append(msg)
    return merged


def _images_of(msg: Mapping[str, Any]) -> dict[str, Any]:
    """The message's image positions, which V4.1 (0.33) carries into its blocks."""
    return {"_image_indices": msg["_image_indices"]} if "_image_indices" in msg else {}


def _image_order(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """The images in the order the encoded messages hold them (vLLM 0.33's V4.1
    renderer reorders the request's images so): a user turn's by its text and tool-result
    blocks, any other message's its own."""
    order: list[int] = []
    for msg in messages:
        if msg.get("role") == "user" and msg.get("content_blocks"):
            for block in msg["content_blocks"]:
                if block.get("type") in ("text", "tool_result"):
                    order.extend(block.get("_image_indices", []))
        else:
            order.extend(msg.get("_image_indices", []))
    return order


def _sort_results(messages: list[dict[str, Any]]) -> None:
    order: dict[Any, int] = {}
    for msg in messages:
        role = msg.get("role")
        if role == "assistant" and msg.get("tool_calls"):
            order = {}
            for idx, call in enumerate(msg["tool_calls"]):
                call_id = call.get("id") or call.get("function", {}).get("id", "")
                if call_id:
                    order[call_id] = idx
        elif role == "user" and msg.get("content_blocks"):
            results = [b for b in msg["content_blocks"] if b.get("type") == "tool_result"]
            if len(results) > 1 and order:
                ordered = iter(sorted(
                    results, key=lambda b: order.get(b.get("tool_use_id", ""), 0)))
                msg["content_blocks"] = [next(ordered) if b.get("type") == "tool_result" else b
                                         for b in msg["content_blocks"]]


def _last_user(messages: Sequence[Mapping[str, Any]], d: Dialect) -> int:
    for idx in range(len(messages) - 1, -1, -1):
        role = messages[idx].get("role")
        if role in ("user", "developer") or (d.system_turns and role == "system" and idx > 0):
            blocks = messages[idx].get("content_blocks")
            if (not d.tool_only_user_is_turn and blocks
                    and not any(b.get("type") in ("text", "image", "image_url") for b in blocks)):
                continue
            return idx
    return -1


def _arguments(arguments: Any, d: Dialect) -> Any:
    if d.tolerant_arguments:
        if not isinstance(arguments, dict):
            value = arguments
            for _ in range(2):  # JSON strings, double-encoded ones too
                if not isinstance(value, str):
                    break
                try:
                    value = json.loads(value)
                except ValueError:
                    break
            return value if isinstance(value, dict) else {"arguments": arguments}
        return arguments
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError as exc:
            raise _fail(ValueError, str(exc)) from None
    return arguments


def _tool_calls(calls: Sequence[Mapping[str, Any]], d: Dialect) -> str:
    invokes = []
    for call in calls:
        function = call["function"]
        arguments = _arguments(function["arguments"], d)
        if not isinstance(arguments, dict):
            raise _fail(AttributeError,
                        f"'{type(arguments).__name__}' object has no attribute 'items'")
        params = "\n".join(
            f'<{DSML}{d.parameter_tag} name="{key}" '
            f'string="{"true" if isinstance(v, str) else "false"}">'
            f"{v if isinstance(v, str) else to_json(v)}</{DSML}{d.parameter_tag}>"
            for key, v in arguments.items())
        invokes.append(f'<{DSML}{d.invoke_tag} name="{function["name"]}">\n{params}\n'
                       f"</{DSML}{d.invoke_tag}>")
    body = "\n".join(invokes)
    return f"\n\n<{DSML}{d.block_tag}>\n{body}\n</{DSML}{d.block_tag}>"


def _extras(msg: Mapping[str, Any], d: Dialect) -> str:
    text = ""
    tools = msg.get("tools")
    if tools:
        schemas = "\n".join(to_json(tool["function"]) for tool in tools)
        text += "\n\n" + _tools_text(d.block_tag, d.invoke_tag, d.parameter_tag, schemas)
    if msg.get("response_format"):
        text += "\n\n" + _RESPONSE_FORMAT + to_json(msg["response_format"])
    return text


def _user_text(msg: Mapping[str, Any], content: Any) -> str:
    blocks = msg.get("content_blocks")
    if not blocks:
        return f"{content or ''}"
    parts = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            parts.append(block.get("text", ""))
        elif kind in ("image", "image_url"):
            parts.append(IMAGE)
        elif kind == "tool_result":
            result = block.get("content", "")
            if isinstance(result, list):
                result = "\n\n".join(b.get("text", "") if b.get("type") == "text"
                                     else f"[Unsupported {b.get('type')}]" for b in result)
            parts.append(f"<tool_result>{result}</tool_result>")
        else:
            parts.append(f"[Unsupported {kind}]")
    try:
        return "\n\n".join(parts)
    except TypeError as exc:
        raise _fail(TypeError, str(exc)) from None


def _render(index: int, messages: list[dict[str, Any]], d: Dialect, thinking: bool,
            drop: bool, effort: Any, last_user: int) -> str:
    msg = messages[index]
    role = msg.get("role")
    content = _flatten(msg.get("content"), d.flatten_joiner)
    prefix = d.effort_prefix(effort)
    prefix = prefix if index == 0 and thinking else ""
    opens_system = d.system_turns and index == 0 and (bool(prefix) or role == "system")
    prompt = SYSTEM if opens_system else ""
    prompt += prefix
    if role == "system":
        if d.system_turns and index > 0:
            prompt += SYSTEM
        prompt += f"{content or ''}" + _extras(msg, d)
    elif role == "developer":
        if not content:
            raise _fail(d.check_error, f"Invalid message for role `{role}`: {msg}")
        prompt += USER + f"{content}" + _extras(msg, d)
    elif role == "user":
        prompt += USER + _user_text(msg, content)
    elif role == "latest_reminder":
        prompt += LATEST_REMINDER + f"{content}"
    elif role == "assistant":
        calls = _tool_calls(msg["tool_calls"], d) if msg.get("tool_calls") else ""
        reasoning = ""
        after_task = index >= 1 and messages[index - 1].get("task") is not None
        if thinking and not after_task and (not drop or index > last_user):
            reasoning = f"{msg.get(d.reasoning_key) or ''}" + END_THINK
        prompt += reasoning + f"{content or ''}" + calls + ("" if msg.get("wo_eos") else EOS)
    else:
        kind, text = d.unknown_role
        raise _fail(kind, text.format(role=role))
    if index + 1 < len(messages) and messages[index + 1].get("role") not in (
            "assistant", "latest_reminder"):
        return prompt
    task = msg.get("task")
    if task is not None:
        if task not in TASK_TOKENS:
            raise _fail(d.check_error, f"Invalid task: '{task}'. Valid tasks are: "
                        f"{list(_TASK_SET_ORDER)}")
        if task != "action":
            return prompt + TASK_TOKENS[task]
        return prompt + ASSISTANT + (THINK if thinking else END_THINK) + TASK_TOKENS[task]
    if d.system_turns:
        opens = role in ("user", "developer") or (role == "system" and index > 0)
    else:
        opens = role in ("user", "developer") or (role == "system" and (
            index == len(messages) - 1 or messages[index + 1].get("role") == "assistant"))
    if opens:
        think = thinking and (not drop or index >= last_user)
        prompt += ASSISTANT + (THINK if think else END_THINK)
    return prompt


# vLLM lists its task names from a set, in an order that varies with the process's
# string hashing; this message lists them in a fixed order.
_TASK_SET_ORDER: Final = tuple(TASK_TOKENS)


def encode_with(messages: Sequence[Mapping[str, Any]], d: Dialect, *, thinking_mode: str,
                drop_thinking: Any, reasoning_effort: Any,
                image_order: list[int] | None = None) -> str:
    """The encoder of dialect ``d`` over messages as its tokenizer wrapper passes them;
    ``image_order`` gets the images' positions (``_image_indices``) in encoded order."""
    if thinking_mode not in ("chat", "thinking"):
        raise _fail(d.check_error, f"Invalid thinking_mode `{thinking_mode}`")
    merged = _merge_tools(messages, d)
    _sort_results(merged)
    drop = bool(drop_thinking) and not any(m.get("tools") for m in merged)
    thinking = thinking_mode == "thinking"
    if thinking and drop:
        merged = without_thinking(merged, _last_user(merged, d), kept_roles=_KEPT_ROLES,
                                  reasoning_key=d.reasoning_key)
    last = _last_user(merged, d)
    if image_order is not None:
        image_order.extend(_image_order(merged))
    return BOS + "".join(_render(i, merged, d, thinking, drop, reasoning_effort, last)
                         for i in range(len(merged)))


def encode_messages(messages: Sequence[Mapping[str, Any]], *, thinking_mode: str,
                    drop_thinking: bool, reasoning_effort: str | None) -> str:
    """DeepSeek-V4's prompt string for ``messages`` (vLLM 0.31's encoder)."""
    return encode_with(messages, DIALECT_V4, thinking_mode=thinking_mode,
                       drop_thinking=drop_thinking, reasoning_effort=reasoning_effort)


def request_kwargs(chat_template_kwargs: Mapping[str, Any] | None,
                   reasoning_effort: str | None) -> dict[str, Any]:
    """The keyword arguments vLLM's renderer passes the tokenizer wrapper that matter here
    (chat_completion/protocol.py ``build_chat_params``, renderers/params.py ``merge_kwargs``):
    the request's effort overrides the kwargs' own and sets ``enable_thinking`` unless
    the kwargs have one."""
    kwargs = dict(chat_template_kwargs or {})
    if reasoning_effort is not None:
        kwargs["reasoning_effort"] = reasoning_effort
        if "enable_thinking" not in (chat_template_kwargs or {}):
            kwargs["enable_thinking"] = reasoning_effort != "none"
    return kwargs


def thinking_default_on(kwargs: Mapping[str, Any]) -> bool:
    """Thinking unless ``thinking``/``enable_thinking`` is given and neither is truthy."""
    if "thinking" not in kwargs and "enable_thinking" not in kwargs:
        return True
    return bool(kwargs.get("thinking")) or bool(kwargs.get("enable_thinking"))


@dataclass(frozen=True)
class V4Release:
    """What changed in the ``deepseek_v4`` path between releases."""

    #: Request tools go to the first system message (0.31 on) or a new first message.
    tools_to_first_system: bool
    #: The conversation's content format (renderers/deepseek_v4.py).
    content_format: str


V4_RELEASES: Final = {
    "0.29.0": V4Release(tools_to_first_system=False, content_format="string"),
    "0.30.0": V4Release(tools_to_first_system=False, content_format="string"),
    "0.31.0": V4Release(tools_to_first_system=True, content_format="openai"),
    "0.32.0": V4Release(tools_to_first_system=True, content_format="openai"),
    "0.33.0": V4Release(tools_to_first_system=True, content_format="openai"),
}


def v4_release(release: str) -> V4Release:
    try:
        return V4_RELEASES[release]
    except KeyError:
        raise RenderUnsupportedError(
            "vllm_version", f"the deepseek_v4 prompt encoder was verified at "
            f"{', '.join(V4_RELEASES)}, not {release}") from None


def encode_request(conversation: Sequence[Mapping[str, Any]], kwargs: Mapping[str, Any], *,
                   release: str) -> str:
    """The prompt vLLM's ``deepseek_v4`` tokenizer encodes, from the chat kwargs vLLM merged
    (``tools`` among them) and its parsed conversation (``release``'s content format)."""
    rel = v4_release(release)
    if rel.content_format == "string" and any(
            isinstance(m.get("content"), list) for m in conversation):
        raise RenderUnsupportedError(
            "messages", f"vLLM {release} hands deepseek_v4 string content only")
    thinking = thinking_default_on(kwargs)
    messages = list(conversation)
    tools = kwargs.get("tools")
    if tools:
        if rel.tools_to_first_system:
            at = next((i for i, m in enumerate(messages) if m.get("role") == "system"), None)
            if at is None:
                messages.insert(0, {"role": "system"})
                at = 0
        else:
            messages.insert(0, {"role": "system"})
            at = 0
        messages[at] = {**messages[at], "tools": tools}
    effort = kwargs.get("reasoning_effort")
    if not isinstance(effort, str):
        effort = "high" if thinking else None
    elif effort == "none":
        thinking, effort = False, None
    elif effort in ("low", "minimal", "medium"):
        effort = "low"
    elif effort != "max":
        effort = "high"
    return encode_with(messages, DIALECT_V4, thinking_mode="thinking" if thinking else "chat",
                       drop_thinking=kwargs.get("drop_thinking", True), reasoning_effort=effort)


def render_prompt(conversation: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None,
                  chat_template_kwargs: Mapping[str, Any] | None,
                  reasoning_effort: str | None, *, release: str = "0.31.0") -> str:
    """The prompt vLLM's ``deepseek_v4`` tokenizer encodes for a chat request.

    ``conversation`` is vLLM's parsed conversation (prefixkey.render._chat in the
    release's content format), ``tools`` the request's tools as vLLM dumps them.
    """
    kwargs = {"tools": tools, **request_kwargs(chat_template_kwargs, reasoning_effort)}
    return encode_request(conversation, kwargs, release=release)
