"""A loopback HTTP server answering JSON POSTs: the HTTP side of the suites' fake replicas.

The fakes differ only in what they answer (``tests/gateways/fake_vllm.py``
renders and publishes, the ASGI router's replicas record who was asked), so
the reading, the JSON reply and the thread live here once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: ``answer(path, headers, body)`` → the status and the JSON document to reply.
Answer = Callable[[str, Message, Any], tuple[int, Any]]


class JsonServer:
    """``answer`` served on the first free loopback port of ``ports``, in a daemon thread."""

    def __init__(self, answer: Answer, ports: Iterable[int]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                status, document = answer(self.path, self.headers, body)
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
