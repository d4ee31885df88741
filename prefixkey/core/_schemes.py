"""vLLM releases and the block-key scheme each one uses, as data.

A scheme era is a frozen record: the range of releases that compute the same
keys for the same request and configuration, the upstream release that
introduced it, and the facts the hasher needs. Looking up a release parses
its version properly: pre-releases, post-releases, dev and local builds
(``0.31.1.dev5+g1a2b.cu128``) belong to the era of their release.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final, Literal

from packaging.version import InvalidVersion, Version

from ..errors import UnknownAlgorithmError, UnknownVersionError
from ._algorithms import ALGORITHMS, FLAT_ALGORITHMS, INT_ALGORITHMS, HashAlgorithm
from ._era_table import era_at, era_end, release_range, releases_between

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
    :func:`prefixkey.core.resolve_none_hash`, the key shapes and the
    multimodal window by :class:`prefixkey.core.ExtraKeysBuilder`,
    ``published_extra_keys`` by :func:`prefixkey.core.event_extra_keys` (and
    its inverse in :mod:`prefixkey.events`).
    """

    name: str
    #: First upstream release of the era.
    since: str
    #: What changed in ``since``, in a platform engineer's words.
    changes: str
    #: ``(algorithm, first release offering it)``, the era's default first.
    algorithms: tuple[tuple[str, str], ...]
    #: The first block's parent (see :mod:`prefixkey.core._none_hash`): ``None``
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
    #: The key of a KV-cache group block k hash blocks long: not supported
    #: (every group uses the hash block size), the concatenation of its k
    #: hashes (0.12-0.23), or the last of them (0.24+).
    group_keys: Literal["none", "concatenated", "last"] = "last"
    #: What a BlockStored event's ``extra_keys`` carries per block: nothing
    #: (the field arrived in 0.17.0), the hashed tuple itself, or its untagged
    #: form (0.31+: vLLM's ``to_event_extra_keys``).
    published_extra_keys: Literal["none", "hashed", "untagged"] = "untagged"
    first_version: Version = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "first_version", Version(self.since))

    @property
    def default_algorithm(self) -> str:
        return self.algorithms[0][0]

    @property
    def span(self) -> str:
        """The known releases of the era, as messages name it: "0.31.0-0.32.0", "0.33.0".

        Messages name releases, never the era's letter (other docs use letters too).
        """
        releases = releases_between(KNOWN_RELEASES, self.first_version, era_end(ERAS, self))
        return release_range(releases) if releases else f"{self.since}+"

    def offered_algorithms(self, release: Version) -> tuple[str, ...]:
        """The algorithms ``release`` (a release of this era) offers, the default first."""
        return tuple(a for a, since in self.algorithms if Version(since) <= release)

    def algorithm(self, name: str | None, release: Version) -> HashAlgorithm:
        """The algorithm ``name`` (the era's default for None), if ``release`` offers it."""
        chosen = self.default_algorithm if name is None else name
        offered = self.offered_algorithms(release)
        if chosen not in offered:
            raise UnknownAlgorithmError(
                f"hash_algo {chosen!r} is not offered by vLLM {release} "
                f"(choose one of {', '.join(offered)})"
            )
        if self.hash_type == "bytes":
            return ALGORITHMS[chosen]
        return (FLAT_ALGORITHMS if self.block_tuple == "flat" else INT_ALGORITHMS)[chosen]


_BUILTIN = (("builtin", "0.7.0"),)
_BUILTIN_SHA = (*_BUILTIN, ("sha256", "0.8.3"))
_INT = (*_BUILTIN_SHA, ("sha256_cbor_64bit", "0.10.0"))
_SHA = (("sha256", "0.10.2"), ("sha256_cbor", "0.10.2"))
_ALL = (*_SHA, ("xxhash", "0.13.0"), ("xxhash_cbor", "0.13.0"))


def _eras() -> tuple[Era, ...]:
    """Each era is the one before it with what its first release changed."""
    a = Era(
        name="A",
        since="0.7.0",
        changes=(
            "V1 prefix cache: hash((parent, *tokens)) with builtin hash(); the first parent is "
            "None; multimodal hashes are not part of the key"
        ),
        algorithms=_BUILTIN, none_hash="none", lora_key="unkeyed", mm_key="identifier",
        mm_window="inclusive_last_item", prompt_embeds_key="ignored", hash_type="int",
        block_tuple="flat", empty_extra_keys="empty_tuple", cache_salt=False,
        decode_pass="per_block", group_keys="none", published_extra_keys="none",
    )
    b = replace(
        a, name="B", since="0.7.1", block_tuple="nested",
        changes="the key becomes hash((parent, tuple(tokens), extra_keys)) with mm hashes",
    )
    c = replace(
        b, name="C", since="0.7.2", none_hash="hash_of_none_string",
        changes="the first parent becomes hash('None'), which depends on PYTHONHASHSEED",
    )
    d = replace(
        c, name="D", since="0.7.3", lora_key="int_id", empty_extra_keys="none",
        changes="the LoRA int id joins the extra keys, which are None when empty",
    )
    e = replace(
        d, name="E", since="0.8.3", algorithms=_BUILTIN_SHA, none_hash="sha256_of_none_or_random",
        changes=(
            "--prefix-caching-hash-algo sha256 (int of SHA-256 over pickle); NONE_HASH is "
            "SHA-256 of None when PYTHONHASHSEED is unset and random when it is set"
        ),
    )
    f = replace(
        e, name="F", since="0.8.5", none_hash="sha256_of_seed_or_random",
        changes="NONE_HASH is SHA-256 of PYTHONHASHSEED when set, random otherwise",
    )
    g = replace(
        f, name="G", since="0.9.0", cache_salt=True,
        changes="cache_salt joins the first block's extra keys",
    )
    h = replace(
        g, name="H", since="0.10.0", algorithms=_INT, none_hash="seed_or_random",
        changes=(
            "NONE_HASH is hash_fn(PYTHONHASHSEED) when set (random otherwise); new algorithm "
            "sha256_cbor_64bit (low 64 bits of SHA-256 over canonical CBOR)"
        ),
    )
    h1 = replace(
        h, name="H1", since="0.10.1", decode_pass="per_call",
        changes=(
            "decode-time blocks are hashed when tokens are appended, one pass per append "
            "resuming at the last multimodal item (before, each block resumed there)"
        ),
    )
    i = replace(
        h1, name="I", since="0.10.2", hash_type="bytes", algorithms=_SHA,
        changes=(
            "block hashes become raw digest bytes (sha256 over pickle, or sha256_cbor); "
            "NONE_HASH is random per engine process unless PYTHONHASHSEED is set"
        ),
    )
    j = replace(
        i, name="J", since="0.11.1", algorithms=_ALL, lora_key="name",
        prompt_embeds_key="raw_bytes",
        changes=(
            "LoRA is keyed by adapter name instead of the server's int id; prompt-embeds "
            "requests are keyed by each block's raw embedding bytes"
        ),
    )
    j1 = replace(
        j, name="J1", since="0.12.0", group_keys="concatenated",
        changes=(
            "KV-cache groups whose block size is k times the hash block size key each block "
            "by the concatenation of its k hashes (hybrid models); xxhash and xxhash_cbor "
            "from 0.13.0"
        ),
    )
    k = replace(
        j1, name="K", since="0.17.0", prompt_embeds_key="digest", published_extra_keys="hashed",
        changes=(
            "prompt embeddings are keyed by the SHA-256 of each block's bytes; KV events "
            "publish each block's extra keys"
        ),
    )
    l_ = replace(
        k, name="L", since="0.19.0", mm_key="identifier_offset", mm_window="overlap_last_item",
        changes=(
            "a multimodal key becomes (identifier, offset within the block); a block that "
            "starts where an item ends no longer names it"
        ),
    )
    l1 = replace(
        l_, name="L1", since="0.24.0", group_keys="last",
        changes=(
            "a coarser KV-cache group keys each block by its last hash instead of the "
            "concatenation (the 64-bit event ints are unchanged)"
        ),
    )
    m = replace(
        l1, name="M", since="0.29.0", none_hash="seed_or_default",
        changes=(
            "NONE_HASH is deterministic by default for sha256/sha256_cbor (seed "
            "'vllm-none-hash'): replicas share keys without PYTHONHASHSEED"
        ),
    )
    n = replace(
        m, name="N", since="0.31.0", lora_key="name_path", mm_window="overlap_window",
        tagged=True, published_extra_keys="untagged",
        changes=(
            "extra keys are tagged: ('lora', name, path), ('mm', identifier, offset), "
            "('cache_salt', salt), ('prompt_embeds', digest); the LoRA path joins the key; "
            "decode-time hashing finds multimodal items by window; KV events publish the "
            "untagged form"
        ),
    )
    o = replace(
        n, name="O", since="0.33.0", lookahead=True,
        changes=(
            "with EAGLE/EAGLE3/MTP speculative decoding (on by default) a block's key also "
            "covers the next lookahead tokens: ((extra keys over the widened window), "
            "*lookahead tokens); otherwise its keys are 0.31.0-0.32.0's"
        ),
    )
    return (a, b, c, d, e, f, g, h, h1, i, j, j1, k, l_, l1, m, n, o)


#: Ordered oldest first; each era runs until the next one starts.
ERAS: Final[tuple[Era, ...]] = _eras()

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
#: The release assumed when none is given.
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

    @property
    def release_name(self) -> str:
        """The release as at least ``X.Y.Z`` ("0.31", "v0.31.0rc1": "0.31.0")."""
        parts = self.release.release
        return ".".join(map(str, (*parts, 0, 0)[: max(3, len(parts))]))


def resolve_release(version: str, *, strict: bool = True) -> ResolvedRelease:
    """Map a vLLM version string to its scheme era.

    A release newer than any known one raises in strict mode; in lenient mode
    it takes the newest known era and says so in ``warnings``.
    """
    try:
        if not isinstance(version, str):
            raise InvalidVersion
        parsed = Version(version)
    except ValueError:  # InvalidVersion, or a part past CPython's 4300-digit int limit
        raise UnknownVersionError(f"vllm_version {version!r} is not a valid version") from None
    release = Version(parsed.base_version)
    if release < ERAS[0].first_version:
        raise UnknownVersionError(
            f"vllm_version {version}: no scheme is known before {ERAS[0].since} yet"
        )
    era = era_at(ERAS, release)
    assert era is not None  # checked above: not before the first era
    if release <= _NEWEST_KNOWN:
        return ResolvedRelease(version, release, era)
    if strict:
        raise UnknownVersionError(
            f"vllm_version {version} is newer than the newest known release "
            f"{_NEWEST_KNOWN}; its keys may differ (pass strict=False, or --lenient on the "
            f"command line, to assume the keys of vLLM {era.span})"
        )
    return ResolvedRelease(
        version,
        release,
        era,
        (f"vLLM {version} is newer than any known release; assuming the keys of vLLM "
         f"{era.span}, which it may not share",),
    )
