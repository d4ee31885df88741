"""A fake vLLM replica on loopback: an OpenAI chat endpoint that publishes vLLM's KV events.

Each replica is an HTTP server (standard library, a thread) answering
``POST /v1/chat/completions`` as vLLM's OpenAI server does in shape. It
renders every body it receives with prefixkey's Renderer (the token ids vLLM
0.31 computes for it), keys the full blocks with its own Hasher and
publishes them as a ``BlockStored`` batch in vLLM's wire format
(:func:`prefixkey.events.encode_batch`) on a ZMQ PUB socket, keeping every
message for its ROUTER replay socket, as vLLM's ``ZmqEventPublisher`` does.
``drop_next`` loses the next message on PUB (it is still replayable): a gap
the subscriber must recover. ``kill`` stops the HTTP server (connections are
refused), as a crashed replica.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from email.message import Message
from typing import Any

from fake_http import EventStream, JsonServer
from fake_publisher import FakePublisher

from prefixkey import Hasher
from prefixkey.events import BlockStored, EventBatch, encode_batch
from prefixkey.fleet import ReplicaScheme
from prefixkey.render import Renderer, RenderRequestError

VERSION = "0.31.0"
BLOCK = 16
SCHEME = ReplicaScheme(Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version=VERSION))


class FakeVLLM:
    """One replica: ``url`` (the OpenAI base, ``…/v1``), ``kv_events`` and ``replay`` endpoints."""

    def __init__(self, name: str, renderer: Renderer, ctx: Any, port: int) -> None:
        self.name = name
        self.renderer = renderer
        self.received: list[dict[str, Any]] = []
        #: Every block key it published (as published), for tests reading an index elsewhere.
        self.stored: set[Any] = set()
        self.drop_next = False
        #: A stream's first chunk waits for ``first``, the others for ``rest``; a whole
        #: answer, which comes after the decode, for both (both set: no wait).
        self.first, self.rest = threading.Event(), threading.Event()
        self.first.set()
        self.rest.set()
        self._lock = threading.Lock()
        self.publisher = FakePublisher(ctx, VERSION, replay=True, port=port + 1,
                                       replay_port=port + 2, rebind_seconds=0)
        self.kv_events = self.publisher.endpoint
        assert self.publisher.replay_endpoint is not None
        self.replay = self.publisher.replay_endpoint
        self.http = JsonServer(self._answer, (port,))
        self.url = f"http://127.0.0.1:{port}/v1"
        self.alive = True

    def _answer(self, path: str, headers: Message, body: Any) -> tuple[int, Any]:
        try:
            self._served(body)
        except RenderRequestError as exc:  # vLLM's refusal: its status and message
            return exc.status, {"error": {"message": str(exc), "code": exc.status}}
        if body.get("stream"):
            return 200, EventStream(self._chunks(body))
        self.first.wait(30.0)
        self.rest.wait(30.0)
        return 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": body.get("model"), "choices": [{
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": f"served by {self.name}"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _chunks(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A streamed answer: its first chunk (the first token) once ``first`` is set, then,
        once ``rest`` is set, the rest."""
        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        self.first.wait(30.0)
        yield chunk({"role": "assistant", "content": "served"}, None)
        self.rest.wait(30.0)
        yield chunk({"content": f" by {self.name}"}, None)
        yield chunk({}, "stop")

    def _served(self, body: dict[str, Any]) -> None:
        """The engine computed the prompt: its full blocks are cached, and published."""
        self.received.append(body)
        (rendered,) = self.renderer.render("/v1/chat/completions", body)
        keys = SCHEME.hasher.block_hashes(rendered.request)
        if keys:
            ids = tuple(rendered.request.token_ids[:len(keys) * BLOCK])
            published = tuple(map(SCHEME.publish, keys))
            self.stored.update(published)
            self.publish([BlockStored(published, None, ids, BLOCK)])

    def publish(self, events: list[Any]) -> None:
        payload = encode_batch(EventBatch(1.0, tuple(events)), VERSION)
        with self._lock:  # HTTP threads publish: one at a time on the PUB socket
            drop, self.drop_next = self.drop_next, False
            self.publisher.publish(payload, send=not drop)

    @property
    def sent(self) -> list[tuple[int, bytes]]:
        """Every message published (seq, payload), sent on PUB or not."""
        return self.publisher.buffer

    def kill(self) -> None:
        """The replica's server dies: its port refuses connections."""
        if self.alive:
            self.alive = False
            self.http.close()

    def close(self) -> None:
        self.kill()
        self.publisher.close()
