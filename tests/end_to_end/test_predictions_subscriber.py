"""A mixed fleet over real ZMQ on loopback: events replace predictions where a replica publishes.

One replica publishes KV events through the Subscriber; the other publishes
nothing and is routed on the requests sent to it. The publisher is the
subscriber suite's vLLM-like fake (tests/end_to_end/test_subscriber.py).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_publisher import FakePublisher
from test_subscriber import (
    encode_batch,
    hello,
    publishers,  # noqa: F401 (a fixture)
    wait,
)

from prefixkey import Hasher, Request
from prefixkey.events import AllBlocksCleared, BlockRemoved, BlockStored
from prefixkey.fleet import (
    PredictedIndex,
    PrefixIndex,
    ReplicaEndpoint,
    ReplicaScheme,
    Router,
    Subscriber,
)

BLOCK = 16
VERSION = "0.31.0"
SCHEME = ReplicaScheme(Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version=VERSION))


def test_events_replace_the_predictions_of_a_publishing_replica(
        ctx: Any, publishers: list[FakePublisher]) -> None:  # noqa: F811
    pub = FakePublisher(ctx, VERSION)
    publishers.append(pub)
    index = PredictedIndex(PrefixIndex())
    index.register("quiet", SCHEME)  # publishes nothing
    router = Router(index, load=lambda r: 0.0)  # equally idle: no count of its own sends
    chat = Request(list(range(1000, 1000 + 4 * BLOCK + 1)))
    other = Request(list(range(5000, 5000 + 4 * BLOCK + 1)))
    keys = tuple(map(SCHEME.publish, SCHEME.hasher.block_hashes(chat)))
    endpoint = ReplicaEndpoint("gpu-a", pub.endpoint, VERSION, scheme=SCHEME)

    def frames(*events: Any) -> list[bytes]:
        return pub.publish(encode_batch(VERSION, time.time(), events), send=False)

    def top(request: Request) -> tuple[str, int, str]:
        with sub.lock:
            best = router.route(request)[0]
        return best.replica.name, best.hit_tokens, best.evidence

    with Subscriber([endpoint], index=index, context=ctx) as sub:
        hello(sub, [(pub, "gpu-a", frames())])  # registers gpu-a: an empty batch
        with sub.lock:
            assert index.predictions.is_confirmed("gpu-a")
            prepared = router.prepare(chat)
            gpu_a = next(d for d in router.rank(prepared) if d.replica.name == "gpu-a")
            index.sent(prepared, gpu_a)
            index.sent(router.prepare(other), next(
                d for d in router.route(other) if d.replica.name == "quiet"))
        assert top(chat) == ("gpu-a", 4 * BLOCK, "predicted")

        # vLLM caches the first two blocks: they are confirmed, the tail is still predicted.
        pub.send(frames(BlockStored(keys[:2], None, (), BLOCK, medium="GPU")))
        wait(sub, lambda s: s["replicas"]["gpu-a"]["batches"] == 2, "the first store")
        assert top(chat) == ("gpu-a", 4 * BLOCK, "predicted")
        pub.send(frames(BlockStored(keys[2:], keys[1], (), BLOCK, medium="GPU")))
        wait(sub, lambda s: s["replicas"]["gpu-a"]["batches"] == 3, "the second store")
        assert top(chat) == ("gpu-a", 4 * BLOCK, "confirmed")
        with sub.lock:
            assert index.predictions.replica_size("gpu-a") == 0
            assert index.predictions.stats()["confirmed"] == 4

        # Evicted by vLLM: the events say so, and no prediction props it up.
        pub.send(frames(BlockRemoved(keys[:1], medium="GPU")))
        wait(sub, lambda s: s["replicas"]["gpu-a"]["batches"] == 4, "the removal")
        with sub.lock:
            decisions = {d.replica.name: d for d in router.route(chat)}
        assert decisions["gpu-a"].hit_tokens == 0

        # The quiet replica is routed on what was sent to it, whatever gpu-a publishes.
        pub.send(frames(AllBlocksCleared()))
        wait(sub, lambda s: s["replicas"]["gpu-a"]["batches"] == 5, "the clear")
        assert top(other) == ("quiet", 4 * BLOCK, "predicted")
        assert sub.stats()["totals"]["apply_errors"] == 0
