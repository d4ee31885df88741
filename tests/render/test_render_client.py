"""RenderClient and ``prefixkey hash --render-url`` against a fake render server on loopback.

The fake server answers each corpus body with what vLLM 0.31.0's render server answered
(tests/render/vectors.jsonl), byte for byte as JSON; a path prefix selects misbehaviour
(slow, closing kept-alive connections, oversized or non-JSON answers). The keys the CLI
prints are compared with ``prefixkey hash`` of vLLM's recorded token ids.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from render_cases import RenderCase, render_cases

from prefixkey.cli import main
from prefixkey.errors import InvalidRequestError
from prefixkey.jsonl import JSON_LIMITS
from prefixkey.render import (
    RenderClient,
    RenderEndpointError,
    RenderRequestError,
    RenderResponseParser,
)

# This suite's loopback ports (the project's range for render-oracle tests).
PORTS = range(18040, 18100)
CASES = render_cases()


def _key(path: str, body: Any) -> tuple[str, str]:
    return path, json.dumps(body, sort_keys=True)


ANSWERS = {_key(c.endpoint + "/render", c.body): c for c in CASES if c.id.startswith("gpt2/")}


class FakeRenderServer(ThreadingHTTPServer):
    daemon_threads = True
    connections = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out has gone: its broken pipe is the point of the test


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn
    wbufsize = 1 << 16  # headers and body in one send, as uvicorn (no Nagle stall)

    def setup(self) -> None:
        super().setup()
        assert isinstance(self.server, FakeRenderServer)
        self.server.connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prefix, _, path = self.path.partition("/v1/")
        path = "/v1/" + path
        if prefix == "/slow":
            time.sleep(1.0)
        if prefix == "/notjson":
            return self._send(200, b"<html>proxy error</html>")
        if prefix == "/huge":
            return self._send(200, b"[" + b"1," * 5000 + b"1]")
        case = ANSWERS.get(_key(path, body))
        if case is None:
            return self._send(500, b'{"error": {"message": "no such body", "type": "x", '
                              b'"param": null, "code": 500}}')
        assert case.status is not None  # the corpus's server started
        self._send(case.status, json.dumps(case.response).encode())
        if prefix == "/close":
            # Close the kept-alive connection without saying so, as a restarting proxy does.
            self.close_connection = True


@pytest.fixture(scope="module")
def server() -> Iterator[FakeRenderServer]:
    for port in PORTS:
        try:
            srv = FakeRenderServer(("127.0.0.1", port), Handler)
            break
        except OSError:
            continue
    else:
        pytest.fail(f"no free loopback port in {PORTS}")
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def url(server: FakeRenderServer, prefix: str = "") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{prefix}"


def gpt2_cases() -> list[RenderCase]:
    return [c for c in CASES if c.id.startswith("gpt2/")]


def test_client_renders_every_answer_on_one_connection(server: FakeRenderServer) -> None:
    before = server.connections
    parser = RenderResponseParser(served_model_names=["gpt2-chatml"])
    with RenderClient(url(server), parser=parser) as client:
        for case in gpt2_cases():
            if case.status != 200:
                with pytest.raises(RenderRequestError) as caught:
                    client.render(case.endpoint, case.body)
                assert caught.value.status == case.status
                continue
            prompts = client.render(case.endpoint, case.body)
            ids = [list(p.token_ids) for p in prompts]
            assert ids == (case.token_ids if case.endpoint == "/v1/completions"
                           else [case.token_ids])
    assert server.connections - before == 1


def _chat_case() -> RenderCase:
    return next(c for c in CASES if c.id == "gpt2/chat-system")


def test_timeout_is_a_typed_error(server: FakeRenderServer) -> None:
    case = _chat_case()
    with RenderClient(url(server, "/slow"), timeout=0.2) as client, \
            pytest.raises(RenderEndpointError, match="timed out") as caught:
        client.render(case.endpoint, case.body)
    assert caught.value.field == "render_url"


def test_a_closed_kept_alive_connection_is_reopened(server: FakeRenderServer) -> None:
    case = _chat_case()
    before = server.connections
    with RenderClient(url(server, "/close")) as client:
        first = client.render(case.endpoint, case.body)
        second = client.render(case.endpoint, case.body)
    assert [list(p.token_ids) for p in first] == [list(p.token_ids) for p in second]
    assert server.connections - before == 2


def test_refused_connection_is_a_typed_error() -> None:
    with socket.socket() as probe:
        # A port of this suite's range that nothing listens on.
        for port in reversed(PORTS):
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                break
    case = _chat_case()
    with RenderClient(f"http://127.0.0.1:{port}", timeout=2) as client, \
            pytest.raises(RenderEndpointError) as caught:
        client.render(case.endpoint, case.body)
    assert caught.value.field == "render_url"
    assert caught.value.status is None


def test_oversized_and_non_json_answers(server: FakeRenderServer) -> None:
    case = _chat_case()
    small = dataclasses.replace(JSON_LIMITS, max_line_bytes=1000)
    with RenderClient(url(server, "/huge"), limits=small) as client, \
            pytest.raises(RenderEndpointError, match="max_line_bytes"):
        client.render(case.endpoint, case.body)
    with RenderClient(url(server, "/notjson")) as client, \
            pytest.raises(RenderEndpointError, match="not JSON") as caught:
        client.render(case.endpoint, case.body)
    assert caught.value.status == 200


@pytest.mark.parametrize("bad", ["127.0.0.1:8000", "ftp://host/", "http://", "http://h:x/",
                                 "http://[::1:8000"])
def test_bad_url(bad: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        RenderClient(bad)
    assert caught.value.field == "render_url"


def test_bad_endpoint_and_body(server: FakeRenderServer) -> None:
    with RenderClient(url(server)) as client:
        with pytest.raises(InvalidRequestError) as caught:
            client.render("/v1/embeddings", {})
        assert caught.value.field == "endpoint"
        with pytest.raises(InvalidRequestError) as caught:
            client.render("/v1/completions", [])  # type: ignore[arg-type]
        assert caught.value.field == "body"


# --- prefixkey hash --render-url ------------------------------------------------------------


def _run(argv: list[str], stdin: str = "") -> tuple[int, list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_hash_render_url_gives_the_keys_of_vllms_ids(server: FakeRenderServer,
                                                      tmp_path: Path) -> None:
    picked = [c for c in gpt2_cases() if c.id in {
        "gpt2/chat-system", "gpt2/chat-multiturn-salt", "gpt2/cmpl-list", "gpt2/cmpl-string",
        "gpt2/chat-unicode0", "gpt2/bad-chat-unknown_model"}]
    assert len(picked) == 6
    bodies = tmp_path / "bodies.jsonl"
    direct = tmp_path / "direct.jsonl"
    with bodies.open("w") as b, direct.open("w") as d:
        for case in picked:
            b.write(json.dumps({"id": case.id, "endpoint": case.endpoint, "body": case.body,
                                "block_size": 4}) + "\n")
            if case.status != 200:
                continue
            lists = case.token_ids if case.endpoint == "/v1/completions" else [case.token_ids]
            for n, ids in enumerate(lists):
                many = isinstance(case.body.get("prompt"), list)
                d.write(json.dumps({"id": f"{case.id}#{n}" if many else case.id,
                                    "token_ids": ids, "block_size": 4,
                                    "cache_salt": case.body.get("cache_salt")}) + "\n")
    status, records, err = _run(["hash", "--render-url", url(server), str(bodies)])
    assert status == 1  # the unknown model's line
    assert "1 request(s) could not be hashed" in err
    errors = [r for r in records if "error" in r]
    assert [(r["id"], r["error"]["type"], r["error"]["field"]) for r in errors] == [
        ("gpt2/bad-chat-unknown_model", "RenderRequestError", "model")]
    expected_status, expected, _ = _run(["hash", str(direct)])
    assert expected_status == 0
    assert [r for r in records if "error" not in r] == expected
    assert any(r["id"] == "gpt2/cmpl-list#2" for r in records)


def test_hash_render_url_is_exclusive_with_model_dir(server: FakeRenderServer,
                                                      tmp_path: Path) -> None:
    status, records, err = _run(["hash", "--render-url", url(server), "--model-dir",
                                 str(tmp_path), str(tmp_path / "none.jsonl")])
    assert status == 2
    assert "exclusive" in err
    assert records == []


def test_hash_render_url_with_an_unreachable_server(tmp_path: Path) -> None:
    bodies = tmp_path / "bodies.jsonl"
    case = _chat_case()
    bodies.write_text(json.dumps({"id": 1, "endpoint": case.endpoint, "body": case.body,
                                  "block_size": 4}) + "\n")
    with socket.socket() as probe:
        port = next(p for p in reversed(PORTS) if probe.connect_ex(("127.0.0.1", p)) != 0)
    status, records, _ = _run(["hash", "--render-url", f"http://127.0.0.1:{port}",
                               "--render-timeout", "2", str(bodies)])
    assert status == 1
    assert records[0]["error"]["type"] == "RenderEndpointError"
    assert records[0]["error"]["field"] == "render_url"
