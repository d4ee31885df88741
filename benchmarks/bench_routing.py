"""Routing latency over a synthetic PrefixIndex, apart from hashing time, and memory per block.

Run from the repository root:

    python benchmarks/bench_routing.py            # ~1M indexed blocks (a few minutes on 2 cores)
    python benchmarks/bench_routing.py --quick    # ~200k blocks

For 16 and 64 replicas the index is filled with ``--blocks`` (replica, key)
entries through ordinary ``BlockStored`` batches: random 64-bit keys plus, per
replica, a prefix of the benchmark request's own keys. Rows then time, for
8k- and 32k-token prompts (block size 16, sha256, vLLM 0.31.0):

* hashing: ``Router.prepare`` (all replicas share one scheme: hashed once);
* routing: ``Router.rank`` on the prepared request, in two layouts: each
  replica holds a random-length prefix ("mixed"), or every replica holds the
  whole prompt ("worst": every key of every replica is looked up).

Memory per indexed block is tracemalloc's traced growth over filling the
16-replica index, divided by its entries. Results go to stdout and to
``--out`` (default benchmarks/ROUTING.md).
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prefixkey import Hasher, Request
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, ReplicaScheme, Router

BLOCK = 16
HASHER = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.31.0")
SCHEME = ReplicaScheme(HASHER)


def fill(replicas: int, blocks: int, prefixes: dict[str, list[int]], seed: int = 1) -> PrefixIndex:
    """An index with ``blocks`` entries: each replica's request prefix, then random keys."""
    rng = random.Random(seed)
    index = PrefixIndex(max_entries=blocks + 1_000_000)
    per_replica = blocks // replicas
    ts = 0.0
    for r in range(replicas):
        name = f"replica-{r}"
        index.register(name, SCHEME)
        own = prefixes.get(name, [])
        if own:
            index.apply(name, EventBatch(ts, (BlockStored(tuple(own), None, (), BLOCK),)))
        for start in range(len(own), per_replica, 64):  # 64-block chains, like long prompts
            keys = tuple(rng.getrandbits(64) for _ in range(min(64, per_replica - start)))
            ts += 1
            index.apply(name, EventBatch(ts, (BlockStored(keys, None, (), BLOCK),)))
    return index


def timeit(fn: Callable[[], object], seconds: float) -> tuple[float, float]:
    """Median and p99 of ``fn`` in milliseconds, repeating for about ``seconds``."""
    fn()
    samples: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples) < 5:
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200k blocks, shorter timing")
    parser.add_argument("--blocks", type=int, default=None, help="indexed entries per index")
    parser.add_argument("--out", default="benchmarks/ROUTING.md")
    args = parser.parse_args()
    blocks = args.blocks or (200_000 if args.quick else 1_000_000)
    seconds = 0.5 if args.quick else 2.0
    rng = random.Random(7)
    prompts = {n: Request([rng.randrange(128_000) for _ in range(n)]) for n in (8192, 32768)}
    keys = {n: [k for k in map(SCHEME.publish, HASHER.block_hashes(r)) if isinstance(k, int)]
            for n, r in prompts.items()}
    lines = []

    def report(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    report("| replicas | indexed blocks | prompt tokens | layout | hashing ms (median) "
           "| routing ms (median) | routing ms (p99) | fill s |")
    report("|---|---|---|---|---|---|---|---|")
    memory_per_block = 0.0
    for replicas in (16, 64):
        for n, request in prompts.items():
            prefix = keys[n]
            for layout in ("mixed", "worst"):
                lengths = {f"replica-{r}": (len(prefix) if layout == "worst"
                                            else rng.randrange(len(prefix) + 1))
                           for r in range(replicas)}
                own = {name: prefix[:length] for name, length in lengths.items()}
                measure = replicas == 16 and n == 8192 and layout == "mixed"
                if measure:
                    tracemalloc.start()
                    before = tracemalloc.get_traced_memory()[0]
                start = time.perf_counter()
                index = fill(replicas, blocks, own)
                fill_s = time.perf_counter() - start
                if measure:
                    memory_per_block = (tracemalloc.get_traced_memory()[0] - before) / len(index)
                    tracemalloc.stop()
                router = Router(index)
                hash_ms, _ = timeit(partial(router.prepare, request), seconds / 2)
                prepared = router.prepare(request)
                route_ms, route_p99 = timeit(partial(router.rank, prepared), seconds)
                report(f"| {replicas} | {len(index):,} | {n:,} | {layout} | {hash_ms:.2f} "
                       f"| {route_ms:.2f} | {route_p99:.2f} | {fill_s:.1f} |")
                del index, router, prepared
    report("")
    report(f"Memory per indexed block (16 replicas, {blocks:,} entries, tracemalloc): "
           f"{memory_per_block:.0f} bytes")
    header = [
        "# Routing benchmark",
        "",
        f"`python benchmarks/bench_routing.py{' --quick' if args.quick else ''}` on "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. Block size 16, sha256, vLLM 0.31.0 scheme, int events.",
        "",
        "Hashing is `Router.prepare` (one scheme shared by all replicas, so one hash per "
        "request); routing is `Router.rank` on the prepared request. `mixed`: each replica "
        "holds a random-length prefix of the prompt; `worst`: every replica holds all of it. "
        "`fill s` is the time to apply the BlockStored batches that build the index.",
        "",
    ]
    Path(args.out).write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
