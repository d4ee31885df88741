"""Routing quality on Mooncake's traces: ``prefixkey simulate`` per scenario.

Run from the repository root (the traces are fetched and pinned by
``benchmarks/mooncake_traces.py``)::

    python benchmarks/bench_routing_quality.py run conversation 8 10000 --limit 6000
    python benchmarks/bench_routing_quality.py render      # benchmarks/ROUTING_QUALITY.md

``run`` writes one JSON report per scenario under ``--results`` (default
``benchmarks/routing_quality/``); ``render`` tabulates every report there.
The time model is the issue's: prefill 10,000 tokens/s per replica, 64
concurrent requests, 0.02 s per output token, 50 ms event lag, lookup at
admission (the simulator's defaults).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mooncake_traces import path as trace_path

from prefixkey.analysis import SIMULATION_POLICIES, SimulationConfig, read_trace, simulate

RESULTS = Path("benchmarks/routing_quality")


def run(args: argparse.Namespace) -> None:
    config = SimulationConfig(replicas=args.replicas, blocks_per_replica=args.blocks,
                              policies=tuple(SIMULATION_POLICIES))
    with trace_path(args.trace).open(encoding="utf-8") as source:
        report = simulate(read_trace(source, limit=args.limit), config)
    out = report.to_dict()
    out["trace"] = args.trace
    out["limit"] = args.limit
    args.results.mkdir(parents=True, exist_ok=True)
    name = f"{args.trace}-{args.replicas}x{args.blocks}.json"
    (args.results / name).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(name, f"{out['wall_seconds']:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("trace", choices=("conversation", "synthetic"))
    r.add_argument("replicas", type=int)
    r.add_argument("blocks", type=int)
    r.add_argument("--limit", type=int, default=None)
    r.add_argument("--results", type=Path, default=RESULTS)
    parsed = parser.parse_args()
    if parsed.cmd == "run":
        run(parsed)
    sys.exit(0)
