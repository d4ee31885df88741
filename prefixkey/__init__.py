"""prefixkey: vLLM's prefix-cache block keys, bit for bit, outside vLLM.

Build a :class:`Hasher` once per replica configuration and reuse it::

    from prefixkey import Hasher, Request, LoRA

    hasher = Hasher(block_size=16)                     # vLLM 0.31.0, sha256
    keys = hasher.block_hashes(Request(token_ids, lora=LoRA("sql", "/adapters/sql")))

or call :func:`block_hashes` for a one-off.
"""

from .audit import AuditReport, RequestAudit, audit
from .drift import DriftConfig, DriftReport, drift
from .errors import (
    InvalidRequestError,
    MalformedJSONError,
    PrefixKeyError,
    UnknownAlgorithmError,
    UnknownVersionError,
    UnreproducibleKeysError,
)
from .event_decoding import (
    DecodedBatch,
    DecodedMessage,
    DecodeLimits,
    EventDecodeError,
    EventDecoder,
    EventFieldError,
    EventFramingError,
    MalformedPayloadError,
    MissingEventFieldError,
    PayloadTooLargeError,
    ReplayEnd,
    UnknownEventTypeError,
)
from .event_extra_keys import (
    AmbiguousExtraKeysError,
    BlockKeyCandidates,
    ExtraKeysConversionError,
    ExtraKeysNotPublishedError,
    MissingLoRAPathError,
    event_extra_keys_to_typed,
    typed_extra_keys_of,
)
from .extra_keys import event_extra_keys
from .fingerprint import FingerprintReport, fingerprint
from .hasher import Hasher, RequestBlockHasher, block_hashes
from .index import (
    GroupSpec,
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    UnknownReplicaError,
    UnsupportedLayoutError,
)
from .index_redis import PrefixIndexBackend, RedisPrefixIndex
from .keys import block_hash_to_int64, block_hash_with_group_id, group_block_hashes
from .prompt_embeds import PromptEmbeds, mixed_prompt_token_ids
from .request import LoRA, MMItem, Request, check_api_rules
from .routing import PreparedRequest, RouteDecision, Router
from .schemes import DEFAULT_VLLM_VERSION, resolve_release

__all__ = [
    "DEFAULT_VLLM_VERSION",
    "AmbiguousExtraKeysError",
    "AuditReport",
    "BlockKeyCandidates",
    "DecodeLimits",
    "DecodedBatch",
    "DecodedMessage",
    "DriftConfig",
    "DriftReport",
    "EventDecodeError",
    "EventDecoder",
    "EventFieldError",
    "EventFramingError",
    "ExtraKeysConversionError",
    "ExtraKeysNotPublishedError",
    "FingerprintReport",
    "GroupSpec",
    "Hasher",
    "InvalidRequestError",
    "LoRA",
    "MMItem",
    "MalformedJSONError",
    "MalformedPayloadError",
    "MissingEventFieldError",
    "MissingLoRAPathError",
    "PayloadTooLargeError",
    "PrefixIndex",
    "PrefixIndexBackend",
    "PrefixKeyError",
    "PreparedRequest",
    "PromptEmbeds",
    "RedisPrefixIndex",
    "ReplayEnd",
    "ReplicaId",
    "ReplicaScheme",
    "Request",
    "RequestAudit",
    "RequestBlockHasher",
    "RouteDecision",
    "Router",
    "UnknownAlgorithmError",
    "UnknownEventTypeError",
    "UnknownReplicaError",
    "UnknownVersionError",
    "UnreproducibleKeysError",
    "UnsupportedLayoutError",
    "audit",
    "block_hash_to_int64",
    "block_hash_with_group_id",
    "block_hashes",
    "check_api_rules",
    "drift",
    "event_extra_keys",
    "event_extra_keys_to_typed",
    "fingerprint",
    "group_block_hashes",
    "mixed_prompt_token_ids",
    "resolve_release",
    "typed_extra_keys_of",
]

__version__ = "0.1.0"
