"""gpt-oss rendering cost: prefixkey.render against Harmony's own render call.

Run from the repository root (needs the harmony extra and the real gpt-oss folder in the
test cache, ``python tests/real_models.py fetch``)::

    python benchmarks/bench_render_harmony.py                 # print the table
    python benchmarks/bench_render_harmony.py --out benchmarks/RENDER.md

``--out`` writes (or replaces) the section between this script's markers in that file,
leaving the rest of it as it is.

Inputs: chat-completions bodies for ``tests/render/real/gpt_oss`` whose prompts are
about 1k, 8k and 32k tokens (a system message and a user message), and a multi-turn body
with reasoning, two tool calls and their results (the path that rewrites tool-call
headers). Rows, each timed in one process on one input:

(a) **render**: ``Renderer.render_chat(body)`` (a Renderer built once): the body's
    checks, the Harmony messages built from it, the library's render, the tool-call
    header rewrite and the ids checked into a ``Request``; against
(b) **Harmony's render**: ``encoding.render_conversation_for_completion`` on the same
    conversation, built beforehand (``Conversation.from_messages`` of the same
    messages) — the library's own call on the same request, the least any Harmony
    renderer does. The aim: (a) / (b) at most 1.2x.

Before a row is timed the two must agree: the same ids (the library's with vLLM's
tool-call header rewrite). Timings are the best per-call time over interleaved rounds;
the machine is shared, so absolute times are noisy, the ratios less so.
"""

from __future__ import annotations

import argparse
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from bench_render import best_times  # noqa: E402
from report_sections import write_section  # noqa: E402

DATE = "2025-01-15"
PARAGRAPH = ("The quick brown fox jumps over the lazy dog. A router receives requests and "
             "sends each one to the replica that already holds its prefix in the cache. ")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}



def bodies() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for label, repeats in (("chat", 32), ("chat", 256), ("chat", 1024)):
        out.append((label, {"model": "gpt-oss", "reasoning_effort": "low", "messages": [
            {"role": "system", "content": "Answer in one sentence."},
            {"role": "user", "content": PARAGRAPH * repeats}]}))
    calls = [{"id": f"c{i}", "type": "function", "function": {
        "name": "get_weather", "arguments": f"{{\"city\": \"City {i}\"}}"}} for i in range(2)]
    out.append(("tool calls", {"model": "gpt-oss", "tools": [WEATHER], "messages": [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": PARAGRAPH * 8},
        {"role": "assistant", "content": None, "reasoning": "Two cities.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "c0", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c1", "content": "rain"},
        {"role": "assistant", "content": "Sunny and rain.", "reasoning": "Done."},
        {"role": "user", "content": "And tomorrow?"}]}))
    return out


def library_conversation(h: Any, body: dict[str, Any]) -> Any:
    """The Harmony conversation vLLM builds for the body (built with the library only)."""
    messages = body["messages"]
    system = h.SystemContent.new().with_conversation_start_date(DATE)
    if body.get("reasoning_effort"):
        system = system.with_reasoning_effort(h.ReasoningEffort.LOW)
    developer = h.DeveloperContent.new().with_instructions(messages[0]["content"])
    if body.get("tools"):
        developer = developer.with_function_tools([h.ToolDescription.new(
            name=t["function"]["name"], description=t["function"]["description"],
            parameters=t["function"]["parameters"]) for t in body["tools"]])
    out = [h.Message.from_role_and_content(h.Role.SYSTEM, system),
           h.Message.from_role_and_content(h.Role.DEVELOPER, developer)]
    names = {c["id"]: c["function"]["name"] for m in messages for c in m.get("tool_calls") or []}
    for m in messages[1:]:
        if m["role"] == "user":
            out.append(h.Message.from_role_and_content(h.Role.USER, m["content"]))
        elif m["role"] == "tool":
            out.append(h.Message.from_author_and_content(
                h.Author.new(h.Role.TOOL, f"functions.{names[m['tool_call_id']]}"),
                m["content"]).with_channel("commentary").with_recipient("assistant"))
        elif m.get("tool_calls"):
            out.append(h.Message.from_role_and_content(h.Role.ASSISTANT, m["reasoning"])
                       .with_channel("analysis"))
            out.extend(h.Message.from_role_and_content(h.Role.ASSISTANT,
                                                       c["function"]["arguments"])
                       .with_channel("commentary")
                       .with_recipient(f"functions.{c['function']['name']}")
                       .with_content_type("json") for c in m["tool_calls"])
        else:  # the last final answer: its reasoning and the earlier analysis are dropped
            out = [x for x in out if x.channel != "analysis"]
            out.append(h.Message.from_role_and_content(h.Role.ASSISTANT, m["content"])
                       .with_channel("final"))
    return h.Conversation.from_messages(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import openai_harmony as h
    import real_models

    from prefixkey.render import Renderer, ServerOptions

    folder = real_models.compose("gpt_oss")
    renderer = Renderer(ServerOptions(model=str(folder), served_model_name=("gpt-oss",),
                                      system_start_date=DATE))
    assert renderer._harmony is not None
    rewrite = renderer._harmony._legacy_headers
    encoding = h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)
    config = h.RenderConversationConfig(auto_drop_analysis=False)
    rows = []
    for label, body in bodies():
        conversation = library_conversation(h, body)

        def library(conversation: Any = conversation) -> Any:
            return encoding.render_conversation_for_completion(conversation, h.Role.ASSISTANT,
                                                               config=config)

        def render(body: dict[str, Any] = body) -> Any:
            return renderer.render_chat(body)

        ids = list(render().token_ids)
        if ids != rewrite(library()):
            raise SystemExit(f"{label}: prefixkey and the library disagree")
        number = max(4, 2048 // max(1, len(ids) // 64))
        ours, theirs = best_times([(render, number), (library, number)], rounds=args.rounds)
        rows.append((label, len(ids), ours * 1e3, theirs * 1e3, ours / theirs))
        print(f"{label:>10} {len(ids):6d} tokens  render {ours * 1e3:8.3f} ms  "
              f"harmony {theirs * 1e3:8.3f} ms  {ours / theirs:5.2f}x", flush=True)
    import importlib.metadata

    lines = [
        "## gpt-oss (Harmony): render against Harmony's own render call",
        "",
        "Generated by `benchmarks/bench_render_harmony.py` (its docstring says what each "
        "column times): **render** is `Renderer.render_chat(body)` on the real gpt-oss-20b "
        "folder, **Harmony** is `render_conversation_for_completion` on the same "
        "conversation built beforehand (oss-harmony "
        f"{importlib.metadata.version('oss-harmony')}), ids checked equal first. The aim: "
        "render / Harmony at most 1.2x.",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, Python "
        f"{platform.python_version()}, {platform.machine()}, "
        f"`bench_render_harmony.py --rounds {args.rounds} --out benchmarks/RENDER.md`",
        "",
        "| body | tokens | render ms | Harmony ms | render / Harmony |",
        "|---|---|---|---|---|",
        *(f"| {label} | {n} | {a:.3f} | {b:.3f} | {r:.2f}x |" for label, n, a, b, r in rows),
    ]
    if args.out is not None:
        write_section(args.out, "harmony", "bench_render_harmony.py", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
