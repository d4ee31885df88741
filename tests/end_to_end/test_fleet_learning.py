"""Replicas configured without a scheme or a release: learned from their events, then routed.

The fake replicas publish BlockStored events whose keys are vLLM's own (golden
vectors harvested from the 0.31.0 wheel, tests/vectors/0.31.0.jsonl), encoded
with :func:`prefixkey.events.encode_batch`. The LoRA poller reads a fake
``/v1/models`` shaped as vLLM 0.31's ``OpenAIServingModels.show_available_models``
answers (adapter cards: ``id`` = lora_name, ``root`` = lora_path, ``parent`` =
the base model).
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_http import JsonServer  # noqa: E402
from fake_publisher import FakePublisher  # noqa: E402
from subscribers import AnySubscriber  # noqa: E402
from test_subscriber import TIMEOUT, hello  # noqa: E402

from prefixkey import LoRA, Request  # noqa: E402
from prefixkey.events import BlockStored, EventBatch, encode_batch  # noqa: E402
from prefixkey.fleet import (  # noqa: E402
    AmbiguousSchemeWarning,
    LoRAPathChangedWarning,
    LoRAPaths,
    LoRAPollError,
    PrefixIndex,
    ReplicaEndpoint,
    ReplicaScheme,
    Router,
    fetch_lora_paths,
)

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "0.31.0.jsonl"


def vllm_vector(algo: str, block_size: int, skip: int = 0) -> dict[str, Any]:
    """A text-only 0.31.0 vector with two full blocks or more, ids a batch can carry."""
    found = 0
    for line in VECTORS.read_text().splitlines():
        row: dict[str, Any] = json.loads(line)
        case = row["case"]
        if (case["hash_algo"] == algo and case["block_size"] == block_size
                and case["lora"] is None and not case["mm_items"] and case["cache_salt"] is None
                and case["prompt_embeds"] is None and case["lookahead"] == 0
                and len(row["result"]["block_hashes"]) >= 2
                and all(0 <= t < 2**63 for t in case["token_ids"])):  # msgpack ints
            if found == skip:
                return row
            found += 1
    raise AssertionError(f"no {algo} block size {block_size} vector in {VECTORS}")


def stored_event(row: dict[str, Any]) -> tuple[BlockStored, list[int]]:
    """vLLM's BlockStored for the vector's full blocks (int64 keys, the default form)."""
    keys = tuple(row["result"]["block_hashes_int64"])
    size = row["case"]["block_size"]
    tokens = list(row["case"]["token_ids"][: len(keys) * size])
    return BlockStored(keys, None, tuple(tokens), size, medium="GPU", group_idx=0), tokens


def test_replicas_without_scheme_are_learned_and_routed(
    ctx: Any, make: Callable[..., AnySubscriber]
) -> None:
    rows = {"a": vllm_vector("sha256", 16), "b": vllm_vector("xxhash_cbor", 4)}
    events = {n: stored_event(r) for n, r in rows.items()}
    pubs = {n: FakePublisher(ctx, "0.31.0") for n in rows}
    index = PrefixIndex()
    # No scheme, no release: the wire era and the key scheme come from the events.
    replicas = [ReplicaEndpoint(n, p.endpoint, vllm_version=None) for n, p in pubs.items()]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with make(replicas, index=index, context=ctx) as sub:
                hello(sub, [(p, n, p.publish(encode_batch(EventBatch(1.0, (events[n][0],)),
                                                          "0.31.0"), send=False))
                            for n, p in pubs.items()])
                stats = sub.stats()["replicas"]
                assert stats["a"]["scheme"] == stats["b"]["scheme"] == "learned"
                with sub.lock:
                    schemes = {rid.name: s for rid, s in index.replicas().items()}
                    router = Router(index)
                    for name, (_, tokens) in events.items():
                        # One token more: vLLM never hits a prompt's last token.
                        top = router.route(Request([*tokens, 7]))[0]
                        assert top.replica.name == name
                        assert top.hit_tokens == len(tokens)
    finally:
        for p in pubs.values():
            p.close()
    assert schemes["a"].hasher.algorithm.name == "sha256"
    assert schemes["b"].hasher.algorithm.name == "xxhash_cbor"
    assert (schemes["a"].hasher.block_size, schemes["b"].hasher.block_size) == (16, 4)
    assert schemes["a"].publishes == "int"
    # The learned hasher reproduces vLLM's keys for the whole vector, not just the events.
    for name, row in rows.items():
        keys = schemes[name].hasher.block_hashes(row["case"]["token_ids"])
        hexes = [k.hex() if isinstance(k, bytes) else k for k in keys]
        assert hexes == row["result"]["block_hashes"]
    # Token-only keys fit several release families: said, with a typed warning.
    assert any(isinstance(w.message, AmbiguousSchemeWarning) for w in caught)


def test_a_configured_scheme_always_wins(ctx: Any, make: Callable[..., AnySubscriber]) -> None:
    from prefixkey import Hasher

    row = vllm_vector("sha256", 16)
    event, tokens = stored_event(row)
    # Configured wrongly on purpose (seed unset): the subscriber must not overrule it.
    scheme = ReplicaScheme(Hasher(block_size=16, hash_algo="sha256", vllm_version="0.31.0"))
    pub = FakePublisher(ctx, "0.31.0")
    index = PrefixIndex()
    try:
        with make([ReplicaEndpoint("a", pub.endpoint, "0.31.0", scheme=scheme)], index=index,
                  context=ctx) as sub:
            hello(sub, [(pub, "a", pub.publish(encode_batch(EventBatch(1.0, (event,)), "0.31.0"),
                                               send=False))])
            assert sub.stats()["replicas"]["a"]["scheme"] == "configured"
            with sub.lock:
                assert index.replicas() == {("a", 0): scheme}
                assert Router(index).route(Request([*tokens, 7]))[0].hit_tokens == 0
    finally:
        pub.close()


def test_a_restarted_replica_is_learned_again(
    ctx: Any, make: Callable[..., AnySubscriber]
) -> None:
    before, after = vllm_vector("sha256", 16), vllm_vector("xxhash_cbor", 4)
    (old_event, old_tokens), (new_event, new_tokens) = stored_event(before), stored_event(after)
    pub = FakePublisher(ctx, "0.31.0")
    index = PrefixIndex()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AmbiguousSchemeWarning)
            with make([ReplicaEndpoint("a", pub.endpoint, vllm_version=None)], index=index,
                      context=ctx) as sub:
                hello(sub, [(pub, "a", pub.publish(encode_batch(EventBatch(1.0, (old_event,)),
                                                                "0.31.0"), send=False))])
                with sub.lock:
                    assert index.scheme("a").hasher.algorithm.name == "sha256"
                # The replica restarts with another hash algorithm and block size.
                pub.close()
                pub = FakePublisher(ctx, "0.31.0", port=pub.port)
                hello(sub, [(pub, "a", pub.publish(encode_batch(EventBatch(2.0, (new_event,)),
                                                                "0.31.0"), send=False))],
                      key="restarts")
                assert sub.wait_until(lambda s: s["replicas"]["a"]["batches"] == 2, TIMEOUT)
                assert sub.stats()["replicas"]["a"]["scheme"] == "learned"
                with sub.lock:
                    scheme = index.scheme("a")
                    router = Router(index)
                    new_hit = router.route(Request([*new_tokens, 7]))[0].hit_tokens
                    old_hit = router.route(Request([*old_tokens, 7]))[0].hit_tokens
    finally:
        pub.close()
    assert (scheme.hasher.algorithm.name, scheme.hasher.block_size) == ("xxhash_cbor", 4)
    assert (new_hit, old_hit) == (len(new_tokens), 0)


def test_a_late_join_is_replayed_with_the_inferred_era(
    ctx: Any, make: Callable[..., AnySubscriber]
) -> None:
    rows = [vllm_vector("sha256", 16, skip=i) for i in range(3)]
    pub = FakePublisher(ctx, "0.31.0", replay=True)
    for i, row in enumerate(rows):  # published before anyone subscribed
        pub.publish(encode_batch(EventBatch(float(i), (stored_event(row)[0],)), "0.31.0"),
                    send=False)
    index = PrefixIndex()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AmbiguousSchemeWarning)
            with make([ReplicaEndpoint("a", pub.endpoint, vllm_version=None,
                                       replay_endpoint=pub.replay_endpoint)],
                      index=index, context=ctx) as sub:
                hello(sub, [(pub, "a", pub.publish(encode_batch(EventBatch(3.0, ()), "0.31.0"),
                                                   send=False))])
                assert sub.wait_until(lambda s: s["replicas"]["a"]["batches"] == 4, TIMEOUT)
                a = sub.stats()["replicas"]["a"]
    finally:
        pub.close()
    assert (a["late_joins"], a["replayed_batches"], a["framing_errors"]) == (1, 3, 0)
    assert a["scheme"] == "learned"
    assert a["index_size"] == sum(len(r["result"]["block_hashes"]) for r in rows)


# ----------------------------------------------------------------------------- LoRA paths


class _Models:
    """A fake vLLM /v1/models: the base model card, then one card per adapter."""

    def __init__(self) -> None:
        self.adapters: dict[str, str] = {}
        self.status = 200

    def answer(self, path: str) -> tuple[int, Any]:
        if path != "/v1/models":
            return 404, {}
        cards = [{"id": "base", "object": "model", "root": "/models/base", "parent": None}]
        cards += [{"id": n, "object": "model", "root": p, "parent": "base"}
                  for n, p in self.adapters.items()]
        return self.status, {"object": "list", "data": cards}


@pytest.fixture
def models() -> Iterator[tuple[_Models, str]]:
    state = _Models()
    server = JsonServer(None, (0,), answer_get=state.answer)
    yield state, server.url
    server.close()


def test_lora_paths_follow_v1_models_and_warn_on_repoint(models: tuple[_Models, str]) -> None:
    state, url = models
    state.adapters = {"sql": "/adapters/sql-v1", "chat": "/adapters/chat"}
    assert fetch_lora_paths(url) == state.adapters  # the base model is no adapter
    paths = LoRAPaths(url, timeout=TIMEOUT)
    paths.poll()
    assert paths.lora("sql") == LoRA("sql", "/adapters/sql-v1")
    assert paths.lora("missing") is None
    state.adapters["sql"] = "/adapters/sql-v2"  # /v1/load_lora_adapter with load_inplace
    with pytest.warns(LoRAPathChangedWarning, match="sql-v2"):
        paths.poll()
    assert paths.lora("sql") == LoRA("sql", "/adapters/sql-v2") and paths.changes == 1
    state.status = 500
    assert paths.poll() == state.adapters  # a failed poll keeps the last paths
    assert paths.failures == 1


def test_lora_poll_errors_are_typed(models: tuple[_Models, str]) -> None:
    state, url = models
    state.status = 503
    with pytest.raises(LoRAPollError) as info:
        fetch_lora_paths(url)
    assert info.value.field == "status"
    with pytest.raises(LoRAPollError):
        fetch_lora_paths("ftp://127.0.0.1")
    started = time.monotonic()
    with pytest.raises(LoRAPollError):
        fetch_lora_paths("http://127.0.0.1:1", timeout=0.5)  # nothing listens on port 1
    assert time.monotonic() - started < TIMEOUT
