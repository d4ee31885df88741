"""DeepSeek-V3.2 rendering cost (tokenizer mode ``deepseek_v32``) against its reference.

Run from the repository root (needs the real deepseek_v32 folder in the test cache,
``python tests/real_models.py fetch``)::

    python benchmarks/bench_render_dsv32.py                 # print the table
    python benchmarks/bench_render_dsv32.py --out benchmarks/RENDER.md

``--out`` writes (or replaces) the section between this script's markers in that file,
leaving the rest of it as it is.

Inputs: chat-completions bodies for ``tests/render/real/deepseek_v32`` whose prompts
are about 1k, 8k and 32k tokens (a system message and a user message, thinking on),
and a multi-turn body with tools, reasoning, two tool calls and their results. Rows,
each timed in one process on one input:

(a) **render**: ``Renderer.render_chat(body)`` (a Renderer built once): the body's
    checks, the conversation parsed, the encoder's text (render/_deepseek_v32.py), its
    ids and the ``Request``; against
(b) **tokenizer**: the folder's ``tokenizers`` tokenizer encoding the rendered text
    (no special tokens) — what any renderer of this mode pays at least, as for the
    Jinja families (vLLM's encoder lives in the vllm package, not importable here).
    The aim: (a) / (b) at most 1.2x.

The ids of (a) must be (b)'s before a row is timed. Timings are the best per-call time
over interleaved rounds; the machine is shared, so absolute times are noisy, the
ratios less so.
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

PARAGRAPH = ("The quick brown fox jumps over the lazy dog. A router receives requests and "
             "sends each one to the replica that already holds its prefix in the cache. ")
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
THINK = {"thinking": True}


def bodies() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for repeats in (32, 256, 1024):
        out.append(("chat", {"model": "dsv32", "chat_template_kwargs": THINK, "messages": [
            {"role": "system", "content": "Answer in one sentence."},
            {"role": "user", "content": PARAGRAPH * repeats}]}))
    calls = [{"id": f"c{i}", "type": "function", "function": {
        "name": "get_weather", "arguments": f"{{\"city\": \"City {i}\"}}"}} for i in range(2)]
    out.append(("tool calls", {
        "model": "dsv32", "tools": [WEATHER], "tool_choice": "none",
        "chat_template_kwargs": THINK, "messages": [
            {"role": "system", "content": "Use the tools."},
            {"role": "user", "content": PARAGRAPH * 8},
            {"role": "assistant", "content": None, "reasoning": "Two cities.",
             "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c0", "content": "sunny"},
            {"role": "tool", "tool_call_id": "c1", "content": "rain"},
            {"role": "assistant", "content": "Sunny and rain.", "reasoning": "Done."},
            {"role": "user", "content": "And tomorrow?"}]}))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    import real_models
    from tokenizers import Tokenizer

    from prefixkey.render import Renderer, ServerOptions

    folder = real_models.compose("deepseek_v32")
    renderer = Renderer(ServerOptions(model=str(folder), served_model_name=("dsv32",),
                                      max_model_len=65536))
    assert renderer.folder.tokenizer_decision.mode == "deepseek_v32"
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    rows = []
    for label, body in bodies():
        text = renderer.render_chat(body).prompt
        assert text is not None

        def reference(text: str = text) -> Any:
            return tokenizer.encode(text, add_special_tokens=False).ids

        def render(body: dict[str, Any] = body) -> Any:
            return renderer.render_chat(body)

        ids = list(render().token_ids)
        if ids != reference():
            raise SystemExit(f"{label}: prefixkey and the tokenizer disagree")
        number = max(4, 2048 // max(1, len(ids) // 64))
        ours, theirs = best_times([(render, number), (reference, number)],
                                  rounds=args.rounds)
        rows.append((label, len(ids), ours * 1e3, theirs * 1e3, ours / theirs))
        print(f"{label:>10} {len(ids):6d} tokens  render {ours * 1e3:8.3f} ms  "
              f"tokenizer {theirs * 1e3:8.3f} ms  {ours / theirs:5.2f}x", flush=True)
    lines = [
        "## DeepSeek-V3.2 (mode deepseek_v32): render against the tokenizer's encode",
        "",
        "Generated by `benchmarks/bench_render_dsv32.py` (its docstring says what each "
        "column times): **render** is `Renderer.render_chat(body)` on the real "
        "deepseek_v32 folder (the encoder's text, then its ids), **tokenizer** is the "
        "folder's tokenizer encoding that text (no special tokens), ids checked equal "
        "first. The aim: render / tokenizer at most 1.2x.",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, Python "
        f"{platform.python_version()}, {platform.machine()}, "
        f"`bench_render_dsv32.py --rounds {args.rounds} --out benchmarks/RENDER.md`",
        "",
        "| body | tokens | render ms | tokenizer ms | render / tokenizer |",
        "|---|---|---|---|---|",
        *(f"| {label} | {n} | {a:.3f} | {b:.3f} | {r:.2f}x |" for label, n, a, b, r in rows),
    ]
    if args.out is not None:
        write_section(args.out, "dsv32", "bench_render_dsv32.py", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
