"""Write the DeepSeek-V4/V4.1 prompt corpus, tests/render/deepseek_prompt_bodies.jsonl.

Each chat body goes to both modes (``deepseek_v4``, ``deepseek_v41``); vLLM's answers
are harvested per release by tools/harvest_deepseek_prompts.py into
tests/render/releases/<release>/deepseek_prompts.jsonl and replayed by
tests/render/test_deepseek_prompts.py. The bodies cover roles, multi-turn history with
reasoning, tools, tool calls and results, thinking on/off, every reasoning effort,
drop_thinking, tasks, content parts, images (V4.1) and bad inputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests/render/deepseek_prompt_bodies.jsonl"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}
CLOCK = {"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}}


def call(cid: str, name: str, args: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


U = {"role": "user", "content": "Hi there"}
S = {"role": "system", "content": "You are terse."}
D = {"role": "developer", "content": "Answer in French."}
A = {"role": "assistant", "content": "Hello!", "reasoning": "The user greets me."}
U2 = {"role": "user", "content": "What's 2+2? 日本語"}
TC = {"role": "assistant", "content": "", "reasoning": "Need weather.",
      "tool_calls": [call("c1", "get_weather", '{"city": "Paris", "days": 2}'),
                     call("c2", "now", "{}")]}
T2 = {"role": "tool", "tool_call_id": "c2", "content": "12:00"}
T1 = {"role": "tool", "tool_call_id": "c1", "content": "Sunny"}
A2 = {"role": "assistant", "content": "Sunny at noon.", "reasoning": "Done."}

CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    "user": [U],
    "system_user": [S, U],
    "developer_user": [D, U],
    "system_developer_user": [S, D, U],
    "multi_turn": [S, U, A, U2],
    "multi_turn_dev_history": [U, A, D, U2],
    "reasoning_last": [U, A],
    "assistant_prefill": [U, {"role": "assistant", "content": "Sure"}],
    "tool_round": [S, U, TC, T2, T1],
    "tool_round_answered": [U, TC, T1, T2, A2, U2],
    "tool_then_user": [U, TC, T1, T2, {"role": "user", "content": "thanks"}],
    "consecutive_users": [U, U2],
    "system_last": [U, A, {"role": "system", "content": "Be brief."}],
    "mid_system": [S, U, A, {"role": "system", "content": "New rule."}, U2],
    "system_only": [S],
    "assistant_none_content": [U, {"role": "assistant", "content": None,
                                   "tool_calls": [call("c9", "now", "{}")]}],
    "args_nested": [U, {"role": "assistant", "content": "x", "tool_calls": [
        call("c3", "get_weather", '{"city": "Köln", "opts": {"a": [1, 2.5, null, true]}}')]}],
    "args_not_object": [U, {"role": "assistant", "content": "x", "tool_calls": [
        call("c4", "now", "[1, 2]")]}],
    "args_bad_json": [U, {"role": "assistant", "content": "x", "tool_calls": [
        call("c5", "now", "{oops")]}],
    "parts_text": [{"role": "system", "content": [{"type": "text", "text": "sys A"},
                                                  {"type": "text", "text": "sys B"}]},
                   {"role": "user", "content": [{"type": "text", "text": "one"},
                                                {"type": "text", "text": "two"}]}],
    "parts_assistant": [U, {"role": "assistant",
                            "content": [{"type": "text", "text": "part"}]}, U2],
    "tool_parts": [U, TC, {"role": "tool", "tool_call_id": "c1",
                           "content": [{"type": "text", "text": "a"},
                                       {"type": "text", "text": "b"}]}],
    "task_query": [{"role": "user", "content": "find cats", "task": "query"}],
    "task_action": [{"role": "user", "content": "do it", "task": "action"}],
    "task_bad": [{"role": "user", "content": "x", "task": "nope"}],
    "developer_empty": [{"role": "developer", "content": ""}, U],
    "unknown_role": [{"role": "narrator", "content": "once"}, U],
    "placeholder_text": [{"role": "user", "content": "see <\uff5cdeepseek_image\uff5c> here"}],
    "empty_user": [{"role": "user", "content": ""}],
    "latest_reminder": [U, A, {"role": "latest_reminder", "content": "Today is Monday."}],
    "latest_reminder_last_user": [U, {"role": "latest_reminder", "content": "Monday."}],
    "developer_tools": [{"role": "developer", "content": "Use tools.", "tools": [WEATHER]}, U],
    "named_user": [{"role": "user", "content": "hi", "name": "bob"}, A, U2],
    "tool_only_last": [U, A, U2, TC, T1],
}

KWARGS: dict[str, tuple[dict[str, Any] | None, str | None]] = {
    "default": (None, None),
    "chat": ({"thinking": False}, None),
    "enable_thinking_false": ({"enable_thinking": False}, None),
    "thinking_true": ({"thinking": True}, None),
    "keep_thinking": ({"drop_thinking": False}, None),
}
EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
KWARG_EFFORTS: tuple[Any, ...] = ("low", "high", "xhigh", "max", "medium", "bogus", 1, 42, 100,
                                  0, 101, 50.0, True)


def rows() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def add(name: str, messages: list[dict[str, Any]], *, tools: Any = None,
            ctk: dict[str, Any] | None = None, effort: str | None = None,
            direct: bool = False, modes: tuple[str, ...] = ("deepseek_v4", "deepseek_v41")
            ) -> None:
        for mode in modes:
            out.append({"id": f"{mode}/{name}", "mode": mode, "messages": messages,
                        "tools": tools, "chat_template_kwargs": ctk,
                        "reasoning_effort": effort, "direct": direct})

    for conv, messages in CONVERSATIONS.items():
        for kw, (ctk, effort) in KWARGS.items():
            add(f"{conv}/{kw}", messages, ctk=ctk, effort=effort)
        needs_tools = conv.startswith("tool")
        add(f"{conv}/tools", messages, tools=[WEATHER, CLOCK] if needs_tools else [WEATHER])
    for effort in EFFORTS:
        add(f"multi_turn/effort_{effort}", CONVERSATIONS["multi_turn"], effort=effort)
        add(f"multi_turn/effort_{effort}_chat", CONVERSATIONS["multi_turn"],
            ctk={"enable_thinking": False}, effort=effort)
    for value in KWARG_EFFORTS:
        add(f"user/kwarg_effort_{value!r}", [U], ctk={"reasoning_effort": value})
    add("user/kwarg_effort_overridden", [U], ctk={"reasoning_effort": "max"}, effort="low")
    add("tool_round/tools_keep_thinking", CONVERSATIONS["tool_round_answered"],
        tools=[WEATHER, CLOCK], ctk={"drop_thinking": True})
    add("tools_no_system", [U], tools=[WEATHER, CLOCK], ctk={"thinking": False})
    add("tools_late_system", [U, A, {"role": "system", "content": "late"}, U2], tools=[CLOCK])
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    add("image_parts", [{"role": "user", "content": [{"type": "text", "text": "look"}, image,
                                                     {"type": "text", "text": "and"}, image]}],
        direct=True, modes=("deepseek_v41",))
    # V4.1's tokenizer on the request's messages without vLLM's parse before it (which
    # rewrites tool-call arguments to objects in place): its own argument decoding.
    for args in ("{oops", "[1, 2]", '"{\\"city\\": \\"Rome\\"}"', '{"city": "Oslo"}'):
        add(f"raw_arguments_{args!r}", [U, {"role": "assistant", "content": "x", "tool_calls": [
            call("c6", "get_weather", args)]}, U2], direct=True, modes=("deepseek_v41",))
    add("image_only", [{"role": "user", "content": [image]}, A, U2], direct=True,
        modes=("deepseek_v41",))
    return out


def main() -> None:
    with OUT.open("w", encoding="utf-8") as fh:
        for row in rows():
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
