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
import os
import sys
import time
from pathlib import Path
from typing import Any

from mooncake_traces import path as trace_path

from prefixkey.analysis import SIMULATION_POLICIES, SimulationConfig, read_trace, simulate

RESULTS = Path("benchmarks/routing_quality")


def _stamp() -> tuple[str, float]:
    """Now (UTC, to the minute) and the machine's 1-minute load average: the run times
    depend on it (simulated time does not)."""
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime()), round(os.getloadavg()[0], 1)


def run(args: argparse.Namespace) -> None:
    started, load = _stamp()
    policies = tuple(args.policies.split(",")) if args.policies else tuple(SIMULATION_POLICIES)
    config = SimulationConfig(replicas=args.replicas, blocks_per_replica=args.blocks,
                              policies=policies, pooled=args.policies is None)
    with trace_path(args.trace).open(encoding="utf-8") as source:
        report = simulate(read_trace(source, limit=args.limit), config)
    out = report.to_dict()
    out["trace"] = args.trace
    out["limit"] = args.limit
    ended, load_end = _stamp()
    out["ran_utc"], out["load_average"] = [started, ended], [load, load_end]
    args.results.mkdir(parents=True, exist_ok=True)
    name = f"{args.trace}-{args.replicas}x{args.blocks}.json"
    old = args.results / name
    if args.policies and old.exists():
        # Only some policies rerun (the simulation is deterministic): the others' rows
        # are kept from the earlier run of the same scenario, and the page says which.
        before = json.loads(old.read_text(encoding="utf-8"))
        if before.get("limit") != args.limit:
            raise SystemExit(f"{name}: the earlier run read {before.get('limit')} requests")
        rerun = {r["policy"]: r for r in out["results"]}
        out["results"] = [rerun.pop(r["policy"], r) for r in before["results"]] + list(
            rerun.values())
        out["rerun"] = sorted(policies)
        out["rerun_seconds"] = out["wall_seconds"]
        out["hash_seconds"], out["wall_seconds"] = before["hash_seconds"], before["wall_seconds"]
        out["rerun_utc"], out["rerun_load_average"] = out["ran_utc"], out["load_average"]
        for key in ("ran_utc", "load_average"):
            out[key] = before.get(key)
    (args.results / name).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(name, f"{out['wall_seconds']:.0f} s")


def _by_policy(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["policy"]: r for r in report["results"]}


def _over(ours: dict[str, Any], base: dict[str, Any] | None) -> str:
    """``ours`` over ``base``: hit rate / TTFT mean / TTFT p99 ("-" with no such row)."""
    if base is None:
        return "-"
    return " / ".join(f"{ours[k] / base[k]:.2f}"
                      for k in ("hit_rate", "ttft_mean_s", "ttft_p99_s"))


def render(args: argparse.Namespace) -> None:
    reports = [json.loads(p.read_text(encoding="utf-8"))
               for p in sorted(args.results.glob("*.json"))]
    reports.sort(key=lambda r: (r["trace"], r["config"]["replicas"],
                                r["config"]["blocks_per_replica"]))
    lines = ["# Routing quality", "",
             "`python benchmarks/bench_routing_quality.py run TRACE REPLICAS BLOCKS [--limit N]` "
             "per scenario, then `render`: `prefixkey simulate` (every policy and the pooled "
             "bound, in lock step over one read of the trace) on Mooncake's public traces "
             "(kvcache-ai/Mooncake `FAST25-release/traces/`, Apache-2.0, fetched pinned by "
             "`benchmarks/mooncake_traces.py`). Time model: prefill 10,000 tokens/s per "
             "replica, 64 concurrent requests, 0.02 s per output token, 50 ms event lag, "
             "lookup at admission; block size 16, vLLM 0.31.0 sha256 keys and KV events. "
             "`ours` is `Router(index, load=…, replicas=…, cache_tokens=…)` at its "
             "defaults fed the gateway's queued prefill tokens and each replica's KV-cache "
             "capacity in tokens (blocks x 16), and told each send (`Router.sent`, "
             "docs/routing.md); its load is `PrefillBacklog` (the prefill still waiting on "
             "each replica: the gateway's queued prefill less the work done on the oldest "
             "request, at the replica's rate measured from first tokens; "
             "`prefixkey/fleet/routing/_backlog.py`). `ours-noload` is "
             "`Router(index, replicas=…, cache_tokens=…)` with no load at all; every other "
             "policy reads the gateway's own counts (`prefixkey/analysis/"
             "_simulate_policies.py`). Each section says when it ran, every policy in one "
             "run, and the machine's load average then (the run times depend on it; "
             "simulated time does not). A section whose run is marked *earlier run* "
             "predates `PrefillBacklog`; if it says `ours` was rerun later, that row is "
             "today's feed and the rows not rerun are the earlier run's (the simulation is "
             "deterministic: on the scenarios rerun whole, every policy but `ours` gave the "
             "same numbers to the token). An `ours` row not rerun since (its scenario "
             "marked *earlier run* in the \"Done when\" table) was fed the prefill sent "
             "and not yet first-tokened (the request being prefilled counted whole).", ""]
    baselines = ("round-robin", "least-outstanding", "rendezvous", "dynamo", "llm-d",
                 "ray-prefix", "sglang")
    against = ["## `ours` against each baseline", "",
               "Per scenario, `ours` over the baseline: hit rate / TTFT mean / TTFT p99 "
               "(a hit rate above 1 and times below 1 favour `ours`; - where the "
               "scenario's run has no such row).", "",
               "| scenario | " + " | ".join(baselines) + " |",
               "|---|" + "---|" * len(baselines)]
    verdicts = ["## Done when, per scenario", "",
                "| scenario | hit rate ours / pooled (≥ 0.95) | TTFT mean ours / LOR (≤ 1) "
                "| TTFT p99 ours / LOR (≤ 1.05) | no load: max / mean requests (≤ 2) |",
                "|---|---|---|---|---|"]
    for report in reports:
        c = report["config"]
        scenario = (f"{report['trace']}, {c['replicas']} replicas x "
                    f"{c['blocks_per_replica']:,} blocks")
        limit = report.get("limit")
        ran, load = report.get("ran_utc"), report.get("load_average")
        when = (f"ran {ran[0]}-{ran[1][11:]} UTC at load average {load[0]:g}-{load[1]:g}"
                if ran else "*earlier run* (before `PrefillBacklog`)")
        rerun, again = report.get("rerun_utc"), report.get("rerun_load_average")
        rerun_when = (f", {rerun[0]}-{rerun[1][11:]} UTC at load average "
                      f"{again[0]:g}-{again[1]:g}" if rerun else "")
        fresh = bool(ran) or bool(rerun and "ours" in report.get("rerun", ()))
        lines += [f"## {scenario}", "",
                  f"{report['requests']:,} requests"
                  + (f" (the trace's first {limit:,})" if limit else " (the whole trace)")
                  + f"; {when}; hashing {report['hash_seconds']:.0f} s, the run "
                  f"{report['wall_seconds']:.0f} s (every policy)"
                  + (f"; rerun later for {', '.join(report['rerun'])} "
                     f"({report['rerun_seconds']:.0f} s{rerun_when})" if report.get("rerun")
                     else "")
                  + ".", "",
                  "| policy | hit rate | x pooled | TTFT mean s | p50 s | p99 s "
                  "| max / mean requests | decision µs (CPU) |",
                  "|---|---|---|---|---|---|---|---|"]
        by = _by_policy(report)
        pooled = by["pooled"]["hit_rate"] or 1.0
        for r in report["results"]:
            lines.append(
                f"| {r['policy']} | {r['hit_rate']:.3f} | {r['hit_rate'] / pooled:.2f} "
                f"| {r['ttft_mean_s']:.2f} | {r['ttft_p50_s']:.2f} | {r['ttft_p99_s']:.2f} "
                f"| {r['max_over_mean_requests']:.2f} | {r['decision_cpu_us_mean']:.0f} |")
        lines.append("")
        ours, lor, noload = by["ours"], by["least-outstanding"], by["ours-noload"]
        against.append(f"| {scenario} | "
                       + " | ".join(_over(ours, by.get(b)) for b in baselines) + " |")

        def mark(value: float, ok: bool, digits: int = 2) -> str:
            return f"{value:.{digits}f} {'met' if ok else '**missed**'}"
        hit = ours["hit_rate"] / pooled
        mean = ours["ttft_mean_s"] / lor["ttft_mean_s"]
        p99 = ours["ttft_p99_s"] / lor["ttft_p99_s"]
        spread = noload["max_over_mean_requests"]
        earlier = "" if fresh else " (*earlier run*)"
        verdicts.append(f"| {scenario}{earlier} | {mark(hit, hit >= 0.95, 3)} "
                        f"| {mark(mean, mean <= 1)} "
                        f"| {mark(p99, p99 <= 1.05)} | {mark(spread, spread <= 2)} |")
    out = "\n".join([*lines, "", *verdicts, "", *against, ""]) + "\n"
    if args.notes.exists():
        out += "\n" + args.notes.read_text(encoding="utf-8")
    args.out.write_text(out, encoding="utf-8")
    print(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("trace", choices=("conversation", "synthetic"))
    r.add_argument("replicas", type=int)
    r.add_argument("blocks", type=int)
    r.add_argument("--limit", type=int, default=None)
    r.add_argument("--results", type=Path, default=RESULTS)
    r.add_argument("--policies", default=None,
                   help="comma-separated: rerun only these (other rows kept from the last run)")
    d = sub.add_parser("render")
    d.add_argument("--results", type=Path, default=RESULTS)
    d.add_argument("--out", type=Path, default=Path("benchmarks/ROUTING_QUALITY.md"))
    d.add_argument("--notes", type=Path, default=Path("benchmarks/routing_quality/NOTES.md"),
                   help="hand-written notes appended to the page")
    parsed = parser.parse_args()
    if parsed.cmd == "run":
        run(parsed)
    else:
        render(parsed)
    sys.exit(0)
