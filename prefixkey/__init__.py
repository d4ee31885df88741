"""prefixkey: vLLM's prefix-cache block keys, bit for bit, outside vLLM.

Build a :class:`Hasher` once per replica configuration and reuse it::

    from prefixkey import Hasher, Request, LoRA

    hasher = Hasher(block_size=16)                     # vLLM 0.31.0, sha256
    keys = hasher.block_hashes(Request(token_ids, lora=LoRA("sql", "/adapters/sql")))

or call :func:`block_hashes` for a one-off. The rest lives in subpackages:
``prefixkey.core`` (schemes, algorithms, key forms), ``prefixkey.events`` (KV-event
wire codec and recordings), ``prefixkey.fleet`` (index, routing, subscriber),
``prefixkey.analysis`` (drift, fingerprint, audit), ``prefixkey.testing``
(strategies, oracle, vectors) and ``prefixkey.jsonl`` (the JSON Lines format).
"""

from ._version import __version__ as __version__
from .core import (
    DEFAULT_VLLM_VERSION,
    Hasher,
    LoRA,
    MMItem,
    PromptEmbeds,
    Request,
    RequestBlockHasher,
    block_hash_to_int64,
    block_hash_with_group_id,
    block_hashes,
    check_api_rules,
    event_extra_keys,
    group_block_hashes,
    mixed_prompt_token_ids,
    resolve_release,
)
from .errors import (
    FrozenError,
    InvalidRequestError,
    JSONLimitError,
    MalformedJSONError,
    PrefixKeyError,
    UnknownAlgorithmError,
    UnknownVersionError,
    UnreproducibleKeysError,
)

__all__ = [
    "DEFAULT_VLLM_VERSION",
    "FrozenError",
    "Hasher",
    "InvalidRequestError",
    "JSONLimitError",
    "LoRA",
    "MMItem",
    "MalformedJSONError",
    "PrefixKeyError",
    "PromptEmbeds",
    "Request",
    "RequestBlockHasher",
    "UnknownAlgorithmError",
    "UnknownVersionError",
    "UnreproducibleKeysError",
    "block_hash_to_int64",
    "block_hash_with_group_id",
    "block_hashes",
    "check_api_rules",
    "event_extra_keys",
    "group_block_hashes",
    "mixed_prompt_token_ids",
    "resolve_release",
]
