"""A small prefix-aware router: three vLLM replicas, a few KV events, four requests.

Run from the repository root:  python examples/router.py

In production the EventBatch values come from each replica's ZMQ KV-event
stream (decoded elsewhere); here they are built in code so the example runs
anywhere. Replica "old" still runs vLLM 0.30.0, so its keys differ from the
0.31.0 replicas' for LoRA requests: the index looks each replica up under
its own release.
"""

from __future__ import annotations

from prefixkey import Hasher, LoRA, Request
from prefixkey.events import BlockRemoved, BlockStored, EventBatch
from prefixkey.fleet import PrefixIndex, ReplicaScheme, Router

BLOCK = 16
new = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.31.0")
old = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.30.0")

# 1. Register the replicas: how each one keys and publishes its blocks.
index = PrefixIndex(max_entries=1_000_000)
index.register("gpu-a", ReplicaScheme(new))  # publishes 64-bit ints (vLLM's default)
index.register("gpu-b", ReplicaScheme(new, publishes="bytes"))  # USE_INT_BLOCK_HASHES=0
index.register("old", ReplicaScheme(old))

system_prompt = list(range(5000, 5000 + 4 * BLOCK))  # four blocks shared by every chat
sql = LoRA("sql", "/adapters/sql", int_id=1)


def stored(replica: str, request: Request) -> BlockStored:
    """The BlockStored a replica publishes after caching ``request``'s full blocks."""
    scheme = index.scheme(replica)  # its Hasher, and ints or bytes
    keys = tuple(map(scheme.publish, scheme.hasher.block_hashes(request)))
    return BlockStored(keys, None, tuple(request.token_ids), BLOCK, medium="GPU")


# 2. Feed events. gpu-a served the system prompt plus a question; gpu-b served
#    a SQL-adapter request; "old" served the same SQL request, then evicted
#    its last block from GPU after offloading it to CPU.
chat = Request([*system_prompt, *range(100, 140)])
sql_request = Request([*system_prompt, *range(200, 232)], lora=sql)
index.apply("gpu-a", EventBatch(1.0, (stored("gpu-a", chat),)))
index.apply("gpu-b", EventBatch(1.0, (stored("gpu-b", sql_request),)))
old_event = stored("old", sql_request)
old_keys = old_event.block_hashes
index.apply("old", EventBatch(1.0, (old_event,)))
index.apply("old", EventBatch(2.0, (
    BlockStored((old_keys[-1],), old_keys[-2], (), BLOCK, medium="CPU"),
    BlockRemoved((old_keys[-1],), medium="GPU"),
)))

# 3. Route by expected time to first token. The load is each replica's queued
#    prefill work in tokens (a gateway counts it: the prefill of each request it
#    sent there that has not had its first token yet); here fixed numbers.
load = {"gpu-a": 20, "gpu-b": 60, "old": 10}
router = Router(index, load=lambda replica: load[replica.name])

requests = {
    "chat follow-up": Request([*system_prompt, *range(100, 140), 7, 8, 9]),
    "new chat, same system prompt": Request([*system_prompt, 42, 43]),
    "SQL adapter": Request([*system_prompt, *range(200, 232), 11], lora=sql),
    "unseen prompt": Request(list(range(900, 950))),
}
for title, request in requests.items():
    prepared = router.prepare(request)  # hashing (once per distinct scheme)...
    decisions = router.rank(prepared)  # ...kept apart from routing
    print(f"{title} ({prepared.num_tokens} tokens, hashed in "
          f"{prepared.hash_seconds * 1e3:.2f} ms):")
    for d in decisions:
        print(f"  {d.rank}. {d.replica!s:6} hit {d.hit_tokens:3} tokens  {d.why}")
print("index:", index.stats())
