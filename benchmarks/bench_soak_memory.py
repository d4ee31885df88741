"""The soak scenario's memory: the subscriber process's resident set against its queues' bound.

Run from the repository root (needs pyzmq):

    python benchmarks/bench_soak_memory.py                   # 10 s per subscriber
    python benchmarks/bench_soak_memory.py --seconds 25 --out benchmarks/SOAK_MEMORY.md

Runs tests/soak/soak_scenario.py (a healthy and a hostile replica on loopback:
floods of 2 MiB payloads, gaps whose replay never answers, seq jumps, invented
ranks, garbage) over the threaded and the asyncio subscriber, samples this
process's resident set throughout, and prints its peak growth beside the bound
the subscriber sets on its queues (``queue_bytes`` per replica, two replicas).

The growth is a figure, not a test: past the queues it is the interpreter's and
the allocator's slack and libzmq's own receive pipe (bounded in messages,
``rcvhwm``, not bytes), which holds the hostile replica's frames while the
receiving thread is descheduled, so it grows with the machine's load (tens of
MiB on an idle 2-core machine, 442 MiB once on a loaded one; the last run is in
benchmarks/SOAK_MEMORY.md). The soak test asserts what the library bounds: the
queues, the healthy replica's batches.
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

MIB = 1 << 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0,
                        help="seconds of publishing per subscriber (default 10)")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) here")
    args = parser.parse_args()
    # The hostile replica's faults are logged as warnings by the thousand: not our output.
    logging.getLogger("prefixkey").setLevel(logging.ERROR)
    bound = 2 * soak_scenario.QUEUE_BYTES
    rows = []
    for kind in KINDS:
        ctx = zmq.Context()
        try:
            run = soak_scenario.run(make_subscriber(kind), ctx, args.seconds)
        finally:
            ctx.destroy(linger=0)
        growth = run.rss_peak - run.rss_baseline
        lost = run.published - run.healthy.get("batches", 0)
        rows.append(f"| {kind} | {run.published:,} | {lost} | {run.hostile_sent:,} | "
                    f"{max(run.max_queued_bytes.values()) / MIB:.1f} | {growth / MIB:.0f} | "
                    f"{growth / bound:.1f} |")
        print(f"{kind}: rss +{growth / MIB:.0f} MiB peak, {growth / bound:.1f}x the queues' "
              f"bound ({bound / MIB:.0f} MiB)", file=sys.stderr)
    table = "\n".join([
        f"`python benchmarks/bench_soak_memory.py --seconds {args.seconds:g}` on "
        f"{platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Queues: "
        f"{soak_scenario.QUEUE_BYTES // MIB} MiB per replica, two replicas "
        f"({bound // MIB} MiB). Figures, not assertions: they grow with the machine's load.",
        "",
        "| subscriber | healthy batches | healthy lost | hostile sent | largest queue MiB "
        "| rss growth MiB | growth / queues' bound |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
    ])
    print(table)
    if args.out is not None:
        args.out.write_text(f"# Soak memory\n\n{table}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
