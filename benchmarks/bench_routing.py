"""Routing latency over a synthetic PrefixIndex as a ratio to hashing, and memory per entry.

Run from the repository root:

    python benchmarks/bench_routing.py            # ~1M indexed entries (a few minutes on 2 cores)
    python benchmarks/bench_routing.py --quick    # ~200k entries, 16 and 64 replicas
    python benchmarks/bench_routing.py --big      # also 10M entries at 64 and 1024 replicas

For 16, 64, 256 and 1024 replicas the index is filled with ``--blocks``
random (replica, key) entries through ordinary ``BlockStored`` batches, plus,
per replica, a prefix of the benchmark request's own keys. Rows then time,
for 8k- and 32k-token prompts (block size 16, sha256, vLLM 0.31.0):

* hashing: ``Router.prepare`` (all replicas share one scheme: hashed once);
* routing: ``Router.rank`` on the prepared request (the full ranking, read
  to its head; ``limit=1``: the best candidate only; and every decision's
  explanation read, which builds them all), in two layouts: each
  replica holds a random-length prefix ("mixed"), or every replica holds the
  whole prompt ("worst": every key is walked and every candidate ties, so
  every rendezvous weight is computed).

The two are timed interleaved in one process (one call of each in turn) and
``ratio`` is the median routing time over the median hashing time, so it
does not move with the machine's load. Memory per entry is tracemalloc's
traced growth over filling a 1M-entry index, divided by its entries, where
each key is held by one replica (16 replicas, disjoint keys: the worst case)
and by 16 (16 replicas holding the same keys). Results go to stdout and to
``--out`` (default benchmarks/ROUTING.md).
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prefixkey import Hasher, Request
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, PreparedRequest, ReplicaScheme, Router

BLOCK = 16
HASHER = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.31.0")
SCHEME = ReplicaScheme(HASHER)

T = TypeVar("T")


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


def read_all(router: Router, prepared: PreparedRequest) -> list[str]:
    """Every decision of a full ranking, read to its explanation."""
    return [d.why for d in router.rank(prepared)]


def interleaved(fns: list[Callable[[], object]], seconds: float,
                clock: Callable[[], float] = time.process_time) -> list[tuple[float, float]]:
    """Median and p99 of each of ``fns`` in ``clock`` milliseconds, called in turn for ``seconds``.

    CPU time (``process_time``), not wall time: on a shared machine a call is
    often descheduled, and the longer calls more often, which wall time would
    charge to them.
    """
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline or len(samples[0]) < 5:
        for fn, out in zip(fns, samples, strict=True):
            start = clock()
            fn()
            out.append((clock() - start) * 1e3)
    result = []
    for out in samples:
        out.sort()
        result.append((statistics.median(out), out[min(len(out) - 1, int(len(out) * 0.99))]))
    return result


def traced_growth(build: Callable[[], T]) -> tuple[T, int]:
    """What ``build`` returns, and the bytes tracemalloc traces as held by it once it returns
    (its temporaries freed), after a full collection."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        built = build()
        return built, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def memory_per_entry(entries: int, holders: int) -> float:
    """Traced bytes per (block, replica) entry of an index whose keys have ``holders`` each."""
    rng = random.Random(3)
    distinct = entries // holders

    def build() -> PrefixIndex:
        index = PrefixIndex(max_entries=entries)
        shared = [rng.getrandbits(64) for _ in range(distinct)] if holders > 1 else []
        for r in range(16):
            name = f"replica-{r}"
            index.register(name, SCHEME)
            for start in range(r * entries // 16, (r + 1) * entries // 16, 64):
                stop = min(start + 64, (r + 1) * entries // 16)
                # Fresh int objects per replica, as decoded events carry them.
                keys = (tuple(int(str(shared[i % distinct])) for i in range(start, stop))
                        if holders > 1 else tuple(rng.getrandbits(64) for _ in range(start, stop)))
                index.apply(name, EventBatch(0.0, (BlockStored(keys, None, (), BLOCK),)))
        return index

    index, used = traced_growth(build)
    assert len(index) == entries, len(index)
    return used / entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200k entries, 16 and 64 replicas")
    parser.add_argument("--big", action="store_true", help="also 10M entries (64, 1024 replicas)")
    parser.add_argument("--blocks", type=int, default=None, help="indexed entries per index")
    parser.add_argument("--out", default="benchmarks/ROUTING.md")
    parser.add_argument("--replicas", type=lambda v: [int(x) for x in v.split(",")], default=None,
                        help="only these replica counts, e.g. 64,1024")
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

    report("| replicas | indexed entries | prompt tokens | layout | hashing ms (median) "
           "| routing ms (median) | routing ms (p99) | ratio | top-1 ms (median) | top-1 ratio "
           "| all read ms (median) | all read ratio | fill s |")
    report("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    configs = [(r, blocks, n) for r in ((16, 64) if args.quick else (16, 64, 256, 1024))
               for n in prompts if not args.replicas or r in args.replicas]
    if args.big:
        configs += [(r, 10_000_000, 32768) for r in (64, 1024)]
    for replicas, size, n in configs:
        request, prefix = prompts[n], keys[n]
        for layout in ("mixed", "worst"):
            lengths = {f"replica-{r}": (len(prefix) if layout == "worst"
                                        else rng.randrange(len(prefix) + 1))
                       for r in range(replicas)}
            own = {name: prefix[:length] for name, length in lengths.items()}
            start = time.perf_counter()
            index = fill(replicas, size, own)
            fill_s = time.perf_counter() - start
            # A load for every replica (queued prefill tokens), pushed as a gateway does.
            router = Router(index)
            for name in lengths:
                router.set_load(name, float(rng.randrange(0, 4 * n)))
            prepared = router.prepare(request)
            (hash_ms, _), (route_ms, route_p99), (top_ms, _), (all_ms, _) = interleaved(
                [partial(router.prepare, request), partial(router.rank, prepared),
                 partial(router.rank, prepared, limit=1),
                 partial(read_all, router, prepared)], seconds)
            report(f"| {replicas} | {len(index):,} | {n:,} | {layout} | {hash_ms:.2f} "
                   f"| {route_ms:.2f} | {route_p99:.2f} | {route_ms / hash_ms:.2f} "
                   f"| {top_ms:.2f} | {top_ms / hash_ms:.2f} | {all_ms:.2f} "
                   f"| {all_ms / hash_ms:.2f} | {fill_s:.1f} |")
            del index, router, prepared
            gc.collect()
    report("")
    for holders in (1, 16):
        per_entry = memory_per_entry(blocks, holders)
        report(f"Memory per (block, replica) entry, {blocks:,} entries over 16 replicas, "
               f"each key held by {holders} (tracemalloc): {per_entry:.0f} bytes")
    header = [
        "# Routing benchmark",
        "",
        f"`python benchmarks/bench_routing.py{' --quick' if args.quick else ''}"
        f"{' --big' if args.big else ''}` on "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. Block size 16, sha256, vLLM 0.31.0 scheme, int events.",
        "",
        "Hashing is `Router.prepare` (one scheme shared by all replicas, so one hash per "
        "request); routing is `Router.rank` on the prepared request (every candidate ranked: "
        "the index read; the ranking scores and lists groups of candidates, sorts ties by "
        "rendezvous weight and builds decisions as they are read, so this reaches the best "
        "group and builds one decision), "
        "`top-1` is `Router.rank(prepared, limit=1)`, `all read` reads every decision's "
        "explanation (`[d.why for d in rank(prepared)]`: every tie sorted, every decision "
        "and explanation built), "
        "each timed (CPU time) interleaved with hashing in one process; ratios are over hashing "
        "(medians). `mixed`: each "
        "replica holds a random-length prefix of the prompt; `worst`: every replica holds all "
        "of it (so every candidate ties and every rendezvous weight is computed). "
        "`indexed entries` counts the prompt prefixes too. `fill s` is the time to apply the "
        "BlockStored batches that build the index.",
        "",
    ]
    Path(args.out).write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
