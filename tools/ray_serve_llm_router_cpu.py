"""Ray Serve LLM's LLMServer routed by PrefixKeyRouter, on CPU, with real KV events.

Maintainer tool (not part of the installed package; needs GBs, never in CI)::

    PYTHONPATH=. /work/venvs/gw25-rayllm/bin/python tools/ray_serve_llm_router_cpu.py [REPLICAS]

The same environment and tiny random-weight model as
``tools/ray_serve_llm_cpu.py``; here ``build_openai_app`` serves an
``LLMConfig`` configured as docs/ray.md tells users: ``server_cls`` a
subclass of ``LLMServer`` that gives each replica its own KV-event publisher
(``serve_replica_kv_events``) and advertises it from ``record_routing_stats``,
and ``deployment_config["request_router_config"]`` a ``RequestRouterConfig``
naming ``PrefixKeyRouter`` (it renders the OpenAI bodies as vLLM 0.29 does).
Two multi-turn conversations are sent over HTTP. It checks (a) the calls went
through PrefixKeyRouter (its counters, read in the ingress process, the one
holding the LLMServer handle), (b) a subscriber of the tool's own, on every
replica's events, holds the keys prefixkey computes for each turn, and (c)
each conversation's later turns landed on the replica holding its earlier
turns. Prints the outcome; exits non-zero when a check fails.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ray import serve
from ray.serve.config import RequestRouterConfig
from ray.serve.llm import LLMConfig, LLMServer, build_openai_app
from ray.serve.llm.ingress import OpenAiIngress

from prefixkey.fleet import (
    PrefixIndex,
    ReplicaEndpoint,
    Subscriber,
    UnknownReplicaError,
)
from prefixkey.gateways.ray import PrefixKeyRouter, router_stats, serve_replica_kv_events

ROOT = str(Path(__file__).resolve().parent.parent)
sys.path.insert(0, f"{ROOT}/tests/gateways")
from cpu_model import BLOCK, MODEL, RELEASE, ExpectedKeys, cpu_model  # noqa: E402

HTTP, PUB_BASE, REPLAY_OFFSET = 18778, 18780, 10  # PUB 18780+rank, replay 18790+rank
ENV = {"PYTHONHASHSEED": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
       "VLLM_CPU_OMP_THREADS_BIND": "nobind", "PYTHONPATH": ROOT}


class KVEventsLLMServer(LLMServer):
    """docs/ray.md's ``server_cls``: its own publisher per replica, advertised to routers."""

    async def __init__(  # type: ignore[misc]  # Serve awaits async constructors
            self, llm_config: Any, **kwargs: Any) -> None:
        self._kv = serve_replica_kv_events(port_base=PUB_BASE, replay_offset=REPLAY_OFFSET)
        llm_config.update_engine_kwargs(kv_events_config=self._kv.kv_events_config)
        await super().__init__(llm_config, **kwargs)

    async def record_routing_stats(self) -> dict[str, Any]:
        stats = dict(await super().record_routing_stats())
        stats.update(self._kv.routing_stats)
        return stats


class StatsIngress(OpenAiIngress):
    """Ray's ingress, plus a handle method returning this process's routers' stats."""

    async def prefixkey_stats(self) -> list[dict[str, Any]]:
        return router_stats()


def post(body: dict[str, Any]) -> str:
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{HTTP}/v1/chat/completions",
                                     method="POST", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as reply:
        answer: dict[str, Any] = json.load(reply)
    return str(answer["choices"][0]["message"]["content"] or "")


def ingress_stats() -> list[dict[str, Any]]:
    handle: Any = serve.get_app_handle("default")
    stats: list[dict[str, Any]] = handle.prefixkey_stats.remote().result(timeout_s=60)
    return stats


def holders(index: PrefixIndex, keys: set[int | bytes], names: list[str],
            lock: Any) -> tuple[str, ...]:
    """The replicas whose tables hold every key, waiting a while for the first one's events."""
    for _ in range(150):
        found = []
        with lock:
            for name in names:
                try:
                    if keys <= set(index.table(name)):
                        found.append(name)
                except UnknownReplicaError:  # no events from it yet
                    pass
        if found:
            return tuple(found)
        time.sleep(0.1)
    return ()


def main(replicas: int) -> int:
    import ray

    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    # Logical CPUs: per replica the LLMServer actor and its engine's bundle; the ingress.
    ray.init(num_cpus=2 * replicas + 2, include_dashboard=False, logging_level=logging.WARNING,
             object_store_memory=80 * 1024 * 1024, runtime_env={"env_vars": ENV})
    serve.start(http_options={"host": "127.0.0.1", "port": HTTP})
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        config_cls: Any = RequestRouterConfig  # pydantic: typed as taking dicts
        router = config_cls(
            request_router_class=PrefixKeyRouter, request_routing_stats_period_s=2.0,
            request_router_kwargs={"vllm_version": RELEASE, "render": {
                "model": str(MODEL), "served_model_name": ["tiny"], "vllm_version": RELEASE}})
        config = LLMConfig(
            model_loading_config={"model_id": "tiny", "model_source": cpu_model(Path(folder))},
            server_cls=KVEventsLLMServer,
            deployment_config={"num_replicas": replicas, "request_router_config": router},
            engine_kwargs={
                "load_format": "dummy", "dtype": "float32", "block_size": BLOCK,
                "max_model_len": 1024, "max_num_seqs": 4, "enable_prefix_caching": True,
                "prefix_caching_hash_algo": "sha256"},
            placement_group_config={"bundles": [{"CPU": 1}]},  # no GPU bundle
            runtime_env={"env_vars": ENV})
        started = time.monotonic()
        serve.run(build_openai_app({"llm_configs": [config],
                                    "ingress_cls_config": {"ingress_cls": StatsIngress}}),
                  blocking=False)
        print(f"{replicas} replica(s) run after {time.monotonic() - started:.0f} s", flush=True)
        # Ray builds the ingress's router at its first call to the LLMServer: one call
        # makes it, then it subscribes to the publishers the replicas advertise.
        post({"model": "tiny", "max_tokens": 1,
              "messages": [{"role": "user", "content": "warm up " * 40}]})
        for _ in range(60):  # the controller polls the routing stats every 2 s
            stats = ingress_stats()
            if stats and len(stats[0]["feeds"]) == replicas:
                break
            time.sleep(1)
        before = stats[0]["counters"] if stats else {}
        print("router feeds:", sorted(stats[0]["feeds"]) if stats else "no router", flush=True)
        expected = ExpectedKeys()
        names = [f"rank{r}" for r in range(replicas)]
        endpoints = [ReplicaEndpoint(n, f"tcp://127.0.0.1:{PUB_BASE + r}", RELEASE,
                                     replay_endpoint=f"tcp://127.0.0.1:"
                                                     f"{PUB_BASE + REPLAY_OFFSET + r}",
                                     scheme=expected.scheme) for r, n in enumerate(names)]
        index = PrefixIndex()
        topics = ("parcels", "weather")
        talks: dict[str, list[dict[str, Any]]] = {
            t: [{"role": "system", "content": f"You answer questions about {t}. " * 16}]
            for t in topics}
        landed: dict[str, list[tuple[str, ...]]] = {t: [] for t in topics}
        with Subscriber(endpoints, index=index) as sub:
            for turn in range(3):
                for t in topics:
                    talks[t].append({"role": "user", "content": f"Question {turn} on {t}?"})
                    body = {"model": "tiny", "max_tokens": 4, "messages": talks[t]}
                    keys = expected.of(body)
                    talks[t].append({"role": "assistant", "content": post(body) or "ok"})
                    landed[t].append(holders(index, keys, names, sub.lock))
                    print(f"{t} turn {turn}: {len(keys)} blocks, held by {landed[t][-1]}",
                          flush=True)
        final = ingress_stats()
        shown = ("counters", "entries", "last_hit_tokens")
        print("router stats:", json.dumps([{k: s[k] for k in shown} for s in final]), flush=True)
        counters = {k: v - before.get(k, 0)
                    for k, v in (final[0]["counters"] if final else {}).items()}
        calls = 3 * len(topics)
        if counters.get("routed", 0) < calls:  # (a)
            ok = False
            print(f"FAIL: PrefixKeyRouter ranked {counters.get('routed', 0)} of {calls} calls")
        if not all(h for hs in landed.values() for h in hs):  # (b)
            ok = False
            print("FAIL: a turn's keys are held by no replica's events")
        if any(len(set(hs)) != 1 or len(hs[0]) != 1 for hs in landed.values()):  # (c)
            ok = False
            print("FAIL: a conversation moved between replicas, or is held by several")
        if counters.get("hits", 0) < calls - len(topics):  # (c), as the router saw it
            ok = False
            print(f"FAIL: {counters.get('hits', 0)} hits, {calls - len(topics)} later turns")
        print("all checks pass" if ok else "SOME CHECKS FAIL", flush=True)
    shutdown: Any = serve.shutdown  # untyped in Ray 2.60 (and Any where ray is absent)
    shutdown()
    ray.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2))
