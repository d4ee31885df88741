"""A loopback HTTP server answering JSON: the HTTP side of the suites' fake replicas.

The fakes differ only in what they answer (``tests/gateways/fake_vllm.py``
renders and publishes, the ASGI router's replicas record who was asked, the
fleet suites' ``/v1/models`` lists adapters), so the reading, the JSON reply
and the thread live here once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class EventStream:
    """A reply of server-sent events (``data: <json>`` each, then ``data: [DONE]``):
    what an OpenAI server streams. ``events`` is read as the reply is written."""

    def __init__(self, events: Iterable[Any]) -> None:
        self.events = events


#: ``answer(path, headers, body)`` → the status and the JSON document (or an
#: :class:`EventStream`) to reply.
Answer = Callable[[str, Message, Any], tuple[int, Any]]
#: ``answer_get(path)`` → the status and the JSON document to reply.
GetAnswer = Callable[[str], tuple[int, Any]]


class JsonServer:
    """``answer`` (POSTs; ``answer_get``: GETs) served on the first free loopback port of
    ``ports`` (0: any), in a daemon thread. A method without an answer gets 501."""

    def __init__(self, answer: Answer | None, ports: Iterable[int], *,
                 answer_get: GetAnswer | None = None) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if answer is None:
                    self.send_error(501)
                    return
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                self._reply(*answer(self.path, self.headers, body))

            def do_GET(self) -> None:
                if answer_get is None:
                    self.send_error(501)
                    return
                self._reply(*answer_get(self.path))

            def _reply(self, status: int, document: Any) -> None:
                if isinstance(document, EventStream):
                    self.send_response(status)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()  # HTTP/1.0: the reply ends when the connection closes
                    for event in document.events:
                        self.wfile.write(b"data: " + json.dumps(event).encode() + b"\n\n")
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    return
                reply = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass  # a test's output is its assertions

        self.server = _bind(Handler, tuple(ports))
        self.port: int = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stops serving: the port refuses connections, as a crashed replica's."""
        self.server.shutdown()
        self.server.server_close()


def _bind(handler: type[BaseHTTPRequestHandler], ports: tuple[int, ...]) -> ThreadingHTTPServer:
    for port in ports:
        try:
            return ThreadingHTTPServer(("127.0.0.1", port), handler)
        except OSError:
            continue
    raise RuntimeError(f"no free loopback port in {ports[0]}-{ports[-1]}")
