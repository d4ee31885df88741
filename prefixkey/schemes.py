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

from .algorithms import ALGORITHMS, FLAT_ALGORITHMS, INT_ALGORITHMS, HashAlgorithm
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


NoneHashRule = Literal[
    "none", "hash_of_none_string", "sha256_of_none_or_random", "sha256_of_seed_or_random",
    "seed_or_random", "seed_or_default",
]
LoRAKey = Literal["unkeyed", "int_id", "name", "name_path"]
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
    #: The first block's parent (see :mod:`prefixkey.none_hash`): ``None``
    #: itself; builtin ``hash("None")``; SHA-256 of ``None`` with the seed unset
    #: and random with it set (0.8.3's inverted test); SHA-256 of the seed or
    #: random; ``hash_fn(seed)`` or random; ``hash_fn(seed)`` or, for
    #: collision-resistant algorithms, ``hash_fn("vllm-none-hash")``.
    none_hash: NoneHashRule
    #: LoRA's extra key: none, the server's int id, the adapter name, or name and path.
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
    #: Keys are digest bytes, or Python ints (builtin hash(), int SHA-256).
    hash_type: Literal["bytes", "int"] = "bytes"
    #: The hashed value: ``(parent, tokens, extra_keys)``, or 0.7.0's
    #: ``(parent, *tokens)`` with no extra keys.
    block_tuple: Literal["nested", "flat"] = "nested"
    #: A multimodal request's block that names no item: ``None``, or ``()``
    #: (0.7.0-0.7.2, unless the block lies past every item).
    empty_extra_keys: Literal["none", "empty_tuple"] = "none"
    #: ``cache_salt`` joins block 0's keys (0.9.0+).
    cache_salt: bool = True
    #: Decode-time blocks: each hashed on its own, resuming at the last item
    #: (the block pool, up to 0.10.0), or one pass per append (0.10.1+).
    decode_pass: Literal["per_block", "per_call"] = "per_call"
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
        if self.hash_type == "bytes":
            return ALGORITHMS[chosen]
        return (FLAT_ALGORITHMS if self.block_tuple == "flat" else INT_ALGORITHMS)[chosen]


_SHA = (("sha256", "0.10.2"), ("sha256_cbor", "0.10.2"))
_ALL = (*_SHA, ("xxhash", "0.13.0"), ("xxhash_cbor", "0.13.0"))
_BUILTIN = (("builtin", "0.7.0"),)
_BUILTIN_SHA = (*_BUILTIN, ("sha256", "0.8.3"))
_INT = (*_BUILTIN_SHA, ("sha256_cbor_64bit", "0.10.0"))
# The int-keyed eras: builtin hash() keys (the default up to 0.10.1.1) and
# the int forms of SHA-256.
_INT_ERA: Final = {
    "hash_type": "int", "mm_key": "identifier", "mm_window": "inclusive_last_item",
    "prompt_embeds_key": "ignored", "decode_pass": "per_block",
}

#: Ordered oldest first; each era runs until the next one starts.
ERAS: Final[tuple[Era, ...]] = (
    Era(
        name="A",
        since="0.7.0",
        changes=(
            "V1 prefix cache: hash((parent, *tokens)) with builtin hash(); the first parent is "
            "None; multimodal hashes are not part of the key"
        ),
        algorithms=_BUILTIN, none_hash="none", lora_key="unkeyed", block_tuple="flat",
        empty_extra_keys="empty_tuple", cache_salt=False, **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="B",
        since="0.7.1",
        changes="the key becomes hash((parent, tuple(tokens), extra_keys)) with mm hashes",
        algorithms=_BUILTIN, none_hash="none", lora_key="unkeyed",
        empty_extra_keys="empty_tuple", cache_salt=False, **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="C",
        since="0.7.2",
        changes="the first parent becomes hash('None'), which depends on PYTHONHASHSEED",
        algorithms=_BUILTIN, none_hash="hash_of_none_string", lora_key="unkeyed",
        empty_extra_keys="empty_tuple", cache_salt=False, **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="D",
        since="0.7.3",
        changes="the LoRA int id joins the extra keys, which are None when empty",
        algorithms=_BUILTIN, none_hash="hash_of_none_string", lora_key="int_id",
        cache_salt=False, **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="E",
        since="0.8.3",
        changes=(
            "--prefix-caching-hash-algo sha256 (int of SHA-256 over pickle); NONE_HASH is "
            "SHA-256 of None when PYTHONHASHSEED is unset and random when it is set"
        ),
        algorithms=_BUILTIN_SHA, none_hash="sha256_of_none_or_random", lora_key="int_id",
        cache_salt=False, **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="F",
        since="0.8.5",
        changes="NONE_HASH is SHA-256 of PYTHONHASHSEED when set, random otherwise",
        algorithms=_BUILTIN_SHA, none_hash="sha256_of_seed_or_random", lora_key="int_id",
        cache_salt=False, **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="G",
        since="0.9.0",
        changes="cache_salt joins the first block's extra keys",
        algorithms=_BUILTIN_SHA, none_hash="sha256_of_seed_or_random", lora_key="int_id",
        **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="H",
        since="0.10.0",
        changes=(
            "NONE_HASH is hash_fn(PYTHONHASHSEED) when set (random otherwise); new algorithm "
            "sha256_cbor_64bit (low 64 bits of SHA-256 over canonical CBOR)"
        ),
        algorithms=_INT, none_hash="seed_or_random", lora_key="int_id",
        **_INT_ERA,  # type: ignore[arg-type]
    ),
    Era(
        name="H1",
        since="0.10.1",
        changes=(
            "decode-time blocks are hashed when tokens are appended, one pass per append "
            "resuming at the last multimodal item (before, each block resumed there)"
        ),
        algorithms=_INT, none_hash="seed_or_random", lora_key="int_id",
        **{**_INT_ERA, "decode_pass": "per_call"},  # type: ignore[arg-type]
    ),
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
    "0.7.0", "0.7.1", "0.7.2", "0.7.3", "0.8.0", "0.8.1", "0.8.2", "0.8.3", "0.8.4", "0.8.5",
    "0.8.5.post1", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.1.1",
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
