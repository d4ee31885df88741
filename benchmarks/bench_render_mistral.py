"""Mistral-mode rendering cost: prefixkey.render against mistral_common's own chat encode.

Run from the repository root (needs the ``mistral`` extra and the real folders of the
test cache, ``python tests/real_models.py fetch mistral-common``)::

    python benchmarks/bench_render_mistral.py
    python benchmarks/bench_render_mistral.py --out benchmarks/RENDER.md

Inputs: chat bodies (a system message, two tools, a user message) whose rendered
prompts are about 1k, 8k and 32k tokens, on the real folders ``mistral_nemo``
(``tekken.json``) and ``mistral7b_v03`` (``tokenizer.model.v3``). Rows, each timed in
one process on one body:

(a) **render**: ``Renderer.render_chat(body)`` with ``--tokenizer-mode mistral`` (a
    Renderer built once): vLLM's checks, the library call, truncation and length
    checks, the ids as ``TokenIds`` in a ``Request``;
(b) **library**: mistral_common's own chat encode of the same request:
    ``ChatCompletionRequest.from_openai`` of the body's messages and tools, then
    ``MistralTokenizer.encode_chat_completion``, a new request per call as every body
    is new (the least any renderer calling the library must do); the aim is
    render / library <= 1.2x;
(c) **reused request**: ``encode_chat_completion`` of one request object built before
    the timing, shown for reference: encoding the same object again can cost less than
    encoding a new one (7-8% less at 1k tokens here), which no request path sees.

The ids of (a) and (b) are checked equal before timing. Timings are the best per-call
time over interleaved rounds; on a shared machine they are noisy, the ratios less so.
With ``--out`` the section between its markers in that file is replaced (or appended).
"""

from __future__ import annotations

import argparse
import importlib
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for entry in (REPO, REPO / "benchmarks", REPO / "tests"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from bench_render import best_times, text_of  # noqa: E402
from report_sections import write_section  # noqa: E402

FOLDERS = ("mistral_nemo", "mistral7b_v03")
LENGTHS = (1024, 8192, 32768)
SYSTEM = "You are a concise assistant."
TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
        "type": "object", "properties": {"zone": {"type": "string"}}}}},
]
PREAMBLE = """\
## Mistral mode

Each row is one chat body (a system message, two tools, a user message) rendered by
`prefixkey.render` with `--tokenizer-mode mistral` on a real folder of the test cache
(`mistral_nemo`: `tekken.json`; `mistral7b_v03`: `tokenizer.model.v3`; mistral_common
1.13.1), timed in one process (best per-call time over interleaved rounds; see the
docstring of `benchmarks/bench_render_mistral.py`). **library** is mistral_common's own
chat encode of the same request (`ChatCompletionRequest.from_openai` of the body's
messages and tools, then `encode_chat_completion`), a new request per call; the aim is
render / library at most 1.2x. **reused request** encodes one request object again and
again, which can be cheaper than encoding a new one (shown for reference only)."""


def body_for(renderer: Any, target: int) -> dict[str, Any]:
    """A chat body whose rendered prompt is ~``target`` tokens."""
    words = target // 2
    body: dict[str, Any] = {}
    for _ in range(8):
        body = {"messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": text_of(words, target)}],
                "tools": TOOLS}
        n = len(renderer.render_chat(body).token_ids)
        if abs(n - target) <= target // 100:
            break
        words = max(1, round(words * target / n))
    return body


def measure(rounds: int) -> list[str]:
    import real_models

    from prefixkey.render import Renderer, ServerOptions

    request_cls = importlib.import_module(
        "mistral_common.protocol.instruct.request").ChatCompletionRequest
    rows = []
    for name in FOLDERS:
        folder = real_models.compose(name)
        renderer = Renderer(ServerOptions(model=str(folder), tokenizer_mode="mistral"))
        library = renderer._mistral._mistral  # type: ignore[union-attr]  # the same tokenizer
        for target in LENGTHS:
            body = body_for(renderer, target)
            request = request_cls.from_openai(messages=body["messages"], tools=body["tools"])
            ids = list(renderer.render_chat(body).token_ids)
            if ids != library.encode_chat_completion(request).tokens:
                raise AssertionError(f"{name} {target}: render and encode disagree")

            def render(body: dict[str, Any] = body, renderer: Any = renderer) -> Any:
                return renderer.render_chat(body)

            def whole(body: dict[str, Any] = body, library: Any = library) -> Any:
                built = request_cls.from_openai(messages=body["messages"], tools=body["tools"])
                return library.encode_chat_completion(built)

            def reused(request: Any = request, library: Any = library) -> Any:
                return library.encode_chat_completion(request)

            number = max(1, 4096 // target)
            t_render, t_whole, t_reused = best_times(
                [(render, number), (whole, number), (reused, number)], rounds=rounds)
            row = (f"| {name} | {len(ids)} | {t_render * 1e3:.3f} | {t_whole * 1e3:.3f} | "
                   f"{t_render / t_whole:.2f}x | {t_reused * 1e3:.3f} | "
                   f"{t_render / t_reused:.2f}x |")
            rows.append(row)
            print(row, flush=True)
    return rows



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    header = ("| folder | tokens | render ms | library ms | render / library | "
              "reused request ms | render / reused |")
    rule = "|" + "---|" * (header.count("|") - 1)
    print(header)
    rows = measure(args.rounds)
    if args.out is not None:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        command = " ".join(["bench_render_mistral.py", *(argv or sys.argv[1:])])
        meta = (f"Measured {stamp}, Python {platform.python_version()}, "
                f"{platform.machine()}, `{command}`")
        table = "\n".join([header, rule, *rows])
        write_section(args.out, "mistral", "bench_render_mistral.py",
                      f"{PREAMBLE}\n\n{meta}\n\n{table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
