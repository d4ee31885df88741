"""Rendering cost on real Hugging Face model folders, against transformers on the same folder.

Run with the Python of the scratch vLLM 0.31.0 venv (it has transformers 5.17; CONTRIBUTING.md,
"Render vectors") and prefixkey's own dependencies importable from a directory of their
own (``PYTHONPATH``; never installed into that venv)::

    pip install --target /tmp/pk-deps xxhash msgpack     # once, any Python 3.11 pip
    PYTHONPATH=/tmp/pk-deps HF_HUB_OFFLINE=1 /work/venvs/vllm031/bin/python \\
        benchmarks/bench_render_real.py --out benchmarks/RENDER_REAL.md

The folders are the real ones of tests/render/real/ (``python tests/real_models.py
fetch``; ``--folders`` for some of them). The machine is shared (2 cores, other jobs
running), so every row is many interleaved repetitions of both sides, reported as each
side's median and range, and the ratio of each pair (the two sides timed back to back)
as a median and range; the verdict is the median pair ratio. The 1-minute load average
is recorded at each row's start and end. Rows:

- **first build**: the first ``Renderer(ServerOptions(model=folder))`` (folder, tokenizer,
  vLLM's start-up probe of the templates) in a new process, against the first
  ``AutoTokenizer.from_pretrained(folder)`` (the tokenizer alone) in another; each
  process imports its own library before the clock starts (prefixkey.render, or
  transformers and its ``AutoTokenizer``); ``--first-pairs`` pairs of new processes,
  alternated (ours, theirs, theirs, ours, ...). Aim: at most 1x.
- **build**: the same builds repeated in one process, ``--build-reps`` rounds (the order
  within a round rotates). A process compiles each template text once (the probe's code,
  render/_startup_probe.py, and a chat template's on its first body, render/_template.py;
  as transformers keeps its compiled templates), so a repeated build binds it only;
  **build, new template** clears those caches before each build: what a Renderer over a
  template not yet compiled in the process pays. Both against the same transformers
  times. Aim: at most 1x.
  With ``--folders conv_llama conv_t5 … --build-only`` the folders without tokenizer.json
  whose vocabulary both convert (render/_hf_converted.py) are timed the same way.
- **chat N**: ``Renderer.render_chat(body)`` of a system + user body whose rendered prompt
  is about N tokens, against the transformers tokenizer's own batch encode of the rendered
  text (``tokenizer([text], add_special_tokens=False)``, ids checked equal first),
  ``--rounds`` rounds of 3 calls each. Aim: at most 1.5x at 1k tokens, 1.15x at 8k.

``--section NAME`` writes the report as that section of ``--out`` (report_sections.py),
leaving the rest of the file alone.
"""

from __future__ import annotations

import argparse
import compileall
import importlib
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO, REPO / "tests", REPO / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from report_sections import write_section  # noqa: E402 (after the path setup)

#: llama3_tiktoken: Llama 3's tiktoken tokenizer.model without tokenizer.json, converted.
FOLDERS = ("qwen3", "deepseek_v3", "gemma3", "llama3", "llama3_tiktoken")
LENGTHS = (1024, 8000)  # 8k within Llama 3's 8192-token context
#: Where a build's time goes, for the folders whose build rows have missed (profiled with
#: cProfile on 2026-12-03; stated under the table for each row that misses).
WHERE_TIME_GOES = {
    "conv_qwen3": (
        "no tokenizer.json: both sides hand vocab.json and merges.txt to tokenizers' "
        "`models.BPE(vocab=..., merges=...)`, about 411 ms unloaded and over 95% of either "
        "build (reading the files in Python and passing a dict is slower); prefixkey's "
        "own part is about 10 ms (the folder's decision and files), and a first build "
        "adds the start-up probe's compile of the Qwen3 template (about 63 ms; it decides "
        "refusals, so it stays at build) and the multimodal package's import (about "
        "20 ms). The repeated row is the same Rust call on both sides: its ratio is that "
        "call's noise."),
    "conv_gpt2": (
        "as conv_qwen3: tokenizers' `models.BPE(vocab, merges)` over the folder's two files "
        "on both sides, prefixkey's own part about 10 ms, plus at a first build the "
        "probe's template compile and the multimodal import."),
    "conv_bert": (
        "no tokenizer.json: both sides build tokenizers' `models.WordPiece(vocab.txt)`, "
        "about 20-28 ms unloaded; prefixkey's own part is about 5-8 ms (the decision, "
        "tokenizer_config.json and config.json read once each), so the ratio swings with "
        "the Rust call's noise."),
    "llama3_tiktoken": (
        "no tokenizer.json: the tiktoken tokenizer.model converted in Python on both sides "
        "(128,000 base64 lines read, every split of every token looked up for the 280,147 "
        "merges, then tokenizers' BPE over them); prefixkey reads the file once with one "
        "lookup per half (transformers first tries it as a SentencePiece model, then reads "
        "it twice and sorts with a key lookup), and a "
        "first build adds the probe's compile of the Llama 3 template and the multimodal "
        "import."),
}
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "router", "replica",
         "prefix", "cache", "block", "key", "request", "token", "weather", "Paris", "London",
         "tomorrow", "sunny", "degrees", "hello", "world"]


@dataclass
class Row:
    """One row: each side's times (seconds per call), paired by index."""

    folder: str
    row: str
    tokens: int
    ours: list[float]
    theirs: list[float]
    load: tuple[float, float]

    @property
    def ratios(self) -> list[float]:
        return [a / b for a, b in zip(self.ours, self.theirs, strict=True)]

    @property
    def aim(self) -> float:
        return 1.0 if "build" in self.row else (1.5 if self.tokens < 4096 else 1.15)

    def line(self) -> str:
        ratio = statistics.median(self.ratios)
        verdict = "met" if ratio <= self.aim else "MISSED"
        return (f"| {self.folder} | {self.row} | {self.tokens or ''} | {len(self.ratios)} | "
                f"{_ms(self.ours)} | {_ms(self.theirs)} | "
                f"{statistics.median(self.ours) / statistics.median(self.theirs):.2f}x | "
                f"{ratio:.2f}x ({min(self.ratios):.2f}-{max(self.ratios):.2f}) | "
                f"{self.load[0]:.1f}-{self.load[1]:.1f} | ≤ {self.aim}x {verdict} |")


def _ms(times: list[float]) -> str:
    return (f"{statistics.median(times) * 1e3:.1f} "
            f"({min(times) * 1e3:.1f}-{max(times) * 1e3:.1f})")


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


def interleaved(fns: list[tuple[Callable[[], Any], int]], *, rounds: int) -> list[list[float]]:
    """Each function's per-call time in each round, the functions interleaved round by
    round, the order rotated each round (so no side always runs first)."""
    times: list[list[float]] = [[] for _ in fns]
    for round_ in range(rounds):
        for k in range(len(fns)):
            i = (k + round_) % len(fns)
            fn, number = fns[i]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            times[i].append((time.perf_counter() - start) / number)
    return times


def first_builds(name: str, pairs: int) -> tuple[list[float], list[float]]:
    """The first build of ``name`` in new processes, ours and transformers', ``pairs``
    pairs of processes run back to back (the side that starts alternates)."""
    # Bytecode written first, as installing a package writes it (transformers' is): with
    # PYTHONDONTWRITEBYTECODE each new process would compile prefixkey's lazy imports.
    compileall.compile_dir(str(REPO / "prefixkey"), quiet=1)
    times: dict[str, list[float]] = {"ours": [], "theirs": []}
    for pair in range(pairs):
        for side in ("ours", "theirs") if pair % 2 == 0 else ("theirs", "ours"):
            child = subprocess.run(
                [sys.executable, __file__, "--first-build", side, "--folders", name],
                capture_output=True, text=True, check=True)
            times[side].append(float(child.stdout.split()[-1]))
    return times["ours"], times["theirs"]


def _say(row: Row) -> None:
    print(f"{row.folder} {row.row} {row.tokens or ''}: ours {_ms(row.ours)} ms, theirs "
          f"{_ms(row.theirs)} ms, pair ratio {statistics.median(row.ratios):.2f}x "
          f"(load {row.load[0]:.1f}-{row.load[1]:.1f})", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--build-reps", type=int, default=15)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--section", help="write the report as this section of --out")
    parser.add_argument("--folders", nargs="+", default=list(FOLDERS))
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--first-pairs", type=int, default=15,
                        help="pairs of new processes for the first build (0: no such row)")
    parser.add_argument("--first-build", choices=("ours", "theirs"),
                        help=argparse.SUPPRESS)  # a child: time one first build, print it
    args = parser.parse_args(argv)
    import real_models

    from prefixkey.render import Renderer, ServerOptions
    from prefixkey.render._startup_probe import _code
    from prefixkey.render._template import _compiled_parts

    if args.first_build == "ours":  # a child: its own library only (transformers takes
        folder = str(real_models.compose(args.folders[0]))  # seconds to import)
        start = time.perf_counter()
        Renderer(ServerOptions(model=folder))
        print(time.perf_counter() - start)
        return 0
    # Imported by name: transformers is in the vLLM venv only, not the dev one.
    transformers = importlib.import_module("transformers")
    AutoTokenizer = transformers.AutoTokenizer
    if args.first_build:
        folder = str(real_models.compose(args.folders[0]))
        start = time.perf_counter()
        AutoTokenizer.from_pretrained(folder)
        print(time.perf_counter() - start)
        return 0
    rows: list[Row] = []
    started = datetime.now(timezone.utc)
    for name in args.folders:
        folder = str(real_models.compose(name))
        if args.first_pairs:
            load = os.getloadavg()[0]
            ours, theirs = first_builds(name, args.first_pairs)
            rows.append(Row(name, "first build", 0, ours, theirs, (load, os.getloadavg()[0])))
            _say(rows[-1])

        def build_ours(folder: str = folder) -> Any:
            return Renderer(ServerOptions(model=folder))

        def build_ours_new(folder: str = folder) -> Any:
            _code.cache_clear()  # the process has compiled no template yet
            _compiled_parts.cache_clear()
            return Renderer(ServerOptions(model=folder))

        def build_theirs(folder: str = folder) -> Any:
            return AutoTokenizer.from_pretrained(folder)

        build_ours()  # the template compiled once: the repeated builds' state
        build_theirs()
        load = os.getloadavg()[0]
        ours, ours_new, theirs = interleaved(
            [(build_ours, 1), (build_ours_new, 1), (build_theirs, 1)], rounds=args.build_reps)
        loads = (load, os.getloadavg()[0])
        rows.append(Row(name, "build", 0, ours, theirs, loads))
        _say(rows[-1])
        rows.append(Row(name, "build, new template", 0, ours_new, theirs, loads))
        _say(rows[-1])
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

            load = os.getloadavg()[0]
            ours, theirs = interleaved([(render, 3), (encode, 3)], rounds=args.rounds)
            rows.append(Row(name, "chat", len(rendered.token_ids), ours, theirs,
                            (load, os.getloadavg()[0])))
            _say(rows[-1])
    command = (f"bench_render_real.py --rounds {args.rounds} --build-reps {args.build_reps} "
               f"--first-pairs {args.first_pairs}"
               + (f" --folders {' '.join(args.folders)}" if args.folders != list(FOLDERS)
                  else "")
               + (" --build-only" if args.build_only else ""))
    lines = [
        "Each row is timed as the docstring of `benchmarks/bench_render_real.py` says: many",
        "interleaved repetitions of both sides (**n** pairs), each side's median and range,",
        "and each pair's ratio (the two sides timed back to back) as a median and range; the",
        "verdict is the median pair ratio. **first build**: the first `Renderer` built in a",
        "new process against the first `AutoTokenizer.from_pretrained` on the same folder in",
        "another, the pairs of processes alternated (aim: at most 1x). **build**: the same,",
        "repeated in one process; a process compiles each template text once, so **build,",
        "new template** (those caches cleared before each build) is what a Renderer over a",
        "template not yet compiled pays. **chat**: `Renderer.render_chat` of a system + user",
        "body against the transformers tokenizer's own batch encode of the rendered text",
        "(aim: at most 1.5x at 1k tokens, 1.15x at 8k). The machine is shared (2 cores, up",
        "to 8 engineers' jobs): **load** is the 1-minute load average at the row's start and",
        "end.",
        "",
        f"Measured {started:%Y-%m-%d %H:%M}-{datetime.now(timezone.utc):%H:%M} UTC, Python "
        f"{platform.python_version()}, transformers {transformers.__version__}, `{command}`",
        "",
        "| folder | row | tokens | n | prefixkey ms, median (range) | transformers ms, median "
        "(range) | ratio of medians | pair ratio, median (range) | load | aim |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(row.line() for row in rows),
    ]
    missed = [row for row in rows if statistics.median(row.ratios) > row.aim]
    if missed:
        lines += ["", "Misses (median pair ratio above the aim) and where the time goes:", ""]
        lines += [f"- **{row.folder}, {row.row}**: {statistics.median(row.ratios):.2f}x "
                  f"({min(row.ratios):.2f}-{max(row.ratios):.2f}x over the pairs). "
                  + WHERE_TIME_GOES.get(row.folder, "not profiled.") for row in missed]
    if args.section:
        report = "\n".join([f"## Real folders: {args.section}", "", *lines]) + "\n"
        print(report)
        if args.out:
            write_section(args.out, args.section, "bench_render_real.py", report)
        return 0
    report = "\n".join([
        "<!-- generated by benchmarks/bench_render_real.py; do not edit -->", "",
        "# Rendering cost on real model folders", "", *lines]) + "\n"
    print(report)
    if args.out:
        args.out.write_text(report, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
