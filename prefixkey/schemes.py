"""vLLM releases and the block-key scheme each one uses, as data.

A scheme era is a frozen record: the range of releases that compute the same
keys for the same request and configuration, the upstream release that
introduced it, and the facts the hasher needs. Looking up a release parses
its version properly: pre-releases, post-releases, dev and local builds
(``0.31.1.dev5+g1a2b.cu128``) belong to the era of their release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from packaging.version import InvalidVersion, Version

from .algorithms import ALGORITHMS, HashAlgorithm
from .errors import UnknownAlgorithmError, UnknownVersionError

__all__ = [
    "DEFAULT_NONE_HASH_SEED",
    "DEFAULT_VLLM_VERSION",
    "ERAS",
    "KNOWN_RELEASES",
    "Era",
    "ResolvedRelease",
    "resolve_release",
]


NoneHashRule = Literal["seed_or_random", "seed_or_default"]
LoRAKey = Literal["int_id", "name", "name_path"]
MMKey = Literal["identifier", "identifier_offset"]
MMWindow = Literal["inclusive_last_item", "overlap_last_item", "overlap_window"]
PromptEmbedsKey = Literal["ignored", "raw_bytes", "digest"]


@dataclass(frozen=True, slots=True)
class Era:
    """Releases that share one block-key scheme, and what distinguishes it.

    Each field is consulted in one place: ``none_hash`` by
    :func:`prefixkey.none_hash.resolve_none_hash`, the key shapes and the
    multimodal window by :class:`prefixkey.extra_keys.ExtraKeysBuilder`.
    """

    name: str
    #: First upstream release of the era.
    since: str
    #: What changed in ``since``, in a platform engineer's words.
    changes: str
    #: ``(algorithm, first release offering it)``, the era's default first.
    algorithms: tuple[tuple[str, str], ...]
    #: NONE_HASH with PYTHONHASHSEED unset: random per engine process
    #: ("seed_or_random"), or ``hash_fn("vllm-none-hash")`` for collision-
    #: resistant algorithms ("seed_or_default"). A set seed always gives
    #: ``hash_fn(seed)``.
    none_hash: NoneHashRule
    #: LoRA's extra key: the server's int id, the adapter name, or name and path.
    lora_key: LoRAKey
    #: A multimodal item's key: its identifier, or (identifier, offset in block).
    mm_key: MMKey
    #: Which items a block names. "inclusive": a block that starts where an
    #: item ends still names it when a hashing pass starts there; "overlap":
    #: only items overlapping the block. "last_item": a pass that resumes
    #: mid-request starts at the last item; "window": at the first item whose
    #: end lies past the block start.
    mm_window: MMWindow
    #: Prompt embeddings: not keyed, keyed by each block's raw bytes, or by their SHA-256.
    prompt_embeds_key: PromptEmbedsKey
    #: Each extra key is tagged with its source: ("lora", …), ("mm", …), …
    tagged: bool = False
    #: Speculative-decoding lookahead tokens may join the extra keys.
    lookahead: bool = False
    first_version: Version = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "first_version", Version(self.since))

    @property
    def default_algorithm(self) -> str:
        return self.algorithms[0][0]

    def algorithm(self, name: str | None, release: Version) -> HashAlgorithm:
        """The algorithm ``name`` (the era's default for None), if ``release`` offers it."""
        chosen = self.default_algorithm if name is None else name
        offered = [a for a, since in self.algorithms if Version(since) <= release]
        if chosen not in offered:
            raise UnknownAlgorithmError(
                f"hash_algo {chosen!r} is not offered by vLLM {release} "
                f"(choose one of {', '.join(offered)})"
            )
        return ALGORITHMS[chosen]


_SHA = (("sha256", "0.10.2"), ("sha256_cbor", "0.10.2"))
_ALL = (*_SHA, ("xxhash", "0.13.0"), ("xxhash_cbor", "0.13.0"))

#: Ordered oldest first; each era runs until the next one starts.
ERAS: Final[tuple[Era, ...]] = (
    Era(
        name="I",
        since="0.10.2",
        changes=(
            "block hashes become raw digest bytes (sha256 over pickle, or sha256_cbor); "
            "NONE_HASH is random per engine process unless PYTHONHASHSEED is set"
        ),
        algorithms=_SHA,
        none_hash="seed_or_random",
        lora_key="int_id",
        mm_key="identifier",
        mm_window="inclusive_last_item",
        prompt_embeds_key="ignored",
    ),
    Era(
        name="J",
        since="0.11.1",
        changes=(
            "LoRA is keyed by adapter name instead of the server's int id; prompt-embeds "
            "requests are keyed by each block's raw embedding bytes (xxhash algorithms "
            "from 0.13.0)"
        ),
        algorithms=_ALL,
        none_hash="seed_or_random",
        lora_key="name",
        mm_key="identifier",
        mm_window="inclusive_last_item",
        prompt_embeds_key="raw_bytes",
    ),
    Era(
        name="K",
        since="0.17.0",
        changes="prompt embeddings are keyed by the SHA-256 of each block's bytes",
        algorithms=_ALL,
        none_hash="seed_or_random",
        lora_key="name",
        mm_key="identifier",
        mm_window="inclusive_last_item",
        prompt_embeds_key="digest",
    ),
    Era(
        name="L",
        since="0.19.0",
        changes=(
            "a multimodal key becomes (identifier, offset within the block); a block that "
            "starts where an item ends no longer names it"
        ),
        algorithms=_ALL,
        none_hash="seed_or_random",
        lora_key="name",
        mm_key="identifier_offset",
        mm_window="overlap_last_item",
        prompt_embeds_key="digest",
    ),
    Era(
        name="M",
        since="0.29.0",
        changes=(
            "NONE_HASH is deterministic by default for sha256/sha256_cbor (seed "
            "'vllm-none-hash'): replicas share keys without PYTHONHASHSEED"
        ),
        algorithms=_ALL,
        none_hash="seed_or_default",
        lora_key="name",
        mm_key="identifier_offset",
        mm_window="overlap_last_item",
        prompt_embeds_key="digest",
    ),
    Era(
        name="N",
        since="0.31.0",
        changes=(
            "extra keys are tagged: ('lora', name, path), ('mm', identifier, offset), "
            "('cache_salt', salt), ('prompt_embeds', digest); the LoRA path joins the key; "
            "decode-time hashing finds multimodal items by window; KV events publish the "
            "untagged form"
        ),
        algorithms=_ALL,
        none_hash="seed_or_default",
        lora_key="name_path",
        mm_key="identifier_offset",
        mm_window="overlap_window",
        prompt_embeds_key="digest",
        tagged=True,
    ),
    Era(
        name="O",
        since="0.33.0",
        changes=(
            "with EAGLE/EAGLE3/MTP speculative decoding (on by default) a block's key also "
            "covers the next lookahead tokens: ((extra keys over the widened window), "
            "*lookahead tokens); otherwise keys are era N's"
        ),
        algorithms=_ALL,
        none_hash="seed_or_default",
        lora_key="name_path",
        mm_key="identifier_offset",
        mm_window="overlap_window",
        prompt_embeds_key="digest",
        tagged=True,
        lookahead=True,
    ),
)

#: NONE_HASH seed of the "seed_or_default" rule.
DEFAULT_NONE_HASH_SEED: Final = "vllm-none-hash"

#: Releases whose keys the project's vectors confirm.
KNOWN_RELEASES: Final[tuple[str, ...]] = (
    "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.13.0", "0.14.0", "0.14.1",
    "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0", "0.18.1", "0.19.0",
    "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0",
    "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0",
    "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)
DEFAULT_VLLM_VERSION: Final = "0.31.0"
_NEWEST_KNOWN: Final = max(Version(v) for v in KNOWN_RELEASES)


@dataclass(frozen=True, slots=True)
class ResolvedRelease:
    """A version string resolved to its era, with anything the caller should know."""

    version: str
    #: The release the version belongs to (pre, post, dev and local parts dropped).
    release: Version
    era: Era
    warnings: tuple[str, ...] = ()


def resolve_release(version: str, *, strict: bool = True) -> ResolvedRelease:
    """Map a vLLM version string to its scheme era.

    A release newer than any known one raises in strict mode; in lenient mode
    it takes the newest known era and says so in ``warnings``.
    """
    try:
        if not isinstance(version, str):
            raise InvalidVersion
        parsed = Version(version)
    except InvalidVersion:
        raise UnknownVersionError(f"vllm_version {version!r} is not a valid version") from None
    release = Version(parsed.base_version)
    if release < ERAS[0].first_version:
        raise UnknownVersionError(
            f"vllm_version {version}: no scheme is known before {ERAS[0].since} yet"
        )
    era = next(e for e in reversed(ERAS) if e.first_version <= release)
    if release <= _NEWEST_KNOWN:
        return ResolvedRelease(version, release, era)
    if strict:
        raise UnknownVersionError(
            f"vllm_version {version} is newer than the newest known release "
            f"{_NEWEST_KNOWN}; its keys may differ (pass strict=False to assume era {era.name})"
        )
    return ResolvedRelease(
        version,
        release,
        era,
        (f"vLLM {version} is newer than any known release; assuming era {era.name} "
         f"of {_NEWEST_KNOWN}, whose keys it may not share",),
    )
