"""Image chat requests rendered in process equal a real vLLM 0.31 render server's answers.

tools/harvest_mm_chat.py posted image chat bodies to vLLM 0.31.0's render
server over the tiny BLIP-2 folder and recorded its whole answers. The
in-process Renderer, given each image's expansion as the caller knows it from
config.json (``num_query_tokens`` copies of ``image_token_index``), must give
the answer's token ids, identifiers and placeholder spans, and so the same keys
as the answer read by RenderResponseParser; what the server refused, it refuses.
``prefixkey render`` / ``hash --model-dir`` take the ids as the line's
``placeholder_token_ids`` and give the same.
"""

from __future__ import annotations

import base64
import http.server
import json
import re
import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
pytest.importorskip("jinja2", reason="the render extra (jinja2) is not installed")

from chat_bodies import materialize

from prefixkey import Hasher
from prefixkey.cli import main
from prefixkey.errors import (
    InvalidRequestError,
    RemoteMediaError,
    UndecodableMediaError,
)
from prefixkey.render import (
    CHAT_ENDPOINT,
    Renderer,
    RenderRequestError,
    RenderResponseParser,
    RenderUnsupportedError,
    ServerOptions,
    fetch_media_url,
)

HERE = Path(__file__).resolve().parent
IMAGES = HERE / "images"
FOLDER = HERE / "models" / "blip2_tiny"
RECORDS = [json.loads(line) for line in (HERE / "chat_vectors.jsonl").read_text().splitlines()]
CONFIG = json.loads((FOLDER / "config.json").read_text())
EXPANSION = [CONFIG["image_token_index"]] * CONFIG["num_query_tokens"]


@cache
def _renderer(options: str, model: str = RECORDS[0]["model"]) -> Renderer:
    return Renderer(ServerOptions(model=model, allowed_local_media_path=str(IMAGES),
                                  **json.loads(options)), str(FOLDER))


def _images(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if isinstance(m["content"], list)
               for p in m["content"] if p.get("type") == "image_url")


@pytest.mark.parametrize("record", RECORDS, ids=[
    f"{r['case']}-{r['options'].get('chat_template_content_format', 'auto')}" for r in RECORDS])
def test_in_process_render_is_the_render_server_s(record: dict[str, Any]) -> None:
    renderer = _renderer(json.dumps(record["options"], sort_keys=True))
    body = materialize(record["body"])
    placeholders = [EXPANSION] * _images(record["body"])
    if record["status"] != 200:
        message = record["response"]["error"]["message"]
        if message.startswith("Failed to load image"):
            with pytest.raises(UndecodableMediaError):
                renderer.render_chat(body, placeholder_token_ids=placeholders)
            return
        with pytest.raises(RenderRequestError) as caught:
            renderer.render_chat(body, placeholder_token_ids=placeholders)
        assert caught.value.status == record["status"]
        assert message.startswith(caught.value.reason)
        return
    rendered = renderer.render_chat(body, placeholder_token_ids=placeholders)
    answer = record["response"]
    assert list(rendered.token_ids) == answer["token_ids"]
    features = answer["features"]
    assert [m.identifier for m in rendered.request.mm_items] == features["mm_hashes"]["image"]
    assert [{"offset": m.offset, "length": m.length} for m in rendered.request.mm_items] == \
        features["mm_placeholders"]["image"]
    (endpoint,) = RenderResponseParser(served_model_names=[record["model"]]).parse(
        CHAT_ENDPOINT, 200, answer, model=record["body"]["model"])
    hasher = Hasher(block_size=4)
    assert hasher.block_hashes(rendered.request) == hasher.block_hashes(endpoint.request)
    assert endpoint.request.mm_items == rendered.request.mm_items


def _body(*parts: Any) -> dict[str, Any]:
    return {"model": RECORDS[0]["model"], "messages": [{"role": "user", "content": list(parts)}]}


def _image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


DATA_URL = "data:image/png;base64," + base64.b64encode((IMAGES / "rgb.png").read_bytes()).decode()


def test_an_image_without_placeholder_ids_is_expanded_by_its_family() -> None:
    """BLIP-2's family (render/_vision/_blip2.py) computes what callers used to pass."""
    body = _body(_image_part(DATA_URL), {"type": "text", "text": "what is it?"})
    computed = _renderer("{}").render_chat(body)
    assert computed.request == _renderer("{}").render_chat(
        body, placeholder_token_ids=[EXPANSION]).request
    assert list(computed.token_ids[:len(EXPANSION)]) == EXPANSION


def test_placeholder_ids_other_than_the_family_s_are_refused() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        _renderer("{}").render_chat(_body(_image_part(DATA_URL)),
                                    placeholder_token_ids=[EXPANSION[:-1]])
    assert caught.value.field == "placeholder_token_ids[0]"
    assert "omit the field" in caught.value.reason


@pytest.mark.parametrize(("given", "field"), [
    ([], "placeholder_token_ids"), ([EXPANSION, EXPANSION], "placeholder_token_ids"),
    ([[]], "placeholder_token_ids[0]"), ([["x"]], "placeholder_token_ids[0]"),
    ("1006", "placeholder_token_ids"),
])
def test_malformed_placeholder_ids_are_refused(given: Any, field: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        _renderer("{}").render_chat(_body(_image_part(DATA_URL)), placeholder_token_ids=given)
    assert caught.value.field == field


def test_placeholder_ids_without_images_are_refused() -> None:
    with pytest.raises(InvalidRequestError, match="0 image"):
        _renderer("{}").render_chat(_body({"type": "text", "text": "hi"}),
                                    placeholder_token_ids=[EXPANSION])


def test_a_text_only_body_has_no_items() -> None:
    rendered = _renderer("{}").render_chat(_body({"type": "text", "text": "hi"}))
    assert rendered.request.mm_items == ()


@pytest.mark.parametrize(("max_model_len", "words"), [(23, "(length 24) is longer"),
                                                       (24, "(length 24) plus the number")])
def test_the_engine_s_length_check_counts_the_image_tokens(max_model_len: int,
                                                           words: str) -> None:
    """The text (20 ids) fits; with the 4 image ids the engine's input check refuses it
    (v1/engine/input_processor.py; the render server runs no engine, so this is read
    from vLLM's code, not harvested)."""
    (record,) = [r for r in RECORDS if r["case"] == "text-then-image" and not r["options"]]
    renderer = Renderer(ServerOptions(model=record["model"], max_model_len=max_model_len),
                        str(FOLDER))
    with pytest.raises(RenderRequestError, match=re.escape(words)):
        renderer.render_chat(materialize(record["body"]), placeholder_token_ids=[EXPANSION])


def test_a_file_outside_the_allowed_path_is_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "secret.png"
    outside.write_bytes((IMAGES / "rgb.png").read_bytes())
    with pytest.raises(InvalidRequestError, match="subpath"):
        _renderer("{}").render_chat(_body(_image_part(outside.as_uri())),
                                    placeholder_token_ids=[EXPANSION])
    with pytest.raises(InvalidRequestError, match="subpath"):  # '..' out of the allowed path
        _renderer("{}").render_chat(
            _body(_image_part(f"file://{IMAGES}/../models/blip2_tiny/config.json")),
            placeholder_token_ids=[EXPANSION])


def test_without_an_allowed_path_no_file_is_read() -> None:
    renderer = Renderer(ServerOptions(model=RECORDS[0]["model"]), str(FOLDER))
    with pytest.raises(InvalidRequestError, match="allowed-local-media-path"):
        renderer.render_chat(_body(_image_part((IMAGES / "rgb.png").as_uri())),
                             placeholder_token_ids=[EXPANSION])


def test_an_http_url_is_for_the_caller_to_fetch() -> None:
    with pytest.raises(RemoteMediaError):
        _renderer("{}").render_chat(_body(_image_part("https://example.com/cat.png")),
                                    placeholder_token_ids=[EXPANSION])


def test_request_multimodal_kwargs_are_vllm_s_400_unless_trusted() -> None:
    body = {**_body(_image_part(DATA_URL)), "mm_processor_kwargs": {"x": 1}}
    with pytest.raises(RenderRequestError, match="--trust-request-mm-kwargs") as caught:
        _renderer("{}").render_chat(body)
    assert caught.value.field == "mm_processor_kwargs"
    trusted = _renderer(json.dumps({"trust_request_mm_kwargs": True}))
    with pytest.raises(RenderUnsupportedError, match="not reproduced") as unsupported:
        trusted.render_chat(body)  # BLIP-2's processor takes no kwargs prefixkey reproduces
    assert unsupported.value.field == "mm_processor_kwargs.x"


def test_an_unverified_architecture_refuses_images() -> None:
    folder = HERE.parent / "render" / "models" / "gpt2_bytelevel"
    renderer = Renderer(ServerOptions(model=str(folder)))
    body = {"model": str(folder), "messages": [{"role": "user", "content": [
        _image_part(DATA_URL)]}]}
    with pytest.raises(RenderUnsupportedError, match="not verified"):
        renderer.render_chat(body, placeholder_token_ids=[EXPANSION])


def test_completions_take_no_placeholder_ids() -> None:
    with pytest.raises(InvalidRequestError, match="carry images"):
        _renderer("{}").render("/v1/completions", {"model": RECORDS[0]["model"],
                                                   "prompt": "x"},
                               placeholder_token_ids=[EXPANSION])


# ------------------------------------------------------------------ the CLI

OK = [r for r in RECORDS if r["status"] == 200 and r["options"] == {}]
SERVER = ["--model-dir", str(FOLDER), "--model", RECORDS[0]["model"],
          "--allowed-local-media-path", str(IMAGES)]


def _run(argv: list[str], lines: list[dict[str, Any]], tmp_path: Path,
         capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any]]:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    status = main([*argv, str(source)])
    return status, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _line(record: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": record["case"], "endpoint": "/v1/chat/completions",
            "body": materialize(record["body"]), "placeholder_token_ids": [EXPANSION],
            **extra}


def test_render_lines_are_the_render_server_s(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    status, out = _run(["render", *SERVER], [_line(r) for r in OK], tmp_path, capsys)
    assert status == 0
    for record, line in zip(OK, out, strict=True):
        features = record["response"]["features"]
        assert line["token_ids"] == record["response"]["token_ids"]
        assert "placeholder_token_ids" not in line
        assert line["mm_items"] == [
            {"identifier": i, **span} for i, span in
            zip(features["mm_hashes"]["image"], features["mm_placeholders"]["image"],
                strict=True)]


def test_hash_model_dir_keys_the_rendered_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    lines = [_line(r, block_size=4) for r in OK]
    status, direct = _run(["hash", *SERVER], lines, tmp_path, capsys)
    assert status == 0
    rendered = [{"id": r["case"], "block_size": 4, "token_ids": r["response"]["token_ids"],
                 "mm_items": [{"identifier": i, **span} for i, span in zip(
                     r["response"]["features"]["mm_hashes"]["image"],
                     r["response"]["features"]["mm_placeholders"]["image"], strict=True)]}
                for r in OK]
    status, via_answer = _run(["hash"], rendered, tmp_path, capsys)
    assert status == 0
    assert direct == via_answer


def test_a_line_without_placeholder_ids_is_expanded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _line(OK[0])
    del line["placeholder_token_ids"]
    status, out = _run(["render", *SERVER], [line], tmp_path, capsys)
    assert status == 0
    assert out[0]["token_ids"] == OK[0]["response"]["token_ids"]


# ------------------------------------------------------------------ the opt-in fetcher

PORT = 18520  # this suite's loopback port (18500-18599)


class _Images(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/moved":
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{PORT}/rgb.png")
            self.end_headers()
            return
        path = IMAGES / self.path.lstrip("/")
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def image_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), _Images)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{PORT}"
    finally:
        server.shutdown()
        server.server_close()


def _fetching(domains: tuple[str, ...]) -> Renderer:
    return Renderer(ServerOptions(model=RECORDS[0]["model"], allowed_media_domains=domains),
                    str(FOLDER), media_fetcher=fetch_media_url)


def test_a_fetched_url_keys_as_its_bytes_do(image_server: str) -> None:
    """vLLM hashes a fetched image by its bytes: the recorded data: URL answer of the
    same file is the fetched one's."""
    (record,) = [r for r in RECORDS if r["case"] == "text-then-image" and not r["options"]]
    body = materialize(record["body"])
    body["messages"][0]["content"][1]["image_url"]["url"] = f"{image_server}/rgb.png"
    rendered = _fetching(("127.0.0.1",)).render_chat(body, placeholder_token_ids=[EXPANSION])
    assert list(rendered.token_ids) == record["response"]["token_ids"]
    assert [m.identifier for m in rendered.request.mm_items] == \
        record["response"]["features"]["mm_hashes"]["image"]


@pytest.mark.parametrize(("path", "words"), [("/moved", "HTTP 302"),
                                             ("/missing.png", "HTTP 404")])
def test_a_redirect_or_a_failure_is_not_followed(image_server: str, path: str,
                                                 words: str) -> None:
    with pytest.raises(InvalidRequestError, match=words) as caught:
        _fetching(("127.0.0.1",)).render_chat(_body(_image_part(image_server + path)),
                                              placeholder_token_ids=[EXPANSION])
    assert caught.value.field == "messages[0].content[0].image_url.url"


def test_the_fetcher_stays_inside_the_allowed_domains(image_server: str) -> None:
    with pytest.raises(InvalidRequestError, match="allowed domains"):
        _fetching(("images.example",)).render_chat(
            _body(_image_part(f"{image_server}/rgb.png")), placeholder_token_ids=[EXPANSION])
    # Without a domain list vLLM fetches from any host: the fetcher is then never used.
    with pytest.raises(RemoteMediaError):
        _fetching(()).render_chat(_body(_image_part(f"{image_server}/rgb.png")),
                                  placeholder_token_ids=[EXPANSION])
