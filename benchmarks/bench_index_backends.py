"""Index backends: in-memory vs Redis on loopback — ingestion, ranking as a ratio to
hashing, two routers sharing one Redis, Redis memory per entry.

Run from the repository root with a redis-server on 127.0.0.1:6379 (``--url``'s
database is flushed):

    python benchmarks/bench_index_backends.py            # a few minutes on 2 cores
    python benchmarks/bench_index_backends.py --quick    # ~1 minute
    python benchmarks/bench_index_backends.py --replicas 64 256 --tokens 8192 \
        --backends redis --sections ranking memory        # only those rows

* Ingestion: 16 replicas, ``BlockStored`` batches of ``--blocks-per-event``
  random int keys applied one batch at a time (events/s, blocks/s); for Redis
  also 100k-block batches (cut in 10k-block chunks, one EVALSHA each), with
  the longest script call from the server's SLOWLOG.
* Ranking: for 16, 64 and 256 replicas, ~1M indexed entries (random 64-block
  chains plus each replica's prefix of the request), an 8k- and a 32k-token
  request (block size 16, sha256, vLLM 0.31.0). ``Router.prepare`` (hashing)
  and ``Router.rank`` (one ``leading_runs`` call: one EVALSHA for Redis,
  keys walked server side) are timed interleaved in one process; ``ratio`` is
  the median ranking time over the median hashing time, for the ``mixed``
  layout (each replica holds a random-length prefix) and ``worst`` (every
  replica holds all of it: every key walked for every candidate).
* ``redis, cold`` rows (``--cold``): each ranking first deletes the changes
  between holder sets that earlier rankings kept (``{ns}:diffs``), as for a
  prefix no ranking walked yet (the deletion's round trip is in the time).
* Redis through ``PredictedIndex`` (rows ``redis+predicted``, the ``mixed``
  layouts): the same filled Redis index wrapped for routing without events,
  one request recorded as sent to one replica; still one EVALSHA per ranking,
  the predictions extending the runs in the router's memory.
* Two routers: two processes rank the same request over the same 64-replica
  namespace at the same time, each interleaving hashing and ranking.
* Redis memory per (block, replica) entry: ``used_memory`` growth over the
  fill, divided by the entries added: over the ranking fills (mostly one
  holder per key), and over 1M entries where 16 replicas hold the same keys.

Timings on a shared machine are noisy; the ratios are what to compare.
Results go to stdout and ``--out`` (default benchmarks/INDEX_BACKENDS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_routing import interleaved

from prefixkey import Hasher
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import (
    PredictedIndex,
    PrefixIndex,
    PrefixIndexBackend,
    RedisPrefixIndex,
    ReplicaScheme,
    Router,
)

BLOCK = 16
SECTIONS = ("ingest", "ranking", "two", "memory")
HASHER = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.31.0")
SCHEME = ReplicaScheme(HASHER)


def ingest(index: PrefixIndexBackend, batches: int, per_event: int, rng: random.Random) -> float:
    names = [f"r{i}" for i in range(16)]
    work = [(names[i % 16],
             EventBatch(float(i), (BlockStored(
                 tuple(rng.getrandbits(63) for _ in range(per_event)), None, (), BLOCK),)))
            for i in range(batches)]
    start = time.perf_counter()
    for name, b in work:
        index.apply(name, b)
    return time.perf_counter() - start


def prompt(tokens: int) -> list[int]:
    rng = random.Random(tokens)
    return [rng.randrange(50_000) for _ in range(tokens)]


def fill(index: PrefixIndexBackend, replicas: int, blocks: int, tokens: int, layout: str,
         chunk: int) -> None:
    """``blocks`` entries over ``replicas``: each one's prefix of the request, then random."""
    rng = random.Random(1)
    keys = HASHER.block_hashes(prompt(tokens))
    per_replica = blocks // replicas
    for r in range(replicas):
        name = f"replica-{r}"
        index.register(name, SCHEME)
        depth = len(keys) if layout == "worst" else rng.randint(0, len(keys))
        index.apply(name, EventBatch(0.0, (BlockStored(tuple(keys[:depth]), None, (), BLOCK),)))
        filler = [rng.getrandbits(63) for _ in range(max(per_replica - depth, 0))]
        for start in range(0, len(filler), chunk):
            index.apply(name, EventBatch(1.0, tuple(
                BlockStored(tuple(filler[i:i + 64]), None, (), BLOCK)
                for i in range(start, min(start + chunk, len(filler)), 64))))


def ranking(index: PrefixIndexBackend, tokens: int, seconds: float, cold: bool = False
            ) -> tuple[list[tuple[float, float]], float]:
    """Hashing and ranking (median, p99 ms), and the server's mean ms per ranking call.

    ``cold``: each ranking first deletes the changes earlier rankings kept
    (``{ns}:diffs``), as for a request whose prefix no ranking walked yet.
    """
    router = Router(index)
    request = prompt(tokens)
    prepared = router.prepare(request)
    if isinstance(index, PredictedIndex):  # one request sent: its keys predicted on r0
        index.sent(prepared, next(iter(index.replicas())))
    client = getattr(index.index if isinstance(index, PredictedIndex) else index, "_r", None)
    if client is not None:
        router.rank(prepared)
        client.config_resetstat()
    # Wall time: a Redis ranking's cost is mostly the server's and the round trip's.
    def rank() -> None:
        if cold and client is not None:
            client.unlink("{bench}:diffs")
        router.rank(prepared)

    times = interleaved([lambda: router.prepare(request), rank], seconds,
                        clock=time.perf_counter)
    server = 0.0
    if client is not None:
        server = client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"] / 1e3
    return times, server


def child(url: str, namespace: str, tokens: int, seconds: float) -> None:
    """One of the two routers sharing Redis: print its medians as JSON."""
    index = RedisPrefixIndex.from_url(url, namespace=namespace, timeout=5.0)
    ((h, _), (r, p99)), _ = ranking(index, tokens, seconds)
    print(json.dumps({"hash_ms": h, "rank_ms": r, "rank_p99_ms": p99}))


def shared_memory(client: Any, entries: int) -> tuple[float, float]:
    """Redis ``used_memory`` per entry over ``entries`` entries, each key held by 16
    replicas, and the blocks/s of that fill (10k-block batches)."""
    client.flushdb()
    before = int(client.info("memory")["used_memory"])
    index = RedisPrefixIndex(client, namespace="bench", sweep_every=0)
    rng = random.Random(3)
    keys = [rng.getrandbits(63) for _ in range(entries // 16)]
    start_s = time.perf_counter()
    for r in range(16):
        index.register(f"replica-{r}", SCHEME)
        for start in range(0, len(keys), 10_000):
            index.apply(f"replica-{r}", EventBatch(1.0, tuple(
                BlockStored(tuple(keys[i:i + 64]), None, (), BLOCK)
                for i in range(start, min(start + 10_000, len(keys)), 64))))
    seconds = time.perf_counter() - start_s
    used = int(client.info("memory")["used_memory"]) - before
    n = len(index)
    client.flushdb()
    return used / n, n / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--url", default=os.environ.get("PREFIXKEY_TEST_REDIS_URL",
                                                        "redis://127.0.0.1:6379/15"))
    parser.add_argument("--blocks-per-event", type=int, default=32)
    parser.add_argument("--out", default="benchmarks/INDEX_BACKENDS.md")
    parser.add_argument("--replicas", type=int, nargs="+", help="ranking: these fleet sizes")
    parser.add_argument("--tokens", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--backends", nargs="+", choices=("redis", "memory"),
                        default=["redis", "memory"])
    parser.add_argument("--cold", action="store_true",
                        help="Redis rows ranking with no changes kept by earlier rankings")
    parser.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=SECTIONS)
    parser.add_argument("--child", nargs=3, metavar=("NAMESPACE", "TOKENS", "SECONDS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.url, args.child[0], int(args.child[1]), float(args.child[2]))
        return
    import redis

    client = redis.Redis.from_url(args.url)
    client.flushdb()
    info = client.info("server")
    quick = args.quick
    batches = 2_000 if quick else 10_000
    seconds = 2.0 if quick else 5.0
    entries = 200_000 if quick else 1_000_000
    lines = [
        "# Index backends: in-memory vs Redis (loopback)", "",
        f"`python benchmarks/bench_index_backends.py{' --quick' if quick else ''}` on "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared with "
        f"other jobs: timings are noisy, compare the ratios), Python "
        f"{sys.version.split()[0]}, redis-server {info.get('redis_version')} on 127.0.0.1, "
        f"redis-py {redis.__version__}, {time.strftime('%Y-%m-%d')}.", "",
    ]

    def emit(*text: str) -> None:
        print(*text, sep="\n", flush=True)
        lines.extend(text)

    sections = set(args.sections)
    # -- ingestion -----------------------------------------------------------------
    if "ingest" in sections:
        ingestion(client, emit, batches, args.blocks_per_event, quick)
    two: list[dict[str, float]] = []
    used_per_entry: list[tuple[int, float]] = []
    if "ranking" in sections:
        two = rankings(client, emit, args, entries, seconds, used_per_entry)

    # -- two routers -----------------------------------------------------------------
    if two:
        emit("## Two routers sharing one Redis", "",
             "Two processes rank the same 8k-token request over the same 64-replica namespace "
             "(mixed layout) at the same time, each interleaving hashing and ranking.", "",
             "| router | hashing ms | ranking ms | ranking p99 ms | ratio |",
             "|---|---|---|---|---|",
             *(f"| {i + 1} | {t['hash_ms']:.2f} | {t['rank_ms']:.2f} | "
               f"{t['rank_p99_ms']:.2f} | {t['rank_ms'] / t['hash_ms']:.2f} |"
               for i, t in enumerate(two)), "")

    # -- memory ----------------------------------------------------------------------
    if "memory" in sections:
        shared, rate = shared_memory(client, entries)
        emit("## Redis memory", "",
             *(f"- Redis `used_memory` per (block, replica) entry, {entries:,} entries over "
               f"{n} replicas, mostly one holder per key: {b:.0f} bytes"
               for n, b in used_per_entry),
             f"- Redis `used_memory` per (block, replica) entry, {entries:,} entries, each key "
             f"held by 16 replicas: {shared:.0f} bytes (filled at {rate:,.0f} blocks/s)", "")
    client.flushdb()
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines))


def ingestion(client: Any, emit: Callable[..., None], batches: int, per_event: int,
              quick: bool) -> None:
    emit("## Ingestion", "",
         f"{batches:,} batches of one BlockStored of {per_event} keys over 16 "
         "replicas, one `apply` per batch (one EVALSHA for Redis); then, Redis only, "
         "100k-block batches cut in 10k-block chunks (one EVALSHA each).", "",
         "| backend | batch | events/s | blocks/s | longest script call ms |",
         "|---|---|---|---|---|")
    for backend in ("memory", "redis"):
        index: PrefixIndexBackend
        index = PrefixIndex() if backend == "memory" else RedisPrefixIndex(client)
        for i in range(16):
            index.register(f"r{i}", SCHEME)
        s = ingest(index, batches, per_event, random.Random(1))
        emit(f"| {backend} | {per_event} blocks | {batches / s:,.0f} | "
             f"{batches * per_event / s:,.0f} | |")
    client.config_set("slowlog-log-slower-than", 0)
    client.slowlog_reset()
    big = 3 if quick else 5
    s = ingest(RedisPrefixIndex(client), big, 100_000, random.Random(2))
    calls = [e["duration"] / 1e3 for e in client.slowlog_get(1000)
             if e["command"].upper().startswith(b"EVALSHA")]
    client.config_set("slowlog-log-slower-than", 10_000)
    emit(f"| redis | 100,000 blocks | {big / s:,.1f} | {big * 100_000 / s:,.0f} | "
         f"{max(calls):,.0f} |", "")
    client.flushdb()


def rankings(client: Any, emit: Callable[..., None], args: argparse.Namespace, entries: int,
             seconds: float, used_per_entry: list[tuple[int, float]]
             ) -> list[dict[str, float]]:
    """The ranking table (filling ``used_per_entry``); the two routers' timings, if run."""
    emit("## Ranking as a ratio to hashing", "",
         f"~{entries:,} indexed entries (random 64-block chains plus each replica's prefix "
         "of the request); hashing is `Router.prepare`, ranking `Router.rank` on the prepared "
         "request (Redis: one EVALSHA walking the keys server side), interleaved in one "
         "process; ratio = median ranking / median hashing; server ms per call is the "
         "script's mean time inside redis-server (INFO commandstats), the rest of a Redis "
         "ranking is the client, the round trip and waiting for a CPU.", "",
         "| backend | replicas | prompt tokens | layout | hashing ms | ranking ms "
         "| ranking p99 ms | ratio | server ms per call |",
         "|---|---|---|---|---|---|---|---|---|")
    memory_rows: list[str] = []
    two: list[dict[str, float]] = []
    index: PrefixIndexBackend
    for replicas in args.replicas or ((16, 64) if args.quick else (16, 64, 256)):
        for tokens in args.tokens:
            for layout in ("mixed", "worst"):
                for backend in args.backends:
                    client.flushdb()
                    before = int(client.info("memory")["used_memory"])
                    if backend == "redis":
                        index = RedisPrefixIndex(client, namespace="bench", sweep_every=0)
                    else:
                        index = PrefixIndex(max_entries=2 * entries + 10 ** 6)
                    fill(index, replicas, entries, tokens, layout, chunk=10_000)
                    if backend == "redis" and layout == "mixed" and tokens == 8192:
                        used = int(client.info("memory")["used_memory"]) - before
                        used_per_entry.append((replicas, used / len(index)))
                    ((h, _), (r, p99)), server = ranking(index, tokens, seconds)
                    row = (f"| {backend} | {replicas} | {tokens:,} | {layout} | {h:.2f} | "
                           f"{r:.2f} | {p99:.2f} | {r / h:.2f} | "
                           f"{f'{server:.2f}' if server else ''} |")
                    if backend == "redis":
                        emit(row)
                        if layout == "mixed" and args.cold:
                            ((h, _), (r, p99)), server = ranking(index, tokens, seconds, True)
                            emit(f"| redis, cold | {replicas} | {tokens:,} | {layout} | "
                                 f"{h:.2f} | {r:.2f} | {p99:.2f} | {r / h:.2f} | "
                                 f"{server:.2f} |")
                        if layout == "mixed":
                            wrapped = PredictedIndex(index)
                            ((h, _), (r, p99)), server = ranking(wrapped, tokens, seconds)
                            emit(f"| redis+predicted | {replicas} | {tokens:,} | {layout} | "
                                 f"{h:.2f} | {r:.2f} | {p99:.2f} | {r / h:.2f} | "
                                 f"{server:.2f} |")
                    else:
                        print(row, flush=True)
                        memory_rows.append(row)
                    if backend == "redis" and replicas == 64 and tokens == 8192 \
                            and layout == "mixed" and "two" in args.sections:
                        two = two_routers(args.url, tokens, seconds)
    emit(*memory_rows, "")
    return two


def two_routers(url: str, tokens: int, seconds: float) -> list[dict[str, float]]:
    procs = [subprocess.Popen([sys.executable, __file__, "--url", url, "--child", "bench",
                               str(tokens), str(seconds)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    out: list[dict[str, float]] = []
    for p in procs:
        stdout, _ = p.communicate(timeout=600)
        out.append(json.loads(stdout.splitlines()[-1]))
    return out


if __name__ == "__main__":
    main()
