"""Write the request bodies of the render corpus (``tests/render/bodies.jsonl``).

Maintainer tool, deterministic. One JSON line per request::

    {"id": "...", "model_dir": "models/<folder>", "endpoint": "/v1/chat/completions",
     "body": {...}, "server": {"--served-model-name": "...", ...}}

``model_dir`` and file-valued server flags (``--chat-template``) are relative to
``tests/render/``; ``server`` spells the options of the vLLM server that rendered the body
as vLLM's own flags (values: a string, a JSON value for ``--default-chat-template-kwargs``,
``true`` for a switch, a list for a repeatable flag). ``tools/harvest_render.py`` starts one
render server per distinct (``model_dir``, ``server``) and records its answers. The bodies
are the ones a router receives: plain and multi-turn chats, tools and tool calls, content
parts, unicode, empty strings, long prompts, template kwargs, completions with lists of
prompts and token ids, truncation, LoRA names, ``cache_salt``, and invalid bodies.

``serve_bodies.jsonl`` is a second, small corpus for ``vllm serve --enable-scale-out``
(an engine with random weights and generated adapters, see tools/harvest_render.py):
bodies naming ``--lora-modules`` adapters, which vLLM's render server cannot answer.

Usage::

    python tools/build_render_bodies.py [--out tests/render/bodies.jsonl]
        [--serve-out tests/render/serve_bodies.jsonl]
"""

# The texts are data: look-alike characters (full-width, curly quotes) are on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from corpus_io import write_bodies

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "render" / "bodies.jsonl"
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"

Body = dict[str, Any]
Server = dict[str, Any]

# --- building blocks -------------------------------------------------------------------

SYSTEM: dict[str, Any] = {"role": "system", "content": "You are a helpful assistant."}
USER: dict[str, Any] = {"role": "user", "content": "What is the weather like in Paris today?"}
ASSISTANT: dict[str, Any] = {
    "role": "assistant",
    "content": "It is sunny with a high of 21 degrees.",
}
FOLLOW_UP: dict[str, Any] = {"role": "user", "content": "And tomorrow?"}

LONG_PARAGRAPH = (
    "The quick brown fox jumps over the lazy dog. A router receives requests and sends "
    "each one to the replica that already holds its prefix in the cache. "
)
UNICODE_TEXTS = [
    "Привет, как дела? 你好，世界。 😀 🎉 👍🏽 🇫🇷",
    "Cafe\u0301 (NFD) vs Café (NFC), ﬁ ligature, full-width ＡＢＣ１２３",
    "שלום עולם مرحبا بالعالم Ελληνικά",
    "zero\u200bwidth\u200d joiner, BOM \ufeff, replacement \ufffd, NUL-free",
    "Numbers 12345678901234567890 and 3.14159, 1,000,000",
    "\t\tTabs\tand\r\nCRLF\n\n\nand    spaces   ",
    "<|im_start|>user\nspoofed special tokens<|im_end|> <s> [INST] <bos>",
]

GET_WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city name."},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
GET_TIME: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_time",
        "parameters": {"type": "object", "properties": {"timezone": {"type": "string"}}},
    },
}
NO_DESCRIPTION: dict[str, Any] = {"type": "function", "function": {"name": "search_docs"}}
STRICT_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Évalue une expression — ünïcödé.",
        "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}},
        "strict": True,
    },
}
TOOL_SETS: dict[str, list[dict[str, Any]]] = {
    "one": [GET_WEATHER],
    "two": [GET_WEATHER, GET_TIME],
    "nodesc": [NO_DESCRIPTION],
    "strict": [STRICT_TOOL, GET_TIME],
}


def _tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


TOOL_TURN: list[dict[str, Any]] = [
    SYSTEM,
    USER,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _tool_call("call_1", "get_weather", '{"city": "Paris", "unit": "celsius"}')
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 21, "sky": "sunny"}'},
]
TWO_TOOL_RESULTS: list[dict[str, Any]] = [
    USER,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            _tool_call("call_a", "get_weather", '{"city": "Oslo"}'),
            _tool_call("call_b", "get_time", '{"timezone": "Europe/Oslo"}'),
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "snow"},
    {"role": "tool", "tool_call_id": "call_b", "content": "09:30"},
]
BAD_ARGUMENTS: list[dict[str, Any]] = [
    USER,
    {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [_tool_call("call_x", "get_weather", "{not json")],
    },
    {"role": "tool", "tool_call_id": "call_x", "content": "error"},
]
LIST_TOOL_CONTENT: list[dict[str, Any]] = [
    *TOOL_TURN[:3],
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": [{"type": "text", "text": "21 degrees"}, {"type": "text", "text": "sunny"}],
    },
]
PARTS: list[dict[str, Any]] = [
    {
        "role": "system",
        "content": [{"type": "text", "text": "Answer in French."}],
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Describe the weather"},
            {"type": "text", "text": "in two words."},
        ],
    },
]

CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    "user": [USER],
    "system": [SYSTEM, USER],
    "multiturn": [SYSTEM, USER, ASSISTANT, FOLLOW_UP],
    "no_system_multiturn": [USER, ASSISTANT, FOLLOW_UP],
    "empty_user": [{"role": "user", "content": ""}],
    "empty_system": [{"role": "system", "content": ""}, USER],
    "spaces": [{"role": "user", "content": "   \n\t padded  \n "}],
    "parts": PARTS,
    "parts_single": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
    "developer": [{"role": "developer", "content": "Be terse."}, USER],
    "developer_and_system": [SYSTEM, {"role": "developer", "content": "Be terse."}, USER],
    "late_system": [USER, ASSISTANT, {"role": "system", "content": "Now answer in Latin."}],
    "two_users": [USER, FOLLOW_UP],
    "assistant_last": [USER, {"role": "assistant", "content": "The weather in Paris is"}],
    "named_user": [{"role": "user", "content": "Hi, I am Ada.", "name": "ada"}],
    "tool_turn": TOOL_TURN,
    "two_tool_results": TWO_TOOL_RESULTS,
    "bad_arguments": BAD_ARGUMENTS,
    "list_tool_content": LIST_TOOL_CONTENT,
    "long": [{"role": "user", "content": LONG_PARAGRAPH * 40}],
}
for _i, _text in enumerate(UNICODE_TEXTS):
    CONVERSATIONS[f"unicode{_i}"] = [{"role": "user", "content": _text}]

# Per-body options that change rendering (each applied to a few conversations).
CHAT_OPTIONS: dict[str, Body] = {
    "plain": {},
    "no_generation_prompt": {"add_generation_prompt": False},
    "special_tokens": {"add_special_tokens": True},
    "salt": {"cache_salt": "tenant-42"},
    "thinking_kwarg": {"chat_template_kwargs": {"enable_thinking": True}},
    "kwargs_null_auto": {"chat_template_kwargs": {"greeting": None, "default_system": "auto"}},
    "kwargs_custom": {
        "chat_template_kwargs": {"greeting": "Bonjour !", "default_system": "Be brief."}
    },
    "kwargs_unknown": {"chat_template_kwargs": {"not_a_template_variable": 1}},
    "reasoning_low": {"reasoning_effort": "low"},
    "reasoning_none": {"reasoning_effort": "none"},
    "documents": {
        "documents": [
            {"title": "Tides", "text": "The moon's gravity pulls the oceans."},
            {"text": "Untitled note: ünïcödé."},
        ]
    },
    "truncate": {"truncate_prompt_tokens": 8},
    "truncate_right": {"truncate_prompt_tokens": 8, "truncation_side": "right"},
    "max_tokens": {"max_tokens": 5},
    "request_template": {
        "chat_template": "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    },
    "no_model": {"model": None},
}

KV_PARAMS: Body = {"kv_transfer_params": {"prompt_token_ids": [5, 6, 7, 8]}}


def _chat(served: str, messages: list[dict[str, Any]], **extra: Any) -> Body:
    body: Body = {"model": served, "messages": messages}
    for key, value in extra.items():
        if key == "model" and value is None:
            del body["model"]
        else:
            body[key] = value
    return body


# --- per server ------------------------------------------------------------------------


class Corpus:
    """Accumulates lines with stable ids ``<group>/<label>``."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self._ids: set[str] = set()

    def add(
        self, group: str, label: str, folder: str, endpoint: str, body: Body, server: Server
    ) -> None:
        line_id = f"{group}/{label}"
        if line_id in self._ids:
            raise ValueError(f"duplicate id {line_id}")
        self._ids.add(line_id)
        self.lines.append(
            {
                "id": line_id,
                "model_dir": f"models/{folder}",
                "endpoint": endpoint,
                "body": body,
                "server": server,
            }
        )


def _chat_matrix(
    corpus: Corpus,
    group: str,
    folder: str,
    server: Server,
    conversations: list[str],
    options: list[str],
) -> None:
    model = server["--served-model-name"]
    for conv in conversations:
        corpus.add(group, f"chat-{conv}", folder, CHAT, _chat(model, CONVERSATIONS[conv]), server)
    for option in options:
        for conv in ("system", "multiturn", "assistant_last"):
            body = _chat(model, CONVERSATIONS[conv], **CHAT_OPTIONS[option])
            corpus.add(group, f"chat-{conv}-{option}", folder, CHAT, body, server)


def _continue_final(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    model = server["--served-model-name"]
    conv = CONVERSATIONS["assistant_last"]
    for label, extra in {
        "continue": {"continue_final_message": True, "add_generation_prompt": False},
        "continue_and_generation": {"continue_final_message": True},
        "continue_user_last": {"continue_final_message": True, "add_generation_prompt": False},
    }.items():
        messages = CONVERSATIONS["user"] if label == "continue_user_last" else conv
        corpus.add(group, f"chat-{label}", folder, CHAT, _chat(model, messages, **extra), server)


def _tools(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    model = server["--served-model-name"]
    for name, tools in TOOL_SETS.items():
        for conv in ("system", "tool_turn"):
            for choice_label, choice in {
                "unset": None,
                "auto": "auto",
                "none": "none",
                "required": "required",
                "named": {"type": "function", "function": {"name": tools[0]["function"]["name"]}},
            }.items():
                extra: Body = {"tools": tools}
                if choice is not None:
                    extra["tool_choice"] = choice
                body = _chat(model, CONVERSATIONS[conv], **extra)
                corpus.add(
                    group, f"tools-{name}-{conv}-{choice_label}", folder, CHAT, body, server
                )
    for conv in ("two_tool_results", "bad_arguments", "list_tool_content", "parts"):
        body = _chat(model, CONVERSATIONS[conv], tools=TOOL_SETS["two"], tool_choice="auto")
        corpus.add(group, f"tools-two-{conv}-auto", folder, CHAT, body, server)
    body = _chat(model, CONVERSATIONS["system"], tools=[], tool_choice="none")
    corpus.add(group, "tools-empty-list", folder, CHAT, body, server)


def _completions(
    corpus: Corpus, group: str, folder: str, server: Server, bos: str | None, long_repeat: int
) -> None:
    model = server["--served-model-name"]
    prompts: dict[str, Body] = {
        "string": {"prompt": "The quick brown fox"},
        "empty": {"prompt": ""},
        "space": {"prompt": " "},
        "newlines": {"prompt": "\n\nline\n"},
        "long": {"prompt": LONG_PARAGRAPH * long_repeat},
        "list": {"prompt": ["first prompt", "second prompt", "😀"]},
        "list_one": {"prompt": ["only one"]},
        "list_with_empty": {"prompt": ["a", ""]},
        "token_ids": {"prompt": [5, 6, 7, 8, 9]},
        "token_ids_one": {"prompt": [3]},
        "token_id_lists": {"prompt": [[5, 6, 7], [8, 9]]},
        "token_ids_empty": {"prompt": []},
        "token_ids_out_of_vocab": {"prompt": [1, 2, 999999]},
        "token_ids_negative": {"prompt": [1, -2, 3]},
        "no_special": {"prompt": "The quick brown fox", "add_special_tokens": False},
        "token_ids_no_special": {"prompt": [5, 6, 7], "add_special_tokens": False},
        "truncate": {"prompt": LONG_PARAGRAPH, "truncate_prompt_tokens": 6},
        "truncate_right": {
            "prompt": LONG_PARAGRAPH,
            "truncate_prompt_tokens": 6,
            "truncation_side": "right",
        },
        "truncate_minus_one": {"prompt": LONG_PARAGRAPH, "truncate_prompt_tokens": -1},
        "truncate_token_ids": {"prompt": list(range(10, 30)), "truncate_prompt_tokens": 4},
        "truncate_list": {
            "prompt": ["one two three four five six", "x"],
            "truncate_prompt_tokens": 3,
        },
        "salt": {"prompt": "salted", "cache_salt": "tenant-42"},
        "salt_empty": {"prompt": "salted", "cache_salt": ""},
        "echo": {"prompt": "echo me", "echo": True, "max_tokens": 1},
        "suffix": {"prompt": "def f(", "suffix": "return x"},
        "max_tokens_huge": {"prompt": "hi", "max_tokens": 10_000_000},
        "no_model": {"prompt": "no model field"},
        "kv_params": {"prompt": "ignored?", **KV_PARAMS},
    }
    for i, text in enumerate(UNICODE_TEXTS):
        prompts[f"unicode{i}"] = {"prompt": text}
    if bos is not None:
        prompts["bos_text"] = {"prompt": bos + "starts with the BOS text"}
        prompts["bos_text_no_special"] = {
            "prompt": bos + "starts with the BOS text",
            "add_special_tokens": False,
        }
    for label, fields in prompts.items():
        body = dict(fields) if label == "no_model" else {"model": model, **fields}
        corpus.add(group, f"cmpl-{label}", folder, COMPLETIONS, body, server)


def _invalid(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    model = server["--served-model-name"]
    chat_bodies: dict[str, Body] = {
        "unknown_model": _chat("not-served", [USER]),
        "lora_unknown": _chat("no-such-adapter", [USER]),
        "no_messages": {"model": model},
        "empty_messages": {"model": model, "messages": []},
        "role_missing": {"model": model, "messages": [{"content": "hi"}]},
        "content_int": {"model": model, "messages": [{"role": "user", "content": 5}]},
        "unknown_part": _chat(model, [{"role": "user", "content": [{"type": "video", "x": 1}]}]),
        "bad_tools": _chat(model, [USER], tools=[{"type": "function"}]),
        "tool_choice_unknown_name": _chat(
            model,
            [USER],
            tools=[GET_WEATHER],
            tool_choice={"type": "function", "function": {"name": "nope"}},
        ),
        "beam_search": _chat(model, [USER], use_beam_search=True),
        "temperature_string": _chat(model, [USER], temperature="hot"),
        "n_zero": _chat(model, [USER], n=0),
        "truncate_too_negative": _chat(model, [USER], truncate_prompt_tokens=-2),
        "messages_not_list": {"model": model, "messages": "hello"},
        "kv_params_chat": _chat(model, [USER], **KV_PARAMS),
    }
    for label, body in chat_bodies.items():
        corpus.add(group, f"bad-chat-{label}", folder, CHAT, body, server)
    cmpl_bodies: dict[str, Body] = {
        "unknown_model": {"model": "not-served", "prompt": "x"},
        "no_prompt": {"model": model},
        "prompt_null": {"model": model, "prompt": None},
        "prompt_dict": {"model": model, "prompt": {"text": "x"}},
        "prompt_mixed_list": {"model": model, "prompt": ["text", [1, 2]]},
        "prompt_floats": {"model": model, "prompt": [1.5, 2.0]},
        "truncate_too_negative": {"model": model, "prompt": "x", "truncate_prompt_tokens": -5},
        "bad_truncation_side": {
            "model": model,
            "prompt": "x",
            "truncate_prompt_tokens": 1,
            "truncation_side": "mid",
        },
    }
    for label, body in cmpl_bodies.items():
        corpus.add(group, f"bad-cmpl-{label}", folder, COMPLETIONS, body, server)


# Edge cases of how vLLM's request models read a body (lenient JSON values, content and
# tool-call validation, whitespace, unicode): each body is vLLM's answer, not an assumption.
EDGE_TEXTS = {
    "emoji_zwj": "Family 👨‍👩‍👧‍👦, flag 🏳️‍🌈, skin tone 👋🏿, keycap 1️⃣",
    "combining": "a\u0301e\u0300o\u0302 Z\u0335\u0321a\u0337l\u0334g\u0338o\u0336 n\u0303",
    "rtl": "\u202bمرحبا\u202c and \u200fשלום\u200e mixed: abc אבג 123",
    "whitespace_only": " \n\t  \n",
}


def _edge_chat(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    model = server["--served-model-name"]
    call = _tool_call("call_1", "get_weather", '{"unit": "celsius", "city": "Paris"}')
    no_id = {"type": "function", "function": call["function"]}
    dict_args = {**call, "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    list_args = {**call, "function": {"name": "get_weather", "arguments": "[1, 2]"}}
    empty_args = {**call, "function": {"name": "get_weather", "arguments": ""}}

    def with_call(tool_call: Any) -> list[dict[str, Any]]:
        return [USER, {"role": "assistant", "content": None, "tool_calls": [tool_call]},
                {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]

    bodies: dict[str, Body] = {
        # content: null and missing content, per role.
        "null-user": _chat(model, [{"role": "user", "content": None}]),
        "null-system": _chat(model, [{"role": "system", "content": None}, USER]),
        "null-assistant": _chat(model, [USER, {"role": "assistant", "content": None}, FOLLOW_UP]),
        "null-tool": _chat(model, [*with_call(call)[:2],
                                   {"role": "tool", "tool_call_id": "call_1", "content": None}]),
        "missing-content-user": _chat(model, [{"role": "user"}]),
        "missing-content-assistant": _chat(model, [USER, {"role": "assistant"}, FOLLOW_UP]),
        # tool calls: the arguments' key order, validation.
        "toolcall-args-key-order": _chat(model, with_call(call)),
        "toolcall-no-id": _chat(model, with_call(no_id)),
        "toolcall-dict-args": _chat(model, with_call(dict_args)),
        "toolcall-list-args": _chat(model, with_call(list_args)),
        "toolcall-empty-args": _chat(model, with_call(empty_args)),
        "toolcall-no-type": _chat(model, with_call({"id": "call_1",
                                                    "function": call["function"]})),
        "toolcall-extra-field": _chat(model, with_call({**call, "index": 0})),
        # the template in chat_template_kwargs (untrusted here unless the server trusts).
        "kwargs-template": _chat(model, [USER], chat_template_kwargs={
            "chat_template": "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"}),
        # extra fields on text parts.
        "part-extra-field": _chat(model, [{"role": "user", "content": [
            {"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "there", "name": "x"}]}]),
        "part-no-type": _chat(model, [{"role": "user", "content": [{"text": "Hi"}]}]),
        "part-empty-list": _chat(model, [{"role": "user", "content": []}]),
        "part-empty-text": _chat(model, [{"role": "user", "content": [
            {"type": "text", "text": ""}, {"type": "text", "text": " "}]}]),
        # lenient values.
        "lenient-max-tokens-string": _chat(model, [USER], max_tokens="5"),
        "lenient-max-tokens-float": _chat(model, [USER], max_tokens=5.0),
        "lenient-max-tokens-1e3": _chat(model, [USER], max_tokens="1e3"),
        "lenient-max-tokens-float-1e3": _chat(model, [USER], max_tokens=1e3),
        "lenient-max-tokens-fraction": _chat(model, [USER], max_tokens=5.5),
        "lenient-max-tokens-hex": _chat(model, [USER], max_tokens="0x5"),
        "lenient-max-tokens-padded": _chat(model, [USER], max_tokens=" 5 "),
        "lenient-max-tokens-underscore": _chat(model, [USER], max_tokens="1_0"),
        "lenient-max-tokens-bool": _chat(model, [USER], max_tokens=True),
        "lenient-max-tokens-word": _chat(model, [USER], max_tokens="five"),
        "lenient-max-tokens-empty": _chat(model, [USER], max_tokens=""),
        "lenient-max-tokens-1E3": _chat(model, [USER], max_tokens="1E3"),
        "lenient-max-tokens-exponent-fraction": _chat(model, [USER], max_tokens="1.5e1"),
        "lenient-max-tokens-negative-hex": _chat(model, [USER], max_tokens="-0x1"),
        "lenient-max-tokens-octal": _chat(model, [USER], max_tokens="0o7"),
        "lenient-generation-prompt-string": _chat(model, [USER], add_generation_prompt="false"),
        "lenient-generation-prompt-int": _chat(model, [USER], add_generation_prompt=0),
        "lenient-generation-prompt-word": _chat(model, [USER], add_generation_prompt="off"),
        "lenient-generation-prompt-bad": _chat(model, [USER], add_generation_prompt="maybe"),
        "lenient-special-tokens-string": _chat(model, [USER], add_special_tokens="true"),
        "lenient-truncate-string": _chat(model, [USER], truncate_prompt_tokens="4"),
        "lenient-truncate-1e1": _chat(model, [USER], truncate_prompt_tokens="1e1"),
        # continue_final_message spelled out with add_generation_prompt true (vLLM's 400).
        "continue-generation-true": _chat(model, CONVERSATIONS["assistant_last"],
                                          continue_final_message=True,
                                          add_generation_prompt=True),
        # reasoning_effort values.
        "reasoning-high": _chat(model, [SYSTEM, USER], reasoning_effort="high"),
        "reasoning-bad": _chat(model, [SYSTEM, USER], reasoning_effort="extreme"),
        "reasoning-and-kwarg": _chat(model, [SYSTEM, USER], reasoning_effort="none",
                                     chat_template_kwargs={"enable_thinking": True}),
        # documents.
        "documents-empty": _chat(model, [SYSTEM, USER], documents=[]),
        "documents-not-strings": _chat(model, [SYSTEM, USER],
                                       documents=[{"title": 1, "text": "x"}]),
        "documents-not-list": _chat(model, [SYSTEM, USER], documents="a doc"),
        # kv_transfer_params on chat.
        "kv-params-empty": _chat(model, [USER], kv_transfer_params={"prompt_token_ids": []}),
        "kv-params-no-ids": _chat(model, [USER], kv_transfer_params={"other": 1}),
    }
    for label, text in EDGE_TEXTS.items():
        bodies[f"text-{label}"] = _chat(model, [SYSTEM, {"role": "user", "content": text}])
    bodies["text-whitespace-system"] = _chat(model, [{"role": "system", "content": "  "}, USER])
    bodies["text-newline-assistant"] = _chat(model, [USER, {"role": "assistant",
                                                            "content": "\n"}, FOLLOW_UP])
    for label, body in bodies.items():
        corpus.add(group, f"edge-chat-{label}", folder, CHAT, body, server)


def _edge_completions(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    model = server["--served-model-name"]
    prompts: dict[str, Body] = {
        "lenient-ids": {"prompt": [1, "2", 3.0, True], "max_tokens": "4"},
        "lenient-id-1e3": {"prompt": [1, "1e3"]},
        "lenient-id-float-1e2": {"prompt": [1, 1e2]},
        "lenient-id-padded": {"prompt": [1, " 2"]},
        "lenient-id-false": {"prompt": [False, 2]},
        "lenient-id-strings-only": {"prompt": ["1", "2"]},
        "lenient-max-tokens-1e3": {"prompt": "x", "max_tokens": "1e3"},
        "lenient-max-tokens-float": {"prompt": "x", "max_tokens": 4.0},
        "lenient-truncate-string": {"prompt": LONG_PARAGRAPH, "truncate_prompt_tokens": "5"},
        "lenient-special-tokens-int": {"prompt": "x", "add_special_tokens": 0},
        "list-empty-first": {"prompt": ["", "a"]},
        "list-all-empty": {"prompt": ["", ""]},
        "list-one-empty": {"prompt": [""]},
        "list-empty-whitespace": {"prompt": ["", " ", "\n"]},
        "list-empty": {"prompt": [[]]},
        "list-of-empty-id-lists": {"prompt": [[], [1]]},
        "whitespace-only": {"prompt": " \n\t  \n"},
        "truncate-ids-right": {"prompt": list(range(10, 30)), "truncate_prompt_tokens": 4,
                               "truncation_side": "right"},
        "truncate-over-length": {"prompt": "short", "truncate_prompt_tokens": 50},
        "truncate-zero": {"prompt": "short prompt", "truncate_prompt_tokens": 0},
        "truncate-list-right": {"prompt": ["one two three four five six", "x"],
                                "truncate_prompt_tokens": 3, "truncation_side": "right"},
        "kv-params-list": {"prompt": ["a", "b"],
                           "kv_transfer_params": {"prompt_token_ids": [5, 6]}},
        "kv-params-token-ids": {"prompt": [1, 2],
                                "kv_transfer_params": {"prompt_token_ids": [5, 6]}},
        "kv-params-empty": {"prompt": "x", "kv_transfer_params": {"prompt_token_ids": []}},
    }
    for label, text in EDGE_TEXTS.items():
        prompts[f"text-{label}"] = {"prompt": text}
    for label, fields in prompts.items():
        corpus.add(group, f"edge-cmpl-{label}", folder, COMPLETIONS,
                   {"model": model, **fields}, server)


def _edge_short(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    """Bodies at and over a 64-token context (the server's --max-model-len)."""
    model = server["--served-model-name"]
    bodies: dict[str, tuple[str, Body]] = {
        "cmpl-ids-at-limit": (COMPLETIONS, {"model": model, "prompt": list(range(1, 49)),
                                            "max_tokens": 16}),
        "cmpl-ids-over-limit": (COMPLETIONS, {"model": model, "prompt": list(range(1, 50)),
                                              "max_tokens": 16}),
        "cmpl-ids-over-no-max": (COMPLETIONS, {"model": model, "prompt": list(range(1, 66))}),
        "cmpl-list-one-over": (COMPLETIONS, {"model": model,
                                             "prompt": ["short", LONG_PARAGRAPH * 3]}),
        "cmpl-truncated-under": (COMPLETIONS, {"model": model, "prompt": LONG_PARAGRAPH * 3,
                                               "truncate_prompt_tokens": 40}),
        "cmpl-truncate-over-limit": (COMPLETIONS, {"model": model, "prompt": "x",
                                                   "truncate_prompt_tokens": 100}),
        "cmpl-kv-params-over": (COMPLETIONS, {"model": model, "prompt": "x", "kv_transfer_params":
                                              {"prompt_token_ids": list(range(1, 80))}}),
        "chat-kv-params-over": (CHAT, _chat(model, [USER], kv_transfer_params={
            "prompt_token_ids": list(range(1, 80))})),
        "chat-kv-params-over-truncated": (CHAT, _chat(
            model, [USER], truncate_prompt_tokens=10,
            kv_transfer_params={"prompt_token_ids": list(range(1, 80))})),
        "chat-kv-params-over-truncate-all": (CHAT, _chat(
            model, [USER], truncate_prompt_tokens=-1,
            kv_transfer_params={"prompt_token_ids": list(range(1, 80))})),
        "chat-max-tokens-over": (CHAT, _chat(model, [USER], max_tokens=60)),
        "chat-max-tokens-at": (CHAT, _chat(model, [USER], max_tokens=1)),
        "chat-truncate-long-left": (CHAT, _chat(model, CONVERSATIONS["long"],
                                                truncate_prompt_tokens=20)),
        "chat-truncate-long-right": (CHAT, _chat(model, CONVERSATIONS["long"],
                                                 truncate_prompt_tokens=20,
                                                 truncation_side="right")),
    }
    for label, (endpoint, body) in bodies.items():
        corpus.add(group, f"edge-{label}", folder, endpoint, body, server)


def _edge_tool_choice(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    """tool_choice forms beyond the matrix: named with a wrong type, none with a tool turn."""
    model = server["--served-model-name"]
    two = TOOL_SETS["two"]
    bodies: dict[str, Body] = {
        "named-second": _chat(model, [USER], tools=two, tool_choice={
            "type": "function", "function": {"name": "get_time"}}),
        "named-no-type": _chat(model, [USER], tools=two,
                               tool_choice={"function": {"name": "get_time"}}),
        "named-string": _chat(model, [USER], tools=two, tool_choice="get_time"),
        "none-no-tools": _chat(model, [USER], tool_choice="none"),
        "required-no-tools": _chat(model, [USER], tool_choice="required"),
        "auto-no-tools": _chat(model, [USER], tool_choice="auto"),
        "none-tool-turn": _chat(model, TOOL_TURN, tools=two, tool_choice="none"),
        "tools-null": _chat(model, [USER], tools=None, tool_choice="none"),
        "tool-extra-field": _chat(model, [USER], tool_choice="none", tools=[
            {**GET_TIME, "function": {**GET_TIME["function"], "x-extra": 1}}]),
    }
    for label, body in bodies.items():
        corpus.add(group, f"edge-tools-{label}", folder, CHAT, body, server)


def _edge_developer(corpus: Corpus, group: str, folder: str, server: Server) -> None:
    """A trusted request template with and without a quoted "developer"."""
    model = server["--served-model-name"]
    loop = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    with_dev = ("{% for m in messages %}{% if m['role'] == \"developer\" %}[dev]"
                "{% endif %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}")
    conv = [SYSTEM, {"role": "developer", "content": "Be terse."}, USER]
    for label, template in {"plain": loop, "developer": with_dev}.items():
        corpus.add(group, f"edge-chat-developer-{label}-template", folder, CHAT,
                   _chat(model, conv, chat_template=template), server)
        corpus.add(group, f"edge-chat-developer-{label}-kwargs-template", folder, CHAT,
                   _chat(model, conv, chat_template_kwargs={"chat_template": template}), server)


def _server(name: str, **flags: Any) -> Server:
    return {"--served-model-name": name, **flags}


ALL_OPTIONS = list(CHAT_OPTIONS)
BASE_CONVERSATIONS = list(CONVERSATIONS)


def build() -> list[dict[str, Any]]:
    corpus = Corpus()
    lora = ["adapter-a=/adapters/a", '{"name": "adapter-b", "path": "/adapters/b"}']

    # gpt2_bytelevel: the 32k folder. Default server, then tools + LoRA + exclusions,
    # then a short context with the 'string' content format forced.
    srv = _server("gpt2-chatml")
    _chat_matrix(corpus, "gpt2", "gpt2_bytelevel", srv, BASE_CONVERSATIONS, ALL_OPTIONS)
    _continue_final(corpus, "gpt2", "gpt2_bytelevel", srv)
    _tools(corpus, "gpt2", "gpt2_bytelevel", srv)
    _completions(corpus, "gpt2", "gpt2_bytelevel", srv, None, long_repeat=400)
    _invalid(corpus, "gpt2", "gpt2_bytelevel", srv)
    long_chat = _chat("gpt2-chatml", [{"role": "user", "content": LONG_PARAGRAPH * 900}])
    corpus.add("gpt2", "chat-very-long", "gpt2_bytelevel", CHAT, long_chat, srv)
    _edge_chat(corpus, "gpt2", "gpt2_bytelevel", srv)
    _edge_completions(corpus, "gpt2", "gpt2_bytelevel", srv)
    _edge_tool_choice(corpus, "gpt2", "gpt2_bytelevel", srv)

    srv = _server(
        "gpt2-tools",
        **{
            "--enable-auto-tool-choice": True,
            "--tool-call-parser": "hermes",
            "--exclude-tools-when-tool-choice-none": True,
            "--lora-modules": lora,
        },
    )
    _tools(corpus, "gpt2-tools", "gpt2_bytelevel", srv)
    _edge_tool_choice(corpus, "gpt2-tools", "gpt2_bytelevel", srv)
    for label, model in {
        "lora_a": "adapter-a",
        "lora_b": "adapter-b",
        "base": "gpt2-tools",
    }.items():
        corpus.add(
            "gpt2-tools",
            f"chat-{label}",
            "gpt2_bytelevel",
            CHAT,
            _chat(model, [SYSTEM, USER], cache_salt="s1"),
            srv,
        )
        corpus.add(
            "gpt2-tools",
            f"cmpl-{label}",
            "gpt2_bytelevel",
            COMPLETIONS,
            {"model": model, "prompt": ["a", "b"]},
            srv,
        )

    srv = _server(
        "gpt2-short", **{"--max-model-len": 64, "--chat-template-content-format": "string"}
    )
    _chat_matrix(
        corpus,
        "gpt2-short",
        "gpt2_bytelevel",
        srv,
        ["user", "system", "parts", "parts_single", "long", "multiturn"],
        ["plain", "truncate", "truncate_right", "max_tokens"],
    )
    _completions(corpus, "gpt2-short", "gpt2_bytelevel", srv, None, long_repeat=3)
    _edge_short(corpus, "gpt2-short", "gpt2_bytelevel", srv)

    # neox_wordlevel: named templates; auto tool choice to reach the 'tool_use' one.
    srv = _server("wordlevel")
    _chat_matrix(
        corpus,
        "wordlevel",
        "neox_wordlevel",
        srv,
        BASE_CONVERSATIONS,
        ["plain", "no_generation_prompt", "special_tokens", "salt"],
    )
    _tools(corpus, "wordlevel", "neox_wordlevel", srv)
    _completions(corpus, "wordlevel", "neox_wordlevel", srv, "[BOS]", long_repeat=20)
    srv = _server(
        "wordlevel-tools", **{"--enable-auto-tool-choice": True, "--tool-call-parser": "hermes"}
    )
    _tools(corpus, "wordlevel-tools", "neox_wordlevel", srv)
    _chat_matrix(corpus, "wordlevel-tools", "neox_wordlevel", srv, ["user", "parts", "system"], [])
    srv = _server("wordlevel-openai", **{"--chat-template-content-format": "openai"})
    _chat_matrix(
        corpus,
        "wordlevel-openai",
        "neox_wordlevel",
        srv,
        ["user", "parts", "system", "multiturn"],
        [],
    )
    _edge_chat(corpus, "wordlevel-openai", "neox_wordlevel", srv)

    # stablelm_unigram: chat_template.jinja; server default kwargs; trusted request templates.
    srv = _server("unigram")
    _chat_matrix(corpus, "unigram", "stablelm_unigram", srv, BASE_CONVERSATIONS, ALL_OPTIONS)
    _continue_final(corpus, "unigram", "stablelm_unigram", srv)
    _completions(corpus, "unigram", "stablelm_unigram", srv, "<bos>", long_repeat=20)
    corpus.add(
        "unigram",
        "chat-unknown-role",
        "stablelm_unigram",
        CHAT,
        _chat("unigram", [{"role": "narrator", "content": "Once upon a time"}]),
        srv,
    )
    srv = _server(
        "unigram-kwargs",
        **{
            "--default-chat-template-kwargs": {"enable_thinking": True, "greeting": "Hi there"},
            "--trust-request-chat-template": True,
        },
    )
    _chat_matrix(
        corpus,
        "unigram-kwargs",
        "stablelm_unigram",
        srv,
        ["user", "system", "developer"],
        [
            "plain",
            "thinking_kwarg",
            "kwargs_null_auto",
            "kwargs_custom",
            "reasoning_none",
            "reasoning_low",
            "request_template",
        ],
    )
    _edge_chat(corpus, "unigram-kwargs", "stablelm_unigram", srv)
    _edge_developer(corpus, "unigram-kwargs", "stablelm_unigram", srv)

    # llama3_bos: BOS from the template and the post-processor.
    srv = _server("llama3")
    _chat_matrix(
        corpus,
        "llama3",
        "llama3_bos",
        srv,
        BASE_CONVERSATIONS,
        ["plain", "no_generation_prompt", "special_tokens", "salt", "kwargs_custom", "truncate"],
    )
    _continue_final(corpus, "llama3", "llama3_bos", srv)
    corpus.add(
        "llama3",
        "chat-date-kwarg",
        "llama3_bos",
        CHAT,
        _chat("llama3", [SYSTEM, USER], chat_template_kwargs={"date_string": "1 Jan 2030"}),
        srv,
    )
    _completions(corpus, "llama3", "llama3_bos", srv, "<|begin_of_text|>", long_repeat=20)
    srv = _server(
        "llama3-tools", **{"--enable-auto-tool-choice": True, "--tool-call-parser": "llama3_json"}
    )
    _tools(corpus, "llama3-tools", "llama3_bos", srv)
    corpus.add(
        "llama3-tools",
        "tools-system-placement",
        "llama3_bos",
        CHAT,
        _chat(
            "llama3-tools",
            [SYSTEM, USER],
            tools=[GET_WEATHER],
            tool_choice="auto",
            chat_template_kwargs={"tools_in_user_message": False},
        ),
        srv,
    )

    # llama2_bytefallback: LlamaTokenizer; then a --chat-template override.
    srv = _server("llama2")
    _chat_matrix(
        corpus,
        "llama2",
        "llama2_bytefallback",
        srv,
        BASE_CONVERSATIONS,
        ["plain", "special_tokens", "salt", "no_generation_prompt"],
    )
    _completions(corpus, "llama2", "llama2_bytefallback", srv, "<s>", long_repeat=20)
    _invalid(corpus, "llama2", "llama2_bytefallback", srv)
    srv = _server("llama2-override", **{"--chat-template": "models/override_template.jinja"})
    _chat_matrix(
        corpus,
        "llama2-override",
        "llama2_bytefallback",
        srv,
        ["user", "system", "multiturn", "unicode0", "parts"],
        ["plain"],
    )

    # qwen2_rebuilt: the tokenizer transformers 5 rebuilds; tools with and without
    # --enable-auto-tool-choice.
    srv = _server("qwen2")
    _chat_matrix(
        corpus,
        "qwen2",
        "qwen2_rebuilt",
        srv,
        BASE_CONVERSATIONS,
        ["plain", "special_tokens", "salt", "no_generation_prompt", "truncate"],
    )
    _tools(corpus, "qwen2", "qwen2_rebuilt", srv)
    _completions(corpus, "qwen2", "qwen2_rebuilt", srv, None, long_repeat=20)
    srv = _server(
        "qwen2-tools", **{"--enable-auto-tool-choice": True, "--tool-call-parser": "hermes"}
    )
    _tools(corpus, "qwen2-tools", "qwen2_rebuilt", srv)
    return corpus.lines


# The serve corpus: vllm serve --enable-scale-out with an engine (random weights, two
# generated adapters), for what the render server cannot answer: LoRA adapters.
SERVE_LORAS = ["adapter-a=/adapters/a", '{"name": "adapter-b", "path": "/adapters/b"}']


def build_serve() -> list[dict[str, Any]]:
    corpus = Corpus()
    srv = _server(
        "llama3-serve",
        **{
            "--enable-scale-out": True,
            "--enable-lora": True,
            "--max-lora-rank": 8,
            "--lora-modules": SERVE_LORAS,
            "--enforce-eager": True,
            "--max-model-len": 2048,
            "--enable-auto-tool-choice": True,
            "--tool-call-parser": "llama3_json",
        },
    )
    folder = "llama3_bos"
    for model in ("llama3-serve", "adapter-a", "adapter-b"):
        for conv in ("user", "system", "multiturn", "unicode0", "tool_turn"):
            corpus.add(
                "serve",
                f"chat-{conv}-{model}",
                folder,
                CHAT,
                _chat(model, CONVERSATIONS[conv]),
                srv,
            )
        corpus.add(
            "serve",
            f"chat-salt-{model}",
            folder,
            CHAT,
            _chat(model, CONVERSATIONS["system"], cache_salt="tenant-42"),
            srv,
        )
        corpus.add(
            "serve",
            f"chat-special-{model}",
            folder,
            CHAT,
            _chat(model, CONVERSATIONS["system"], add_special_tokens=True),
            srv,
        )
        corpus.add(
            "serve",
            f"chat-tools-{model}",
            folder,
            CHAT,
            _chat(model, CONVERSATIONS["system"], tools=TOOL_SETS["one"], tool_choice="auto"),
            srv,
        )
        corpus.add(
            "serve",
            f"chat-beam-{model}",
            folder,
            CHAT,
            _chat(model, CONVERSATIONS["user"], use_beam_search=True),
            srv,
        )
        for label, prompt in {
            "string": "The quick brown fox",
            "list": ["first prompt", "second prompt"],
            "token_ids": [5, 6, 7, 8, 9],
            "bos_text": "<|begin_of_text|>starts with the BOS text",
        }.items():
            corpus.add(
                "serve",
                f"cmpl-{label}-{model}",
                folder,
                COMPLETIONS,
                {"model": model, "prompt": prompt, "cache_salt": "s1"},
                srv,
            )
    corpus.add(
        "serve",
        "chat-unknown-model",
        folder,
        CHAT,
        _chat("no-such-adapter", CONVERSATIONS["user"]),
        srv,
    )
    corpus.add("serve", "cmpl-no-model", folder, COMPLETIONS, {"prompt": "no model"}, srv)
    return corpus.lines


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    write_bodies(path, lines)
    print(f"wrote {len(lines)} bodies to {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--serve-out", type=Path, default=DEFAULT_OUT.with_name("serve_bodies.jsonl")
    )
    args = parser.parse_args(argv)
    _write(args.out, build())
    _write(args.serve_out, build_serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
