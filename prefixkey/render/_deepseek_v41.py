"""DeepSeek-V4.1's chat prompt (vLLM tokenizer mode ``deepseek_v41``, 0.30 on).

vLLM gives ``DeepseekV41ForCausalLM`` the mode ``deepseek_v41`` (config/model.py):
the same tokenizer as ``deepseek_v4`` (``TokenizersBackend``, no special tokens
added) and the V4.1 encoder (tokenizers/deepseek_v41_encoding.py), which shares
V4's shape (:mod:`prefixkey.render._deepseek_v4`, whose :class:`Dialect` it fills)
and differs in what this module records:

- The wrapper reads the request's own messages, not vLLM's parsed conversation (but
  with the tool-call arguments that parse rewrote in place: :func:`with_parsed_arguments`):
  roles other than system/developer/user/assistant/tool are refused; ``reasoning``
  is copied to ``reasoning_content`` (the key V4.1 reads); content lists become text
  (text/input_text/output_text parts and image_url/input_image/image_pil
  placeholders ``<\uff5cdeepseek_image\uff5c>`` joined by a blank line, any other part
  refused); from 0.33 the placeholder text itself is refused in message text.
- ``<\uff5cSystem\uff5c>`` opens the prompt when the first message is a system message or
  carries the effort line, and opens every later system message, which also counts
  as a user turn (it opens the assistant header). From 0.33 a user turn made only
  of tool results is not the last user turn.
- DSML tags are `` calls``/`` invoke``/`` parameter``; tool-call arguments that are
  not an object (after at most two JSON decodings) are wrapped as ``{"arguments": …}``.
- Images: the placeholders take the request's images in the messages' order; from 0.33
  in the order the encoder writes them (``image_order``: tool results sorted by call id
  carry theirs along, a message left out drops its images). Their tokens are the vision
  family's (render/_vision/_deepseek_v41.py).
- Effort: ``"Reasoning Effort: N (range 1-100, …)"`` with N an int in [1, 100] or
  low/high/xhigh/max mapped by the release's table (0.30: 25/50/75/100, 0.31 on:
  50/75/75/100); the default is high; ``"none"`` turns thinking off; any other value
  is vLLM's 400.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from ._deepseek_v4 import (
    IMAGE,
    Dialect,
    _fail,
    encode_with,
    request_kwargs,
    thinking_default_on,
)
from ._errors import RenderUnsupportedError

__all__ = ["V41_RELEASES", "V41Release", "dialect_v41", "encode_messages", "encode_request",
           "normalize_messages", "render_prompt", "v41_release", "with_parsed_arguments"]

_ROLES: Final = ("system", "developer", "user", "assistant", "tool")
_TEXT_PARTS: Final = frozenset({"text", "input_text", "output_text"})
_IMAGE_PARTS: Final = frozenset({"image_url", "input_image", "image_pil"})


@dataclass(frozen=True)
class V41Release:
    """What changed in the ``deepseek_v41`` path between releases."""

    #: Effort names to the budget the effort line states.
    efforts: Mapping[str, int]
    #: Whether message text holding the image placeholder is refused (0.33).
    refuse_placeholder_text: bool
    #: Whether a user turn of tool results only counts as the last user turn (before 0.33).
    tool_only_user_is_turn: bool
    #: Whether each message records its images' positions (``_image_indices``, 0.33: the
    #: renderer reorders the images by it); it shows in the messages vLLM's errors print.
    image_indices: bool


_EFFORTS_0_30: Final = {"low": 25, "high": 50, "xhigh": 75, "max": 100}
_EFFORTS_0_31: Final = {"low": 50, "high": 75, "xhigh": 75, "max": 100}
V41_RELEASES: Final = {
    "0.30.0": V41Release(_EFFORTS_0_30, False, True, False),
    "0.31.0": V41Release(_EFFORTS_0_31, False, True, False),
    "0.32.0": V41Release(_EFFORTS_0_31, False, True, False),
    "0.33.0": V41Release(_EFFORTS_0_31, True, False, True),
}


def v41_release(release: str) -> V41Release:
    try:
        return V41_RELEASES[release]
    except KeyError:
        raise RenderUnsupportedError(
            "vllm_version", f"the deepseek_v41 prompt encoder was verified at "
            f"{', '.join(V41_RELEASES)}, not {release}") from None


def dialect_v41(release: str = "0.31.0") -> Dialect:
    rel = v41_release(release)

    def effort_prefix(effort: Any) -> str:
        effort = "high" if effort is None else effort
        if not ((type(effort) is int and 1 <= effort <= 100)
                or (isinstance(effort, str) and effort in rel.efforts)):
            raise _fail(AssertionError, f"Invalid reasoning effort for deepseek_v41: {effort}, "
                        f"should be int within [1,100] or {list(rel.efforts)}")
        budget = rel.efforts[effort] if isinstance(effort, str) else effort
        return (f"Reasoning Effort: {budget} (range 1-100, the higher the value, "
                "the more thorough the reasoning)\n\n")

    return replace(_BASE, effort_prefix=effort_prefix,
                   tool_only_user_is_turn=rel.tool_only_user_is_turn)


_BASE: Final = Dialect(
    name="deepseek_v41", block_tag=" calls", invoke_tag=" invoke",
    parameter_tag=" parameter", reasoning_key="reasoning_content",
    effort_prefix=lambda effort: "", system_turns=True, flatten_joiner=None,
    check_error=AssertionError, tolerant_arguments=True,
    unknown_role=(NotImplementedError, "Unknown role: {role}"))


def _check_text(text: Any, rel: V41Release, field: str) -> None:
    if rel.refuse_placeholder_text and isinstance(text, str) and IMAGE in text:
        raise _fail(ValueError, f"Message text contains image special token {IMAGE!r}; "
                    "provide images as image content parts.", field)


def normalize_messages(messages: Sequence[Mapping[str, Any]],
                       release: str = "0.31.0") -> list[dict[str, Any]]:
    """The request's messages as V4.1's wrapper hands them to its encoder."""
    return _normalized(messages, release)[0]


def _normalized(messages: Sequence[Mapping[str, Any]],
                release: str) -> tuple[list[dict[str, Any]], int]:
    """:func:`normalize_messages`, and how many images the messages hold."""
    rel = v41_release(release)
    result = [dict(m) for m in copy.deepcopy(list(messages))]
    images = 0
    for index, message in enumerate(result):
        field = f"messages[{index}]"
        indices: list[int] = []
        if rel.image_indices:
            message["_image_indices"] = indices
        role = message.get("role")
        if role not in _ROLES:
            raise _fail(ValueError, f"Invalid role: {role}", f"{field}.role")
        if "reasoning" in message:
            message["reasoning_content"] = message["reasoning"]
        _check_text(message.get("reasoning_content"), rel, f"{field}.reasoning")
        content = message.get("content")
        if isinstance(content, str):
            _check_text(content, rel, f"{field}.content")
        elif isinstance(content, list):
            parts = []
            for block in content:
                kind = block.get("type")
                if kind in _TEXT_PARTS:
                    _check_text(block.get("text"), rel, f"{field}.content")
                    parts.append(block.get("text", ""))
                elif kind in _IMAGE_PARTS:
                    parts.append(IMAGE)
                    indices.append(images)
                    images += 1
                else:
                    raise _fail(ValueError, "DeepSeek V4.1 supports text and image content "
                                f"only; got {kind!r}", f"{field}.content")
            try:
                message["content"] = "\n\n".join(parts)
            except TypeError as exc:
                raise _fail(TypeError, str(exc), f"{field}.content") from None
    return result, images


def with_parsed_arguments(messages: Sequence[Mapping[str, Any]],
                          conversation: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The request's messages as V4.1's tokenizer sees them after vLLM parsed the
    conversation: that parse rewrites tool-call arguments in place (a JSON object's
    text becomes the object, anything else ``{}``), in dicts the messages share."""
    if len(messages) != len(conversation):
        raise RenderUnsupportedError("messages", "a message vLLM parses into several is "
                                     "not reproduced for deepseek_v41")
    out: list[Any] = []
    for message, parsed in zip(messages, conversation, strict=True):
        calls, parsed_calls = message.get("tool_calls"), parsed.get("tool_calls")
        if isinstance(calls, list) and isinstance(parsed_calls, list):
            message = {**message, "tool_calls": [
                {**call, "function": {**call["function"],
                                      "arguments": done["function"]["arguments"]}}
                for call, done in zip(calls, parsed_calls, strict=True)]}
        out.append(message)
    return out


def encode_messages(messages: Sequence[Mapping[str, Any]], *, thinking_mode: str,
                    drop_thinking: bool, reasoning_effort: str | int | None,
                    release: str = "0.31.0") -> str:
    """DeepSeek-V4.1's prompt string for normalized ``messages``."""
    return encode_with(messages, dialect_v41(release), thinking_mode=thinking_mode,
                       drop_thinking=drop_thinking, reasoning_effort=reasoning_effort)


def encode_request(messages: Sequence[Mapping[str, Any]], kwargs: Mapping[str, Any], *,
                   release: str, image_order: list[int] | None = None) -> str:
    """The prompt vLLM's ``deepseek_v41`` tokenizer encodes, from the chat kwargs vLLM merged
    (``tools`` among them) and the request's messages. ``image_order`` gets the request's
    images in the order the prompt's placeholders take them: from 0.33 the encoded order
    (an image whose message the encoder leaves out is dropped), before it the messages'."""
    rel = v41_release(release)
    conversation, images = _normalized(messages, release)
    if image_order is not None and not rel.image_indices:
        image_order.extend(range(images))
        image_order = None
    tools = kwargs.get("tools")
    if tools:
        system = next((m for m in conversation if m["role"] == "system"), None)
        if system is None:
            system = {"role": "system", "content": ""}
            conversation.insert(0, system)
        system["tools"] = tools
    thinking = thinking_default_on(kwargs)
    effort = kwargs.get("reasoning_effort")
    if effort == "none":
        thinking, effort = False, None
    if effort is None:
        effort = "high"
    if not ((type(effort) is int and 1 <= effort <= 100)
            or (isinstance(effort, str) and effort in rel.efforts)):
        raise _fail(ValueError, "DeepSeek V4.1 reasoning_effort must be low, high, xhigh, max, "
                    "or an integer within [1, 100] in chat_template_kwargs",
                    "chat_template_kwargs.reasoning_effort")
    return encode_with(conversation, dialect_v41(release),
                       thinking_mode="thinking" if thinking else "chat",
                       drop_thinking=kwargs.get("drop_thinking", True), reasoning_effort=effort,
                       image_order=image_order)


def render_prompt(messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None,
                  chat_template_kwargs: Mapping[str, Any] | None,
                  reasoning_effort: str | None, *, release: str = "0.31.0") -> str:
    """The prompt vLLM's ``deepseek_v41`` tokenizer encodes for a chat request
    (``messages`` as the request holds them, ``tools`` as vLLM dumps them)."""
    kwargs = {"tools": tools, **request_kwargs(chat_template_kwargs, reasoning_effort)}
    return encode_request(messages, kwargs, release=release)
