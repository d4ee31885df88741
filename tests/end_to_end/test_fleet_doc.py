"""docs/fleet.md: every python snippet runs as written, and the Redis round trips it quotes.

Each snippet's first line, ``# given: a, b``, names what this test provides:
a scheme, a request, replicas at a loopback publisher (this suite's fake,
publishing empty batches, which register the replica), a Redis URL (the shared
test server's database). A ``...`` line (the reader's own code) waits for the
replica to be registered (or a moment, where its scheme is to be learned). The round
trips are counted at the client, on redis-py's ``send_packed_command`` (a
pipeline is one).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from redis_servers import REDIS_URL, redis_module, shared_client
from test_subscriber import (
    TIMEOUT,
    FakePublisher,
    ctx,  # noqa: F401 (a fixture)
    encode_batch,
    publishers,  # noqa: F401 (a fixture)
)

from prefixkey import Hasher, Request
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import (
    PredictedIndex,
    RedisPrefixIndex,
    ReplicaEndpoint,
    ReplicaScheme,
    RouteDecision,
    Router,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "fleet.md"
SCHEME = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0", vllm_version="0.31.0"))


def _snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_every_snippet_names_what_it_is_given() -> None:
    snippets = _snippets()
    assert len(snippets) == 6
    assert all(s.startswith("# given: ") for s in snippets)


@pytest.fixture
def stop() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()


def _publish(pub: FakePublisher, stop: threading.Event) -> None:
    while not stop.is_set():
        pub.publish(encode_batch("0.31.0", time.time(), []))
        stop.wait(0.02)


def _waits(snippet: str) -> str:
    """Each ``...`` line becomes a wait for the snippet's index to register gpu-a."""
    def wait(match: re.Match[str]) -> str:
        pad = match.group(1)
        if "async def" in snippet:
            return f"{pad}await __asyncio__.sleep(0.5)"
        if "vllm_version=None" in snippet:  # learning: empty batches register nothing
            return f"{pad}__asyncio__.run(__asyncio__.sleep(0.3))"
        return f"{pad}__registered__(index)"
    return re.sub(r"^( *)\.\.\.(?:  +#.*)?$", wait, snippet, flags=re.MULTILINE)


def _registered(index: Any) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not any(r.name == "gpu-a" for r in index.replicas()):
        assert time.monotonic() < deadline, "gpu-a was never registered"
        time.sleep(0.02)


@pytest.mark.parametrize("number", range(6))
def test_the_snippet_runs(number: int, ctx: Any, stop: threading.Event,  # noqa: F811
                          publishers: list[FakePublisher]) -> None:  # noqa: F811
    import asyncio

    snippet = _snippets()[number]
    given = [g.split("(")[0].strip() for g in snippet.splitlines()[0][9:].split(", ")]
    names: dict[str, Any] = {"scheme": SCHEME, "request": Request(list(range(100))),
                             "token_ids": list(range(100))}
    if {"replicas", "publishing_replicas", "endpoint"} & set(given):
        pub = FakePublisher(ctx, "0.31.0")
        publishers.append(pub)
        threading.Thread(target=_publish, args=(pub, stop), daemon=True).start()
        replicas = [ReplicaEndpoint("gpu-a", pub.endpoint, "0.31.0", scheme=SCHEME)]
        names.update(replicas=replicas, publishing_replicas=replicas, endpoint=pub.endpoint)
    if "redis_url" in given:
        shared_client()  # flushed; skips (fails under CI) without a server
        names["redis_url"] = REDIS_URL
    missing = [g for g in given if g not in names]
    assert not missing, f"snippet {number} is given unknown names {missing}"
    namespace = {k: names[k] for k in given}
    namespace.update(__registered__=_registered, __asyncio__=asyncio)
    exec(compile(_waits(snippet), f"{DOC}:snippet{number}", "exec"), namespace)
    for value in namespace.values():
        if isinstance(value, RouteDecision):
            assert value.evidence in ("confirmed", "predicted", "none")


def test_ranking_over_redis_is_one_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    redis = redis_module()
    client = shared_client()
    sent = [0]
    send = redis.connection.Connection.send_packed_command

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        sent[0] += 1
        return send(self, *args, **kwargs)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", counting)
    shared = RedisPrefixIndex(client, namespace="doc", registry_max_age=3600.0)
    wrapped = PredictedIndex(shared)
    for name in ("a", "b", "c"):
        wrapped.register(name, SCHEME)
    request = Request(list(range(8192)))
    keys = tuple(map(SCHEME.publish, SCHEME.hasher.block_hashes(request)))
    wrapped.apply("a", EventBatch(1.0, (BlockStored(keys[:100], None, (), 16, medium="GPU"),)))
    for router, evidence in ((Router(shared), "confirmed"), (Router(wrapped), "predicted")):
        prepared = router.prepare(request)
        top = router.rank(prepared)[0]  # warms the registry copy and the scripts
        wrapped.sent(prepared, top)
        sent[0] = 0
        top = router.rank(prepared)[0]
        assert sent[0] == 1, f"{sent[0]} round trips over {type(router.index).__name__}"
        assert (top.replica.name, top.evidence) == ("a", evidence)
