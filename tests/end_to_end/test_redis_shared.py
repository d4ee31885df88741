"""Two router processes share one Redis index: each ingests its own replicas' events,
both rank every replica, and both decide exactly as one in-memory index fed all events.

Runs against the shared server (``PREFIXKEY_TEST_REDIS_URL``, see tests/redis_servers.py).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from redis_servers import REDIS_URL, shared_client

from prefixkey import Hasher
from prefixkey.events import BlockRemoved, BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, PrefixIndexBackend, ReplicaScheme, Router

HERE = Path(__file__).resolve().parent
H16 = Hasher(block_size=16, python_hash_seed="0")
OLD = Hasher(block_size=16, python_hash_seed="0", vllm_version="0.30.0")
SEED = 7


def schemes(process: int) -> dict[str, ReplicaScheme]:
    """The replicas process ``process`` ingests: mixed releases and publishers."""
    return {f"p{process}r0": ReplicaScheme(H16), f"p{process}r1": ReplicaScheme(OLD),
            f"p{process}r2": ReplicaScheme(H16, publishes="bytes")}


def prompts() -> list[list[int]]:
    rng = random.Random(SEED)
    base = [rng.randrange(50_000) for _ in range(16 * 40)]
    return [base[: 16 * rng.randint(4, 40) + rng.randint(0, 15)] for _ in range(8)]


def feed(index: PrefixIndexBackend, process: int) -> None:
    """Register ``process``'s replicas and apply their (deterministic) batches."""
    rng = random.Random(f"{SEED}-{process}")
    for step in range(40):
        for name, scheme in schemes(process).items():
            if step == 0:
                index.register(name, scheme)
            keys = scheme.group_keys(scheme.hasher.block_hashes(rng.choice(prompts())))[0]
            depth = rng.randint(0, len(keys))
            events: tuple[Any, ...] = (BlockStored(keys[:depth], None, (), 16),)
            if rng.random() < 0.3:
                events += (BlockRemoved(keys[rng.randint(0, depth):depth]),)
            index.apply(name, EventBatch(float(step), events))


def decisions(index: PrefixIndexBackend) -> list[list[list[Any]]]:
    router = Router(index)
    return [[[d.replica.name, d.rank, d.hit_tokens, d.weighted_hit_tokens, d.evidence]
             for d in router.route(p)] for p in prompts()]


CHILD = """
import json, sys, time
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/.."]
import test_redis_shared as t
from prefixkey.fleet import RedisPrefixIndex
index = RedisPrefixIndex.from_url(sys.argv[2], namespace="shared", registry_max_age=0.0)
t.feed(index, int(sys.argv[3]))
client = index._r
client.incr("{shared}:test-barrier")
deadline = time.monotonic() + 60
while int(client.get("{shared}:test-barrier")) < 2:
    assert time.monotonic() < deadline, "the other router never finished"
    time.sleep(0.01)
print(json.dumps(t.decisions(index)))
"""


def test_two_router_processes_share_one_redis() -> None:
    client = shared_client()
    try:
        children = [subprocess.Popen(
            [sys.executable, "-c", CHILD, str(HERE), REDIS_URL, str(process)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONHASHSEED": "0"}) for process in (0, 1)]
        outputs = []
        for child in children:
            out, err = child.communicate(timeout=300)
            assert child.returncode == 0, err[-2000:]
            outputs.append(json.loads(out.splitlines()[-1]))
        memory = PrefixIndex()
        for process in (0, 1):
            feed(memory, process)
        expected = json.loads(json.dumps(decisions(memory)))
        assert any(row[0][2] > 0 for row in expected)  # some prefixes are held
        assert outputs[0] == outputs[1] == expected
    finally:
        client.flushdb()
        client.close()
