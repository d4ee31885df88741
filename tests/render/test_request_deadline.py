"""A deadline per request for RenderClient and the media fetcher (issue 23, item 11).

Their timeouts bounded each socket read: a server that drips its answer a byte
at a time, or sends ``100 Continue`` without end, held them indefinitely (over 90 s
against a 3 s timeout). These servers answer completely, slowly (seconds): before the
fix the call succeeded late; now it fails typed at its deadline. Nothing is timed.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from prefixkey.errors import InvalidRequestError
from prefixkey.render import RenderClient, RenderEndpointError
from prefixkey.render._media import fetch_media_url

#: This suite's loopback ports (helper range 18850-18899).
PORTS = range(18880, 18890)
BODY = b'{"request_id": "x", "token_ids": [1, 2, 3]}'
ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
          + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)


def drip(conn: socket.socket, stop: threading.Event) -> None:
    for i in range(len(ANSWER)):  # one byte every 0.1 s: each read well within the timeout
        if stop.wait(0.1):
            return
        conn.sendall(ANSWER[i:i + 1])


def endless_continue(conn: socket.socket, stop: threading.Event) -> None:
    for _ in range(40):  # 4 s of interim answers, then the answer
        if stop.wait(0.1):
            return
        conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
    conn.sendall(ANSWER)


@pytest.fixture(params=[drip, endless_continue], ids=["drip", "100-continue"])
def slow_server(request: pytest.FixtureRequest) -> Iterator[str]:
    behave: Callable[[socket.socket, threading.Event], None] = request.param
    listener = socket.socket()
    for port in PORTS:
        try:
            listener.bind(("127.0.0.1", port))
            break
        except OSError:
            continue
    else:
        pytest.fail(f"no free loopback port in {PORTS}")
    listener.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)  # the request (small)
                with contextlib.suppress(OSError):  # the client hung up at its deadline
                    behave(conn, stop)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    listener.close()
    thread.join(5)


def test_render_client_fails_at_the_request_deadline(slow_server: str) -> None:
    with RenderClient(slow_server, timeout=0.5) as client, \
            pytest.raises(RenderEndpointError, match=r"deadline of 0\.5 s") as err:
        client.post("/v1/completions/render", {"prompt": "x"})
    assert err.value.field == "render_url"


def test_media_fetcher_fails_at_the_request_deadline(slow_server: str) -> None:
    with pytest.raises(InvalidRequestError, match=r"no complete answer within 0\.5 s") as err:
        fetch_media_url(slow_server + "/x.png", "messages[0].content[0].image_url.url",
                        timeout=0.5)
    assert err.value.field == "messages[0].content[0].image_url.url"
