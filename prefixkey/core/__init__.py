"""The keys: vLLM's prefix-cache block hashing for every release, sans-IO.

Scheme eras as data (:data:`ERAS`, :func:`resolve_release`), the algorithms,
NONE_HASH, validated requests (:class:`Request`, :class:`TokenIds`), per-block
extra keys, the :class:`Hasher` and its incremental :class:`RequestBlockHasher`,
hash jobs, and the key forms KV events and KV-cache groups use. This package
imports nothing from the rest of prefixkey but :mod:`prefixkey.errors`.
"""

from ._algorithms import (
    ALGORITHMS,
    BlockHash,
    HashAlgorithm,
)
from ._api_rules import API_RULES, ApiRule, api_rules, check_api_rules
from ._extra_keys import (
    CACHE_SALT_TAG,
    LORA_TAG,
    MM_TAG,
    PROMPT_EMBEDS_TAG,
    BlockExtraKeys,
    event_extra_keys,
)
from ._hasher import Hasher, RequestBlockHasher, block_hashes
from ._job import HashJob, JobKeys
from ._keys import block_hash_to_int64, block_hash_with_group_id, group_block_hashes
from ._none_hash import NoneHash, SeedSource
from ._prompt_embeds import DTYPE_SIZES, PromptEmbeds, mixed_prompt_token_ids
from ._request import IntArray, LoRA, MMItem, Request, TokenIds, check_token_ids
from ._schemes import (
    DEFAULT_NONE_HASH_SEED,
    DEFAULT_VLLM_VERSION,
    ERAS,
    KNOWN_RELEASES,
    Era,
    ResolvedRelease,
    resolve_release,
)

__all__ = [
    "ALGORITHMS",
    "API_RULES",
    "CACHE_SALT_TAG",
    "DEFAULT_NONE_HASH_SEED",
    "DEFAULT_VLLM_VERSION",
    "DTYPE_SIZES",
    "ERAS",
    "KNOWN_RELEASES",
    "LORA_TAG",
    "MM_TAG",
    "PROMPT_EMBEDS_TAG",
    "ApiRule",
    "BlockExtraKeys",
    "BlockHash",
    "Era",
    "HashAlgorithm",
    "HashJob",
    "Hasher",
    "IntArray",
    "JobKeys",
    "LoRA",
    "MMItem",
    "NoneHash",
    "PromptEmbeds",
    "Request",
    "RequestBlockHasher",
    "ResolvedRelease",
    "SeedSource",
    "TokenIds",
    "api_rules",
    "block_hash_to_int64",
    "block_hash_with_group_id",
    "block_hashes",
    "check_api_rules",
    "check_token_ids",
    "event_extra_keys",
    "group_block_hashes",
    "mixed_prompt_token_ids",
    "resolve_release",
]
