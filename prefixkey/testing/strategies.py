"""Hypothesis strategies for prefixkey's inputs (needs the ``hypothesis`` extra).

Every strategy is a function with keyword-only arguments returning a
``SearchStrategy``, in Hypothesis style::

    from hypothesis import given
    from prefixkey.testing import strategies as pks

    @given(pks.request_objects(vllm_version="0.29.0"))
    def test_my_router_agrees(obj): ...

:func:`requests` builds :class:`~prefixkey.core.Request` values valid for one
vLLM release (only the features that release keys); :func:`request_objects`
builds whole JSON Lines request objects (docs/request-format.md) whose
configuration (algorithm, ``PYTHONHASHSEED``, engine Python) is reproducible
for the release, so prefixkey always hashes them; :func:`event_batches` builds
typed KV-event batches with exactly the fields the release's wire era
publishes. Installing prefixkey registers ``st.from_type`` strategies for its
types through Hypothesis's entry point (:func:`_hypothesis_setup_hook`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, Final


def _hypothesis_setup_hook() -> None:
    """Register ``st.from_type`` strategies for prefixkey's types.

    Hypothesis calls this through the ``hypothesis`` entry point when it is
    imported. It is defined before this module imports Hypothesis: importing
    this module first makes Hypothesis call the hook while the module is
    half-loaded, so then registration waits for the end of the module.
    Idempotent; calling it directly is harmless.
    """
    register = globals().get("_register_types")
    if register is None:
        globals()["_REGISTER_WHEN_LOADED"] = True
        return
    register()


from hypothesis import strategies as st  # noqa: E402

from ..core import (  # noqa: E402  # noqa: E402  # noqa: E402
    DEFAULT_VLLM_VERSION,
    DTYPE_SIZES,
    Era,
    Hasher,
    LoRA,
    MMItem,
    PromptEmbeds,
    Request,
    check_api_rules,
    resolve_release,
)
from ..core._api_rules import CACHE_SALT_FORBIDDEN, CACHE_SALT_MAX_CHARS  # noqa: E402
from ..core._checks import check_int  # noqa: E402
from ..errors import InvalidRequestError, PrefixKeyError  # noqa: E402
from ..events import (  # noqa: E402
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    EventHash,
    WireEra,
    wire_era,
)

__all__ = [
    "FEATURES",
    "TOKEN_ID_BOUNDARIES",
    "block_removed_events",
    "block_stored_events",
    "cache_salts",
    "event_batches",
    "keyed_features",
    "loras",
    "mm_layouts",
    "prompt_embeds",
    "request_objects",
    "requests",
    "token_ids",
]

#: Optional request features, as :func:`keyed_features` names them.
FEATURES: Final = ("lora", "cache_salt", "mm_items", "prompt_embeds", "hash_calls", "lookahead")

#: Token ids where pickle (BININT1/BININT2/BININT/LONG1) or CBOR (inline, 1-,
#: 2-, 4-, 8-byte heads, bignums) change their encoding width.
TOKEN_ID_BOUNDARIES: Final[tuple[int, ...]] = (
    0, 1, 23, 24, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
    2**63 - 1, 2**63, 2**64 - 1, 2**64,
)

# Lone surrogates cannot reach vLLM's engine (msgpack rejects them).
_CHARS: Final = st.characters(exclude_categories=["Cs"])
_SEEDS: Final = (None, "0", "1", "42", "", "4294967295", "seed-\u00fc")
_MEDIA: Final = ("GPU", "CPU", "STORAGE")
_SPEC_KINDS: Final = ("full_attention", "sliding_window", "mamba", "chunked_local_attention")


def _text(*, min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[str]:
    return st.text(_CHARS, min_size=min_size, max_size=max_size)


def token_ids(
    *, min_size: int = 0, max_size: int = 64, max_id: int = 2**64 - 1
) -> st.SearchStrategy[list[int]]:
    """Lists of non-negative token ids in ``[0, max_id]``.

    Besides small ids and uniform ones, ids sit on every pickle and CBOR
    integer width boundary (:data:`TOKEN_ID_BOUNDARIES`) up to ``max_id``.
    The default ``max_id`` is the largest uint64 (what a 64-bit router can
    carry); prefixkey itself accepts larger ids.
    """
    check_int("max_id", max_id, least=0)
    edges = [b for b in TOKEN_ID_BOUNDARIES if b <= max_id]
    ids = st.one_of(
        st.integers(0, min(max_id, 300)),
        st.sampled_from(edges),
        st.integers(0, max_id),
    )
    return st.lists(ids, min_size=min_size, max_size=max_size)


@st.composite
def _mm_layouts(
    draw: st.DrawFn, num_tokens: int, max_items: int, identifiers: st.SearchStrategy[str]
) -> list[MMItem]:
    items: list[MMItem] = []
    position = 0
    while len(items) < max_items and position < num_tokens and draw(st.booleans()):
        # gap 0 makes adjacent items; long lengths span block boundaries.
        offset = position + draw(st.integers(0, num_tokens - position - 1))
        length = draw(st.integers(1, num_tokens - offset))
        items.append(MMItem(draw(identifiers), offset, length))
        position = offset + length
    return items


def mm_layouts(
    *, num_tokens: int, max_items: int = 4, identifiers: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[list[MMItem]]:
    """Sorted, non-overlapping multimodal items inside ``num_tokens`` tokens.

    Items may be adjacent (one starts where the previous ends), span block
    boundaries, cover every token, or repeat an identifier (the same image
    twice). ``identifiers`` defaults to short hex-like or Unicode strings.
    """
    check_int("num_tokens", num_tokens, least=0)
    ids = identifiers if identifiers is not None else st.one_of(
        st.sampled_from(("img-a", "img-b")), st.text("0123456789abcdef", min_size=1, max_size=8),
        _text(),
    )
    return _mm_layouts(num_tokens, max_items, ids)


@st.composite
def _loras(draw: st.DrawFn, api_valid: bool, require_int_id: bool) -> LoRA:
    name = draw(_text())
    path: str | None
    if draw(st.booleans()):
        path = name  # equal name and path must still key as two fields
    else:
        path = draw(_text(min_size=1) if api_valid else st.one_of(st.none(), _text()))
    if api_valid and not path:
        path = name or "/adapters/a"
    int_id: int | None = draw(st.integers(1 if api_valid else 0, 2**31 - 1))
    if not require_int_id and draw(st.booleans()):
        int_id = None
    return LoRA(name, path, int_id)


def loras(*, api_valid: bool = False, require_int_id: bool = False) -> st.SearchStrategy[LoRA]:
    """LoRA adapters with Unicode names and paths, sometimes equal to each other.

    ``api_valid`` keeps to what vLLM's API server accepts (a non-empty path,
    ``int_id >= 1``); otherwise the path may be None or empty, as the engine
    core's hashing allows. ``require_int_id`` always sets an int id (vLLM
    0.7.3-0.11.0 key LoRA by it).
    """
    return _loras(api_valid, require_int_id)


def cache_salts(*, api_valid: bool = False, max_size: int = 16) -> st.SearchStrategy[str]:
    """Cache salts: any valid Unicode, or (``api_valid``) what vLLM's API accepts.

    API-valid salts are non-empty, at most 128 characters, and free of
    ``@ / \\`` and NUL.
    """
    if api_valid:
        chars = st.characters(exclude_categories=["Cs"],
                              exclude_characters=CACHE_SALT_FORBIDDEN)
        return st.text(chars, min_size=1, max_size=min(max_size, CACHE_SALT_MAX_CHARS))
    return _text(max_size=max_size)


@st.composite
def _prompt_embeds(
    draw: st.DrawFn, rows: int | None, max_rows: int, max_hidden: int, dtypes: Sequence[str]
) -> PromptEmbeds:
    dtype = draw(st.sampled_from(tuple(dtypes)))
    num_rows = draw(st.integers(0, max_rows)) if rows is None else rows
    hidden = draw(st.integers(1, max_hidden))
    size = num_rows * hidden * DTYPE_SIZES[dtype]
    return PromptEmbeds(draw(st.binary(min_size=size, max_size=size)), dtype, (num_rows, hidden))


def prompt_embeds(
    *,
    rows: int | None = None,
    max_rows: int = 8,
    max_hidden: int = 4,
    dtypes: Sequence[str] = ("float32", "float16", "bfloat16"),
) -> st.SearchStrategy[PromptEmbeds]:
    """Prompt-embedding tensors of ``rows`` rows (drawn up to ``max_rows`` if None).

    The bytes are arbitrary (NaN payloads included): vLLM keys the raw bytes.
    """
    unknown = [d for d in dtypes if d not in DTYPE_SIZES]
    if unknown or not dtypes:
        raise InvalidRequestError(
            "dtypes", f"must be non-empty names from {list(DTYPE_SIZES)}, got {dtypes}")
    return _prompt_embeds(rows, max_rows, max_hidden, dtypes)


def keyed_features(vllm_version: str) -> frozenset[str]:
    """The optional request features (:data:`FEATURES`) a release keys or supports."""
    era = resolve_release(vllm_version).era
    return _keyed(era)


def _keyed(era: Era) -> frozenset[str]:
    keyed = {"hash_calls"}
    if era.lora_key != "unkeyed":
        keyed.add("lora")
    if era.cache_salt:
        keyed.add("cache_salt")
    if era.block_tuple != "flat":
        keyed.add("mm_items")
    if era.prompt_embeds_key != "ignored":
        keyed.add("prompt_embeds")
    if era.lookahead:
        keyed.add("lookahead")
    return frozenset(keyed)


def _wanted(vllm_version: str, features: Sequence[str] | None) -> tuple[Era, frozenset[str]]:
    era = resolve_release(vllm_version).era
    if features is not None:
        unknown = set(features) - set(FEATURES)
        if unknown:
            raise InvalidRequestError(
                "features", f"unknown features {sorted(unknown)} (known: {', '.join(FEATURES)})")
    keyed = _keyed(era)
    return era, keyed if features is None else keyed & frozenset(features)


@st.composite
def _requests(
    draw: st.DrawFn, era: Era, wanted: frozenset[str], max_tokens: int, max_id: int,
    api_valid: bool, min_tokens: int = 0,
) -> Request:
    tokens = draw(token_ids(min_size=min_tokens, max_size=max_tokens, max_id=max_id))
    n = len(tokens)
    lora = draw(st.none() | loras(api_valid=api_valid, require_int_id=era.lora_key == "int_id")
                if "lora" in wanted else st.none())
    salt = draw(st.none() | cache_salts(api_valid=api_valid)
                if "cache_salt" in wanted else st.none())
    items = draw(mm_layouts(num_tokens=n)) if "mm_items" in wanted else []
    embeds = None
    if "prompt_embeds" in wanted and draw(st.booleans()):
        embeds = draw(prompt_embeds(rows=draw(st.integers(0, n))))
    return Request(tokens, lora=lora, cache_salt=salt, mm_items=tuple(items),
                   prompt_embeds=embeds)


def requests(
    *,
    vllm_version: str = DEFAULT_VLLM_VERSION,
    block_size: int | None = None,
    max_tokens: int | None = None,
    max_id: int = 2**64 - 1,
    features: Sequence[str] | None = None,
    api_valid: bool = False,
) -> st.SearchStrategy[Request]:
    """Requests valid for ``vllm_version``, using only the features it keys.

    A release that does not key a feature (LoRA before 0.7.3, the salt before
    0.9.0, embeddings before 0.11.1) gets requests without it; 0.7.3-0.11.0
    LoRAs always carry an int id, and no LoRA path is required before 0.31
    (with ``api_valid`` the API server's rules apply to every release).
    ``features`` restricts further (names from :data:`FEATURES`). Requests
    hold up to ``max_tokens`` tokens (default: four and a half blocks of
    ``block_size``, or 72).
    """
    era, wanted = _wanted(vllm_version, features)
    if max_tokens is None:
        max_tokens = 72 if block_size is None else block_size * 9 // 2
    return _requests(era, wanted, max_tokens, max_id, api_valid)


@cache
def _configs(vllm_version: str) -> tuple[tuple[str, str | None, str | None], ...]:
    """``(hash_algo, python_hash_seed, engine_python)`` choices prefixkey reproduces.

    Each is probed on a one-block request with every feature the release keys
    (strings included: builtin ``hash()`` of a string needs a numeric seed).
    """
    resolved = resolve_release(vllm_version)
    era = resolved.era
    keyed = _keyed(era)
    probe = Request(
        [1],
        lora=LoRA("a", "a", 1) if "lora" in keyed else None,
        cache_salt="s" if "cache_salt" in keyed else None,
        mm_items=(MMItem("i", 0, 1),) if "mm_items" in keyed else (),
        prompt_embeds=(PromptEmbeds(bytes(2), "float16", (1, 1))
                       if "prompt_embeds" in keyed else None),
    )
    check_api_rules(probe, vllm_version)
    found = []
    for algo in era.offered_algorithms(resolved.release):
        engine = "3.12" if algo == "builtin" else None
        for seed in _SEEDS:
            try:
                Hasher(block_size=1, vllm_version=vllm_version, hash_algo=algo,
                       python_hash_seed=seed, engine_python=engine).block_hashes(probe)
            except PrefixKeyError:
                continue
            found.append((algo, seed, engine))
    return tuple(found)


def _lora_object(lora: LoRA) -> dict[str, Any]:
    out: dict[str, Any] = {"name": lora.name, "path": lora.path}
    if lora.int_id is not None:
        out["int_id"] = lora.int_id
    return out


@st.composite
def _request_objects(
    draw: st.DrawFn, version: str, era: Era, wanted: frozenset[str], block_size: int | None,
    max_blocks: int, max_id: int, api_valid: bool,
    configs: tuple[tuple[str, str | None, str | None], ...],
) -> dict[str, Any]:
    algo, seed, engine = draw(st.sampled_from(configs))
    size = block_size if block_size is not None else draw(
        st.integers(1, 8) | st.sampled_from((16, 32)))
    # Whole blocks first, then a partial one: most requests have keys to compare.
    count = draw(st.integers(0, max_blocks)) * size + draw(st.integers(0, size - 1))
    request = draw(_requests(era, wanted, count, max_id, api_valid, min_tokens=count))
    tokens = list(request.token_ids)
    obj: dict[str, Any] = {
        "vllm_version": version, "hash_algo": algo, "python_hash_seed": seed,
        "block_size": size, "token_ids": tokens,
    }
    if engine is not None:
        obj["engine_python"] = engine
    if "lookahead" in wanted:
        obj["lookahead"] = draw(st.integers(0, 3))
    if "hash_calls" in wanted:
        mode = draw(st.sampled_from(("once", "num_prompt_tokens", "hash_calls")))
        if mode != "once":
            prompt = draw(st.integers(0, len(tokens)))
            if mode == "num_prompt_tokens":
                obj["num_prompt_tokens"] = prompt
            else:
                later = draw(st.sets(st.integers(prompt + 1, len(tokens)), max_size=4)
                             if prompt < len(tokens) else st.just(set[int]()))
                obj["hash_calls"] = [prompt, *sorted(later)]
    if request.lora is not None:
        obj["lora"] = _lora_object(request.lora)
    if request.cache_salt is not None:
        obj["cache_salt"] = request.cache_salt
    if request.mm_items:
        obj["mm_items"] = [{"identifier": m.identifier, "offset": m.offset, "length": m.length}
                           for m in request.mm_items]
    if request.prompt_embeds is not None:
        pe = request.prompt_embeds
        obj["prompt_embeds"] = {"dtype": pe.dtype, "shape": list(pe.shape), "hex": pe.data.hex()}
    return obj


def request_objects(
    *,
    vllm_version: str = DEFAULT_VLLM_VERSION,
    block_size: int | None = None,
    max_blocks: int = 4,
    max_id: int = 2**64 - 1,
    features: Sequence[str] | None = None,
    hash_algos: Sequence[str] | None = None,
    api_valid: bool = True,
) -> st.SearchStrategy[dict[str, Any]]:
    """JSON Lines request objects (docs/request-format.md) prefixkey hashes for the release.

    The algorithm, ``python_hash_seed`` and ``engine_python`` are drawn from
    the configurations whose keys are reproducible for ``vllm_version`` (no
    per-process random NONE_HASH, numeric seeds for builtin ``hash()``),
    optionally restricted to ``hash_algos``. ``block_size`` is drawn (1-8, 16
    or 32) unless given; tokens fill up to ``max_blocks`` blocks plus a
    partial one. Requests may carry ``hash_calls`` or ``num_prompt_tokens``
    (decode-time appends) and, on 0.33, ``lookahead``. ``api_valid`` (the
    default, matching ``prefixkey hash``) keeps salts and LoRAs to what
    vLLM's API server accepts.
    """
    era, wanted = _wanted(vllm_version, features)
    configs = tuple(c for c in _configs(vllm_version) if hash_algos is None or c[0] in hash_algos)
    if not configs:
        raise InvalidRequestError(
            "hash_algos", f"no reproducible configuration of vLLM {vllm_version} uses "
            f"{', '.join(hash_algos or ())}")
    check_int("block_size", block_size, optional=True)
    return _request_objects(vllm_version, era, wanted, block_size, max_blocks, max_id,
                            api_valid, configs)


# ----------------------------------------------------------------------------- events


def _hashes(era: WireEra, form: str) -> st.SearchStrategy[EventHash]:
    if form == "bytes":
        return st.sampled_from((16, 32)).flatmap(lambda n: st.binary(min_size=n, max_size=n))
    if form == "signed":  # int-keyed releases publish their keys: signed 64-bit ints
        return st.integers(-(2**63), 2**63 - 1)
    return st.integers(0, 2**64 - 1)  # the low 64 bits of a digest, unsigned


def _optional(
    name: str, fields: tuple[str, ...], value: st.SearchStrategy[Any]
) -> st.SearchStrategy[Any]:
    return st.none() | value if name in fields else st.none()


_EXTRA_KEY: Final = st.one_of(
    _text(max_size=6), st.tuples(_text(max_size=6), st.integers(-64, 64)),
    st.binary(min_size=32, max_size=32),
)


@st.composite
def _block_stored(draw: st.DrawFn, era: WireEra, form: str) -> BlockStored:
    fields = era.block_stored_fields
    n = draw(st.integers(1, 4))
    size = draw(st.integers(1, 8))
    hashes = draw(st.lists(_hashes(era, form), min_size=n, max_size=n).map(tuple))
    lora_id = draw(st.none() | st.integers(1, 2**31 - 1))
    extra = None
    if "extra_keys" in fields and draw(st.booleans()):
        per_block = st.none() | st.lists(_EXTRA_KEY, min_size=1, max_size=3).map(tuple)
        extra = draw(st.lists(per_block, min_size=n, max_size=n).map(tuple))
    kind = draw(_optional("kv_cache_spec_kind", fields, st.sampled_from(_SPEC_KINDS)))
    lookahead = None
    if "lookahead_token_ids" in fields and draw(st.booleans()):
        k = draw(st.integers(1, 3))
        row = st.lists(st.integers(0, 2**32), min_size=k, max_size=k).map(tuple)
        lookahead = draw(st.lists(row, min_size=n, max_size=n).map(tuple))
    return BlockStored(
        block_hashes=hashes,
        parent_block_hash=draw(st.none() | _hashes(era, form)),
        token_ids=tuple(draw(st.lists(st.integers(0, 2**32), min_size=n * size,
                                      max_size=n * size))),
        block_size=size,
        lora_id=lora_id,
        medium=draw(st.sampled_from(_MEDIA)) if "medium" in fields else None,
        lora_name=(draw(_text(min_size=1)) if lora_id is not None and "lora_name" in fields
                   else None),
        extra_keys=extra,
        group_idx=draw(_optional("group_idx", fields, st.integers(0, 3))),
        kv_cache_spec_kind=kind,
        kv_cache_spec_sliding_window=(draw(st.integers(1, 4096))
                                      if kind == "sliding_window" else None),
        locality=draw(_optional("locality", fields, _text(min_size=1, max_size=8))),
        ownership=draw(_optional("ownership", fields, _text(min_size=1, max_size=8))),
        session_id=draw(_optional("session_id", fields, _text(min_size=1, max_size=8))),
        lookahead_token_ids=lookahead,
    )


@st.composite
def _block_removed(draw: st.DrawFn, era: WireEra, form: str) -> BlockRemoved:
    fields = era.block_removed_fields
    return BlockRemoved(
        block_hashes=tuple(draw(st.lists(_hashes(era, form), min_size=1, max_size=4))),
        medium=draw(st.sampled_from(_MEDIA)) if "medium" in fields else None,
        group_idx=draw(_optional("group_idx", fields, st.integers(0, 3))),
        locality=draw(_optional("locality", fields, _text(min_size=1, max_size=8))),
        ownership=draw(_optional("ownership", fields, _text(min_size=1, max_size=8))),
    )


def _forms(vllm_version: str) -> st.SearchStrategy[str]:
    # Digest-keyed releases publish their low 64 bits, or with
    # VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0 the digest bytes.
    if resolve_release(vllm_version).era.hash_type == "int":
        return st.just("signed")
    return st.sampled_from(("int", "bytes"))


def block_stored_events(*, vllm_version: str = DEFAULT_VLLM_VERSION,
                        ) -> st.SearchStrategy[BlockStored]:
    """BlockStored events with the fields ``vllm_version`` publishes (others None).

    Int-keyed releases (before 0.10.2) publish signed 64-bit ints; later ones
    unsigned 64-bit ints or 16/32-byte digests.
    """
    era, _ = wire_era(vllm_version)
    return _forms(vllm_version).flatmap(lambda form: _block_stored(era, form))


def block_removed_events(*, vllm_version: str = DEFAULT_VLLM_VERSION,
                         ) -> st.SearchStrategy[BlockRemoved]:
    """BlockRemoved events with the fields ``vllm_version`` publishes (others None)."""
    era, _ = wire_era(vllm_version)
    return _forms(vllm_version).flatmap(lambda form: _block_removed(era, form))


@st.composite
def _event_batches(draw: st.DrawFn, era: WireEra, forms: st.SearchStrategy[str],
                   max_events: int) -> EventBatch:
    form = draw(forms)
    event = st.one_of(_block_stored(era, form), _block_removed(era, form),
                      st.just(AllBlocksCleared()))
    events = tuple(draw(st.lists(event, max_size=max_events)))
    ts = draw(st.floats(0, 2e9, allow_nan=False, allow_infinity=False))
    rank = draw(st.none() | st.integers(0, 63)) if era.batch_has_dp_rank else None
    return EventBatch(ts, events, rank)


def event_batches(*, vllm_version: str = DEFAULT_VLLM_VERSION, max_events: int = 4,
                  ) -> st.SearchStrategy[EventBatch]:
    """KV-event batches of ``vllm_version``'s wire era (0.9.0+).

    Every event carries only the fields the era publishes; one batch uses one
    hash form (ints, or digest bytes from 0.10.2), as one engine process does.
    ``data_parallel_rank`` appears from 0.9.1.
    """
    era, _ = wire_era(vllm_version)
    return _event_batches(era, _forms(vllm_version), max_events)


# ----------------------------------------------------------------------------- registration


def _register_types() -> None:
    """What :func:`_hypothesis_setup_hook` registers."""
    st.register_type_strategy(Request, requests())
    st.register_type_strategy(LoRA, loras())
    st.register_type_strategy(
        MMItem, st.builds(MMItem, _text(), st.integers(0, 4096), st.integers(1, 4096))
    )
    st.register_type_strategy(PromptEmbeds, prompt_embeds())
    st.register_type_strategy(EventBatch, event_batches())
    st.register_type_strategy(BlockStored, block_stored_events())
    st.register_type_strategy(BlockRemoved, block_removed_events())


if globals().get("_REGISTER_WHEN_LOADED"):
    _register_types()
