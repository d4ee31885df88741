"""RedisPrefixIndex on a real loopback Redis Cluster (3 masters started by the test).

A namespace's keys share one hash tag, so each namespace lives in one slot and
every operation stays one call; namespaces spread over the masters. The
ranking must match an in-memory index fed the same batches.
"""

from __future__ import annotations

from redis_servers import redis_cluster, redis_module

from prefixkey import Hasher
from prefixkey.events import BlockRemoved, BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, RedisPrefixIndex, ReplicaScheme, Router

H16 = Hasher(block_size=16, python_hash_seed="0")


def test_namespaces_on_a_loopback_cluster() -> None:
    redis = redis_module()
    with redis_cluster() as servers:
        client = redis.cluster.RedisCluster(host="127.0.0.1", port=servers[0].port)
        tokens = list(range(16 * 9 + 5))
        fine = tuple(H16.block_hashes(tokens))
        namespaces = ["model-a", "model-b", "model-c", "model-d"]
        slots = {client.keyslot(f"{{{ns}}}:epoch") for ns in namespaces}
        nodes = {client.get_node_from_key(f"{{{ns}}}:epoch").port for ns in namespaces}
        assert len(slots) == len(namespaces) and len(nodes) > 1  # really spread
        for n, ns in enumerate(namespaces):
            shared, memory = RedisPrefixIndex(client, namespace=ns), PrefixIndex()
            for index in (shared, memory):
                index.register("a", ReplicaScheme(H16, publishes="bytes"))
                index.register("b", ReplicaScheme(H16))
                index.apply("a", EventBatch(1.0, (BlockStored(fine[: 2 + n], None, (), 16),
                                                  BlockRemoved(fine[1 + n: 2 + n]))))
                index.apply("b", EventBatch(2.0, (BlockStored(fine[:3], None, (), 16,
                                                              medium="CPU"),)))
            assert Router(shared).route(tokens) == Router(memory).route(tokens)
            assert shared.stats() == memory.stats()
            assert shared.sweep() == 0
        client.close()
