"""vLLM's tokenizer modes that render chat with a Python encoder, not a Jinja template.

vLLM switches some architectures from tokenizer mode ``auto`` to a mode of their own
(``config/model.py``); for the modes of :data:`ENCODER_MODES` that mode's tokenizer is
transformers' ``TokenizersBackend.from_pretrained`` (``tokenizer.json`` as it is: no hub
class, no rebuild; without it the generic backend's conversion), and its
``apply_chat_template`` hands the parsed conversation (content parts joined as text,
whatever ``--chat-template-content-format`` says) to the model's Python encoder. A row
is one mode: how its tokenizer reads the chat kwargs (``prepare``: the messages the
encoder takes and its options) and the encoder. render/_hf_decision.py consults the
table for the tokenizer (the decision's ``mode``) and render/_renderer.py for the chat
text, then tokenizes it as any chat text (``add_special_tokens`` and truncation as the
body says). ``add_generation_prompt``, ``continue_final_message``, ``documents``, a
template and the other kwargs change nothing on this path.

A mode whose tokenizer reads more than that conversation (DeepSeek V4's content
format changes by release; V4.1 encodes the request's own messages) has a ``request``
encoder instead. A mode's row is added here with its encoder module (render/_deepseek_v32.py,
render/_deepseek_v4.py, render/_deepseek_v41.py, …) and
its corpus replayed at every release it names (``releases``); docs/render-deepseek.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from . import _deepseek_v4, _deepseek_v41
from ._deepseek_v32 import ThinkingMode
from ._deepseek_v32 import encode_messages as encode_v32
from ._eras import render_release
from ._errors import RenderRequestError, RenderUnsupportedError

__all__ = ["ENCODER_MODES", "EncodeOptions", "EncoderMode", "ImageOrder", "RequestEncoder",
           "check_encoder_release", "encode_chat", "encode_request", "encoder_mode"]


@dataclass(frozen=True, slots=True)
class EncodeOptions:
    """The keyword arguments a mode's tokenizer passes its encoder."""

    thinking_mode: ThinkingMode
    drop_thinking: bool
    reasoning_effort: str | None = None


class Encoder(Protocol):
    def __call__(self, messages: list[dict[str, Any]], *, thinking_mode: ThinkingMode,
                 drop_thinking: bool, reasoning_effort: str | None) -> str: ...


#: How a mode's ``apply_chat_template`` reads its call: the conversation, the tools (the
#: ``tools`` kwarg), the other chat kwargs -> the encoder's messages and options.
Prepare = Callable[[list[dict[str, Any]], Any, Mapping[str, Any]],
                   tuple[list[dict[str, Any]], EncodeOptions]]


@dataclass(slots=True)
class ImageOrder:
    """Which of the body's images (numbered in parse order) each image placeholder of the
    prompt takes, where the mode's renderer says (DeepSeek V4.1); None: parse order."""

    indices: list[int] | None = None


#: ``(messages as the body holds them, parse(content_format) -> vLLM's conversation,
#: merged chat kwargs, release, the images' order to fill) -> the chat text``.
RequestEncoder = Callable[[Any, Callable[[str], list[dict[str, Any]]], Mapping[str, Any], str,
                           ImageOrder], str]


@dataclass(frozen=True, slots=True)
class EncoderMode:
    """One tokenizer mode rendered by a Python encoder."""

    #: vLLM's name for the mode (``--tokenizer-mode``, or switched to from ``auto``).
    mode: str
    #: The architectures vLLM switches to it from ``auto`` (config/model.py) that were
    #: verified (render/_hf_decision.py refuses the others).
    architectures: frozenset[str]
    #: None for a mode with a ``request`` encoder.
    prepare: Prepare | None
    encode: Encoder
    #: The releases whose render servers' answers the mode's corpus replays.
    releases: frozenset[str]
    #: Where its format is described.
    doc: str
    #: For a mode whose tokenizer reads more than the 'string' conversation (DeepSeek
    #: V4/V4.1: the release's content format, the request's own messages): the whole
    #: ``apply_chat_template`` as :data:`RequestEncoder`; None: ``prepare`` then ``encode``.
    request: RequestEncoder | None = None


def _with_tools(conversation: list[dict[str, Any]], tools: Any) -> list[dict[str, Any]]:
    """The conversation with the tools as a leading system message (DeepSeek V3.2)."""
    messages = list(conversation)
    if tools is not None:
        if not isinstance(tools, list) or not all(
                isinstance(t, Mapping) and "function" in t for t in tools):
            # vLLM takes len() of it, then each item's "function" (the body's always are).
            raise RenderUnsupportedError("chat_template_kwargs.tools", "tools other than a "
                                         "list of objects with a 'function' are not "
                                         "reproduced")
        if tools:
            messages.insert(0, {"role": "system", "tools": tools})
    return messages


def _prepare_v32(conversation: list[dict[str, Any]], tools: Any,
                 kwargs: Mapping[str, Any]) -> tuple[list[dict[str, Any]], EncodeOptions]:
    """vLLM's DeepSeek V3.2 tokenizer: thinking when ``thinking`` or ``enable_thinking`` is
    truthy; reasoning in history dropped when the last message is a user's."""
    thinking = bool(kwargs.get("thinking", False) or kwargs.get("enable_thinking", False))
    messages = _with_tools(conversation, tools)
    if not messages:  # vLLM indexes the last message: an IndexError, answered 500
        raise RenderRequestError("messages", "list index out of range", status=500)
    return messages, EncodeOptions("thinking" if thinking else "chat",
                                   drop_thinking=messages[-1]["role"] == "user")


def _request_v4(messages: Any, parse: Callable[[str], list[dict[str, Any]]],
                kwargs: Mapping[str, Any], release: str, order: ImageOrder) -> str:
    """vLLM's DeepSeek V4 renderer: the conversation in the release's content format."""
    conversation = parse(_deepseek_v4.v4_release(release).content_format)
    return _deepseek_v4.encode_request(conversation, kwargs, release=release)


def _request_v41(messages: Any, parse: Callable[[str], list[dict[str, Any]]],
                 kwargs: Mapping[str, Any], release: str, order: ImageOrder) -> str:
    """vLLM's DeepSeek V4.1 renderer parses the conversation (its refusals come first),
    then its tokenizer encodes the request's own messages (and says the images' order)."""
    conversation = parse("string" if release == "0.30.0" else "openai")
    order.indices = []
    return _deepseek_v41.encode_request(
        _deepseek_v41.with_parsed_arguments(messages, conversation), kwargs, release=release,
        image_order=order.indices)


_ALL_RELEASES: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})

#: The modes rendered here, by vLLM's mode name.
ENCODER_MODES: Final[Mapping[str, EncoderMode]] = {
    "deepseek_v32": EncoderMode("deepseek_v32", frozenset({"DeepseekV32ForCausalLM"}),
                                _prepare_v32, encode_v32, _ALL_RELEASES,
                                "docs/render-deepseek.md"),
    # vLLM switches DeepseekV4ForConditionalGeneration to this mode too, but its render
    # server does not start for it ("does not support `--runner generate`", 0.31 on CPU):
    # not verified, so refused (render/_hf_decision.py).
    "deepseek_v4": EncoderMode(
        "deepseek_v4", frozenset({"DeepseekV4ForCausalLM"}),
        None, _deepseek_v4.encode_messages, _ALL_RELEASES, "docs/render-deepseek.md",
        request=_request_v4),
    "deepseek_v41": EncoderMode(
        "deepseek_v41", frozenset({"DeepseekV41ForCausalLM"}), None,
        _deepseek_v41.encode_messages, _ALL_RELEASES - {"0.29.0"}, "docs/render-deepseek.md",
        request=_request_v41),
}


def encoder_mode(mode: str | None) -> EncoderMode | None:
    """The row of a tokenizer mode (None: rendered by a Jinja template, or refused)."""
    return None if mode is None else ENCODER_MODES.get(mode)


def check_encoder_release(mode: str, vllm_version: str) -> None:
    """Refuse an encoder mode under a release whose answers its corpus did not replay."""
    row = ENCODER_MODES[mode]
    release = render_release(vllm_version).release
    if release not in row.releases:
        raise RenderUnsupportedError("--tokenizer-mode", (
            f"vLLM's tokenizer mode {mode!r} was checked against vLLM "
            f"{', '.join(sorted(row.releases))}'s answers only, not vLLM {vllm_version}'s; "
            "not verified"))


def encode_request(row: EncoderMode, messages: Any,
                   parse: Callable[[str], list[dict[str, Any]]], kwargs: Mapping[str, Any],
                   release: str, order: ImageOrder | None = None) -> str:
    """The chat text of a mode with a request encoder (``row.request``), or of its
    ``prepare``/``encode`` over the 'string' conversation; ``order`` gets the images' order
    where the mode gives one."""
    clash = next((name for name in kwargs if name in _CALL_PARAMETERS), None)

    def parse_then_call(content_format: str) -> list[dict[str, Any]]:
        conversation = parse(content_format)
        if clash is not None:
            # After the parse, the DeepSeek renderers (V3.2, V4, V4.1) call their
            # apply_chat_template wrapper with conversation=, messages= and the kwargs:
            # Python's TypeError, a 400 (real_dsv32_, real_dsv4_ corpora, 0.29-0.33).
            raise RenderRequestError(f"chat_template_kwargs.{clash}", _WRAPPER + "() got "
                                     f"multiple values for keyword argument '{clash}'")
        return conversation

    if row.request is None:
        return encode_chat(row, parse_then_call("string"), kwargs)
    return row.request(messages, parse_then_call, kwargs, release,
                       ImageOrder() if order is None else order)


#: The keyword arguments vLLM's DeepSeek renderers pass their apply_chat_template beside
#: the chat kwargs, and the wrapper a clash names (vllm.utils.async_utils.make_async).
_CALL_PARAMETERS: Final = frozenset({"conversation", "messages"})
_WRAPPER: Final = "vllm.utils.async_utils.make_async.<locals>._async_wrapper"


def encode_chat(row: EncoderMode, conversation: list[dict[str, Any]],
                kwargs: Mapping[str, Any]) -> str:
    """The chat text a mode's ``apply_chat_template`` renders for the merged chat kwargs
    (``tools`` among them, as vLLM passes it)."""
    assert row.prepare is not None, "a mode without a request encoder has a prepare step"
    messages, options = row.prepare(conversation, kwargs.get("tools"), kwargs)
    return row.encode(messages, thinking_mode=options.thinking_mode,
                      drop_thinking=options.drop_thinking,
                      reasoning_effort=options.reasoning_effort)
