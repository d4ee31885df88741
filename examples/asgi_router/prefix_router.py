"""An example prefix-aware router: a plain ASGI app in front of vLLM replicas.

It receives OpenAI-compatible bodies (``POST /v1/completions`` and
``/v1/chat/completions``), turns each into token ids (the ``tokenize`` seam:
:func:`rendering` renders them as vLLM 0.31.0 does with
:mod:`prefixkey.render`, :func:`prompt_token_ids` takes token-id prompts),
ranks the replicas by the prefix they hold and forwards the body to the best
one, failing over to the next on a connection error or a 5xx reply. Each
request a replica accepts is recorded as predicted entries
(:class:`~prefixkey.fleet.PredictedIndex`), so the fleet is routed by prefix
without KV events; where replicas publish events, feed the same index from a
:class:`~prefixkey.fleet.Subscriber` (pass its ``lock``) and events replace
the predictions. Replies carry ``x-prefixkey-replica`` and
``x-prefixkey-evidence`` (``confirmed``, ``predicted`` or ``none``).

Run with any ASGI server, e.g. ``pip install uvicorn``, then::

    PREFIXKEY_REPLICAS="a=http://10.0.0.1:8000,b=http://10.0.0.2:8000" \\
    PREFIXKEY_MODEL_DIR=/models/qwen2-7b PREFIXKEY_SERVED_MODEL_NAME=qwen2 \\
    PREFIXKEY_BLOCK_SIZE=16 PREFIXKEY_PYTHONHASHSEED=0 PREFIXKEY_VLLM_VERSION=0.31.0 \\
        uvicorn --app-dir examples/asgi_router prefix_router:app --port 8080

(``PREFIXKEY_MODEL_DIR`` needs the ``render`` extra; without it only
completions bodies whose ``prompt`` is token ids are routed.) Only
standard-library code besides prefixkey. What an example leaves out: replies
are buffered whole (no streaming), forwarding runs urllib in a thread, and
rendering and hashing run on the event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, cast

from prefixkey import Hasher, Request, check_api_rules
from prefixkey.errors import InvalidRequestError, PrefixKeyError
from prefixkey.fleet import (
    PredictedIndex,
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    Router,
    as_replica_id,
)
from prefixkey.jsonl import JsonLimits, parse_json_line

if TYPE_CHECKING:
    from prefixkey.render import Renderer

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
#: An OpenAI body (and the path it was posted to) to the request whose prefix is routed.
Tokenize = Callable[[str, Mapping[str, Any]], Request]
#: POST ``body`` to ``url`` with ``headers``; the reply's status, content type and body.
Forward = Callable[[str, bytes, Mapping[str, str], float], tuple[int, str, bytes]]

ROUTES = frozenset({"/v1/completions", "/v1/chat/completions"})
#: Request headers passed on to the replica (vLLM's ``--api-key`` checks ``authorization``).
FORWARDED_HEADERS = frozenset({"authorization"})


def rendering(renderer: Renderer) -> Tokenize:
    """A ``tokenize`` rendering each body as vLLM 0.31.0's OpenAI server does.

    A completions body with several prompts is several engine requests in
    vLLM, so it has no single prefix to route on: it is refused.
    """
    def tokenize(path: str, body: Mapping[str, Any]) -> Request:
        rendered = renderer.render(path, body)
        if len(rendered) != 1:
            raise InvalidRequestError("prompt", f"{len(rendered)} prompts: route one per request")
        return rendered[0].request
    return tokenize


def prompt_token_ids(path: str, body: Mapping[str, Any]) -> Request:
    """A ``tokenize`` without a model folder: completions bodies whose ``prompt`` is ids."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], list):
        prompt = prompt[0]  # OpenAI's batch form, with one prompt
    if not isinstance(prompt, list):
        hint = " (chat messages need a model folder: tokenize=rendering(...))" \
            if "messages" in body else ""
        raise InvalidRequestError("prompt", f"must be a list of token ids{hint}")
    if body.get("truncate_prompt_tokens") is not None:  # vLLM would hash other tokens
        raise InvalidRequestError("truncate_prompt_tokens", "is not supported by this tokenize")
    salt = body.get("cache_salt")
    if salt is not None and not isinstance(salt, str):
        raise InvalidRequestError("cache_salt", f"must be a string, got {salt!r}")
    request = Request(prompt, cache_salt=salt)
    check_api_rules(request)  # what the replicas' API server (0.31) refuses, refused here
    return request


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float
         ) -> tuple[int, str, bytes]:
    """The default ``forward``: one HTTP POST of a JSON body."""
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={**headers, "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.headers.get("content-type", ""), reply.read()
    except urllib.error.HTTPError as reply:
        return reply.code, reply.headers.get("content-type", ""), reply.read()


def _error(status: int, exc: PrefixKeyError | None, message: str) -> tuple[int, bytes]:
    error = {"type": "UpstreamError" if exc is None else type(exc).__name__,
             "message": message, "field": None if exc is None else exc.field}
    return status, json.dumps({"error": error}).encode()


class PrefixRouterApp:
    """The ASGI app: ``upstreams`` maps each registered replica to its base URL."""

    def __init__(
        self, router: Router, index: PredictedIndex, upstreams: Mapping[ReplicaId | str, str],
        *, tokenize: Tokenize = prompt_token_ids, forward: Forward = post,
        lock: AbstractContextManager[Any] | None = None, max_body_bytes: int = 8 << 20,
        timeout: float = 600.0, attempts: int = 2,
    ) -> None:
        self.router = router
        self.index = index
        self.upstreams = {as_replica_id(r): url.rstrip("/") for r, url in upstreams.items()}
        self.tokenize = tokenize
        self.forward = forward
        # Guards the index and the predictions (a Subscriber's lock when events feed them).
        self.lock = threading.RLock() if lock is None else lock
        self.limits = JsonLimits(max_line_bytes=max_body_bytes)
        self.timeout = timeout
        self.attempts = attempts
        # The gateway's own count of each replica's queued prefill (docs/routing.md): a
        # request's prefill_tokens from its forward until its reply, pushed to the Router.
        self.queued = dict.fromkeys(self.upstreams, 0.0)
        for replica in self.upstreams:
            router.set_load(replica, 0.0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        if scope["path"] == "/health":
            await _reply(send, 200, b"ok", "text/plain")
            return
        if scope["path"] not in ROUTES or scope["method"] != "POST":
            await _reply(send, 404, _error(404, None, "not found")[1])
            return
        body = await self._body(receive)
        if body is None:
            await _reply(send, *_error(413, None, f"body over {self.limits.max_line_bytes} bytes"))
            return
        passed = {k.decode("latin-1").lower(): v.decode("latin-1")
                  for k, v in scope.get("headers", ())
                  if k.decode("latin-1").lower() in FORWARDED_HEADERS}
        status, content_type, reply, headers = await self.handle(scope["path"], body, passed)
        await _reply(send, status, reply, content_type, headers)

    def _queue(self, replica: ReplicaId, tokens: float) -> None:
        with self.lock:
            self.queued[replica] = max(0.0, self.queued[replica] + tokens)
            self.router.set_load(replica, self.queued[replica])

    async def _body(self, receive: Receive) -> bytes | None:
        chunks, size = [], 0
        while True:
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limits.max_line_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def handle(self, path: str, body: bytes, headers: Mapping[str, str] | None = None,
                     ) -> tuple[int, str, bytes, list[tuple[bytes, bytes]]]:
        """Route one body; the reply's status, content type, body and extra headers."""
        try:
            parsed = parse_json_line(body, self.limits)
            if not isinstance(parsed, dict):
                raise InvalidRequestError("body", "must be a JSON object")
            request = self.tokenize(path, parsed)
            candidates = list(self.upstreams)
            with self.lock:
                prepared = self.router.prepare(request, candidates)
                decisions = self.router.rank(prepared, candidates)
        except PrefixKeyError as exc:  # a RenderRequestError carries vLLM's status (400, 404)
            status, reply = _error(getattr(exc, "status", 400), exc, str(exc))
            return status, "application/json", reply, []
        failures = []
        for decision in decisions[:self.attempts]:
            url = self.upstreams[decision.replica] + path
            self._queue(decision.replica, decision.prefill_tokens)
            try:
                status, content_type, reply = await asyncio.to_thread(
                    self.forward, url, body, headers or {}, self.timeout)
            except OSError as exc:  # refused, reset, timed out
                failures.append(f"{decision.replica}: {exc}")
                continue
            finally:
                self._queue(decision.replica, -decision.prefill_tokens)
            if status >= 500:
                failures.append(f"{decision.replica}: HTTP {status}")
                continue
            if status < 300:  # the replica computed it: its cache now holds the prefix
                with self.lock:
                    self.index.sent(prepared, decision)
            extra = [(b"x-prefixkey-replica", str(decision.replica).encode()),
                     (b"x-prefixkey-evidence", decision.evidence.encode())]
            return status, content_type, reply, extra
        status, reply = _error(502, None, "no replica answered: " + "; ".join(failures))
        return status, "application/json", reply, []


async def _reply(send: Send, status: int, body: bytes, content_type: str = "application/json",
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode() or b"application/json"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def from_environ(environ: Mapping[str, str] = os.environ) -> PrefixRouterApp:
    """The app for replicas of one scheme, configured by ``PREFIXKEY_*`` variables."""
    spec = environ.get("PREFIXKEY_REPLICAS", "")
    upstreams = dict(item.split("=", 1) for item in spec.split(",") if "=" in item)
    if not upstreams:
        raise InvalidRequestError("PREFIXKEY_REPLICAS", "set it to name=url,name=url,...")
    hasher = Hasher(block_size=int(environ.get("PREFIXKEY_BLOCK_SIZE", "16")),
                    python_hash_seed=environ.get("PREFIXKEY_PYTHONHASHSEED"),
                    vllm_version=environ.get("PREFIXKEY_VLLM_VERSION", "0.31.0"))
    index = PredictedIndex(PrefixIndex())
    for name in upstreams:
        index.register(name, ReplicaScheme(hasher))
    router = Router(index)
    tokenize: Tokenize = prompt_token_ids
    model_dir = environ.get("PREFIXKEY_MODEL_DIR")
    if model_dir:
        from prefixkey.render import Renderer, ServerOptions  # the render extra

        names = tuple(n for n in environ.get("PREFIXKEY_SERVED_MODEL_NAME", "").split(",") if n)
        tokenize = rendering(Renderer(ServerOptions(model=model_dir, served_model_name=names)))
    return PrefixRouterApp(router, index, cast("dict[ReplicaId | str, str]", upstreams),
                           tokenize=tokenize)


_app: PrefixRouterApp | None = None


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """The app :func:`from_environ` builds, on first use (the ASGI server's entry point)."""
    global _app
    if _app is None:
        _app = from_environ()
    await _app(scope, receive, send)
