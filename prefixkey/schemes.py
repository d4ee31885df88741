"""vLLM releases and the block-key scheme each one uses, as data.

A scheme era is a frozen record: the range of releases that compute the same
keys for the same request and configuration, the upstream release that
introduced it, and the facts the hasher needs. Looking up a release parses
its version properly: pre-releases, post-releases, dev and local builds
(``0.31.1.dev5+g1a2b.cu128``) belong to the era of their release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from packaging.version import InvalidVersion, Version

from .algorithms import ALGORITHMS, HashAlgorithm
from .errors import UnknownAlgorithmError, UnknownVersionError

__all__ = [
    "DEFAULT_VLLM_VERSION",
    "ERAS",
    "KNOWN_RELEASES",
    "Era",
    "ResolvedRelease",
    "resolve_release",
]


@dataclass(frozen=True, slots=True)
class Era:
    """Releases that share one block-key scheme."""

    name: str
    #: First upstream release of the era.
    since: str
    #: What changed in ``since``, in a platform engineer's words.
    changes: str
    algorithms: tuple[str, ...]
    default_algorithm: str
    #: NONE_HASH seed when PYTHONHASHSEED is unset, for collision-resistant
    #: algorithms; the others draw a random seed per engine process.
    default_none_hash_seed: str
    first_version: Version = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "first_version", Version(self.since))

    def algorithm(self, name: str | None) -> HashAlgorithm:
        """The era's algorithm ``name`` (its default for None)."""
        chosen = self.default_algorithm if name is None else name
        if chosen not in self.algorithms:
            raise UnknownAlgorithmError(
                f"hash_algo {chosen!r} is not offered by vLLM {self.since}+ "
                f"(choose one of {', '.join(self.algorithms)})"
            )
        return ALGORITHMS[chosen]


#: Ordered oldest first; each era runs until the next one starts.
ERAS: Final[tuple[Era, ...]] = (
    Era(
        name="N",
        since="0.31.0",
        changes=(
            "extra keys are tagged: ('lora', name, path), ('mm', identifier, offset), "
            "('cache_salt', salt), ('prompt_embeds', digest); the LoRA path joins the key; "
            "decode-time hashing finds multimodal items by window; KV events publish the "
            "untagged form"
        ),
        algorithms=("sha256", "sha256_cbor", "xxhash", "xxhash_cbor"),
        default_algorithm="sha256",
        default_none_hash_seed="vllm-none-hash",
    ),
)

#: Releases whose keys the project's vectors confirm.
KNOWN_RELEASES: Final[tuple[str, ...]] = ("0.31.0", "0.32.0")
DEFAULT_VLLM_VERSION: Final = "0.31.0"
_NEWEST_KNOWN: Final = max(Version(v) for v in KNOWN_RELEASES)


@dataclass(frozen=True, slots=True)
class ResolvedRelease:
    """A version string resolved to its era, with anything the caller should know."""

    version: str
    era: Era
    warnings: tuple[str, ...] = ()


def resolve_release(version: str, *, strict: bool = True) -> ResolvedRelease:
    """Map a vLLM version string to its scheme era.

    A release newer than any known one raises in strict mode; in lenient mode
    it takes the newest known era and says so in ``warnings``.
    """
    try:
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
        return ResolvedRelease(version, era)
    if strict:
        raise UnknownVersionError(
            f"vllm_version {version} is newer than the newest known release "
            f"{_NEWEST_KNOWN}; its keys may differ (pass strict=False to assume era {era.name})"
        )
    return ResolvedRelease(
        version,
        era,
        (f"vLLM {version} is newer than any known release; assuming era {era.name} "
         f"of {_NEWEST_KNOWN}, whose keys it may not share",),
    )
