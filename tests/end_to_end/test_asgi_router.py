"""The example ASGI router (examples/asgi_router) against fake replicas on loopback.

Each fake replica is an HTTP server on 127.0.0.1 that records the bodies it
receives; the app is driven through the ASGI protocol itself, so what is
asserted is where each request actually arrived.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import Any

import pytest
from fake_http import JsonServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "asgi_router"))

from prefix_router import PrefixRouterApp, from_environ, rendering

from prefixkey import Hasher, Request
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import (
    PredictedIndex,
    PrefixIndex,
    ReplicaScheme,
    Router,
)

BLOCK = 16
SCHEME = ReplicaScheme(Hasher(block_size=BLOCK, python_hash_seed="0"))
PROMPT = list(range(3000, 3000 + 4 * BLOCK + 1))
PORTS = range(18400, 18500)  # this suite's loopback range
MODEL = Path(__file__).resolve().parents[1] / "render" / "models" / "qwen2_rebuilt"


class FakeReplica:
    """An OpenAI-ish endpoint that records each body and answers ``status``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.received: list[dict[str, Any]] = []
        self.authorization: list[str | None] = []
        self.status = 200
        self.server = JsonServer(self._answer, PORTS)
        self.url = f"http://127.0.0.1:{self.server.port}"

    def _answer(self, path: str, headers: Message, body: Any) -> tuple[int, Any]:
        self.received.append({"path": path, **body})
        self.authorization.append(headers.get("authorization"))
        return self.status, {"served_by": self.name}

    def prompts(self) -> list[list[int]]:
        return [r["prompt"] for r in self.received]


@pytest.fixture
def fleet() -> Iterator[tuple[PrefixRouterApp, dict[str, FakeReplica]]]:
    replicas = {name: FakeReplica(name) for name in ("r0", "r1", "r2")}
    index = PredictedIndex(PrefixIndex())
    for name in replicas:
        index.register(name, SCHEME)
    router = Router(index)
    app = PrefixRouterApp(router, index, {n: r.url for n, r in replicas.items()}, timeout=10)
    yield app, replicas
    for r in replicas.values():
        r.server.close()


def call(app: Any, path: str, body: bytes, method: str = "POST",
         request_headers: tuple[tuple[bytes, bytes], ...] = ()
         ) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request through the ASGI interface: status, headers, body."""
    sent: list[dict[str, Any]] = []
    chunks = [{"type": "http.request", "body": body[:7], "more_body": True},
              {"type": "http.request", "body": body[7:], "more_body": False}]

    async def receive() -> dict[str, Any]:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": list(request_headers)}
    asyncio.run(app(scope, receive, send))
    start, reply = sent
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    assert int(headers["content-length"]) == len(reply["body"])
    return start["status"], headers, reply["body"]


def post(app: Any, body: dict[str, Any], path: str = "/v1/completions"
         ) -> tuple[int, dict[str, str], bytes]:
    return call(app, path, json.dumps(body).encode())


def rendezvous_order(app: PrefixRouterApp, prompt: list[int]) -> list[str]:
    decisions = app.router.route(prompt)
    assert all(d.fallback for d in decisions)
    return [d.replica.name for d in decisions]


def test_events_send_the_request_to_the_replica_holding_the_prefix(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    app, replicas = fleet
    holder = rendezvous_order(app, PROMPT)[-1]  # the replica hashing alone would pick last
    keys = tuple(map(SCHEME.publish, SCHEME.hasher.block_hashes(Request(PROMPT))))
    app.index.apply(holder, EventBatch(1.0, (BlockStored(keys, None, (), BLOCK),)))
    body = json.dumps({"model": "m", "prompt": PROMPT, "max_tokens": 1}).encode()
    status, headers, body = call(app, "/v1/completions", body, request_headers=(
        (b"Authorization", b"Bearer k"), (b"cookie", b"not passed on")))
    assert status == 200 and json.loads(body) == {"served_by": holder}
    assert (headers["x-prefixkey-replica"], headers["x-prefixkey-evidence"]) == (
        holder, "confirmed")
    assert {n: r.prompts() for n, r in replicas.items()} == {
        n: ([PROMPT] if n == holder else []) for n in replicas}
    assert replicas[holder].received[0]["max_tokens"] == 1  # the body is forwarded as sent
    assert replicas[holder].authorization == ["Bearer k"]


def test_without_events_the_follow_up_goes_where_the_prefix_went(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    app, replicas = fleet
    first, second, _ = rendezvous_order(app, PROMPT)
    replicas[first].status = 503  # down for the first request: it is served by the second
    status, headers, _ = post(app, {"prompt": PROMPT})
    assert (status, headers["x-prefixkey-replica"], headers["x-prefixkey-evidence"]) == (
        200, second, "none")
    replicas[first].status = 200  # back; hashing alone would now send the prefix there
    follow_up = [*PROMPT, *range(40, 60)]
    status, headers, _ = post(app, {"prompt": [follow_up]})
    assert (status, headers["x-prefixkey-replica"], headers["x-prefixkey-evidence"]) == (
        200, second, "predicted")
    assert replicas[second].prompts() == [PROMPT, [follow_up]]  # forwarded as sent
    assert replicas[first].prompts() == [PROMPT]  # the failed attempt only
    assert app.index.predictions.stats()["sent_predicted"] == 1


def test_a_chat_conversation_rendered_by_prefixkey_render_stays_on_its_replica(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    pytest.importorskip("tokenizers", reason="needs the render extra: pip install -e '.[test]'")
    from prefixkey.render import Renderer, ServerOptions

    app, replicas = fleet
    renderer = Renderer(ServerOptions(model=str(MODEL), served_model_name=("qwen2",)))
    app.tokenize = rendering(renderer)
    system = {"role": "system", "content": "You are a helpful assistant. " * 8}
    first = {"model": "qwen2", "messages": [system, {"role": "user", "content": "Hi!"}]}
    (ids,) = renderer.render("/v1/chat/completions", first)
    order = rendezvous_order(app, list(ids.request.token_ids))
    replicas[order[0]].status = 503  # the rendezvous pick is down for the first turn
    status, headers, _ = post(app, first, "/v1/chat/completions")
    assert (status, headers["x-prefixkey-replica"]) == (200, order[1])
    replicas[order[0]].status = 200
    follow_up = {**first, "messages": [*first["messages"], {"role": "assistant",
                 "content": "Hello!"}, {"role": "user", "content": "And tomorrow?"}]}
    status, headers, _ = post(app, follow_up, "/v1/chat/completions")
    assert (status, headers["x-prefixkey-replica"], headers["x-prefixkey-evidence"]) == (
        200, order[1], "predicted")
    assert [r["messages"][-1]["content"] for r in replicas[order[1]].received] == [
        "Hi!", "And tomorrow?"]
    # vLLM's own refusals keep vLLM's status: an unknown model is its 404.
    status, _, reply = post(app, {**first, "model": "nope"}, "/v1/chat/completions")
    assert (status, json.loads(reply)["error"]["type"]) == (404, "RenderRequestError")
    status, _, reply = post(app, {"model": "qwen2", "prompt": ["a", "b"]})
    assert (status, json.loads(reply)["error"]["field"]) == (400, "prompt")


def test_a_custom_tokenize_plugs_in(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    app, replicas = fleet
    app.tokenize = lambda path, body: Request([ord(c) for c in body["text"]])
    text = "the same long system prompt, then a question " * 2
    status, headers, _ = post(app, {"text": text})
    chosen = headers["x-prefixkey-replica"]
    status, headers, _ = post(app, {"text": text + "and another"})
    assert (status, headers["x-prefixkey-replica"], headers["x-prefixkey-evidence"]) == (
        200, chosen, "predicted")
    assert len(replicas[chosen].received) == 2


@pytest.mark.parametrize(("body", "status", "error_type", "field"), [
    (b"{not json", 400, "MalformedJSONError", None),
    (b"[1, 2]", 400, "InvalidRequestError", "body"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(), 400,
     "InvalidRequestError", "prompt"),
    (json.dumps({"prompt": [1, -2, 3]}).encode(), 400, "InvalidRequestError", "token_ids"),
    (json.dumps({"prompt": [1], "cache_salt": 5}).encode(), 400, "InvalidRequestError",
     "cache_salt"),
    (json.dumps({"prompt": [1], "truncate_prompt_tokens": 1}).encode(), 400,
     "InvalidRequestError", "truncate_prompt_tokens"),
    (b" " * (9 << 20), 413, "UpstreamError", None),
])
def test_bad_bodies_get_a_typed_error(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]], body: bytes, status: int,
        error_type: str, field: str | None) -> None:
    app, replicas = fleet
    got, _, reply = call(app, "/v1/completions", body)
    error = json.loads(reply)["error"]
    assert (got, error["type"], error["field"]) == (status, error_type, field)
    assert all(not r.received for r in replicas.values())


def test_all_replicas_down_is_a_502(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    app, replicas = fleet
    for r in replicas.values():
        r.status = 500
    status, _, reply = post(app, {"prompt": PROMPT})
    assert status == 502 and "HTTP 500" in json.loads(reply)["error"]["message"]
    assert sum(len(r.received) for r in replicas.values()) == app.attempts
    assert len(app.index.predictions) == 0  # nothing was served: nothing predicted


def test_unknown_paths_and_health(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    app, _ = fleet
    assert call(app, "/v1/embeddings", b"{}")[0] == 404
    assert call(app, "/v1/completions", b"", method="GET")[0] == 404
    assert call(app, "/health", b"", method="GET")[:1] == (200,)


def test_from_environ(fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    _, replicas = fleet
    app = from_environ({"PREFIXKEY_REPLICAS": f"x={replicas['r0'].url}",
                        "PREFIXKEY_BLOCK_SIZE": "16", "PREFIXKEY_PYTHONHASHSEED": "0"})
    status, headers, _ = post(app, {"prompt": PROMPT})
    assert (status, headers["x-prefixkey-replica"]) == (200, "x")
    assert replicas["r0"].prompts() == [PROMPT]
    assert post(app, {"messages": [{"role": "user", "content": "hi"}]},
                "/v1/chat/completions")[0] == 400  # no model folder: no chat


def test_from_environ_with_a_model_folder(
        fleet: tuple[PrefixRouterApp, dict[str, FakeReplica]]) -> None:
    pytest.importorskip("tokenizers", reason="needs the render extra: pip install -e '.[test]'")
    _, replicas = fleet
    app = from_environ({"PREFIXKEY_REPLICAS": f"x={replicas['r1'].url}",
                        "PREFIXKEY_MODEL_DIR": str(MODEL),
                        "PREFIXKEY_SERVED_MODEL_NAME": "qwen2,chat"})
    body = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}
    status, headers, _ = post(app, body, "/v1/chat/completions")
    assert (status, headers["x-prefixkey-replica"]) == (200, "x")
    assert replicas["r1"].received[0]["messages"] == body["messages"]
