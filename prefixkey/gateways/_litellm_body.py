"""The body LiteLLM sends to a vLLM deployment, built by LiteLLM's own transformation.

LiteLLM does not forward a chat request as its caller wrote it: for a
``hosted_vllm/…`` deployment it maps the OpenAI parameters
(``get_optional_params``: tools lose ``strict`` and ``additionalProperties``,
custom tools become function tools, ``thinking`` becomes
``reasoning_effort``), rewrites the messages
(``HostedVLLMChatConfig.transform_request``: assistant content lists joined
into text, thinking blocks dropped, video files turned into ``video_url``),
sends the deployment's model name without its provider prefix and spreads
``extra_body`` into the body. Every one of those changes what vLLM's chat
template renders, so the plugin renders the body built here, by the same
LiteLLM functions, never the caller's (tests/gateways/test_litellm.py checks
it against the bodies a replica receives).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping
from typing import Any, Final

from litellm.llms.hosted_vllm.chat.transformation import HostedVLLMChatConfig
from litellm.utils import get_optional_params

__all__ = ["vllm_chat_body"]

_CONFIG: Final = HostedVLLMChatConfig()

#: The OpenAI parameters ``get_optional_params`` maps by name (read from its signature).
_NAMED: Final = frozenset(
    name for name, p in inspect.signature(get_optional_params).parameters.items()
    if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
) - {"model", "custom_llm_provider", "messages", "model_info", "base_model"}

#: vLLM's own body fields a caller may pass to LiteLLM as keywords: LiteLLM forwards
#: them as provider parameters, and each changes the rendered ids.
_VLLM_FIELDS: Final = frozenset({
    "chat_template", "chat_template_kwargs", "add_generation_prompt", "continue_final_message",
    "documents", "add_special_tokens", "cache_salt", "truncate_prompt_tokens",
    "mm_processor_kwargs", "echo",
})

#: A deployment's ``litellm_params`` that are where and how to call it, not body fields.
_CONNECTION: Final = frozenset({
    "model", "api_base", "api_key", "api_version", "timeout", "stream_timeout", "max_retries",
    "organization", "rpm", "tpm", "weight", "order", "custom_llm_provider", "input_cost_per_token",
    "output_cost_per_token", "use_in_pass_through", "merge_reasoning_content_in_choices",
    "litellm_credential_name", "region_name", "tags", "configurable_clientside_auth_params",
})


def vllm_chat_body(deployment: Mapping[str, Any], messages: Any,
                   request_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The chat body LiteLLM posts to ``deployment`` for a call with these kwargs.

    Only the fields that reach vLLM's renderer need be exact; the others
    (sampling, ``stream``) are kept as LiteLLM writes them.
    """
    params = deployment.get("litellm_params") or {}
    model = str(params.get("model", "")).split("/", 1)[-1]
    given = {k: v for k, v in params.items() if k not in _CONNECTION}
    given.update(request_kwargs)
    named = {k: copy.deepcopy(v) for k, v in given.items() if k in _NAMED and v is not None}
    special = {k: copy.deepcopy(v) for k, v in given.items() if k in _VLLM_FIELDS}
    if isinstance(given.get("extra_body"), Mapping):
        special["extra_body"] = copy.deepcopy(dict(given["extra_body"]))
    messages = copy.deepcopy(list(messages or ()))
    optional = get_optional_params(model=model, custom_llm_provider="hosted_vllm",
                                   messages=messages, **named, **special)
    body: dict[str, Any] = dict(_CONFIG.transform_request(
        model=model, messages=messages, optional_params=optional, litellm_params={},
        headers={}))
    extra = body.pop("extra_body", None)
    if isinstance(extra, Mapping):  # what the OpenAI client does with extra_body
        body.update(extra)
    return body
