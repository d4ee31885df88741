"""Write the gpt-oss (Harmony) render corpus: ``tests/render/real_harmony_bodies.jsonl``.

Maintainer tool, deterministic; the format is ``tools/build_render_bodies.py``'s. Every
body is for the real folder ``tests/render/real/gpt_oss`` (gpt-oss-20b's config.json and
its tokenizer files, fetched) and one of three server configurations: the default one
(the replica's local date), one with ``VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS=1``, and
one with ``VLLM_SYSTEM_START_DATE`` pinned, ``--max-model-len 200`` and
``--exclude-tools-when-tool-choice-none``. A ``server`` key ``env:NAME`` is an environment
variable of the server process (tools/harvest_render.py). The bodies cover system and
developer instructions, reasoning effort, function tools and tool_choice, assistant
history on every channel (content, reasoning, tool calls, tool results), the body fields
the Harmony path ignores, the context-length bound, completions, and bodies vLLM refuses.

Usage::

    python tools/build_harmony_bodies.py [--out tests/render/real_harmony_bodies.jsonl]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

DEFAULT_OUT = (Path(__file__).resolve().parent.parent / "tests" / "render"
               / "real_harmony_bodies.jsonl")
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
MODEL_DIR = "real:gpt_oss"
NAME = "gpt-oss"

Body = dict[str, Any]

DEFAULT: dict[str, Any] = {"--served-model-name": NAME}
SYSTEM_INSTRUCTIONS: dict[str, Any] = {
    "--served-model-name": NAME, "env:VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS": "1"}
PINNED: dict[str, Any] = {
    "--served-model-name": NAME, "env:VLLM_SYSTEM_START_DATE": "2025-01-15",
    "--max-model-len": 200, "--exclude-tools-when-tool-choice-none": True}

SYSTEM = {"role": "system", "content": "You are a terse assistant. Answer in one sentence."}
DEVELOPER = {"role": "developer", "content": "Always answer in French."}
USER = {"role": "user", "content": "What is the weather like in Paris today?"}
FINAL = {"role": "assistant", "content": "It is sunny with a high of 21 degrees."}
FOLLOW_UP = {"role": "user", "content": "And tomorrow?"}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
TIME_TOOL = {"type": "function", "function": {
    "name": "get_time", "parameters": {"type": "object", "properties": {
        "tz": {"type": "string"}}}}}
BARE_TOOL = {"type": "function", "function": {"name": "ping"}}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}
CALL_2 = {"id": "call_2", "type": "function",
          "function": {"name": "get_time", "arguments": "{\"tz\": \"Europe/Paris\"}"}}
TOOL_REPLY = {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21, \"sky\": "
              "\"sunny\"}"}


def _chat(messages: list[Any], **fields: Any) -> Body:
    return {"model": NAME, "messages": messages, **fields}


def default_bodies() -> list[tuple[str, str, Body]]:
    """(id, endpoint, body) for the default server."""
    call_turn = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    out: list[tuple[str, str, Body]] = [
        ("user", CHAT, _chat([USER])),
        ("system-user", CHAT, _chat([SYSTEM, USER])),
        ("developer-user", CHAT, _chat([DEVELOPER, USER])),
        ("system-parts", CHAT, _chat([{"role": "system", "content": [
            {"type": "text", "text": "Be terse. "}, {"type": "text", "text": "Be kind."}]},
            USER])),
        ("system-empty", CHAT, _chat([{"role": "system", "content": ""}, USER])),
        ("system-empty-with-tools", CHAT, _chat([{"role": "system", "content": ""}, USER],
                                                tools=[WEATHER_TOOL])),
        ("system-then-developer", CHAT, _chat([SYSTEM, DEVELOPER, USER])),
        ("system-mid", CHAT, _chat([USER, FINAL, SYSTEM, FOLLOW_UP])),
        ("developer-mid", CHAT, _chat([USER, FINAL, DEVELOPER, FOLLOW_UP])),
        ("system-mid-no-text", CHAT, _chat([USER, {"role": "system", "content": []},
                                            FOLLOW_UP])),
        ("multiturn", CHAT, _chat([SYSTEM, USER, FINAL, FOLLOW_UP])),
        ("reasoning-final", CHAT, _chat([USER, {**FINAL, "reasoning": "Look it up."},
                                         FOLLOW_UP])),
        ("reasoning-content-legacy", CHAT, _chat([USER, {**FINAL, "reasoning_content":
                                                         "Old field name."}, FOLLOW_UP])),
        ("reasoning-two-turns", CHAT, _chat([
            USER, {**FINAL, "reasoning": "First thought."}, FOLLOW_UP,
            {"role": "assistant", "content": "Rain.", "reasoning": "Second thought."},
            {"role": "user", "content": "Thanks."}])),
        ("reasoning-only-last", CHAT, _chat([USER, {"role": "assistant", "content": "",
                                                    "reasoning": "Still thinking."}])),
        ("reasoning-after-final", CHAT, _chat([
            USER, FINAL, FOLLOW_UP, {"role": "assistant", "content": None,
                                     "reasoning": "Pending."}])),
        ("assistant-empty", CHAT, _chat([USER, {"role": "assistant", "content": ""},
                                         FOLLOW_UP])),
        ("assistant-parts", CHAT, _chat([USER, {"role": "assistant", "content": [
            {"type": "text", "text": "Sunny, "}, {"type": "text", "text": "21 degrees."}]},
            FOLLOW_UP])),
        ("assistant-last-final", CHAT, _chat([USER, FINAL])),
        ("effort-low", CHAT, _chat([USER], reasoning_effort="low")),
        ("effort-medium", CHAT, _chat([SYSTEM, USER], reasoning_effort="medium")),
        ("effort-high", CHAT, _chat([USER], reasoning_effort="high")),
        ("effort-none", CHAT, _chat([USER], reasoning_effort="none")),
        ("effort-minimal", CHAT, _chat([USER], reasoning_effort="minimal")),
        ("effort-xhigh", CHAT, _chat([USER], reasoning_effort="xhigh")),
        ("effort-bogus", CHAT, _chat([USER], reasoning_effort="extreme")),
        ("tools-one", CHAT, _chat([USER], tools=[WEATHER_TOOL])),
        ("tools-two-system", CHAT, _chat([SYSTEM, USER], tools=[WEATHER_TOOL, TIME_TOOL])),
        ("tools-bare", CHAT, _chat([USER], tools=[BARE_TOOL])),
        ("tools-null-parameters", CHAT, _chat([USER], tools=[{"type": "function", "function": {
            "name": "noop", "description": "Nothing", "parameters": None}}])),
        ("tools-choice-none", CHAT, _chat([USER], tools=[WEATHER_TOOL], tool_choice="none")),
        ("tools-choice-required", CHAT, _chat([USER], tools=[WEATHER_TOOL],
                                              tool_choice="required")),
        ("tools-choice-named", CHAT, _chat([USER], tools=[WEATHER_TOOL], tool_choice={
            "type": "function", "function": {"name": "get_weather"}})),
        ("tools-choice-unknown", CHAT, _chat([USER], tools=[WEATHER_TOOL], tool_choice={
            "type": "function", "function": {"name": "nope"}})),
        ("tools-empty", CHAT, _chat([USER], tools=[])),
        ("tool-choice-without-tools", CHAT, _chat([USER], tool_choice="required")),
        ("call-and-result", CHAT, _chat([USER, call_turn, TOOL_REPLY],
                                        tools=[WEATHER_TOOL])),
        ("call-with-content-reasoning", CHAT, _chat([
            USER, {"role": "assistant", "content": "Let me check.", "reasoning":
                   "The user wants weather.", "tool_calls": [CALL]}, TOOL_REPLY],
            tools=[WEATHER_TOOL])),
        ("call-two-calls", CHAT, _chat([
            USER, {"role": "assistant", "content": None, "tool_calls": [CALL, CALL_2]},
            TOOL_REPLY, {"role": "tool", "tool_call_id": "call_2", "content": "09:00"}],
            tools=[WEATHER_TOOL, TIME_TOOL])),
        ("call-then-final", CHAT, _chat([
            USER, {"role": "assistant", "content": None, "reasoning": "Need data.",
                   "tool_calls": [CALL]}, TOOL_REPLY,
            {"role": "assistant", "content": "Sunny, 21.", "reasoning": "Got it."},
            FOLLOW_UP], tools=[WEATHER_TOOL])),
        ("call-empty-arguments", CHAT, _chat([
            USER, {"role": "assistant", "tool_calls": [{"id": "c0", "type": "function",
                                                        "function": {"name": "ping",
                                                                     "arguments": ""}}]},
            {"role": "tool", "tool_call_id": "c0", "content": "pong"}], tools=[BARE_TOOL])),
        ("call-empty-list", CHAT, _chat([USER, {**FINAL, "tool_calls": []}, FOLLOW_UP])),
        ("tool-unknown-id", CHAT, _chat([USER, call_turn, {"role": "tool", "tool_call_id":
                                                           "call_9", "content": "?"}])),
        ("tool-no-id", CHAT, _chat([USER, call_turn, {"role": "tool", "content": "x"}])),
        ("tool-parts", CHAT, _chat([USER, call_turn, {"role": "tool", "tool_call_id": "call_1",
                                                      "content": [
            {"type": "text", "text": "sunny"}, {"type": "text", "text": ", 21"}]}])),
        ("user-parts", CHAT, _chat([{"role": "user", "content": [
            {"type": "text", "text": "Hello"}, {"type": "text", "text": "world"}]}])),
        ("user-empty", CHAT, _chat([{"role": "user", "content": ""}])),
        ("user-empty-parts", CHAT, _chat([{"role": "user", "content": []}])),
        ("user-unicode", CHAT, _chat([{"role": "user", "content":
                                       "Привет 你好 😀 🇫🇷 café\n\ttabs  and  spaces"}])),
        ("user-special-text", CHAT, _chat([{"role": "user", "content":
                                            "<|start|>assistant<|message|>hi<|end|>"}])),
        ("no-messages", CHAT, _chat([])),
        ("user-input-text", CHAT, _chat([{"role": "user", "content": [
            {"type": "input_text", "text": "Hi"}]}])),
        ("user-string-parts", CHAT, _chat([{"role": "user", "content": ["a", "b"]}])),
        ("role-unknown", CHAT, _chat([{"role": "narrator", "content": "Once upon a time"}])),
        ("messages-not-list", CHAT, {"model": NAME, "messages": "hi"}),
        ("user-content-null", CHAT, _chat([{"role": "user", "content": None}])),
        ("user-content-absent", CHAT, _chat([{"role": "user"}])),
        ("system-content-null", CHAT, _chat([{"role": "system", "content": None}, USER])),
        ("user-content-number", CHAT, _chat([{"role": "user", "content": 5}])),
        ("user-name", CHAT, _chat([{**USER, "name": "bob"}])),
        ("user-name-number", CHAT, _chat([{**USER, "name": 3}])),
        ("user-reasoning-ignored", CHAT, _chat([{**USER, "reasoning": "not read"}])),
        ("assistant-reasoning-number", CHAT, _chat([USER, {**FINAL, "reasoning": 5},
                                                    FOLLOW_UP])),
        ("assistant-reasoning-empty", CHAT, _chat([USER, {**FINAL, "reasoning": ""},
                                                   FOLLOW_UP])),
        ("assistant-tool-calls-null", CHAT, _chat([USER, {**FINAL, "tool_calls": None},
                                                   FOLLOW_UP])),
        ("call-content-parts", CHAT, _chat([USER, {"role": "assistant", "content": [
            {"type": "text", "text": "Checking."}], "tool_calls": [CALL]}, TOOL_REPLY])),
        ("call-duplicate-ids", CHAT, _chat([USER, {"role": "assistant", "tool_calls": [
            CALL, {**CALL_2, "id": "call_1"}]}, TOOL_REPLY])),
        ("tool-only", CHAT, _chat([{"role": "tool", "content": "orphan"}])),
        ("tool-no-content", CHAT, _chat([USER, call_turn, {"role": "tool",
                                                           "tool_call_id": "call_1"}])),
        ("user-part-extra-field", CHAT, _chat([{"role": "user", "content": [
            {"type": "text", "text": "a", "extra": 1}]}])),
        ("user-output-text", CHAT, _chat([{"role": "user", "content": [
            {"type": "output_text", "text": "a"}]}])),
        ("user-text-part-no-text", CHAT, _chat([{"role": "user", "content": [
            {"type": "text"}]}])),
        ("user-refusal-part", CHAT, _chat([{"role": "user", "content": [
            {"type": "refusal", "refusal": "no"}, {"type": "text", "text": "then"}]}])),
        ("assistant-refusal-part", CHAT, _chat([USER, {"role": "assistant", "content": [
            {"type": "refusal", "refusal": "no"}]}, FOLLOW_UP])),
        ("system-refusal-part", CHAT, _chat([{"role": "system", "content": [
            {"type": "refusal", "refusal": "no"}]}, USER])),
        ("developer-parts", CHAT, _chat([{"role": "developer", "content": [
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, USER])),
        ("tools-description-number", CHAT, _chat([USER], tools=[
            {"type": "function", "function": {"name": "f", "description": 5}}])),
        ("tools-custom", CHAT, _chat([USER], tools=[{"type": "custom", "custom": {"name": "f"}}])),
        ("max-tokens-zero", CHAT, _chat([USER], max_tokens=0)),
        ("max-tokens-over-context", CHAT, _chat([USER], max_tokens=200000)),
        ("truncate-over-context", CHAT, _chat([USER], truncate_prompt_tokens=200000)),
        ("response-format", CHAT, _chat([USER], response_format={"type": "json_object"})),
        ("kv-reuse-empty", CHAT, _chat([USER], kv_transfer_params={"prompt_token_ids": []})),
        ("no-generation-prompt", CHAT, _chat([USER], add_generation_prompt=False)),
        ("continue-final", CHAT, _chat([USER, {"role": "assistant", "content": "It is"}],
                                       add_generation_prompt=False,
                                       continue_final_message=True)),
        ("continue-and-generation", CHAT, _chat([USER], continue_final_message=True)),
        ("request-template-untrusted", CHAT, _chat([USER], chat_template="{{ 'x' }}")),
        ("template-kwargs", CHAT, _chat([USER], chat_template_kwargs={
            "enable_thinking": False, "reasoning_effort": "low"})),
        ("cache-salt", CHAT, _chat([USER], cache_salt="tenant-a")),
        ("model-unknown", CHAT, {"model": "gpt-4o", "messages": [USER]}),
        ("model-absent", CHAT, {"messages": [USER]}),
        ("kv-reuse", CHAT, _chat([USER], kv_transfer_params={
            "prompt_token_ids": [200006, 1428, 200008, 12194, 200007]})),
        ("max-tokens", CHAT, _chat([USER], max_tokens=64)),
        ("truncate", CHAT, _chat([SYSTEM, USER], truncate_prompt_tokens=10)),
        ("completion", COMPLETIONS, {"model": NAME, "prompt": "The capital of France is"}),
        ("completion-special-text", COMPLETIONS, {
            "model": NAME, "prompt": "<|start|>user<|message|>Hi<|end|><|start|>assistant"}),
        ("completion-list", COMPLETIONS, {"model": NAME, "prompt": ["One", "Two words"]}),
        ("completion-ids", COMPLETIONS, {"model": NAME, "prompt": [200006, 1428, 200008]}),
        ("completion-no-special", COMPLETIONS, {"model": NAME, "prompt": "Hi there",
                                                "add_special_tokens": False}),
    ]
    return out


def system_instructions_bodies() -> list[tuple[str, str, Body]]:
    return [
        ("si/system-user", CHAT, _chat([SYSTEM, USER])),
        ("si/developer-user", CHAT, _chat([DEVELOPER, USER])),
        ("si/system-tools", CHAT, _chat([SYSTEM, USER], tools=[WEATHER_TOOL],
                                        reasoning_effort="low")),
        ("si/system-mid", CHAT, _chat([USER, FINAL, SYSTEM, FOLLOW_UP])),
        ("si/developer-mid", CHAT, _chat([USER, FINAL, DEVELOPER, FOLLOW_UP])),
        ("si/system-empty", CHAT, _chat([{"role": "system", "content": ""}, USER])),
        ("si/user", CHAT, _chat([USER])),
    ]


def pinned_bodies() -> list[tuple[str, str, Body]]:
    long_text = "The quick brown fox jumps over the lazy dog. " * 40
    return [
        ("pinned/user", CHAT, _chat([USER])),
        ("pinned/system-mid", CHAT, _chat([USER, FINAL, SYSTEM, FOLLOW_UP])),
        ("pinned/too-long", CHAT, _chat([{"role": "user", "content": long_text}])),
        ("pinned/too-long-truncated", CHAT, _chat([{"role": "user", "content": long_text}],
                                                  truncate_prompt_tokens=100)),
        ("pinned/max-tokens-over", CHAT, _chat([USER], max_tokens=500)),
        ("pinned/max-completion-tokens", CHAT, _chat([USER], max_completion_tokens=50)),
        ("pinned/tools-choice-none", CHAT, _chat([USER], tools=[WEATHER_TOOL],
                                                 tool_choice="none")),
        ("pinned/tools-choice-auto", CHAT, _chat([USER], tools=[WEATHER_TOOL])),
        ("pinned/kv-reuse-too-long", CHAT, _chat([USER], kv_transfer_params={
            "prompt_token_ids": list(range(1000, 1200))})),
        ("pinned/completion-too-long", COMPLETIONS, {"model": NAME, "prompt": long_text}),
    ]


def lines() -> list[dict[str, Any]]:
    out = []
    for server, bodies in ((DEFAULT, default_bodies()),
                           (SYSTEM_INSTRUCTIONS, system_instructions_bodies()),
                           (PINNED, pinned_bodies())):
        for ident, endpoint, body in bodies:
            out.append({"body": body, "endpoint": endpoint, "id": f"gpt_oss/{ident}",
                        "model_dir": MODEL_DIR, "server": server})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    found = lines()
    if len({line["id"] for line in found}) != len(found):
        raise SystemExit("duplicate ids")
    with args.out.open("w", encoding="utf-8") as handle:
        for line in found:
            handle.write(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(found)} bodies to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
