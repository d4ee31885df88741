"""gpt-oss chat bodies as vLLM 0.31 renders them: Harmony messages, not a chat template.

vLLM renders a chat body for a folder whose ``config.json`` has ``model_type``
``gpt_oss`` with ``openai_harmony`` (``renderers/online_renderer.py``
``_make_request_with_harmony``, ``entrypoints/openai/parser/harmony_utils.py``),
and so does this module, through the same library (the ``harmony`` extra: the
``oss-harmony`` distribution vLLM 0.31 requires, which bundles its vocabulary;
``openai-harmony`` downloads it at run time and renders tool calls otherwise).
The facts followed, in vLLM's order:

- A first message of role ``system`` or ``developer`` is peeled off as the
  instructions (its text parts joined without separator). They go to the
  developer message, or with ``VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS``
  (:attr:`ServerOptions.gpt_oss_harmony_system_instructions`) after the model
  identity of the system message.
- The system message carries the reasoning effort (``low``/``medium``/``high``;
  ``none`` and the others are vLLM's 400s) and the conversation start date:
  ``VLLM_SYSTEM_START_DATE`` (:attr:`ServerOptions.system_start_date`), else the
  replica's local date when the request arrives (the renderer's clock).
- A developer message follows when there are instructions or tools (function
  tools only: the chat endpoint enables no builtin tool).
- Later messages: ``system``/``developer`` with text become a system message
  (with the flag, ``system`` only) or a developer message; assistant tool calls
  become commentary messages to ``functions.<name>`` (content type ``json``),
  preceded by the content on the commentary channel and the reasoning on the
  analysis channel; other assistant messages put their reasoning on the
  analysis channel and their content on the final one; ``tool`` messages come
  from ``functions.<name of the call they answer>``; user messages as they are.
- Analysis messages before the last final-channel assistant message are dropped,
  the conversation is rendered for an assistant completion, and the tool-call
  headers oss-harmony 0.0.10 changed are rewritten to the legacy form GPT-OSS
  was trained on.

``add_generation_prompt``, ``continue_final_message``, ``chat_template`` and
``chat_template_kwargs`` change nothing here (vLLM does not read them on this
path), and the ids are not truncated: only the context-length bound of the
serving layer applies.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from types import ModuleType
from typing import Any, Final

from ._chat import message_objects
from ._eras import RENDER_ERAS, render_era, render_release
from ._errors import RenderRequestError, RenderUnsupportedError

__all__ = ["HARMONY_DISTRIBUTION", "VERIFIED_HARMONY_VERSIONS", "HarmonyChat",
           "is_harmony_model"]

#: The distribution vLLM 0.31 requires for ``openai_harmony``.
HARMONY_DISTRIBUTION: Final = "oss-harmony"
#: oss-harmony releases whose renders were checked against some vLLM release's (each
#: release's own list is its render era's, prefixkey/render/_eras.py).
VERIFIED_HARMONY_VERSIONS: Final = tuple(sorted(
    {v for era in RENDER_ERAS for r in era.verified.values() for v in r.oss_harmony}))
# The model type for which vLLM 0.31 takes the Harmony path (hf_config.model_type).
_HARMONY_MODEL_TYPES: Final = frozenset({"gpt_oss"})
# The reasoning efforts Harmony's system message takes (harmony_utils.REASONING_EFFORT).
_EFFORTS: Final = ("high", "medium", "low")
# Harmony's roles: vLLM answers 400 for any other (its Author model refuses it).
_ROLES: Final = ("user", "assistant", "system", "developer", "tool")
# Part types of the Responses API that vLLM's chat request model refuses.
_REFUSED_PART_TYPES: Final = frozenset({"input_text", "output_text"})
# The part types reproduced, and the field holding their string (a refusal is empty text).
_PART_PAYLOADS: Final = {"text": "text", "refusal": "refusal"}


def is_harmony_model(config: Mapping[str, Any]) -> bool:
    """Whether vLLM 0.31 renders chat for this ``config.json`` with Harmony."""
    return config.get("model_type") in _HARMONY_MODEL_TYPES


def _load_library(vllm_version: str) -> ModuleType:
    """``openai_harmony`` from an oss-harmony verified for the release, or a typed refusal."""
    try:
        version = importlib.metadata.version(HARMONY_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise RenderUnsupportedError(
            "config.json", "model_type gpt_oss renders with Harmony: install the harmony extra "
            f"(pip install 'prefixkey[harmony]', the {HARMONY_DISTRIBUTION} distribution vLLM "
            "0.31 requires)") from None
    verified = render_release(vllm_version).oss_harmony
    if not verified:
        raise RenderUnsupportedError(
            "config.json", f"model_type gpt_oss renders with Harmony, which is not verified "
            f"for vLLM {vllm_version} (its own Harmony renders were not harvested)")
    if version not in verified:
        raise RenderUnsupportedError(
            HARMONY_DISTRIBUTION, f"version {version} is installed; Harmony renders for "
            f"vLLM {vllm_version} are verified with {', '.join(verified)} only "
            "(its tool-call headers have changed between releases)")
    return importlib.import_module("openai_harmony")


def _flatten(content: Any) -> str | None:
    """Text parts joined without separator (None: no text), as vLLM flattens instructions."""
    if content is None or isinstance(content, str):
        return content
    texts = [p if isinstance(p, str) else p["text"] for p in content
             if isinstance(p, str) or p.get("text") is not None]
    return "".join(texts) if texts else None


def _check_content(content: Any, field: str, role: str) -> None:
    """The content shapes reproduced: a string, null, or an array of text and refusal parts.

    vLLM's request model refuses parts that are not objects, text parts without a
    string ``text``, and part types it does not know (``input_text`` and ``output_text``
    are the Responses API's); a refusal part reaches Harmony as empty text. The other
    parts it knows (images, audio, …) also reach Harmony as empty text, which is not
    reproduced here.
    """
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise RenderRequestError(field, "must be a string, an array of parts or null")
    for j, part in enumerate(content):
        where = f"{field}[{j}]"
        if not isinstance(part, dict):
            raise RenderRequestError(where, "Input should be a valid dictionary (a content "
                                     "part object)")
        kind = part.get("type")
        if kind in _REFUSED_PART_TYPES:
            raise RenderRequestError(f"{where}.type", f"{kind!r} is not a chat content part "
                                     "type (vLLM's request model refuses it)")
        payload = _PART_PAYLOADS.get(kind) if isinstance(kind, str) else None
        if payload is None or (kind == "refusal" and "text" in part):
            raise RenderUnsupportedError(where, "only text and refusal parts are reproduced "
                                         f"on the Harmony path (role {role!r})")
        if not isinstance(part.get(payload), str):
            raise RenderRequestError(f"{where}.{payload}", "Field required (a string)")


def _check_tool_calls(calls: Any, field: str) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise RenderRequestError(field, "must be an array")
    for j, call in enumerate(calls):
        where = f"{field}[{j}]"
        if not isinstance(call, dict) or call.get("type") != "function":
            raise RenderUnsupportedError(where, "only function tool calls are reproduced on "
                                         "the Harmony path")
        function = call.get("function")
        if not isinstance(call.get("id"), str) or not isinstance(function, dict) or not all(
                isinstance(function.get(k), str) for k in ("name", "arguments")):
            raise RenderRequestError(where, "a function tool call needs a string id and a "
                                     "function with string name and arguments")
    return calls


def check_messages(messages: Any) -> list[dict[str, Any]]:
    """The body's messages, validated to the shapes the Harmony path is reproduced for.

    The deprecated ``reasoning_content`` is renamed ``reasoning`` when that is unset,
    as vLLM's request model does before anything reads them.
    """
    out = []
    for field, message, role in message_objects(messages):
        if role not in _ROLES:
            raise RenderRequestError(f"{field}.role", "Input should be " + ", ".join(
                repr(r) for r in _ROLES[:-1]) + f" or {_ROLES[-1]!r}, got {role!r}")
        if "content" in message and message["content"] is None and role != "assistant":
            raise RenderRequestError(f"{field}.content", f"cannot be null for role {role!r}")
        _check_content(message.get("content"), f"{field}.content", role)
        name = message.get("name")
        if name is not None and not isinstance(name, str):
            raise RenderRequestError(f"{field}.name", "Input should be a valid string")
        message = dict(message)
        legacy = message.pop("reasoning_content", None)
        if legacy is not None and message.get("reasoning") is None:
            message["reasoning"] = legacy
        reasoning = message.get("reasoning")
        if reasoning is not None and not isinstance(reasoning, str):
            if role == "assistant" and reasoning:  # it becomes a Harmony message's content
                raise RenderRequestError(f"{field}.reasoning", "Input should be a string "
                                         "(Harmony's message content)")
            raise RenderUnsupportedError(f"{field}.reasoning", "only a string is reproduced")
        if message.get("tool_calls") is not None:
            if role != "assistant":
                raise RenderUnsupportedError(f"{field}.tool_calls", "tool calls are reproduced "
                                             "on assistant messages only")
            _check_tool_calls(message["tool_calls"], f"{field}.tool_calls")
        if role == "tool" and message.get("tool_call_id") is not None and not isinstance(
                message["tool_call_id"], str):
            raise RenderRequestError(f"{field}.tool_call_id", "must be a string")
        out.append(message)
    return out


class HarmonyChat:
    """Chat bodies of one gpt-oss replica rendered with Harmony, as vLLM 0.31 does.

    ``system_instructions`` is ``VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS``;
    ``start_date`` is ``VLLM_SYSTEM_START_DATE`` (None: the local date ``clock``
    reads when a body is rendered, as the replica does per request).
    """

    def __init__(self, *, system_instructions: bool, start_date: str | None,
                 clock: Callable[[], datetime], vllm_version: str) -> None:
        self._h = _load_library(vllm_version)
        self._every_header = render_era(vllm_version).harmony_headers == "every"
        self._encoding = self._h.load_harmony_encoding(
            self._h.HarmonyEncodingName.HARMONY_GPT_OSS)
        self._system_instructions = system_instructions
        self._start_date = start_date
        self._clock = clock
        special = self._encoding.encode
        self._start, self._channel, self._constrain, self._message = (
            special(name, allowed_special="all")[0]
            for name in ("<|start|>", "<|channel|>", "<|constrain|>", "<|message|>"))
        # The library's encode compiles a regex of its special tokens on every call to
        # refuse text holding one; compiled once here, the same check.
        self._specials = re.compile("|".join(
            re.escape(t) for t in sorted(self._encoding.special_tokens_set)))
        self._efforts = {"high": self._h.ReasoningEffort.HIGH,
                         "medium": self._h.ReasoningEffort.MEDIUM,
                         "low": self._h.ReasoningEffort.LOW}

    # ------------------------------------------------------------------------ messages

    def _system(self, instructions: str | None, effort: str | None, date: str) -> Any:
        h = self._h
        content = h.SystemContent.new()
        if instructions is not None and self._system_instructions:
            identity = content.model_identity
            content = content.with_model_identity(
                f"{identity}\n{instructions}" if identity else instructions)
        if effort is not None:
            content = content.with_reasoning_effort(self._efforts[effort])
        content = content.with_conversation_start_date(date)
        return h.Message.from_role_and_content(h.Role.SYSTEM, content)

    def _developer(self, instructions: str | None,
                   tools: list[dict[str, Any]] | None) -> Any:
        h = self._h
        content = h.DeveloperContent.new()
        if instructions is not None and not self._system_instructions:
            content = content.with_instructions(instructions)
        if tools:
            content = content.with_function_tools([
                h.ToolDescription.new(name=t["function"]["name"],
                                      description=t["function"]["description"] or "",
                                      parameters=t["function"]["parameters"])
                for t in tools])
        return h.Message.from_role_and_content(h.Role.DEVELOPER, content)

    def _assistant(self, text: str, channel: str) -> Any:
        return self._h.Message.from_role_and_content(self._h.Role.ASSISTANT,
                                                     text).with_channel(channel)

    def _parse(self, message: dict[str, Any], call_names: Mapping[str, str],
               date: str) -> list[Any]:
        h = self._h
        role = message["role"]
        calls = message.get("tool_calls") or []
        reasoning = message.get("reasoning")
        out = []
        if role == "assistant" and calls:
            content = _flatten(message.get("content"))
            if content:
                out.append(self._assistant(content, "commentary"))
            if reasoning:
                out.append(self._assistant(reasoning, "analysis"))
            for call in calls:
                function = call["function"]
                out.append(self._assistant(function["arguments"] or "", "commentary")
                           .with_recipient(f"functions.{function['name']}")
                           .with_content_type("json"))
            return out
        if role == "tool":
            name = call_names.get(message.get("tool_call_id", ""), "")
            author = h.Author.new(h.Role.TOOL, f"functions.{name}")
            content = _flatten(message.get("content")) or ""
            return [h.Message.from_author_and_content(author, content)
                    .with_channel("commentary").with_recipient("assistant")]
        if role == "assistant" and reasoning:
            out.append(self._assistant(reasoning, "analysis"))
        content = message.get("content") or ""
        texts = [content] if isinstance(content, str) else [p.get("text", "") for p in content]
        if role == "assistant":
            if texts and texts[0]:  # an assistant message with text: the final channel
                out.append(h.Message.from_role_and_contents(
                    h.Role.ASSISTANT, [h.TextContent(text=t) for t in texts]
                ).with_channel("final"))
        elif role in ("system", "developer"):
            instructions = _flatten(message.get("content"))
            if instructions is not None:
                if role == "system" and self._system_instructions:
                    out.append(self._system(instructions, None, date))
                else:
                    out.append(self._developer(instructions, None))
        else:
            out.append(h.Message.from_role_and_contents(
                h.Role(role), [h.TextContent(text=t) for t in texts]))
        return out

    # ------------------------------------------------------------------------ rendering

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
               reasoning_effort: str | None) -> list[int]:
        """The prompt ids of a validated conversation (:func:`check_messages`)."""
        instructions: str | None = None
        rest = messages
        if messages and messages[0]["role"] in ("system", "developer"):
            instructions, rest = _flatten(messages[0].get("content")), messages[1:]
        if reasoning_effort == "none":
            raise RenderRequestError("reasoning_effort", "Harmony does not support "
                                     "reasoning_effort='none'")
        if reasoning_effort is not None and reasoning_effort not in _EFFORTS:
            raise RenderRequestError(
                "reasoning_effort", f"reasoning_effort={reasoning_effort!r} is not supported "
                f"by Harmony. Supported values are: {', '.join(_EFFORTS)}.")
        date = self._start_date or self._clock().strftime("%Y-%m-%d")
        to_system = instructions if self._system_instructions else None
        to_developer = None if self._system_instructions else instructions
        harmony = [self._system(to_system, reasoning_effort, date)]
        if to_developer or tools:
            harmony.append(self._developer(to_developer, tools))
        call_names: dict[str, str] = {}
        for message in rest:
            for call in message.get("tool_calls") or []:
                call_names[call["id"]] = call["function"]["name"]
        for message in rest:
            harmony.extend(self._parse(message, call_names, date))
        return self._legacy_headers(self._render(harmony))

    def _render(self, harmony: list[Any]) -> list[int]:
        h = self._h
        last_final = max((i for i, m in enumerate(harmony)
                          if m.author.role == h.Role.ASSISTANT and m.channel == "final"),
                         default=-1)
        kept = [m for i, m in enumerate(harmony) if not (i < last_final
                                                         and m.channel == "analysis")]
        try:
            ids: list[int] = self._encoding.render_conversation_for_completion(
                h.Conversation.from_messages(kept), h.Role.ASSISTANT,
                config=h.RenderConversationConfig(auto_drop_analysis=False))
        except h.HarmonyError as exc:
            raise RenderUnsupportedError("messages", f"Harmony refused the conversation "
                                         f"({exc}); vLLM's answer to it is not reproduced"
                                         ) from None
        return ids

    def _encode(self, text: str) -> list[int]:
        """``encoding.encode(text)`` with its defaults: special-token text is refused."""
        found = self._specials.search(text)
        if found is not None:
            raise RenderUnsupportedError(
                "messages", f"a tool call's header holds the special token {found.group()!r}, "
                "which Harmony refuses to encode (vLLM's answer is not reproduced)")
        ids: list[int] = self._encoding.encode(text, disallowed_special=())
        return ids

    def _legacy_headers(self, ids: list[int]) -> list[int]:
        """Each ``assistant<|channel|>C to=R <|constrain|>T`` header as
        ``assistant to=R<|channel|>C T``, the form before oss-harmony 0.0.10; for a
        release whose headers all take that form (``RenderEra.harmony_headers``), also
        every other ``A<|channel|>C to=R`` header as ``A to=R<|channel|>C``."""
        decode = self._encoding.decode
        out = list(ids)
        at = 0
        while True:
            try:  # the next message start, found at C speed (prompts run to 100k ids)
                at = out.index(self._start, at)
            except ValueError:
                break
            try:
                end = out.index(self._message, at + 1)
                channel = out.index(self._channel, at + 1, end)
            except ValueError:
                at += 1
                continue
            header = self._older_header(out, at, channel, end, decode)
            if header is None:
                at = end + 1
                continue
            out[at:end + 1] = header
            at += len(header)
        return out

    def _older_header(self, out: list[int], at: int, channel: int, end: int,
                      decode: Callable[[list[int]], str]) -> list[int] | None:
        """The older form of the header ``out[at:end + 1]``, or None to keep it."""
        author = decode(out[at + 1:channel])
        try:
            constrain = out.index(self._constrain, channel + 1, end)
        except ValueError:
            if not self._every_header:
                return None
            head, sep, recipient = decode(out[channel + 1:end]).partition(" to=")
            if not sep or not head or not recipient:
                return None
            return [self._start, *self._encode(f"{author} to={recipient}"), self._channel,
                    *self._encode(head), self._message]
        middle = decode(out[channel + 1:constrain])
        content_type = decode(out[constrain + 1:end])
        head, sep, recipient = middle[:-1].partition(" to=")
        if author != "assistant" or not sep or not middle.endswith(" ") or not head \
                or not recipient or not content_type:
            return None
        return [self._start, *self._encode(f"assistant to={recipient}"), self._channel,
                *self._encode(f"{head} {content_type}"), self._message]
