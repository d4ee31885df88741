"""A small client of one vLLM render server: a body in, the prompts to hash out.

Standard library only (:mod:`http.client`): one kept-alive connection per client,
a deadline on each request (and the same timeout on every socket operation), a
bound on the answer's size, and typed errors —
:class:`RenderEndpointError` (``field`` ``"render_url"``) when the server cannot be
reached or answers out of time, the parser's errors for everything it answers. Render
calls have no side effects on the server, so a request whose kept-alive connection was
closed under it is sent once more on a new one.
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final
from urllib.parse import urlsplit

from .._json_lines import JSON_LIMITS, JsonLimits, parse_json_line
from ..errors import InvalidRequestError, PrefixKeyError
from ._deadline import Watchdog, WatchedHTTPConnection, WatchedHTTPSConnection
from ._endpoint import RENDER_PATHS, RenderEndpointError, RenderResponseParser
from ._renderer import Rendered

__all__ = ["RenderClient"]

DEFAULT_TIMEOUT_S: Final = 30.0
_STALE_CONNECTION = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class RenderClient:
    """Renders bodies through one vLLM render server: a body in, the prompts to hash out.

    The server (``vllm launch render``, or ``vllm serve --enable-scale-out``) is at
    ``url``: ``http://host:port``, optionally with a path prefix; ``https`` too.
    ``parser`` describes the server (release, ``--lora-modules``, served names); the
    default is vLLM 0.31.0 without adapters. ``api_key`` is sent as a bearer token
    (``--api-key``). ``limits`` bound the answer (its ``max_line_bytes`` and depth).
    One connection: use one client per thread. Close it, or use it as a context
    manager.
    """

    def __init__(self, url: str, *, parser: RenderResponseParser | None = None,
                 timeout: float = DEFAULT_TIMEOUT_S, api_key: str | None = None,
                 limits: JsonLimits = JSON_LIMITS) -> None:
        try:
            parts = urlsplit(url) if isinstance(url, str) else None
        except ValueError:  # e.g. an unclosed IPv6 host "http://[::1"
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidRequestError("render_url", f"must be an http(s)://host[:port] URL, "
                                      f"got {url!r}")
        try:
            port = parts.port
        except ValueError:
            raise InvalidRequestError("render_url", f"has an invalid port: {url!r}") from None
        if not (isinstance(timeout, (int, float)) and timeout > 0):
            raise InvalidRequestError("timeout", f"must be a number of seconds > 0, got "
                                      f"{timeout!r}")
        self.url = url
        self.parser = parser or RenderResponseParser()
        self.timeout = float(timeout)
        self.limits = limits
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        connection_class: type[WatchedHTTPConnection | WatchedHTTPSConnection] = (
            WatchedHTTPSConnection if parts.scheme == "https" else WatchedHTTPConnection)
        self._connection = connection_class(parts.hostname, port, timeout=self.timeout)

    def __enter__(self) -> RenderClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def render(self, endpoint: str, body: Mapping[str, Any]) -> tuple[Rendered, ...]:
        """The prompts vLLM renders for a ``/v1/chat/completions`` or ``/v1/completions``
        body (one per completions prompt), with the body's LoRA and ``cache_salt``."""
        path = RENDER_PATHS.get(endpoint)
        if path is None:
            raise InvalidRequestError("endpoint", f"must be one of {', '.join(RENDER_PATHS)},"
                                      f" got {endpoint!r}")
        if not isinstance(body, Mapping):
            raise InvalidRequestError("body", f"must be a JSON object, got "
                                      f"{type(body).__name__}")
        status, data = self.post(path, body)
        try:
            payload = parse_json_line(data, self.limits)
        except PrefixKeyError as exc:
            raise RenderEndpointError("response", f"HTTP {status}, not JSON: {exc}",
                                      status=status) from None
        model = body.get("model")
        return self.parser.parse(endpoint, status, payload,
                                 model=model if isinstance(model, str) else None)

    def post(self, path: str, body: Mapping[str, Any]) -> tuple[int, bytes]:
        """POST ``body`` as JSON to ``path`` under the URL; the status and the raw answer."""
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        # ``timeout`` bounds the whole exchange (a server dripping bytes, or sending
        # endless 100 Continue, resets no clock), not only each socket read.
        with Watchdog(self.timeout) as watchdog:
            conn = self._connection
            conn.watchdog = watchdog
            watchdog.watch(conn.sock)  # a kept-alive connection (a new one: on connect)
            try:
                try:
                    return self._exchange(path, payload)
                except _STALE_CONNECTION:
                    if watchdog.expired:
                        raise
                    conn.close()  # closed under us while idle: once more, reconnected
                return self._exchange(path, payload)
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise self._unreachable(exc, watchdog.expired) from None
            except RenderEndpointError:
                if watchdog.expired:
                    conn.close()
                    raise self._unreachable(TimeoutError(), True) from None
                raise
            finally:
                conn.watchdog = None

    def _exchange(self, path: str, payload: bytes) -> tuple[int, bytes]:
        self._connection.request("POST", self._prefix + path, body=payload,
                                 headers=self._headers)
        response = self._connection.getresponse()
        return response.status, self._read(response)

    def _read(self, response: http.client.HTTPResponse) -> bytes:
        bound = self.limits.max_line_bytes
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > bound:
            self._connection.close()  # the rest of the answer is not read
            raise RenderEndpointError("response", f"answer of {length} bytes is longer than "
                                      f"{bound} (max_line_bytes)", status=response.status)
        data = response.read(bound + 1)
        if len(data) > bound:
            self._connection.close()
            raise RenderEndpointError("response", f"answer longer than {bound} bytes "
                                      "(max_line_bytes)", status=response.status)
        if not response.isclosed():
            response.read()  # chunked: drain the terminator so the connection is reusable
        return data

    def _unreachable(self, exc: BaseException, expired: bool = False) -> RenderEndpointError:
        what = ("timed out: no complete answer within the request's deadline of "
                f"{self.timeout:g} s" if expired or isinstance(exc, socket.timeout)
                else f"{type(exc).__name__}: {exc}")
        return RenderEndpointError("render_url", f"{self.url}: {what}")
