"""Index backends: batch ingestion and one-request lookup, in-memory vs Redis on loopback.

Run from the repository root with a redis-server on 127.0.0.1:6379 (db 15 is flushed):

    python benchmarks/bench_index_backends.py            # ~1 minute
    python benchmarks/bench_index_backends.py --quick    # ~15 s

Ingestion: 16 replicas, ``BlockStored`` batches of ``--blocks-per-event`` random
int keys (one event per batch, as a scheduler step), applied one batch at a
time: events/s and blocks/s. Lookup: one request (block size 16, vLLM 0.31.0,
sha256) whose prefix is held to a random depth by each of 16 replicas;
``Router.rank`` on the prepared request (Redis: one EVALSHA for the 16
replicas, keys walked server side), median and p99.
Results go to stdout and ``--out`` (default benchmarks/INDEX_BACKENDS.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from typing import Any, cast

from prefixkey import Hasher, block_hash_to_int64
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import (
    PrefixIndex,
    PrefixIndexBackend,
    RedisPrefixIndex,
    ReplicaScheme,
    Router,
)

REPLICAS = 16
H = Hasher(block_size=16, python_hash_seed="0")


def ingest(index: PrefixIndexBackend, batches: int, per_event: int, rng: random.Random) -> float:
    names = [f"r{i}" for i in range(REPLICAS)]
    work = [(names[i % REPLICAS],
             EventBatch(float(i), (BlockStored(
                 tuple(rng.getrandbits(63) for _ in range(per_event)), None, (), 16),)))
            for i in range(batches)]
    start = time.perf_counter()
    for name, b in work:
        index.apply(name, b)
    return time.perf_counter() - start


def lookups(index: PrefixIndexBackend, tokens: int, repeats: int,
            rng: random.Random) -> list[float]:
    prompt = [rng.randrange(50_000) for _ in range(tokens)]
    keys = cast("list[bytes]", H.block_hashes(prompt))  # sha256 keys are bytes
    fine = [block_hash_to_int64(k) for k in keys]
    for i in range(REPLICAS):
        depth = rng.randint(0, len(fine))
        index.apply(f"r{i}", EventBatch(1e9, (BlockStored(tuple(fine[:depth]), None, (), 16),)))
    router = Router(index)
    prepared = router.prepare(prompt)

    def one() -> Any:
        return router.rank(prepared)
    one()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        one()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--url", default=os.environ.get("PREFIXKEY_TEST_REDIS_URL",
                                                        "redis://127.0.0.1:6379/15"))
    parser.add_argument("--blocks-per-event", type=int, default=32)
    parser.add_argument("--out", default="benchmarks/INDEX_BACKENDS.md")
    args = parser.parse_args()
    import redis

    client = redis.Redis.from_url(args.url)
    client.flushdb()
    info = client.info("server")
    batches = 2_000 if args.quick else 10_000
    repeats = 200 if args.quick else 1_000
    rows = []
    for backend in ("memory", "redis"):
        rng = random.Random(1)
        index: PrefixIndexBackend
        index = PrefixIndex() if backend == "memory" else RedisPrefixIndex(client)
        for i in range(REPLICAS):
            index.register(f"r{i}", ReplicaScheme(H))
        seconds = ingest(index, batches, args.blocks_per_event, rng)
        row = [backend, f"{batches / seconds:,.0f}",
               f"{batches * args.blocks_per_event / seconds:,.0f}"]
        for tokens in (2048, 8192):
            times = sorted(lookups(index, tokens, repeats, rng))
            row += [f"{statistics.median(times) * 1e6:,.0f}",
                    f"{times[int(len(times) * 0.99) - 1] * 1e6:,.0f}"]
        rows.append(row)
        print(" | ".join(row), flush=True)
    client.flushdb()
    header = ("| backend | events/s | blocks/s | 2k-token lookup median µs | p99 µs "
              "| 8k-token lookup median µs | p99 µs |")
    lines = [
        "# Index backends: in-memory vs Redis (loopback)", "",
        f"`python benchmarks/bench_index_backends.py{' --quick' if args.quick else ''}` on "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}, redis-server {info.get('redis_version')} on "
        f"127.0.0.1, redis-py {redis.__version__}.", "",
        f"Ingestion: {batches:,} batches of one BlockStored of {args.blocks_per_event} keys, "
        f"over {REPLICAS} replicas, one `apply` (one EVALSHA for Redis) per batch. Lookup: "
        f"one prepared request ranked over {REPLICAS} replicas (hashing excluded); Redis: "
        "`Router.rank`, one EVALSHA walking the keys server side.", "",
        header, "|" + "---|" * 7,
        *("| " + " | ".join(r) + " |" for r in rows), "",
    ]
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
