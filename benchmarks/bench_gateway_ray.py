"""Ray Serve gateway overhead: PrefixKeyRouter.choose_replicas per call, against hashing it.

Run from the repository root with the ``ray`` extra installed (no Ray cluster is
started: the router is built as Ray Serve builds it and called on an asyncio
loop, its candidates stand-ins carrying Ray ``ReplicaID``\\ s, their queue
lengths in Ray's cache). ``--redis-server`` (default ``redis-server``) is started
on ``--redis-port`` for the Redis rows:

    python benchmarks/bench_gateway_ray.py            # about a minute on 2 cores
    python benchmarks/bench_gateway_ray.py --quick

For 16 and 64 replicas, an 8k- and a 32k-token request (block size 16,
sha256, vLLM 0.29.0 keys; the calls carry ``request_token_ids``, as Ray Serve
LLM gives KV-aware routers, so nothing is rendered), each replica holding a
random-length prefix of it in the index:

* ``hash``: hashing the call's ids, the fastest way prefixkey offers
  (``Hasher.block_hashes(Request(check_token_ids(ids)))``: checked once, at C
  speed, then keyed; what any exact router pays);
* ``call``: one ``choose_replicas`` call, everything the router does per call
  (finding the ids, Ray's queue lengths, hashing, ranking, the ranks handed back);
* ``ratio``: median ``call`` over median ``hash``, and the minima's ratio (the
  budget: 1.2 in memory, 2.5 with Redis; on a loaded machine the minima are
  the steadier figure);
* ``loop max``: the longest the event loop was held by a call (a heartbeat task
  ticking every 0.5 ms misses its tick by that much), over median ``hash``
  (budget: 1, one request's hashing: the in-memory router hashes on the loop).

Timings on a shared machine are noisy; the ratios are what to compare.
Results go to stdout and ``--out`` (a section of benchmarks/GATEWAYS.md).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ray.serve._private.common import DeploymentHandleSource, DeploymentID, ReplicaID

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "gateways"))

from ray_requests import FakeReplica, pending_request

from prefixkey import Hasher, Request
from prefixkey.core import check_token_ids
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import PrefixIndexBackend, RedisPrefixIndex, ReplicaId, ReplicaScheme
from prefixkey.gateways.ray import PrefixKeyRouter

BLOCK = 16
VERSION = "0.29.0"


def _router(redis_url: str | None, namespace: str) -> PrefixKeyRouter:
    router = PrefixKeyRouter(
        deployment_id=DeploymentID(name="llm", app_name="bench"),
        handle_source=DeploymentHandleSource.UNKNOWN, use_replica_queue_len_cache=True,
        get_curr_time_s=lambda: 0.0)  # a frozen clock: the queue lengths set stay fresh
    kwargs: dict[str, Any] = {"vllm_version": VERSION, "namespace": namespace}
    if redis_url is not None:
        kwargs["redis_url"] = redis_url
    router.initialize_state(**kwargs)
    return router


def _fill(index: PrefixIndexBackend, scheme: ReplicaScheme, names: list[str],
          tokens: list[int], rng: random.Random) -> None:
    keys = [scheme.publish(k) for k in scheme.hasher.block_hashes(Request(tokens))]
    for name in names:
        index.register(ReplicaId(name), scheme)
        n = rng.randrange(1, len(keys))
        event = BlockStored(tuple(keys[:n]), None, tuple(tokens[:n * BLOCK]), BLOCK,
                            medium="GPU", group_idx=0)
        index.apply(ReplicaId(name), EventBatch(0.0, (event,)))


async def _measure(router: PrefixKeyRouter, hasher: Hasher, replicas: list[FakeReplica],
                   tokens: list[int], rounds: int) -> dict[str, float]:
    pending = pending_request("r", tokens)
    choose: Any = router.choose_replicas  # given stand-ins for Ray's RunningReplica
    for _ in range(3):  # warm-up: scripts loaded, registrations read, caches filled
        await choose(replicas, pending)
    hashes, calls, hash_cpu, call_cpu = [], [], [], []
    for _ in range(rounds):  # timed, nothing else on the loop
        c0, t0 = time.process_time(), time.perf_counter()
        hasher.block_hashes(Request(check_token_ids(tokens)))
        c1, t1 = time.process_time(), time.perf_counter()
        order = await choose(replicas, pending)
        c2, t2 = time.process_time(), time.perf_counter()
        assert order and order[0], "no rank"
        hashes.append(t1 - t0)
        calls.append(t2 - t1)
        hash_cpu.append(c1 - c0)
        call_cpu.append(c2 - c1)
    # The loop's longest stretch without yielding during a call: a heartbeat sleeping
    # _BEAT between ticks (not spinning: a spinning loop would starve Redis's worker
    # thread of the GIL); a gap beyond _BEAT is the time the call held the loop.
    stretches: list[float] = []
    running = True

    async def heartbeat() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(_BEAT)
            now = time.perf_counter()
            stretches.append(now - last - _BEAT)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(_BEAT * 3)
    for _ in range(rounds):
        await choose(replicas, pending)
        await asyncio.sleep(_BEAT * 3)
    running = False
    await beat
    h = statistics.median(hashes)
    return {"hash": h, "call": statistics.median(calls), "ratio": statistics.median(calls) / h,
            "hash_min": min(hashes), "call_min": min(calls),
            "ratio_min": min(calls) / min(hashes),
            "loop": max(stretches) / h, "routed": router.counters["routed"],
            # CPU time of the process (every thread: Redis's worker too), steadier under load
            "cpu_ratio": statistics.median(call_cpu) / max(statistics.median(hash_cpu), 1e-9)}


#: The heartbeat's sleep (seconds).
_BEAT = 0.0005


def _start_redis(binary: str, port: int) -> subprocess.Popen[bytes]:
    path = shutil.which(binary)
    if path is None:
        raise SystemExit(f"{binary} not found: install redis-server or pass --redis-server")
    proc = subprocess.Popen([path, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", tempfile.mkdtemp()],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--replicas", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--tokens", type=int, nargs="+", default=[8192, 32768])
    parser.add_argument("--backends", nargs="+", default=["memory", "redis"])
    parser.add_argument("--redis-server", default="redis-server")
    parser.add_argument("--redis-port", type=int, default=18849)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rounds = 15 if args.quick else 41
    hasher = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version=VERSION)
    scheme = ReplicaScheme(hasher)
    redis = _start_redis(args.redis_server, args.redis_port) if "redis" in args.backends else None
    url = f"redis://127.0.0.1:{args.redis_port}/0"
    rows = []
    try:
        for backend in args.backends:
            for n in args.replicas:
                for num_tokens in args.tokens:
                    rng = random.Random(n * 7 + num_tokens)
                    tokens = [rng.randrange(100, 50_000) for _ in range(num_tokens)]
                    ns = f"bench:{n}:{num_tokens}"
                    router = _router(url if backend == "redis" else None, ns)
                    replicas = [FakeReplica(ReplicaID(f"r{i:03d}", DeploymentID("llm", "bench")))
                                for i in range(n)]
                    fill = (RedisPrefixIndex.from_url(url, namespace=ns) if backend == "redis"
                            else router._index)
                    _fill(fill, scheme, [r.replica_id.unique_id for r in replicas], tokens, rng)
                    for r in replicas:  # Ray's cache of ongoing requests: no probing
                        router.replica_queue_len_cache.update(r.replica_id, rng.randrange(4))
                    got = asyncio.run(_measure(router, hasher, replicas, tokens, rounds))
                    assert got["routed"] == 2 * rounds + 3, got
                    rows.append((backend, n, num_tokens, got))
                    print(f"{backend:7} {n:4} replicas {num_tokens:6} tokens: hash "
                          f"{got['hash'] * 1e3:7.2f} ms  call {got['call'] * 1e3:7.2f} ms  "
                          f"ratio {got['ratio']:.2f} (min {got['ratio_min']:.2f}, "
                          f"CPU {got['cpu_ratio']:.2f})  "
                          f"loop max {got['loop']:.2f}", flush=True)
    finally:
        if redis is not None:
            redis.kill()
    lines = ["| index | replicas | tokens | hash, median / min (ms) | call, median / min (ms) "
             "| ratio, medians / minima | ratio, CPU time (medians) | loop max / hash |",
             "|---|---|---|---|---|---|---|---|"]
    for backend, n, num_tokens, got in rows:
        lines.append(f"| {backend} | {n} | {num_tokens} | {got['hash'] * 1e3:.2f} / "
                     f"{got['hash_min'] * 1e3:.2f} | {got['call'] * 1e3:.2f} / "
                     f"{got['call_min'] * 1e3:.2f} | {got['ratio']:.2f} / {got['ratio_min']:.2f} "
                     f"| {got['cpu_ratio']:.2f} | {got['loop']:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
