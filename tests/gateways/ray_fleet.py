"""Fake vLLM replicas as Ray Serve deployments, and the ingress that calls them.

A :class:`FakeVLLM` replica does what a vLLM 0.29 replica under Ray Serve LLM
does as far as a router can tell: it binds its KV-event publisher (PUB and
replay ROUTER) at the ports :func:`serve_replica_kv_events` gives its
node-local rank, advertises them from ``record_routing_stats()``, and for each
prompt it serves publishes ``BlockStored`` for the blocks it did not hold yet,
keyed as vLLM 0.29 keys them (``PYTHONHASHSEED=0``, sha256, block size 16),
encoded by prefixkey's encoder. ``skip_events(n)`` leaves the next ``n``
batches unsent (kept for replay): an event gap. The workers import this module
by name (the test puts tests/gateways and tests on their PYTHONPATH).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import ray
import zmq
from fake_publisher import FakePublisher
from ray import serve
from ray.serve.handle import DeploymentHandle

from prefixkey import Hasher, Request
from prefixkey.events import BlockStored, EventBatch, encode_batch
from prefixkey.fleet import ReplicaScheme
from prefixkey.gateways.ray import router_stats, serve_replica_kv_events

VLLM_VERSION = "0.29.0"
BLOCK = 16
#: Replay ports sit this far above the PUB ports (inside the test's port range).
REPLAY_OFFSET = 10
#: The test's 50 ports start here (a shared machine gives each run its own).
PORT_BASE = int(os.environ.get("PREFIXKEY_RAY_PORT_BASE", "18800"))


class FakeVLLM:
    """One vLLM 0.29 replica, as its KV events and its answers show it (module docs)."""

    def __init__(self, port_base: int) -> None:
        self.name = str(serve.get_replica_context().replica_id.unique_id)
        kv = serve_replica_kv_events(port_base=port_base, replay_offset=REPLAY_OFFSET,
                                     block_size=BLOCK, host="127.0.0.1")
        self.stats = kv.routing_stats
        config = kv.kv_events_config
        # 127.0.0.1 endpoints: the PUB and replay ports are their last field.
        pub, replay = (int(config[k].rsplit(":", 1)[1]) for k in ("endpoint", "replay_endpoint"))
        self.publisher = FakePublisher(zmq.Context(), VLLM_VERSION, replay=True, port=pub,
                                       replay_port=replay)
        self.scheme = ReplicaScheme(Hasher(block_size=BLOCK, python_hash_seed="0",
                                           vllm_version=VLLM_VERSION))
        self.held: set[object] = set()
        self.unsent = 0
        self.served = 0

    def record_routing_stats(self) -> dict[str, Any]:
        return self.stats

    async def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """Serve a completions body whose prompt is token ids: publish the new blocks."""
        tokens = list(body["prompt"])
        keys = [self.scheme.publish(k)
                for k in self.scheme.hasher.block_hashes(Request(tokens))]
        first_new = next((i for i, k in enumerate(keys) if k not in self.held), len(keys))
        if first_new < len(keys):
            new = keys[first_new:]
            self.held.update(new)
            event = BlockStored(tuple(new), keys[first_new - 1] if first_new else None,
                                tuple(tokens[first_new * BLOCK:len(keys) * BLOCK]), BLOCK,
                                medium="GPU", group_idx=0)
            payload = encode_batch(EventBatch(time.time(), (event,), 0), VLLM_VERSION)
            self.publisher.publish(payload, send=self.unsent == 0)
            self.unsent = max(self.unsent - 1, 0)
        self.served += 1
        await asyncio.sleep(0)
        return {"replica": self.name}

    def published(self) -> tuple[str, int]:
        """This replica's name and how many batches it published (sent or not)."""
        return self.name, self.publisher.seq

    def skip_events(self, n: int, name: str) -> str:
        """On replica ``name`` only, leave the next ``n`` batches unsent on PUB (replay
        still has them); every replica answers its name (calls land on any of them)."""
        if self.name == name:
            self.unsent = n
        return self.name

    def actor_name(self) -> tuple[str, str]:
        """This replica's name and its actor's (for ``ray.kill``)."""
        return self.name, str(ray.get_runtime_context().get_actor_name())


class DocReplica(FakeVLLM):
    """The replica docs/ray.md's snippet is run against (its own ports)."""

    PORTS = PORT_BASE + 34

    def __init__(self) -> None:
        super().__init__(self.PORTS)


class Ingress:
    """The application's entry: calls the vLLM deployment through its handle (and router)."""

    def __init__(self, llm: DeploymentHandle[Any]) -> None:
        self.llm = llm

    async def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self.llm.chat.remote(body)
        return result

    def routers(self) -> list[dict[str, Any]]:
        """The PrefixKeyRouters of this process (the handle's), with their feeds."""
        return router_stats()

