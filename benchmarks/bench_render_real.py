"""Rendering cost on real Hugging Face model folders, against transformers on the same folder.

Run with the Python of the scratch vLLM 0.31.0 venv (it has transformers 5.17; CONTRIBUTING.md,
"Render vectors") and prefixkey's own dependencies importable from a directory of their
own (``PYTHONPATH``; never installed into that venv)::

    pip install --target /tmp/pk-deps xxhash msgpack     # once, any Python 3.11 pip
    PYTHONPATH=/tmp/pk-deps HF_HUB_OFFLINE=1 /work/venvs/vllm031/bin/python \\
        benchmarks/bench_render_real.py --out benchmarks/RENDER_REAL.md

The folders are the real ones of tests/render/real/ (``python tests/real_models.py
fetch``; ``--folders`` for some of them). Rows, best time kept (the machine is shared:
run it several times and state the load average it prints):

- **first build**: the first ``Renderer(ServerOptions(model=folder))`` (folder, tokenizer,
  vLLM's start-up probe of the templates) in a new process, against the first
  ``AutoTokenizer.from_pretrained(folder)`` (the tokenizer alone) in another; both
  libraries imported before the clock starts; best of ``--first-rounds`` processes each,
  alternating which side starts. Aim: at most 1x.
- **build**: the same builds repeated in one process. A process compiles each template
  text once (the probe's code, render/_startup_probe.py, and a chat template's on its
  first body, render/_template.py; as transformers keeps its compiled templates), so a
  repeated build binds it only; **build, new template** clears those caches before each
  build: what a Renderer over a template not yet compiled in the process pays. Both
  against the same transformers times. Aim: at most 1x.
  With ``--folders conv_llama conv_t5 … --build-only`` the folders without tokenizer.json
  whose vocabulary both convert (render/_hf_converted.py) are timed the same way.
- **chat N**: ``Renderer.render_chat(body)`` of a system + user body whose rendered prompt
  is about N tokens, against the transformers tokenizer's own batch encode of the rendered
  text (``tokenizer([text], add_special_tokens=False)``, ids checked equal first). Aim:
  at most 1.5x at 1k tokens, 1.15x at 8k.
"""

from __future__ import annotations

import argparse
import compileall
import importlib
import os
import platform
import random
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO, REPO / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from bench_render import best_times  # noqa: E402 (after the path setup)

#: llama3_tiktoken: Llama 3's tiktoken tokenizer.model without tokenizer.json, converted.
FOLDERS = ("qwen3", "deepseek_v3", "gemma3", "llama3", "llama3_tiktoken")
LENGTHS = (1024, 8000)  # 8k within Llama 3's 8192-token context
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "router", "replica",
         "prefix", "cache", "block", "key", "request", "token", "weather", "Paris", "London",
         "tomorrow", "sunny", "degrees", "hello", "world"]


def chat_body(renderer: Any, target: int) -> dict[str, Any]:
    words = target
    rng = random.Random(target)
    body: dict[str, Any] = {}
    for _ in range(8):
        text = " ".join(rng.choice(WORDS) for _ in range(words))
        body = {"messages": [{"role": "system", "content": "You are a helpful assistant."},
                             {"role": "user", "content": text}]}
        n = len(renderer.render_chat(body).token_ids)
        if abs(n - target) <= target // 100:
            break
        words = max(1, round(words * target / n))
    return body


def first_builds(name: str, rounds: int) -> tuple[float, float]:
    """The best first build of ``name`` in a new process, ours and transformers', over
    ``rounds`` processes each (the side that starts alternates)."""
    # Bytecode written first, as installing a package writes it (transformers' is): with
    # PYTHONDONTWRITEBYTECODE each new process would compile prefixkey's lazy imports.
    compileall.compile_dir(str(REPO / "prefixkey"), quiet=1)
    best = {"ours": float("inf"), "theirs": float("inf")}
    for round_ in range(rounds):
        for side in ("ours", "theirs") if round_ % 2 == 0 else ("theirs", "ours"):
            child = subprocess.run(
                [sys.executable, __file__, "--first-build", side, "--folders", name],
                capture_output=True, text=True, check=True)
            best[side] = min(best[side], float(child.stdout.split()[-1]))
    return best["ours"], best["theirs"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--build-rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--folders", nargs="+", default=list(FOLDERS))
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--first-rounds", type=int, default=3,
                        help="new processes per side for the first build (0: no such row)")
    parser.add_argument("--first-build", choices=("ours", "theirs"),
                        help=argparse.SUPPRESS)  # a child: time one first build, print it
    args = parser.parse_args(argv)
    import real_models

    from prefixkey.render import Renderer, ServerOptions
    from prefixkey.render._startup_probe import _code
    from prefixkey.render._template import _compiled_parts

    # Imported by name: transformers is in the vLLM venv only, not the dev one.
    transformers = importlib.import_module("transformers")
    AutoTokenizer = transformers.AutoTokenizer
    if args.first_build:
        folder = str(real_models.compose(args.folders[0]))
        start = time.perf_counter()
        if args.first_build == "ours":
            Renderer(ServerOptions(model=folder))
        else:
            AutoTokenizer.from_pretrained(folder)
        print(time.perf_counter() - start)
        return 0
    rows: list[tuple[str, str, int, float, float]] = []
    load = os.getloadavg()
    for name in args.folders:
        folder = str(real_models.compose(name))
        if args.first_rounds:
            firsts = first_builds(name, args.first_rounds)
            rows.append((name, "first build", 0, *firsts))
            print(f"{name} first build: {firsts[0] * 1e3:.1f} ms vs {firsts[1] * 1e3:.1f} ms",
                  file=sys.stderr, flush=True)

        def build_ours(folder: str = folder) -> Any:
            return Renderer(ServerOptions(model=folder))

        def build_ours_new(folder: str = folder) -> Any:
            _code.cache_clear()  # the process has compiled no template yet
            _compiled_parts.cache_clear()
            return Renderer(ServerOptions(model=folder))

        def build_theirs(folder: str = folder) -> Any:
            return AutoTokenizer.from_pretrained(folder)

        build_ours()  # the template compiled once: the repeated builds' state
        ours_build, ours_new, theirs_build = best_times(
            [(build_ours, 1), (build_ours_new, 1), (build_theirs, 1)],
            rounds=args.build_rounds)
        rows.append((name, "build", 0, ours_build, theirs_build))
        rows.append((name, "build, new template", 0, ours_new, theirs_build))
        print(f"{name} build: {ours_build * 1e3:.1f} ms (new template {ours_new * 1e3:.1f} ms)"
              f" vs {theirs_build * 1e3:.1f} ms", file=sys.stderr, flush=True)
        if args.build_only:
            continue
        renderer = Renderer(ServerOptions(model=folder))
        hf = AutoTokenizer.from_pretrained(folder)
        for target in LENGTHS:
            body = chat_body(renderer, target)
            rendered = renderer.render_chat(body)
            text = rendered.prompt
            assert text is not None
            if hf([text], add_special_tokens=False)["input_ids"][0] != list(rendered.token_ids):
                raise SystemExit(f"{name}: ids differ from transformers' encode")
            def render(renderer: Any = renderer, body: dict[str, Any] = body) -> Any:
                return renderer.render_chat(body)

            def encode(hf: Any = hf, text: str = text) -> Any:
                return hf([text], add_special_tokens=False)

            ours, theirs = best_times([(render, 3), (encode, 3)], rounds=args.rounds)
            rows.append((name, "chat", len(rendered.token_ids), ours, theirs))
            print(f"{name} chat {len(rendered.token_ids)}: {ours / theirs:.2f}x",
                  file=sys.stderr, flush=True)
    lines = [
        "<!-- generated by benchmarks/bench_render_real.py; do not edit -->", "",
        "# Rendering cost on real model folders", "",
        "Each row is timed as the docstring of `benchmarks/bench_render_real.py` says (best",
        "time kept). **first build**: the first `Renderer` built in a new process against",
        "the first `AutoTokenizer.from_pretrained` on the same folder in another (aim: at",
        "most 1x). **build**: the same, repeated in one process, interleaved; a process",
        "compiles each template text once, so **build, new template** (those caches cleared",
        "before each build) is what a Renderer over a template not yet compiled pays.",
        "**chat**: `Renderer.render_chat` of a system + user body against the transformers",
        "tokenizer's own batch encode of the rendered text (aim: at most 1.5x at 1k tokens,",
        "1.15x at 8k). The machine is shared (2 cores): absolute times are noisy, ratios less so.",
        "",
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC (load average "
        f"{load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end), Python "
        f"{platform.python_version()}, transformers {transformers.__version__}, "
        f"`bench_render_real.py --rounds {args.rounds} --build-rounds {args.build_rounds} "
        f"--first-rounds {args.first_rounds}"
        + (f" --folders {' '.join(args.folders)}" if args.folders != list(FOLDERS) else "")
        + (" --build-only" if args.build_only else "") + "`",
        "",
        "| folder | row | tokens | prefixkey ms | transformers ms | ratio | aim |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row, tokens, ours, theirs in rows:
        aim = 1.0 if "build" in row else (1.5 if tokens < 4096 else 1.15)
        verdict = "met" if ours / theirs <= aim else "MISSED"
        lines.append(f"| {name} | {row} | {tokens or ''} | {ours * 1e3:.2f} | "
                     f"{theirs * 1e3:.2f} | {ours / theirs:.2f}x | ≤ {aim}x {verdict} |")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
