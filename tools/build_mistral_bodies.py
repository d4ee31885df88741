"""Write the Mistral-format render corpus (``tests/render/real_mistral_bodies.jsonl``).

Maintainer tool, deterministic. The bodies of ``tools/build_render_bodies.py``'s format
over the real Mistral folders (``real:mistral7b_v03``: Mistral 7B v0.3's SentencePiece
``tokenizer.model.v3``; ``real:mistral_nemo``: Mistral NeMo's ``tekken.json``), every
server with ``--tokenizer-mode mistral``: system prompts, multi-turn chats, tools and
tool calls (ids long, short and exactly 9 characters), ``continue_final_message``,
content parts, the body fields vLLM refuses in this mode, completions (special-token
texts, token ids, truncation from both sides), and a ``--max-model-len 48`` server for
the length checks, a server with ``--chat-template``, ``--default-chat-template-kwargs``
and ``--exclude-tools-when-tool-choice-none`` (which of them reach this mode); and the
same chat and completions bodies over the wheel's other SentencePiece files (instruct
versions v1, v2 and v7, ``real:mistral_spm_v*``, with Mistral 7B v0.3's config.json).
``tools/harvest_render.py --bodies tests/render/real_mistral_bodies.jsonl --out
tests/render/real_mistral_vectors.jsonl --port 18450`` records vLLM's answers.

Usage::

    python tools/build_mistral_bodies.py [--out tests/render/real_mistral_bodies.jsonl]
"""

# The texts are data: look-alike characters (full-width, curly quotes) are on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DEFAULT_OUT = (Path(__file__).resolve().parent.parent / "tests" / "render"
               / "real_mistral_bodies.jsonl")
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
FOLDERS = {"m7v03": "real:mistral7b_v03", "nemo": "real:mistral_nemo"}
# The wheel's other SentencePiece files, one per instruct version (v1, v2, v7), each in a
# folder with Mistral 7B v0.3's config.json (rendering reads only its context length).
VERSION_FOLDERS = {"spm-v1": "real:mistral_spm_v1", "spm-v2": "real:mistral_spm_v2",
                   "spm-v7": "real:mistral_spm_v7"}

Body = dict[str, Any]

SYSTEM = {"role": "system", "content": "You are a concise assistant."}
USER = {"role": "user", "content": "What is the weather like in Paris today?"}
ASSISTANT = {"role": "assistant", "content": "It is sunny with a high of 21 degrees."}
FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
        "type": "object", "properties": {"zone": {"type": "string"}}}}},
]


def _call(call_id: str, arguments: str = '{"city": "Paris"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": "get_weather", "arguments": arguments}}


def _tool_turn(call_id: str, result_id: str | None = None,
               arguments: str = '{"city": "Paris"}') -> list[dict[str, Any]]:
    tool: dict[str, Any] = {"role": "tool", "content": '{"temp": 21}'}
    if result_id is not None:
        tool["tool_call_id"] = result_id
    return [USER, {"role": "assistant", "content": None,
                   "tool_calls": [_call(call_id, arguments)]}, tool]


def chat_bodies() -> list[tuple[str, Body]]:
    long_text = "The quick brown fox jumps over the lazy dog. " * 6
    return [
        ("user", {"messages": [USER]}),
        ("system_user", {"messages": [SYSTEM, USER]}),
        ("multi_turn", {"messages": [SYSTEM, USER, ASSISTANT, FOLLOW_UP]}),
        ("multi_turn_no_system", {"messages": [USER, ASSISTANT, FOLLOW_UP]}),
        ("two_systems", {"messages": [SYSTEM, USER, ASSISTANT,
                                      {"role": "system", "content": "Answer in French."},
                                      FOLLOW_UP]}),
        ("system_last", {"messages": [USER, SYSTEM]}),
        ("system_only", {"messages": [SYSTEM]}),
        ("two_users", {"messages": [USER, FOLLOW_UP]}),
        ("assistant_first", {"messages": [ASSISTANT, USER]}),
        ("last_assistant_gen_prompt", {"messages": [USER, ASSISTANT]}),
        ("last_assistant_no_gen_prompt", {"messages": [USER, ASSISTANT],
                                          "add_generation_prompt": False}),
        ("continue_final", {"messages": [SYSTEM, USER, {"role": "assistant",
                                                         "content": "It is"}],
                            "continue_final_message": True, "add_generation_prompt": False}),
        ("continue_final_last_user", {"messages": [USER], "continue_final_message": True,
                                      "add_generation_prompt": False}),
        ("continue_and_gen_prompt", {"messages": [USER, ASSISTANT],
                                     "continue_final_message": True}),
        ("no_gen_prompt_last_user", {"messages": [USER], "add_generation_prompt": False}),
        ("tools", {"messages": [SYSTEM, USER], "tools": TOOLS}),
        ("tools_choice_none", {"messages": [USER], "tools": TOOLS, "tool_choice": "none"}),
        ("tools_choice_required", {"messages": [USER], "tools": TOOLS,
                                   "tool_choice": "required"}),
        ("tools_choice_named", {"messages": [USER], "tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "get_time"}}}),
        ("tools_choice_unknown_name", {"messages": [USER], "tools": TOOLS, "tool_choice": {
            "type": "function", "function": {"name": "nope"}}}),
        ("tool_choice_without_tools", {"messages": [USER], "tool_choice": "required"}),
        ("tools_empty", {"messages": [USER], "tools": []}),
        ("tool_call_long_ids", {"messages": _tool_turn("call_0123456789abcdef",
                                                       "call_0123456789abcdef"),
                                "tools": TOOLS}),
        ("tool_call_nine", {"messages": [*_tool_turn("abcDEF123", "abcDEF123"), ASSISTANT,
                                         FOLLOW_UP], "tools": TOOLS}),
        ("tool_call_short_id", {"messages": _tool_turn("call1", "call1"), "tools": TOOLS}),
        ("tool_call_no_result_id", {"messages": _tool_turn("abcDEF123"), "tools": TOOLS}),
        ("tool_call_bad_arguments", {"messages": _tool_turn("abcDEF123", "abcDEF123",
                                                            "{not json"), "tools": TOOLS}),
        ("tool_call_without_tools", {"messages": _tool_turn("abcDEF123", "abcDEF123")}),
        ("tool_call_with_content", {"messages": [USER, {
            "role": "assistant", "content": "Let me check.",
            "tool_calls": [_call("abcDEF123")]}, {"role": "tool", "content": "21",
                                                  "tool_call_id": "abcDEF123"}]}),
        ("tool_calls_empty_list", {"messages": [USER, {"role": "assistant", "content": "Hi",
                                                       "tool_calls": []}, FOLLOW_UP]}),
        ("parts_text", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "Describe"}, {"type": "text", "text": "Paris."}]}]}),
        ("parts_string", {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "a"}, "b"]}]}),
        ("parts_system", {"messages": [{"role": "system", "content": [
            {"type": "text", "text": "Be brief."}]}, USER]}),
        ("unicode", {"messages": [{"role": "user", "content":
                                   "Привет, 你好, 😀 🇫🇷 — “quotes” ＡＢＣ"}]}),
        ("empty_content", {"messages": [{"role": "user", "content": ""}]}),
        ("special_texts", {"messages": [{"role": "user", "content":
                                         "[INST] <s> </s> [/INST] [TOOL_CALLS]"}]}),
        ("developer", {"messages": [{"role": "developer", "content": "Be brief."}, USER]}),
        ("unknown_role", {"messages": [{"role": "narrator", "content": "x"}, USER]}),
        ("user_name", {"messages": [{**USER, "name": "bob"}]}),
        ("empty_messages", {"messages": []}),
        ("chat_template_kwargs", {"messages": [USER], "chat_template_kwargs": {}}),
        ("chat_template", {"messages": [USER], "chat_template": "{{ messages }}"}),
        ("reasoning_effort", {"messages": [USER], "reasoning_effort": "high"}),
        ("documents", {"messages": [USER], "documents": [{"title": "t", "text": "x"}]}),
        ("add_special_tokens", {"messages": [USER], "add_special_tokens": True}),
        ("truncate", {"messages": [SYSTEM, USER], "truncate_prompt_tokens": 5}),
        ("truncate_right", {"messages": [SYSTEM, USER], "truncate_prompt_tokens": 5,
                            "truncation_side": "right"}),
        ("truncate_minus_one", {"messages": [USER], "truncate_prompt_tokens": -1}),
        ("cache_salt", {"messages": [USER], "cache_salt": "tenant-a"}),
        ("wrong_model", {"model": "other", "messages": [USER]}),
        ("max_tokens_too_many", {"messages": [USER], "max_tokens": 10**8}),
        ("reuse_ids", {"messages": [USER], "kv_transfer_params": {
            "prompt_token_ids": [1, 3, 7, 4]}}),
        ("mm_kwargs", {"messages": [USER], "mm_processor_kwargs": {"x": 1}}),
        ("long_chat", {"messages": [SYSTEM] + [
            {"role": r, "content": f"{long_text}{i}"}
            for i, r in enumerate(["user", "assistant"] * 4)] + [FOLLOW_UP]}),
    ]


def completion_bodies() -> list[tuple[str, Body]]:
    return [
        ("text", {"prompt": "Hello world"}),
        ("no_special", {"prompt": "Hello world", "add_special_tokens": False}),
        ("list", {"prompt": ["Hello world", "Bonjour le monde"]}),
        ("ids", {"prompt": [1, 22177, 4304]}),
        ("id_lists", {"prompt": [[1, 2, 3], [5, 6]]}),
        ("truncate", {"prompt": "one two three four five six seven", "truncate_prompt_tokens": 3}),
        ("truncate_right", {"prompt": "one two three four five six seven",
                            "truncate_prompt_tokens": 3, "truncation_side": "right"}),
        ("truncate_left", {"prompt": "one two three four five six seven",
                           "truncate_prompt_tokens": 3, "truncation_side": "left"}),
        ("truncate_no_special", {"prompt": "one two three four five six seven",
                                 "truncate_prompt_tokens": 3, "add_special_tokens": False}),
        ("truncate_minus_one", {"prompt": "one two three", "truncate_prompt_tokens": -1}),
        ("truncate_zero", {"prompt": "one two three", "truncate_prompt_tokens": 0}),
        ("truncate_ids", {"prompt": [1, 2, 3, 4, 5, 6], "truncate_prompt_tokens": 2}),
        ("unicode", {"prompt": "Привет, 你好, 😀 🇫🇷 — ＡＢＣ"}),
        ("special_texts", {"prompt": "<s>[INST] hi [/INST]</s>"}),
        ("spaces", {"prompt": "   "}),
        ("newlines", {"prompt": "line one\nline two\n\n\tindented"}),
        ("suffix", {"prompt": "def f(", "suffix": "return 1"}),
        ("empty", {"prompt": ""}),
        ("echo_zero", {"prompt": "Hello", "echo": True, "max_tokens": 0}),
        ("cache_salt", {"prompt": "Hello", "cache_salt": "tenant-b"}),
        ("wrong_model", {"model": "other", "prompt": "Hello"}),
    ]


def short_bodies() -> list[tuple[str, str, Body]]:
    """For a --max-model-len 48 server: the length checks and truncation to fit."""
    long_text = "The quick brown fox jumps over the lazy dog. " * 20
    return [
        (CHAT, "long", {"messages": [{"role": "user", "content": long_text}]}),
        (CHAT, "long_truncated", {"messages": [{"role": "user", "content": long_text}],
                                  "truncate_prompt_tokens": -1}),
        (CHAT, "fits", {"messages": [USER], "max_tokens": 20}),
        (CHAT, "output_too_many", {"messages": [USER], "max_tokens": 40}),
        (CHAT, "max_tokens_over", {"messages": [USER], "max_tokens": 49}),
        (CHAT, "truncate_over", {"messages": [USER], "truncate_prompt_tokens": 48,
                                 "max_tokens": 1}),
        (COMPLETIONS, "long", {"prompt": long_text}),
        (COMPLETIONS, "long_truncated", {"prompt": long_text, "truncate_prompt_tokens": -1}),
        (COMPLETIONS, "long_truncated_right", {"prompt": long_text,
                                               "truncate_prompt_tokens": 10,
                                               "truncation_side": "right"}),
        (COMPLETIONS, "near_limit", {"prompt": "word " * 31, "max_tokens": 16}),
        (COMPLETIONS, "at_limit", {"prompt": "word " * 33, "max_tokens": 16}),
        (COMPLETIONS, "ids_long", {"prompt": list(range(1, 60))}),
        (COMPLETIONS, "ids_long_truncated", {"prompt": list(range(1, 60)),
                                             "truncate_prompt_tokens": 20}),
    ]


def flag_bodies() -> list[tuple[str, Body]]:
    """For a server with the flags that change Jinja rendering: which reach this mode."""
    return [
        ("user", {"messages": [SYSTEM, USER]}),
        ("tools_choice_none", {"messages": [USER], "tools": TOOLS, "tool_choice": "none"}),
        ("tools_choice_auto", {"messages": [USER], "tools": TOOLS, "tool_choice": "auto"}),
        ("tool_call", {"messages": _tool_turn("abcDEF123", "abcDEF123"), "tools": TOOLS,
                       "tool_choice": "none"}),
        ("chat_template_kwargs", {"messages": [USER],
                                  "chat_template_kwargs": {"enable_thinking": False}}),
        ("continue_final", {"messages": [USER, {"role": "assistant", "content": "It is"}],
                            "continue_final_message": True, "add_generation_prompt": False}),
    ]


def bodies() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for name, folder in {**FOLDERS, **VERSION_FOLDERS}.items():
        server = {"--served-model-name": name, "--tokenizer-mode": "mistral"}
        for key, body in chat_bodies():
            lines.append({"id": f"{name}-chat-{key}", "model_dir": folder, "endpoint": CHAT,
                          "body": body, "server": server})
        for key, body in completion_bodies():
            lines.append({"id": f"{name}-cmpl-{key}", "model_dir": folder,
                          "endpoint": COMPLETIONS, "body": body, "server": server})
        if name in VERSION_FOLDERS:
            continue
        short = {**server, "--served-model-name": f"{name}-48", "--max-model-len": 48}
        for endpoint, key, body in short_bodies():
            kind = "chat" if endpoint == CHAT else "cmpl"
            lines.append({"id": f"{name}-48-{kind}-{key}", "model_dir": folder,
                          "endpoint": endpoint, "body": body, "server": short})
    for name, folder in FOLDERS.items():
        flagged = {"--served-model-name": f"{name}-flags", "--tokenizer-mode": "mistral",
                   "--chat-template": "models/override_template.jinja",
                   "--default-chat-template-kwargs": {"enable_thinking": True},
                   "--exclude-tools-when-tool-choice-none": True}
        for key, body in flag_bodies():
            lines.append({"id": f"{name}-flags-chat-{key}", "model_dir": folder,
                          "endpoint": CHAT, "body": body, "server": flagged})
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    lines = bodies()
    with args.out.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {len(lines)} bodies to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
