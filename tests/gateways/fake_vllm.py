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
from email.message import Message
from typing import Any

import zmq
from fake_http import JsonServer

from prefixkey import Hasher
from prefixkey.events import END_SEQ, BlockStored, EventBatch, encode_batch, seq_frame, wire_era
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
        self.seq = 0
        self.sent: list[tuple[int, bytes]] = []
        self.drop_next = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.pub = ctx.socket(zmq.PUB)
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.bind(f"tcp://127.0.0.1:{port + 1}")
        self.kv_events = f"tcp://127.0.0.1:{port + 1}"
        self.replay_socket = ctx.socket(zmq.ROUTER)
        self.replay_socket.setsockopt(zmq.LINGER, 0)
        self.replay_socket.bind(f"tcp://127.0.0.1:{port + 2}")
        self.replay = f"tcp://127.0.0.1:{port + 2}"
        self._replayer = threading.Thread(target=self._serve_replay, daemon=True)
        self._replayer.start()
        self.http = JsonServer(self._answer, (port,))
        self.url = f"http://127.0.0.1:{port}/v1"
        self.alive = True

    def _answer(self, path: str, headers: Message, body: Any) -> tuple[int, Any]:
        try:
            self._served(body)
        except RenderRequestError as exc:  # vLLM's refusal: its status and message
            return exc.status, {"error": {"message": str(exc), "code": exc.status}}
        return 200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1,
            "model": body.get("model"), "choices": [{
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": f"served by {self.name}"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

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
        with self._lock:
            payload = encode_batch(EventBatch(1.0, tuple(events)), VERSION)
            seq, self.seq = self.seq, self.seq + 1
            self.sent.append((seq, payload))
            if self.drop_next:
                self.drop_next = False
                return
            self.pub.send_multipart([b"", seq_frame(seq), payload])

    def _serve_replay(self) -> None:
        with_topic = wire_era(VERSION)[0].replay_carries_topic
        while not self._stop.is_set():
            if not self.replay_socket.poll(20):
                continue
            client, _, start = self.replay_socket.recv_multipart()
            first = int.from_bytes(start, "big")
            with self._lock:
                todo = [(s, p) for s, p in self.sent if s >= first]
            head = [b""] if with_topic else []
            for seq, payload in todo:
                self.replay_socket.send_multipart([client, b"", *head, seq_frame(seq), payload])
            self.replay_socket.send_multipart([client, b"", *head, END_SEQ, b""])

    def kill(self) -> None:
        """The replica's server dies: its port refuses connections."""
        if self.alive:
            self.alive = False
            self.http.close()

    def close(self) -> None:
        self.kill()
        self._stop.set()
        self._replayer.join(2)
        self.replay_socket.close(0)
        self.pub.close(0)
