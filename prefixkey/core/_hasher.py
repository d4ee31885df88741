"""Block hashing: a Hasher bound once, and a per-request incremental hasher.

A router builds one :class:`Hasher` per replica configuration (release,
algorithm, PYTHONHASHSEED, hash block size) and reuses it for every request:
the scheme lookup, NONE_HASH and the serializer are resolved once.

vLLM hashes a request when it is created (every full prompt block) and again
whenever appended tokens complete a block, chaining each key from the one
before: ``key_i = H((key_{i-1}, tuple(tokens_i), extra_keys_i))`` with
NONE_HASH as the first parent. :class:`RequestBlockHasher` does the same, and
gives the same keys however the tokens are split into calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ..errors import InvalidRequestError
from ._algorithms import BlockHash, HashAlgorithm
from ._builtin_hash import python_hash_for
from ._checks import check_int
from ._extra_keys import BlockExtraKeys, ExtraKeysBuilder
from ._frozen import Frozen
from ._keys import group_block_hashes
from ._none_hash import NoneHash, resolve_none_hash
from ._prompt_embeds import PromptEmbeds
from ._request import (
    LoRA,
    MMItem,
    Request,
    TokenIds,
    TokenIdsLike,
    _check_str,
    checked_token_ids,
    is_numpy_scalar,
)
from ._schemes import DEFAULT_VLLM_VERSION, Era, resolve_release

__all__ = ["Hasher", "RequestBlockHasher", "block_hashes"]


class Hasher(Frozen):
    """vLLM's block hasher for one configuration, bound once and reused.

    ``python_hash_seed`` is the engine's ``PYTHONHASHSEED`` (None when unset).
    ``block_size`` is the hash block size (``cache_config.block_size``, times
    the DCP size for attention, or ``prefix_match_unit`` for hybrid models).
    ``lookahead`` is vLLM 0.33's ``num_hash_lookahead_tokens`` (non-zero with
    EAGLE/EAGLE3/MTP speculative decoding). ``engine_python`` is the engine's
    CPython version, needed only for the builtin ``hash()`` of 0.7-0.10.1.
    With ``strict=False`` a release newer than any known one uses the newest
    known era; :attr:`warnings` says so. A hasher is immutable: it is shared by
    every request of its configuration.
    """

    __slots__ = (
        "_chain", "_digest", "_encode_tail", "_encode_tokens", "_extend_tokens", "algorithm",
        "arguments", "block_size", "era", "lookahead", "none_hash", "release", "vllm_version",
        "warnings",
    )

    # Declared for type checkers; __slots__ holds them, set once by _bind.
    vllm_version: str
    #: The release ``vllm_version`` names, as at least ``X.Y.Z`` ("0.31" gives "0.31.0").
    release: str
    warnings: tuple[str, ...]
    era: Era
    lookahead: int
    algorithm: HashAlgorithm
    block_size: int
    none_hash: NoneHash
    _encode_tokens: Callable[[Sequence[int], bytes | None, int], Any]
    _extend_tokens: Callable[[Any, Sequence[int], bytes | None], Any]
    _encode_tail: Callable[[Any], Any]
    _chain: Callable[..., list[Any]]
    _digest: Callable[[Any], Any]
    #: The arguments it was built with (``hash_algo=None``: the release's default).
    arguments: Mapping[str, Any]

    def __init__(
        self,
        *,
        block_size: int,
        hash_algo: str | None = None,
        python_hash_seed: str | None = None,
        vllm_version: str = DEFAULT_VLLM_VERSION,
        lookahead: int = 0,
        engine_python: str | None = None,
        strict: bool = True,
    ) -> None:
        check_int("block_size", block_size)
        if python_hash_seed is not None:
            if not isinstance(python_hash_seed, str):
                raise InvalidRequestError(
                    "python_hash_seed",
                    f"must be a string (the environment value) or None, got "
                    f"{type(python_hash_seed).__name__}",
                )
            _check_str(python_hash_seed, "python_hash_seed")  # NONE_HASH hashes it as text
        release = resolve_release(vllm_version, strict=strict)
        era = release.era
        check_int("lookahead", lookahead, least=0)
        if lookahead and not era.lookahead:
            raise InvalidRequestError(
                "lookahead", f"vLLM {release.release} has no lookahead hashing (0.33+)"
            )
        algorithm = era.algorithm(hash_algo, release.release)
        serializer = algorithm.serializer
        digest: Callable[[Any], Any] = (
            python_hash_for(engine_python, python_hash_seed)
            if algorithm.engine_bound else algorithm.digest
        )
        dumps = serializer.dumps
        none_hash = resolve_none_hash(
            era, algorithm, python_hash_seed, lambda value: digest(dumps(value))
        )
        self._bind(
            vllm_version=release.version, release=release.release_name,
            warnings=release.warnings, era=era,
            lookahead=lookahead, algorithm=algorithm, block_size=block_size,
            _encode_tokens=serializer.encode_tokens, _extend_tokens=serializer.extend_tokens,
            _encode_tail=serializer.encode_extra_keys_tail, _chain=serializer.chain,
            _digest=digest, none_hash=none_hash,
            arguments=MappingProxyType({
                "block_size": block_size, "hash_algo": hash_algo,
                "python_hash_seed": python_hash_seed, "vllm_version": vllm_version,
                "lookahead": lookahead, "engine_python": engine_python, "strict": strict,
            }),
        )


    def __copy__(self) -> Hasher:
        return self  # immutable, like a tuple

    def __deepcopy__(self, memo: dict[int, Any]) -> Hasher:
        return self

    def __repr__(self) -> str:
        return (
            f"Hasher(vllm_version={self.vllm_version!r}, hash_algo={self.algorithm.name!r}, "
            f"seed_source={self.none_hash.seed_source!r}, block_size={self.block_size}, "
            f"lookahead={self.lookahead})"
        )

    def group_block_hashes(
        self, block_hashes: Sequence[BlockHash], group_block_size: int
    ) -> list[BlockHash]:
        """The keys of a KV-cache group with blocks of ``group_block_size`` tokens."""
        if group_block_size != self.block_size and self.era.group_keys == "none":
            raise InvalidRequestError(
                "group_block_sizes", f"vLLM {self.vllm_version} hashes every KV-cache group at "
                "the block size (coarser groups arrived in 0.12.0)",
            )
        return group_block_hashes(
            block_hashes, self.block_size, group_block_size,
            concatenate=self.era.group_keys == "concatenated",
        )

    def replace(self, **changes: Any) -> Hasher:
        """A new hasher built from this one's arguments with ``changes`` applied.

        ``Hasher(block_size=16).replace(vllm_version="0.33.0")`` keys the same
        requests under another release; an argument left unchanged keeps the
        value given here (``hash_algo=None`` stays "the release's default").
        """
        unknown = changes.keys() - self.arguments.keys()
        if unknown:
            raise InvalidRequestError(
                sorted(unknown)[0], f"is not a Hasher argument ({', '.join(self.arguments)})"
            )
        return Hasher(**{**self.arguments, **changes})

    def with_era_rules(self, era: Era) -> Hasher:
        """This hasher with another era's extra-key and window rules (what-if analysis).

        Algorithm, NONE_HASH and block size stay bound; the drift report uses it
        to ask which one era field changes a request's extra keys.
        """
        twin = object.__new__(Hasher)
        twin._bind(**{**{name: getattr(self, name) for name in Hasher.__slots__}, "era": era})
        return twin

    def start(self, request: Request) -> RequestBlockHasher:
        """Hash a request's full blocks and return a hasher to extend as tokens arrive.

        Multimodal items and embedding rows may reach past the tokens given so
        far (a prompt that streams in); they count once appended tokens reach them.
        """
        return RequestBlockHasher(self, request)

    def block_hashes(self, request: Request | TokenIdsLike) -> list[BlockHash]:
        """The keys of every full block of ``request`` (or of plain token ids)."""
        if not isinstance(request, Request):
            request = Request(request)
        request.check_inside(len(request.token_ids))
        return RequestBlockHasher(self, request, snapshot=False).block_hashes


class RequestBlockHasher:
    """One request's keys, extended as tokens are appended (vLLM's ``update_block_hashes``).

    :attr:`block_hashes` and :attr:`extra_keys` hold one entry per full block;
    with lookahead, an extra key is ``(extra keys, *lookahead tokens)``.
    :attr:`warnings` notes request features the release does not key.
    ``snapshot=False`` skips copying the request's token ids: only for a
    caller that will not change them while this object is in use
    (:class:`~prefixkey.core.TokenIds` are never copied: they cannot change).
    """

    __slots__ = (
        "_extra", "_hasher", "_lookahead_ids", "_plain_tail", "_tokens", "block_hashes",
        "extra_keys", "warnings",
    )

    def __init__(self, hasher: Hasher, request: Request, *, snapshot: bool = True) -> None:
        token_ids, words = checked_token_ids(request.token_ids)
        if snapshot and type(token_ids) is not tuple:
            token_ids = list(token_ids)
        self._hasher = hasher
        self._extra = ExtraKeysBuilder(request, hasher.era, hasher.block_size)
        self.warnings = [
            f"vLLM {hasher.vllm_version} does not key {feature}: the keys ignore it"
            for feature in self._extra.ignored
        ] if self._extra.ignored else []
        self._plain_tail: Any = None
        self._tokens: Any = hasher._encode_tokens(token_ids, words, hasher.block_size)
        # Lookahead tokens join the extra keys, so their ids are kept as ints.
        self._lookahead_ids: list[int] | None = list(token_ids) if hasher.lookahead else None
        self.block_hashes: list[BlockHash] = []
        self.extra_keys: list[BlockExtraKeys] = []
        self._hash_new_blocks(decode=False)

    @property
    def num_tokens(self) -> int:
        return len(self._tokens)

    def append(self, token_ids: TokenIdsLike | int) -> list[BlockHash]:
        """Append generated tokens (or one); return the keys of the blocks they completed."""
        if isinstance(token_ids, int) or is_numpy_scalar(token_ids):
            token_ids = (token_ids,)  # type: ignore[assignment]  # checked below, as one id
        elif not isinstance(token_ids, (list, tuple, TokenIds)) and not hasattr(
            type(token_ids), "__array_interface__"
        ):
            if isinstance(token_ids, (str, bytes)) or not isinstance(token_ids, Iterable):
                raise InvalidRequestError("token_ids", "must be a sequence of ints")
            token_ids = list(token_ids)  # checked, then stored: one pass over an iterator
        token_ids, words = checked_token_ids(
            token_ids, start=len(self._tokens)  # type: ignore[arg-type]
        )
        self._tokens = self._hasher._extend_tokens(self._tokens, token_ids, words)
        if self._lookahead_ids is not None:
            self._lookahead_ids.extend(token_ids)
        return self._hash_new_blocks(decode=True)

    def _hash_new_blocks(self, *, decode: bool) -> list[BlockHash]:
        hasher = self._hasher
        size, lookahead = hasher.block_size, hasher.lookahead
        start = len(self.block_hashes) * size
        # A block is hashed once it is full and, with lookahead, followed by that many tokens.
        stop = len(self._tokens) - size - lookahead + 1
        if stop <= start:
            return []  # vLLM's hasher returns before it starts a pass, too
        starts = range(start, stop, size)
        self._extra.begin_pass(start, resume=start > 0)
        if lookahead:
            keys, tails = self._lookahead_keys(starts)
        else:
            # Up to 0.10.0 the block pool hashed each decode-time block on its own.
            per_block = decode and hasher.era.decode_pass == "per_block"
            keys, tails = self._keys(starts, per_block=per_block)
        parent = self.block_hashes[-1] if self.block_hashes else hasher.none_hash.value
        new = hasher._chain(parent, self._tokens, starts, size, tails, hasher._digest)
        self.block_hashes += new
        self.extra_keys += keys
        return new

    def _keys(self, starts: range, *, per_block: bool) -> tuple[list[BlockExtraKeys], list[Any]]:
        """Extra keys and encoded tails of the blocks at ``starts``."""
        extra, encode, size = self._extra, self._hasher._encode_tail, starts.step
        # Blocks with mm items, the salt or embeddings get keys of their own;
        # the rest share one set (LoRA or none), encoded once.
        plain_start = starts.stop if extra.plain_start is None else extra.plain_start
        if plain_start > starts.start:
            own = range(starts.start, min(plain_start, starts.stop), size)
            keys = [extra.block(s, s + size, new_pass=per_block) for s in own]
            tails = list(map(encode, keys))
        else:
            keys, tails = [], []
        shared = len(starts) - len(keys)
        if shared:
            if self._plain_tail is None:
                self._plain_tail = encode(extra.plain)
            keys += [extra.plain] * shared
            tails += [self._plain_tail] * shared
        return keys, tails

    def _lookahead_keys(self, starts: range) -> tuple[list[BlockExtraKeys], list[Any]]:
        """As :meth:`_keys`, with vLLM 0.33's lookahead: ``(keys over the widened
        window, *the lookahead tokens)``."""
        extra, size, lookahead = self._extra, starts.step, self._hasher.lookahead
        ids = self._lookahead_ids
        assert ids is not None
        keys: list[BlockExtraKeys] = [
            (extra.block(s, s + size, lookahead=lookahead),
             *ids[s + size : s + size + lookahead])
            for s in starts
        ]
        return keys, list(map(self._hasher._encode_tail, keys))


def block_hashes(
    token_ids: Sequence[int],
    *,
    block_size: int,
    hash_algo: str | None = None,
    python_hash_seed: str | None = None,
    vllm_version: str = DEFAULT_VLLM_VERSION,
    lookahead: int = 0,
    engine_python: str | None = None,
    strict: bool = True,
    lora: LoRA | None = None,
    cache_salt: str | None = None,
    mm_items: Sequence[MMItem] = (),
    prompt_embeds: PromptEmbeds | None = None,
) -> list[BlockHash]:
    """One call: the block keys of ``token_ids``.

    The configuration arguments are :class:`Hasher`'s, the request features
    (``lora``, ``cache_salt``, ``mm_items``, ``prompt_embeds``) those of
    :class:`~prefixkey.core.Request`. A router that hashes many requests
    should build a :class:`Hasher` once instead.
    """
    hasher = Hasher(
        block_size=block_size,
        hash_algo=hash_algo,
        python_hash_seed=python_hash_seed,
        vllm_version=vllm_version,
        lookahead=lookahead,
        engine_python=engine_python,
        strict=strict,
    )
    return hasher.block_hashes(Request(
        token_ids, lora=lora, cache_salt=cache_salt, mm_items=mm_items,
        prompt_embeds=prompt_embeds,
    ))
