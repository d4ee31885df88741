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
import json
import sys
from pathlib import Path
from typing import Any

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
    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
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
