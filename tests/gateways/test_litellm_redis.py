"""The LiteLLM plugin over the shared Redis index: a Redis restart costs at most a miss.

While Redis is down every call is still served (routed without keys: the
index does not answer within its timeout); after the restart (an empty
server, no persistence) the replicas' new events fill it again and a
conversation stays on its replica.
"""

from __future__ import annotations

from typing import Any

from fake_vllm import FakeVLLM
from litellm_fleet import (
    replicas,  # noqa: F401 (a fixture)
)
from redis_servers import redis_module, redis_server
from test_litellm import SYSTEM, chat, connected, conversation, make_router, served_by

from prefixkey.fleet import RedisPrefixIndex
from prefixkey.gateways.litellm import install


def test_a_redis_restart_costs_at_most_a_miss(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    redis_module()
    with redis_server() as server:
        index = RedisPrefixIndex.from_url(server.url, timeout=0.3, namespace="litellm")
        router = make_router(replicas)
        with install(router, index=index) as strategy:
            connected(strategy, replicas)
            where = conversation(router, replicas, 3, "parcels", strategy)
            assert where == [where[0]] * 3, where
            server.kill()
            messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": "outage?"}]
            assert chat(router, messages).startswith("served by ")  # served all the same
            assert len(served_by(replicas, messages)) == 1
            assert strategy.counts["index_unavailable"] == 1
            server.restart()
            connected(strategy, replicas)  # the outage's batch applied once Redis is back
            for r in replicas:
                r.received.clear()
            where = conversation(router, replicas, 3, "invoices", strategy)
            assert where == [where[0]] * 3, where
