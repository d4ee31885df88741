"""The LiteLLM plugin's added time per request, rendering aside, as a ratio to hashing.

Run from the repository root, with the ``litellm`` extra installed::

    python benchmarks/bench_gateways.py                       # in-memory index
    python benchmarks/bench_gateways.py --redis-url redis://127.0.0.1:18795/0

A real ``litellm.Router`` (the pinned release) holds ``--replicas``
``hosted_vllm`` deployments of one model group, each configured for prefix
routing (no KV-event endpoints: the index is filled directly, as the
subscriber would). Each replica holds a prefix of the benchmark request's
keys, of a random length, plus ``--filler`` random blocks. Rows time, for
prompts of 1k, 8k and 32k tokens (block size 16, sha256, vLLM 0.31.0):

* **hash**: ``Hasher.block_hashes`` of the request (what any prefix router
  must do);
* **plugin**: ``PrefixKeyRouting.async_get_available_deployment`` awaited on an
  event loop, with its rendering step replaced by a lookup of the request
  rendered before timing (rendering aside, as the target states it): LiteLLM's
  group lookup and cooldown read, the worker-thread hand-off the rendering
  step keeps, hashing, ranking (in a worker thread for Redis) and the answer.

The two are timed interleaved (one call of each in turn); ``ratio`` is the
median plugin time over the median hash time. Targets (issue 25): <= 1.2x with
the in-memory index, <= 2.5x with Redis. The tables go to stdout and, with
the machine and the command, to ``--out`` + ``.table`` (benchmarks/GATEWAYS.md
quotes them with their reading).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import litellm
from fleets import fill

from prefixkey import Hasher, Request
from prefixkey.fleet import PrefixIndex, PrefixIndexBackend, RedisPrefixIndex, ReplicaScheme
from prefixkey.gateways.litellm import PrefixKeyRouting

BLOCK = 16
HASHER = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.31.0")
SCHEME = ReplicaScheme(HASHER)
MESSAGES = [{"role": "user", "content": "benchmark"}]
#: The test model folder: the group needs a Renderer, though rendering is replaced when timed.
MODEL_DIR = str(Path(__file__).resolve().parents[1] / "tests" / "render" / "models" /
                "qwen2_rebuilt")


def model_list(replicas: int) -> list[dict[str, Any]]:
    return [{"model_name": "qwen",
             "litellm_params": {"model": "hosted_vllm/qwen2",
                                "api_base": f"http://127.0.0.1:{18750 + i}/v1"},
             "model_info": {"id": f"r{i}", "prefixkey": {
                 "block_size": BLOCK, "hash_algo": "sha256", "python_hash_seed": "0",
                 "model_dir": MODEL_DIR}}}
            for i in range(replicas)]


def row(tokens: int, replicas: int, filler: int, redis_url: str | None, rounds: int
        ) -> dict[str, Any]:
    rng = random.Random(tokens * 7919 + replicas)
    request = Request([rng.randrange(128_000) for _ in range(tokens)])
    keys = [SCHEME.publish(k) for k in HASHER.block_hashes(request)]
    index: PrefixIndexBackend
    if redis_url:
        index = RedisPrefixIndex.from_url(redis_url, namespace=f"bench-gw-{tokens}-{replicas}")
        for rid in list(index.replicas()):
            index.remove_replica(rid)
    else:
        index = PrefixIndex()
    fill(index, SCHEME, BLOCK, replicas, keys, filler, rng)
    router = litellm.Router(model_list=model_list(replicas))
    strategy = PrefixKeyRouting(router, index=index)
    strategy._render = lambda *args: request  # type: ignore[method-assign]  # rendering aside
    times: dict[str, list[float]] = {"plugin": [], "hash": [], "plugin_cpu": [],
                                     "hash_cpu": [], "hop": []}

    def nothing() -> None:
        pass

    async def run() -> None:
        for i in range(rounds + 5):
            c0, t0 = time.thread_time(), time.perf_counter()
            chosen = await strategy.async_get_available_deployment(
                "qwen", MESSAGES, request_kwargs={"messages": MESSAGES})
            c1, t1 = time.thread_time(), time.perf_counter()
            HASHER.block_hashes(request)
            c2, t2 = time.thread_time(), time.perf_counter()
            await strategy._handoff.call(nothing)  # the plugin's own hand-off, alone
            t3 = time.perf_counter()
            assert chosen["model_info"]["id"].startswith("r")
            if i >= 5:  # warm-up
                for key, value in (("plugin", t1 - t0), ("hash", t2 - t1), ("hop", t3 - t2),
                                   ("plugin_cpu", c1 - c0), ("hash_cpu", c2 - c1)):
                    times[key].append(value)

    asyncio.run(run())
    assert strategy.counts["routed"] == rounds + 5, strategy.counts
    parts = breakdown(strategy, request, replicas, rounds) if not redis_url else {}
    m = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    return {"tokens": tokens, "replicas": replicas, "index": "Redis" if redis_url else "memory",
            "hash_us": m["hash"], "plugin_us": m["plugin"], "ratio": m["plugin"] / m["hash"],
            "cpu_ratio": m["plugin_cpu"] / max(m["hash_cpu"], 1e-9), "hop_us": m["hop"],
            **parts}


def breakdown(strategy: PrefixKeyRouting, request: Request, replicas: int, rounds: int
              ) -> dict[str, float]:
    """The plugin's steps alone, each the median of the loop thread's CPU time (µs)."""
    names = [f"r{i}" for i in range(replicas)]
    router = strategy.router
    prepared = router.prepare(request, names)
    group = strategy._group("qwen")
    steps: dict[str, Any] = {
        "hash_cpu_us": lambda: HASHER.block_hashes(request),
        "prepare_us": lambda: router.prepare(request, names),
        "rank_us": lambda: router.rank(prepared, names, limit=1)[0],
        "group_us": lambda: strategy._group("qwen"),
        "cooldowns_us": lambda: asyncio.run(strategy._cooling(group)),  # the plugin's read
        "empty_run_us": lambda: asyncio.run(asyncio.sleep(0)),
    }
    out = {}
    for name, step in steps.items():
        spent = []
        for _ in range(rounds):
            start = time.thread_time()
            step()
            spent.append(time.thread_time() - start)
        out[name] = statistics.median(spent) * 1e6
    out["cooldowns_us"] -= out.pop("empty_run_us")  # asyncio.run's own cost, not the read's
    return out


def steps_ratio(r: dict[str, Any]) -> float:
    """The plugin's steps (rendering aside, hand-off aside) over hashing, in CPU time."""
    steps = r["prepare_us"] + r["rank_us"] + r["group_us"] + r["cooldowns_us"]
    return float(steps / r["hash_cpu_us"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--redis-url", help="also time the Redis index (a scratch server)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--filler", type=int, default=2000, help="random blocks per replica")
    parser.add_argument("--out", default="benchmarks/GATEWAYS.md")
    args = parser.parse_args()
    rows = []
    for redis_url in (None, args.redis_url) if args.redis_url else (None,):
        for replicas in (8, 64):
            for tokens in (1024, 8192, 32768):
                r = row(tokens, replicas, args.filler, redis_url, args.rounds)
                print(f"{r['index']:6} {replicas:3} replicas {tokens:6} tokens: hash "
                      f"{r['hash_us']:8.0f} us, plugin {r['plugin_us']:8.0f} us, "
                      f"ratio {r['ratio']:.2f} (CPU {r['cpu_ratio']:.2f})", file=sys.stderr)
                rows.append(r)
    table = ["| index | replicas | tokens | hash (µs) | plugin, rendering aside (µs) | ratio "
             "| ratio, loop thread's CPU time | thread hand-off (µs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    table += [f"| {r['index']} | {r['replicas']} | {r['tokens']} | {r['hash_us']:.0f} | "
              f"{r['plugin_us']:.0f} | {r['ratio']:.2f} | {r['cpu_ratio']:.2f} | "
              f"{r['hop_us']:.0f} |" for r in rows]
    table += ["", "| replicas | tokens | hash | Router.prepare (hash + event-form keys) | "
              "Router.rank, top 1 | LiteLLM group lookup | LiteLLM cooldown read | "
              "steps / hash |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    table += [f"| {r['replicas']} | {r['tokens']} | {r['hash_cpu_us']:.0f} | "
              f"{r['prepare_us']:.0f} | {r['rank_us']:.0f} | {r['group_us']:.0f} | "
              f"{r['cooldowns_us']:.0f} | {steps_ratio(r):.2f} |"
              for r in rows if "prepare_us" in r]
    print("\n".join(table))
    env = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
           f"{platform.python_version()}, litellm {version('litellm')}, "
           f"{args.rounds} rounds, {args.filler} filler blocks per replica; "
           f"`python benchmarks/bench_gateways.py{' --redis-url URL' if args.redis_url else ''}`")
    Path(args.out + ".table").write_text("\n".join(table) + "\n\n" + env + "\n")


if __name__ == "__main__":
    main()
