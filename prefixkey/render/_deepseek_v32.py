"""DeepSeek-V3.2's prompt format: the text vLLM's tokenizer mode ``deepseek_v32`` renders.

vLLM serves an architecture ``DeepseekV32ForCausalLM`` in its own tokenizer mode
(render/_encoders.py): no Jinja template, a Python encoder over the parsed conversation
(content parts joined as text). This module writes the same text, checked against vLLM
0.29.0-0.33.0's answers (tests/render/real_dsv32_vectors.jsonl); the facts it follows:

- The prompt starts with :data:`BOS`; a system message is its content
  (a ``tools`` list after it as the tools preamble: the DSML call syntax, then each
  function as one JSON line).
- A user message is :data:`USER_TAG`, its content, :data:`ASSISTANT_TAG`, then
  ``<think>`` when it is the last user (or developer) message in thinking mode, else
  ``</think>``. A developer
  message is a user message whose content says ``# The user's message is: …``.
- An assistant message is its content and its tool calls (a DSML ``function_calls``
  block, each argument a ``parameter`` element, a string as it is and anything else as
  JSON) then :data:`EOS`; after the last user message in thinking mode its
  reasoning and ``</think>`` come first, and without reasoning or tool calls it is an
  error.
- Tool results answer the preceding assistant's calls in order, inside one
  ``<function_results>`` block, then ``<think>`` or ``</think>`` as for a user message.
- In thinking mode, when dropping thinking, the messages before the last user message
  lose their reasoning; any there that is not a user, system, tool or assistant message
  is dropped, and the prompt still counts the messages given (so one index then points
  past the list: vLLM's error).

Every ``ValueError`` vLLM's encoder raises is a :class:`RenderRequestError` with its
message (vLLM answers 400 with it); a message's text is the Python repr of the
conversation entry, as vLLM formats it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final, Literal

from ._errors import RenderRequestError, RenderUnsupportedError

__all__ = ["ThinkingMode", "encode_messages", "render_tools", "without_thinking"]

ThinkingMode = Literal["chat", "thinking"]

# DeepSeek's special tokens are spelled with the full-width vertical line (U+FF5C).
_BAR: Final = "\uff5c"
BOS: Final = f"<{_BAR}begin\u2581of\u2581sentence{_BAR}>"
EOS: Final = f"<{_BAR}end\u2581of\u2581sentence{_BAR}>"
USER_TAG: Final = f"<{_BAR}User{_BAR}>"
ASSISTANT_TAG: Final = f"<{_BAR}Assistant{_BAR}>"
THINK: Final = "<think>"
END_THINK: Final = "</think>"
DSML: Final = f"{_BAR}DSML{_BAR}"
# The roles that end a user turn (vLLM's find_last_user_index).
_USER_ROLES: Final = ("user", "developer")
# The roles kept before the last user message when thinking is dropped (others: reasoning
# removed from assistants, the rest left out).
_KEPT_ROLES: Final = ("user", "system", "tool")

_TOOLS_PREAMBLE: Final = "\n".join((
    "## Tools",
    "You have access to a set of tools you can use to answer the user's question.",
    f'You can invoke functions by writing a "<{DSML}function_calls>" block like the '
    "following as part of your reply to the user:",
    f"<{DSML}function_calls>",
    f'<{DSML}invoke name="$FUNCTION_NAME">',
    f'<{DSML}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE'
    f"</{DSML}parameter>",
    "...",
    f"</{DSML}invoke>",
    f'<{DSML}invoke name="$FUNCTION_NAME2">',
    "...",
    f"</{DSML}invoke>",
    f"</{DSML}function_calls>",
    "String and scalar parameters should be specified as is without any escaping or "
    "quotes, while lists and objects should use JSON format. The \"string\" attribute "
    "should be set to \"true\" for string type parameters and \"false\" for other types "
    "(numbers, booleans, arrays, objects).",
    "If the thinking_mode is enabled, then after function results you should strongly "
    "consider outputting a thinking block. Here is an example:",
    f"<{DSML}function_calls>",
    "...",
    f"</{DSML}function_calls>",
    "<function_results>",
    "...",
    "</function_results>",
    f"{THINK}...thinking about results{END_THINK}",
    "Here are the functions available in JSONSchema format:",
    "<functions>",
))


def _json(value: Any) -> str:
    """JSON as the format writes it (Python's json, non-ASCII kept; ASCII when that fails)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(value, ensure_ascii=True)


def _functions(tools: Any, field: str) -> list[Any]:
    """The ``function`` of each OpenAI tool (the format lists them, not the tools)."""
    if not isinstance(tools, list) or not all(
            isinstance(t, Mapping) and "function" in t for t in tools):
        raise RenderUnsupportedError(field, "tools other than a list of objects with a "
                                     "'function' are not reproduced in the DeepSeek-V3.2 "
                                     "format")
    return [t["function"] for t in tools]


def render_tools(functions: Sequence[Any]) -> str:
    """The tools preamble: the call syntax, then each function's JSON on its own line."""
    lines = "\n".join(_json(f) for f in functions)
    return f"{_TOOLS_PREAMBLE}\n{lines}\n</functions>\n"


def _parameters(arguments: Any) -> str:
    """A call's arguments as DSML parameters (strings as they are, the rest as JSON)."""
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    if not isinstance(arguments, Mapping):
        raise RenderUnsupportedError("messages", "tool-call arguments other than an object "
                                     "are not reproduced in the DeepSeek-V3.2 format")
    return "\n".join(
        f'<{DSML}parameter name="{key}" string="{"true" if isinstance(value, str) else "false"}'
        f'">{value if isinstance(value, str) else _json(value)}</{DSML}parameter>'
        for key, value in arguments.items())


def _calls_block(calls: Sequence[Mapping[str, Any]]) -> str:
    invokes = "\n".join(
        f'<{DSML}invoke name="{call["function"]["name"]}">\n'
        f'{_parameters(call["function"]["arguments"])}\n</{DSML}invoke>' for call in calls)
    return f"\n\n<{DSML}function_calls>\n{invokes}\n</{DSML}function_calls>"


def _last_user(messages: Sequence[Mapping[str, Any]]) -> int:
    return next((i for i in range(len(messages) - 1, -1, -1)
                 if messages[i].get("role") in _USER_ROLES), -1)


def without_thinking(messages: Sequence[dict[str, Any]], last: int, *,
                     kept_roles: Collection[str], reasoning_key: str) -> list[dict[str, Any]]:
    """``messages`` with thinking dropped, as V3.2's and V4/V4.1's encoders drop it: before
    ``last`` (the last user turn, as each format finds it) assistants lose their reasoning
    (``reasoning_key``) and roles other than ``kept_roles`` and assistant are left out."""
    kept: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role in kept_roles or i >= last:
            kept.append(message)
        elif role == "assistant":
            kept.append({k: v for k, v in message.items() if k != reasoning_key})
    return kept


def _bad(message: str) -> RenderRequestError:
    return RenderRequestError("messages", message)


def _turn_end(thinking: bool) -> str:
    return THINK if thinking else END_THINK


def _tool_result(index: int, messages: Sequence[Mapping[str, Any]], thinking: bool,
                 last_user: int) -> str:
    """A tool message: its place among the results of the assistant's calls before it
    (Python's indexing: before the first message is the last one)."""
    prev = index - 1
    caller = messages[prev]
    while prev >= 0 and caller.get("role") == "tool":
        prev -= 1
        caller = messages[prev]
    if not (index == 0 or (prev >= 0 and caller.get("role") == "assistant")):
        raise _bad(f"Invalid messages at {index}:\n{caller}")
    order = index - prev
    calls = caller.get("tool_calls")
    if not (calls and len(calls) >= order):
        raise _bad("No tool calls but found tool output")
    text = "\n\n<function_results>" if order == 1 else ""
    text += f"\n<result>{messages[index].get('content')}</result>"
    if order == len(calls):
        text += "\n</function_results>\n\n" + _turn_end(index >= last_user and thinking)
    return text


def _assistant(index: int, message: Mapping[str, Any], thinking: bool, last_user: int) -> str:
    calls = message.get("tool_calls")
    block = _calls_block(calls) if calls else ""
    reasoning = ""
    if thinking and index > last_user:
        if not (message.get("reasoning") or calls):
            raise _bad(f"ThinkingMode: thinking, invalid message without reasoning/"
                       f"tool_calls `{message}` after last user message")
        reasoning = f"{message.get('reasoning') or ''}{END_THINK}"
    return f"{reasoning}{message.get('content') or ''}{block}{EOS}"


def _message(index: int, messages: Sequence[Mapping[str, Any]], thinking: bool,
             last_user: int) -> str:
    if not 0 <= index < len(messages):
        raise _bad(f"Index {index} out of range for messages list of length {len(messages)}")
    message = messages[index]
    role = message.get("role")
    content = message.get("content")
    tools = message.get("tools")
    functions = _functions(tools, f"messages[{index}].tools") if tools else None
    if role == "system":
        return f"{content or ''}" + (f"\n\n{render_tools(functions)}" if functions else "")
    if role in _USER_ROLES:
        if role == "developer":
            if not content:
                raise _bad(f"Invalid message for role `{role}`: {message}")
            content = ((f"\n\n{render_tools(functions)}" if functions else "")
                       + f"\n\n# The user's message is: {content}")
        return (f"{USER_TAG}{content}{ASSISTANT_TAG}"
                + _turn_end(index == last_user and thinking))
    if role == "tool":
        return _tool_result(index, messages, thinking, last_user)
    if role == "assistant":
        return _assistant(index, message, thinking, last_user)
    raise _bad(f"Invalid role: {role}")


def encode_messages(messages: list[dict[str, Any]], *, thinking_mode: ThinkingMode,
                    drop_thinking: bool, reasoning_effort: str | None = None) -> str:
    """The prompt text of ``messages`` (vLLM's parsed conversation, a tools system message
    first when the request has tools). ``reasoning_effort`` is not part of this format
    (the encoder table's signature, render/_encoders.py)."""
    del reasoning_effort
    thinking = thinking_mode == "thinking"
    rendered = (without_thinking(messages, _last_user(messages), kept_roles=_KEPT_ROLES,
                                 reasoning_key="reasoning")
                if thinking and drop_thinking else messages)
    last_user = _last_user(rendered)
    # The count is the messages given: a left-out message makes the last index overrun.
    return BOS + "".join(_message(i, rendered, thinking, last_user)
                         for i in range(len(messages)))
