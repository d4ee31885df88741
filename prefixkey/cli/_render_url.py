"""``prefixkey hash --render-url URL``: bodies rendered by a vLLM render server, then hashed.

The same ``endpoint`` + ``body`` lines as ``--model-dir`` (exclusive with it), posted to
the server's ``/v1/chat/completions/render`` or ``/v1/completions/render``. The server's
answer gives the token ids, ``cache_salt`` and multimodal items; the LoRA adapter comes
from the same ``--lora-modules`` the server was started with, and ``--vllm-version``
names its release (which decides the answer's JSON shape; 0.15.0 and later).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from ._render import rendered_lines

__all__ = ["add_render_url_options", "render_url_expand"]


def add_render_url_options(cmd: argparse.ArgumentParser) -> None:
    """``--render-url`` and the client options (the server flags are the render group's)."""
    group = cmd.add_argument_group("rendering through vLLM's render endpoint")
    group.add_argument("--render-url", metavar="URL",
                       help="a vLLM render server (vllm launch render, or vllm serve "
                       "--enable-scale-out): bodies are rendered there (exclusive with "
                       "--model-dir)")
    group.add_argument("--render-timeout", type=float, default=30.0, metavar="S",
                       help="seconds to wait for the server on each request (default 30)")
    group.add_argument("--enable-tower-connector-lora", action="store_true",
                       help="the engine runs with vLLM's --enable-tower-connector-lora "
                       "(multimodal identifiers of a LoRA request get its name as prefix)")


def render_url_expand(args: argparse.Namespace) -> Callable[[Any, list[str]], list[Any]]:
    """The per-line expansion through the render server (raises PrefixKeyError)."""
    from ..core import LoRA
    from ..errors import InvalidRequestError
    from ..render import RenderClient, RenderResponseParser, ServerOptions

    if args.model_dir is not None:
        raise InvalidRequestError("--render-url", "is exclusive with --model-dir")
    modules = ServerOptions.lora_modules_from(args.lora_modules)
    parser = RenderResponseParser(
        vllm_version=args.vllm_version,
        # vLLM numbers its static adapters from 1, in --lora-modules order.
        loras=[LoRA(m.name, m.path, i) for i, m in enumerate(modules, start=1)],
        served_model_names=tuple(args.served_model_name or ([args.model] if args.model else [])),
        enable_tower_connector_lora=args.enable_tower_connector_lora,
    )
    client = RenderClient(args.render_url, parser=parser, timeout=args.render_timeout)
    return lambda obj, warnings: rendered_lines(client, obj, warnings)
