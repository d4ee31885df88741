"""CPU and memory of the event decoder's costliest payloads, against msgpack's unpack.

Run from the repository root:

    python benchmarks/bench_decode_budget.py          # writes its section of EVENTS.md
    python benchmarks/bench_decode_budget.py --rounds 1 --no-write

Each payload is as large as the default decoder accepts (``max_payload_bytes``)
and built in a fresh child limited to 2 GiB of address space, the children
tests/units/test_decode_budget.py runs (tests/decode_budget.py). Each shape's
CPU seconds are divided by ``msgpack.unpackb`` of a vLLM-shaped payload of the
same size in a child of its own: the same-size work of vLLM's shape without
prefixkey. The best of ``--rounds`` per shape, shapes interleaved because the
machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bounded import run_bounded  # noqa: E402
from decode_budget import DECODE_CHILD, SHAPES  # noqa: E402
from report_sections import write_section  # noqa: E402

from prefixkey.events import DecodeLimits  # noqa: E402

OUT = ROOT / "benchmarks" / "EVENTS.md"
GiB = 1024**3
REFERENCE = "msgpack.unpackb, vLLM-shaped"


def measure(rounds: int) -> dict[str, dict[str, float | str]]:
    size = DecodeLimits().max_payload_bytes
    runs = [(shape, False) for shape in SHAPES] + [("vLLM-shaped events", True)]
    best: dict[str, dict[str, float | str]] = {}
    for _ in range(rounds):
        for shape, reference in runs:
            name = REFERENCE if reference else shape
            outcome = run_bounded(DECODE_CHILD, address_space=2 * GiB,
                                  stdin=json.dumps([shape, size, size, reference]))
            if name not in best or outcome["cpu_s"] < best[name]["cpu_s"]:
                best[name] = {"cpu_s": outcome["cpu_s"], "peak_rss": outcome["peak_rss"],
                              "result": outcome.get("error") or f"{outcome['events']:,} events"}
    return best


def table(best: dict[str, dict[str, float | str]], rounds: int) -> str:
    ref = float(best[REFERENCE]["cpu_s"])
    lines = [f"Payloads of {DecodeLimits().max_payload_bytes:,} bytes (the default "
             f"`max_payload_bytes`), best of {rounds} per shape, load average "
             f"{os.getloadavg()[0]:.1f} at the end.", "",
             "| payload | result | CPU s | / msgpack.unpackb | peak RSS MiB |",
             "|---|---|---:|---:|---:|"]
    for name, row in best.items():
        cpu = float(row["cpu_s"])
        lines.append(f"| {name} | {row['result']} | {cpu:.2f} | {cpu / ref:.2f} | "
                     f"{float(row['peak_rss']) / 2**20:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    text = table(measure(args.rounds), args.rounds)
    print(text)
    if not args.no_write:
        write_section(OUT, "decode-budget", "bench_decode_budget.py", text)


if __name__ == "__main__":
    main()
