"""Render OpenAI request bodies into the token ids vLLM hashes, in process.

A :class:`Renderer`, built once from a model folder and the replica's server
flags (:class:`ServerOptions`), turns a ``/v1/chat/completions`` or
``/v1/completions`` body into the token ids vLLM 0.31.0's OpenAI server
computes for it, as :class:`~prefixkey.core.Request` objects a hasher keys
directly::

    from prefixkey import Hasher
    from prefixkey.render import Renderer, ServerOptions

    renderer = Renderer(ServerOptions(model="/models/qwen2-7b"))
    (rendered,) = renderer.render("/v1/chat/completions", body)
    keys = Hasher(block_size=16).block_hashes(rendered.request)

gpt-oss folders render with Harmony (the ``harmony`` extra, docs/render-harmony.md),
Mistral's own format with mistral_common under the server's ``--tokenizer-mode
mistral`` (the ``mistral`` extra, docs/render-mistral.md), DeepSeek-V3.2 with its
Python encoder as vLLM's mode ``deepseek_v32`` does (docs/render-deepseek.md). What
cannot be rendered exactly in pure Python (Mistral folders without the server's
``--tokenizer-mode``, other renderers that are not Jinja, tokenizer classes whose
rebuild is not reproduced, images of architectures other than BLIP-2) is a
:class:`RenderUnsupportedError`: render those with
vLLM's render endpoint. Bodies vLLM itself refuses are a
:class:`RenderRequestError` with the status vLLM answers. Needs the
``render`` extra (``tokenizers``, ``jinja2``); ``tokenizer_mode="mistral"`` the
``mistral`` extra (``mistral_common``, docs/render-mistral.md).
"""

from .._extras import needs_extra

with needs_extra("render", "prefixkey.render"):
    from ._chat import ContentParts
    from ._client import RenderClient
    from ._endpoint import (
        RENDER_PATHS,
        RENDER_RESPONSE_SHAPES,
        RenderEndpointError,
        RenderResponseParser,
        RenderResponseShape,
        render_response_shape,
    )
    from ._errors import ModelFolderError, RenderRequestError, RenderUnsupportedError
    from ._media import MediaFetcher, fetch_media_url
    from ._options import VERIFIED_RELEASES, LoRAModule, ServerOptions, parse_lora_module
    from ._renderer import CHAT_ENDPOINT, COMPLETIONS_ENDPOINT, Rendered, Renderer


__all__ = [
    "CHAT_ENDPOINT",
    "COMPLETIONS_ENDPOINT",
    "RENDER_PATHS",
    "RENDER_RESPONSE_SHAPES",
    "VERIFIED_RELEASES",
    "ContentParts",
    "LoRAModule",
    "MediaFetcher",
    "ModelFolderError",
    "RenderClient",
    "RenderEndpointError",
    "RenderRequestError",
    "RenderResponseParser",
    "RenderResponseShape",
    "RenderUnsupportedError",
    "Rendered",
    "Renderer",
    "ServerOptions",
    "fetch_media_url",
    "parse_lora_module",
    "render_response_shape",
]
