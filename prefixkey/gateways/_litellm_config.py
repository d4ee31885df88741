"""What the LiteLLM plugin reads of a deployment: its ``model_info["prefixkey"]`` (sans-IO).

A LiteLLM deployment is a dict (``model_name``, ``litellm_params``,
``model_info``); a vLLM replica the plugin routes by prefix is a
``hosted_vllm/…`` deployment whose ``model_info`` carries a ``prefixkey``
mapping. The same mapping is written in Python or in the proxy's YAML, so
every value is checked here and a bad one names the deployment and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..core import DEFAULT_VLLM_VERSION, Hasher
from ..core._checks import int_refusal, number_refusal
from ..errors import InvalidRequestError
from ..fleet import ReplicaEndpoint, ReplicaScheme

__all__ = ["PROVIDER_PREFIX", "ReplicaConfig", "deployment_id", "replica_config"]

#: The LiteLLM provider of vLLM's OpenAI server: the only deployments routed by prefix.
PROVIDER_PREFIX: Final = "hosted_vllm/"

#: The keys of ``model_info["prefixkey"]`` and what each must be.
_KEYS: Final[Mapping[str, str]] = {
    "kv_events": "the replica's --kv-events-config endpoint (tcp://host:port)",
    "replay": "its replay_endpoint (tcp://host:port)",
    "topic": "its topic (default '')",
    "vllm_version": f"the replica's vLLM release (default {DEFAULT_VLLM_VERSION})",
    "block_size": "its --block-size (with hash_algo and python_hash_seed: the key scheme; "
                  "without, learned from its events)",
    "hash_algo": "its --prefix-caching-hash-algo (default sha256)",
    "python_hash_seed": "its PYTHONHASHSEED (a string; null when unset)",
    "model_dir": "the folder holding the model's tokenizer and chat template",
    "server_options": "other `vllm serve` flags that change rendering (ServerOptions fields)",
    "kv_cache_size_tokens": "its KV-cache capacity in tokens (vLLM's kv_cache_size_tokens: "
                            "the cost model's cache pressure)",
}


@dataclass(frozen=True)
class ReplicaConfig:
    """One vLLM deployment as the plugin sees it."""

    #: LiteLLM's deployment id (``model_info.id``): the replica's name in the index.
    name: str
    #: The model group (``model_name``) the deployment serves.
    group: str
    #: The model name vLLM serves (``litellm_params.model`` without ``hosted_vllm/``).
    served_model: str
    #: The replica's vLLM release (its wire era, key scheme and rendering).
    vllm_version: str
    endpoint: ReplicaEndpoint | None
    model_dir: str | None
    server_options: Mapping[str, Any] = field(default_factory=dict)
    #: The replica's KV-cache capacity in tokens (``Router(cache_tokens=…)``), when given.
    kv_cache_size_tokens: float | None = None

    @property
    def render_key(self) -> tuple[object, ...]:
        """What decides the token ids: deployments sharing it share one Renderer."""
        return (self.model_dir, self.served_model, self.vllm_version,
                tuple(sorted((k, repr(v)) for k, v in self.server_options.items())))


def deployment_id(deployment: Mapping[str, Any]) -> str:
    """LiteLLM's id of a deployment (``model_info.id``, which LiteLLM always sets)."""
    info = deployment.get("model_info")
    rid = info.get("id") if isinstance(info, Mapping) else None
    if not isinstance(rid, str) or not rid:
        raise InvalidRequestError("model_info.id", f"a deployment has no id: {deployment!r}")
    return rid


def _text(name: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequestError(f"model_info.prefixkey.{key}",
                                  f"deployment {name}: must be a non-empty string, got {value!r}")
    return value


def replica_config(deployment: Mapping[str, Any]) -> ReplicaConfig | None:
    """The deployment's configuration, or None when it is not a vLLM replica to route by prefix."""
    params = deployment.get("litellm_params")
    info = deployment.get("model_info")
    model = params.get("model") if isinstance(params, Mapping) else None
    config = info.get("prefixkey") if isinstance(info, Mapping) else None
    if config is None:
        return None
    name = deployment_id(deployment)
    if not isinstance(config, Mapping):
        raise InvalidRequestError("model_info.prefixkey",
                                  f"deployment {name}: must be a mapping, got {config!r}")
    if not isinstance(model, str) or not model.startswith(PROVIDER_PREFIX):
        raise InvalidRequestError("litellm_params.model", f"deployment {name}: prefix routing "
                                  f"needs a {PROVIDER_PREFIX}… model (vLLM), got {model!r}")
    unknown = sorted(set(config) - set(_KEYS))
    if unknown:
        raise InvalidRequestError(f"model_info.prefixkey.{unknown[0]}",
                                  f"deployment {name}: unknown key; the keys are "
                                  + "; ".join(f"{k}: {v}" for k, v in _KEYS.items()))
    version = _text(name, "vllm_version", config.get("vllm_version", DEFAULT_VLLM_VERSION))
    scheme = None
    if config.get("block_size") is not None:
        block_size = config["block_size"]
        refusal = int_refusal(block_size)
        if refusal is not None:
            raise InvalidRequestError("model_info.prefixkey.block_size",
                                      f"deployment {name}: {refusal}")
        seed = config.get("python_hash_seed")
        if seed is not None:
            seed = _text(name, "python_hash_seed", seed)
        scheme = ReplicaScheme(Hasher(
            block_size=block_size, hash_algo=_text(name, "hash_algo",
                                                   config.get("hash_algo", "sha256")),
            python_hash_seed=seed, vllm_version=version))
    elif "hash_algo" in config or "python_hash_seed" in config:
        raise InvalidRequestError("model_info.prefixkey.block_size", f"deployment {name}: "
                                  "hash_algo and python_hash_seed need block_size too")
    endpoint = None
    if config.get("kv_events") is not None:
        replay = config.get("replay")
        endpoint = ReplicaEndpoint(
            name, _text(name, "kv_events", config["kv_events"]), version,
            replay_endpoint=None if replay is None else _text(name, "replay", replay),
            topic=config.get("topic", "") if isinstance(config.get("topic", ""), str)
            else _text(name, "topic", config["topic"]),
            scheme=scheme)
    model_dir = config.get("model_dir")
    options = config.get("server_options", {})
    if not isinstance(options, Mapping):
        raise InvalidRequestError("model_info.prefixkey.server_options",
                                  f"deployment {name}: must be a mapping, got {options!r}")
    capacity = config.get("kv_cache_size_tokens")
    if capacity is not None:
        refusal = number_refusal(capacity, strict=True)
        if refusal is not None:
            raise InvalidRequestError("model_info.prefixkey.kv_cache_size_tokens",
                                      f"deployment {name}: {refusal}")
    group = deployment.get("model_name")
    return ReplicaConfig(
        name=name, group=group if isinstance(group, str) else "",
        served_model=model[len(PROVIDER_PREFIX):], vllm_version=version, endpoint=endpoint,
        model_dir=None if model_dir is None else _text(name, "model_dir", model_dir),
        server_options=dict(options),
        kv_cache_size_tokens=None if capacity is None else float(capacity))
