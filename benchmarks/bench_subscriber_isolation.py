"""The healthy replica's apply latency while another replica misbehaves (issue 23, item 12).

Run from the repository root (needs pyzmq):

    python benchmarks/bench_subscriber_isolation.py                  # 5 s per run
    python benchmarks/bench_subscriber_isolation.py --seconds 10 --section SUBSCRIBER.md

Runs tests/soak/soak_scenario.py (a healthy replica publishing ~1,000 one-block
batches a second, and a hostile one in a child process) over the threaded and
the asyncio subscriber, once per hostile kind of tests/soak/hostile_publisher.py:
``none`` (the hostile replica sends nothing), ``garbage`` (2 MiB garbage
payloads, gaps whose replay never answers, seq jumps, invented ranks),
``huge`` (a valid batch of 100,000 keys per round), ``media`` (500 new medium
names per round, 20,000 in all) and ``flood`` (small valid messages as fast
as the socket takes them). The healthy replica's latency is from its
publisher's send (the batch's ``ts``) to the end of its apply (``on_batch``),
so it counts the time in the socket, in the queue, waiting for the lock and
applying. Target: p99 ≤ 100 ms under each kind.
"""

from __future__ import annotations

import argparse
import logging
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "soak")]

import soak_scenario  # noqa: E402
import zmq  # noqa: E402
from subscribers import KINDS, make_subscriber  # noqa: E402

from prefixkey.fleet import ReceivedBatch  # noqa: E402

HOSTILE = ("none", "garbage", "huge", "media", "flood")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="seconds of publishing per run (default 5)")
    parser.add_argument("--section", type=Path,
                        help="replace this file's 'Isolation' section with the table")
    args = parser.parse_args()
    logging.getLogger("prefixkey").setLevel(logging.CRITICAL)
    rows = []
    for transport in KINDS:
        for hostile in HOSTILE:
            latencies: list[float] = []

            def on_batch(batch: ReceivedBatch, into: list[float] = latencies) -> None:
                if batch.replica == "healthy" and batch.batch.ts > 1.0:  # not the hello
                    into.append(time.time() - batch.batch.ts)

            ctx = zmq.Context()
            try:
                run = soak_scenario.run(make_subscriber(transport), ctx, args.seconds,
                                        kind=hostile if hostile != "none" else "quiet",
                                        on_batch=on_batch)
            finally:
                ctx.destroy(linger=0)
            lost = run.published - run.healthy.get("batches", 0)
            ms = [x * 1000 for x in latencies]
            row = (f"| {transport} | {hostile} | {len(ms):,} | {lost} | "
                   f"{percentile(ms, 0.5):.1f} | {percentile(ms, 0.99):.1f} | {max(ms):.1f} | "
                   f"{run.largest_hold.get('hostile', 0):,} |")
            rows.append(row)
            print(row, file=sys.stderr)
    table = "\n".join([
        f"`python benchmarks/bench_subscriber_isolation.py --seconds {args.seconds:g}` on "
        f"{platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The healthy replica's "
        "latency from send to applied, in ms; target p99 ≤ 100 ms. `largest hold`: the "
        "most keys of the hostile replica applied under one hold of the lock.",
        "",
        "| subscriber | hostile | healthy batches | lost | p50 ms | p99 ms | max ms "
        "| largest hold |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        *rows,
    ])
    print(table)
    if args.section is not None:
        text = args.section.read_text(encoding="utf-8")
        head = "## Isolation: one replica misbehaving\n"
        before = text.split(head)[0].rstrip("\n")
        rest = text.split(head)[1].split("\n## ", 1) if head in text else [""]
        after = f"\n## {rest[1]}" if len(rest) > 1 else ""
        args.section.write_text(f"{before}\n\n{head}\n{table}\n{after}", encoding="utf-8")


if __name__ == "__main__":
    main()
