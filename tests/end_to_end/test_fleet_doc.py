"""The live snippets of docs/fleet.md and docs/subscriber.md run, and the Redis round trips.

A snippet needing a service has a first line ``# given: a, b`` naming what this test
provides (test_doc_snippets.py runs the others): replicas at a loopback publisher
(this suite's fake, publishing empty batches, which register the replica), a Redis
URL (the shared test server's database), a replica's base URL (a loopback HTTP server
answering ``/v1/models``), token ids. A ``...`` line (the reader's own code) waits for the
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

from fake_http import JsonServer
from fake_publisher import FakePublisher
from redis_servers import REDIS_URL, redis_module, shared_client
from test_subscriber import (
    TIMEOUT,
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

DOCS = Path(__file__).resolve().parents[2] / "docs"
SCHEME = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0", vllm_version="0.31.0"))


def _snippets(page: str) -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


LIVE = [(page, number) for page in ("fleet.md", "subscriber.md")
        for number, snippet in enumerate(_snippets(page)) if snippet.startswith("# given: ")]


def test_the_live_snippets_are_found() -> None:
    assert [n for p, n in LIVE if p == "fleet.md"] == [0, 1, 2, 4, 5]
    assert [n for p, n in LIVE if p == "subscriber.md"] == [1, 2, 3]


@pytest.fixture
def base_url() -> Iterator[str]:
    """A replica's OpenAI server: ``/v1/models`` lists the base model and one adapter."""
    cards = [{"id": "base", "object": "model", "root": "/models/base", "parent": None},
             {"id": "sql-adapter", "object": "model", "root": "/adapters/sql", "parent": "base"}]
    server = JsonServer(None, (0,), answer_get=lambda path: (
        (200, {"object": "list", "data": cards}) if path == "/v1/models" else (404, {})))
    yield server.url
    server.close()


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


@pytest.mark.parametrize(("page", "number"), LIVE, ids=[f"{p}:{n}" for p, n in LIVE])
def test_the_snippet_runs(page: str, number: int, ctx: Any,
                          stop: threading.Event, publishers: list[FakePublisher],  # noqa: F811
                          request: pytest.FixtureRequest) -> None:
    import asyncio

    snippet = _snippets(page)[number]
    given = [g.strip() for g in snippet.splitlines()[0][9:].split("(")[0].split(",")]
    names: dict[str, Any] = {"request": Request(list(range(100))),
                             "token_ids": list(range(100))}
    if "base_url" in given:
        names["base_url"] = request.getfixturevalue("base_url")
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
    exec(compile(_waits(snippet), f"{DOCS / page}:snippet{number}", "exec"), namespace)
    for value in namespace.values():
        if isinstance(value, RouteDecision):
            assert value.evidence in ("confirmed", "predicted", "none")
    if "base_url" in given:
        assert namespace["request"].lora.path == "/adapters/sql"


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
    # A fixed load: without one the Router counts its own sends, and the second ranking
    # would rightly prefer an idle replica.
    def idle(_: Any) -> float:
        return 0.0

    for router, evidence in ((Router(shared, load=idle), "confirmed"),
                             (Router(wrapped, load=idle), "predicted")):
        prepared = router.prepare(request)
        top = router.rank(prepared)[0]  # warms the registry copy and the scripts
        wrapped.sent(prepared, top)
        sent[0] = 0
        top = router.rank(prepared)[0]
        assert sent[0] == 1, f"{sent[0]} round trips over {type(router.index).__name__}"
        assert (top.replica.name, top.evidence) == ("a", evidence)
