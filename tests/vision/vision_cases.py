"""A vision corpus joined with vLLM's answers, and the Renderer for each of its servers.

``tests/vision/<prefix>bodies.jsonl`` (tools/build_vision_bodies.py) and
``<prefix>vectors.jsonl`` (tools/harvest_vision.py), line for line. The bodies' images
are specs (images.py), materialized into a directory that stands for the server's
``--allowed-local-media-path`` (``"{images}"`` in the flags).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from prefixkey.render import Renderer, ServerOptions

HERE: Final = Path(__file__).resolve().parent
#: Server flags → ServerOptions fields (the flags a vision corpus uses).
FLAGS: Final = {
    "--served-model-name": "served_model_name",
    "--allowed-local-media-path": "allowed_local_media_path",
    "--limit-mm-per-prompt": "limit_mm_per_prompt",
    "--mm-processor-kwargs": "mm_processor_kwargs",
    "--chat-template-content-format": "chat_template_content_format",
    "--trust-request-mm-kwargs": "trust_request_mm_kwargs",
    "--mm-hasher-algorithm": "mm_hasher_algorithm",
    "--media-io-kwargs": "media_io_kwargs",
    "--max-model-len": "max_model_len",
    "--tokenizer-mode": "tokenizer_mode",
}
#: Flags with no ServerOptions field: Mistral's format is the folder's (params.json and no
#: config.json, which vLLM's auto config format reads as mistral too), and the weights'
#: format does not reach the render.
UNREAD: Final = frozenset({"--config-format", "--load-format"})


@dataclass(frozen=True)
class VisionCase:
    """One corpus body and vLLM's answer to it."""

    id: str
    real: str
    body: dict[str, Any]
    server: dict[str, Any]
    status: int
    response: Any
    token_ids: list[int] | None
    error: dict[str, Any] | None
    #: The ``--model`` string the server had (identifiers hash it).
    model: str

    def folder(self) -> Path:
        import real_models

        return real_models.folder(self.real)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(t) for t in path.read_text("utf-8").splitlines() if t]


@cache
def vision_cases(prefix: str) -> tuple[VisionCase, ...]:
    bodies = _lines(HERE / f"{prefix}bodies.jsonl")
    vectors = {v["id"]: v for v in _lines(HERE / f"{prefix}vectors.jsonl")}
    if set(vectors) != {b["id"] for b in bodies}:
        raise AssertionError(f"{prefix}vectors.jsonl does not answer {prefix}bodies.jsonl: "
                             "re-harvest (tools/harvest_vision.py)")
    return tuple(
        VisionCase(b["id"], b["model_dir"].removeprefix("real:"), b["body"], b["server"],
                   vectors[b["id"]]["status"], vectors[b["id"]]["response"],
                   vectors[b["id"]]["token_ids"], vectors[b["id"]]["error"],
                   vectors[b["id"]]["model"])
        for b in bodies)


def server_options(case: VisionCase, image_dir: Path) -> ServerOptions:
    """The options of the case's server, its images under ``image_dir``."""
    fields: dict[str, Any] = {FLAGS[k]: (str(image_dir) if v == "{images}" else v)
                              for k, v in case.server.items() if k not in UNREAD}
    return ServerOptions(model=case.model, **fields)


_RENDERERS: dict[tuple[str, str, str, str], Renderer] = {}


def renderer(case: VisionCase, image_dir: Path) -> Renderer:
    """One Renderer per (folder, server), reused across cases."""
    key = (str(case.folder()), json.dumps(case.server, sort_keys=True), str(image_dir),
           case.model)
    if key not in _RENDERERS:
        _RENDERERS[key] = Renderer(server_options(case, image_dir), key[0])
    return _RENDERERS[key]
