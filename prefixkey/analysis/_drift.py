"""Key drift between two configurations: which requests' prefix-cache keys survive a change.

A platform engineer upgrading vLLM, switching the hash algorithm, setting
``PYTHONHASHSEED`` or changing the block size wants to know which cached
prefixes stay valid across the change (routers, KV offload tiers and replicas
that mix versions all depend on it). :func:`drift` hashes each request under
a FROM and a TO configuration and reports, per request, whether the keys are
identical, otherwise the first diverging block and why.

Causes are derived from data, not from a table of version pairs
(:mod:`prefixkey.analysis._drift_causes`): the two configurations (algorithm, NONE_HASH
seed, block size, lookahead) and the two scheme eras, each differing era field
tried on its own against the request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from importlib import resources
from typing import Any, Final

from ..core import BlockExtraKeys, BlockHash, HashJob, check_api_rules, resolve_release
from ..core._checks import check_int
from ..errors import InvalidRequestError, MalformedJSONError, PrefixKeyError
from ..jsonl import JSON_LIMITS, JsonLimits, bounded_lines, parse_json_line, parse_request
from ._drift_causes import Cause, explain, first_difference

__all__ = [
    "FEATURES",
    "FROM_REQUEST",
    "Cause",
    "DriftConfig",
    "DriftReport",
    "FeatureSummary",
    "RequestDrift",
    "SideResult",
    "builtin_corpus",
    "drift",
    "read_requests",
]


class _FromRequest(Enum):
    FROM_REQUEST = "from request"


#: A :class:`DriftConfig` field left at this value takes the request's own value.
FROM_REQUEST: Final = _FromRequest.FROM_REQUEST

#: Request features the summary breaks survival down by ("plain": none of
#: lora, mm, salt, embeds).
FEATURES: Final = ("plain", "lora", "mm", "salt", "embeds", "decode", "lookahead")

_CONFIG_KEYS: Final = {"algo": "hash_algo", "seed": "python_hash_seed",
                       "block_size": "block_size", "lookahead": "lookahead",
                       "python": "engine_python"}
_UNSET_WORDS: Final = frozenset({"unset", "none", "null"})


@dataclass(frozen=True, slots=True)
class DriftConfig:
    """One side of the comparison; fields left at :data:`FROM_REQUEST` use the request's.

    ``python_hash_seed=None`` means PYTHONHASHSEED unset (overriding the
    request's seed); ``hash_algo=None`` means the release's default.
    """

    vllm_version: str | _FromRequest = FROM_REQUEST
    hash_algo: str | _FromRequest | None = FROM_REQUEST
    python_hash_seed: str | _FromRequest | None = FROM_REQUEST
    block_size: int | _FromRequest = FROM_REQUEST
    lookahead: int | _FromRequest = FROM_REQUEST
    #: The engine's CPython version, needed only for builtin hash() (0.7-0.10.1).
    engine_python: str | _FromRequest = FROM_REQUEST
    strict: bool = True

    @classmethod
    def parse(cls, spec: str, *, strict: bool = True) -> DriftConfig:
        """Parse ``VERSION[:key=value,...]`` (keys: algo, seed, block_size, lookahead, python).

        ``seed=unset`` (or ``none``) means PYTHONHASHSEED unset; ``seed=`` is the
        empty string, which vLLM treats as a value. ``strict=False`` maps a
        release newer than any known one to the newest era.
        """
        version, _, options = spec.partition(":")
        if not version:
            raise InvalidRequestError("config", f"{spec!r}: the vLLM version is missing")
        values: dict[str, Any] = {"vllm_version": version, "strict": strict}
        for item in filter(None, options.split(",")):
            key, eq, value = item.partition("=")
            name = _CONFIG_KEYS.get(key.strip())
            if name is None or not eq:
                raise InvalidRequestError(
                    "config", f"{spec!r}: expected key=value with key one of "
                    f"{', '.join(_CONFIG_KEYS)}, got {item!r}"
                )
            if name in ("block_size", "lookahead"):
                try:
                    values[name] = int(value)
                except ValueError:
                    raise InvalidRequestError(name, f"must be an int, got {value!r}") from None
            elif name == "python_hash_seed" and value.lower() in _UNSET_WORDS:
                values[name] = None
            else:
                values[name] = value
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        """Raise a PrefixKeyError for a version, algorithm or size no request could fix."""
        if isinstance(self.block_size, int):
            check_int("block_size", self.block_size)
        if isinstance(self.lookahead, int):
            check_int("lookahead", self.lookahead, least=0)
        if isinstance(self.vllm_version, _FromRequest):
            return
        release = resolve_release(self.vllm_version, strict=self.strict)
        if isinstance(self.hash_algo, str):
            release.era.algorithm(self.hash_algo, release.release)
        if isinstance(self.lookahead, int) and self.lookahead and not release.era.lookahead:
            raise InvalidRequestError(
                "lookahead", f"vLLM {release.release} has no lookahead hashing"
            )

    def overrides(self) -> dict[str, Any]:
        """The request fields this side replaces."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "strict" and getattr(self, f.name) is not FROM_REQUEST}

    def describe(self) -> str:
        """``0.31.0 (algo=xxhash, seed='0')``; unset fields say they come from the request."""
        version = self.vllm_version if isinstance(self.vllm_version, str) else "request version"
        parts = [f"{key}={_show(getattr(self, name))}" for key, name in _CONFIG_KEYS.items()
                 if getattr(self, name) is not FROM_REQUEST]
        return f"{version} ({', '.join(parts)})" if parts else version

    def to_dict(self) -> dict[str, Any]:
        """JSON form: fields taken from each request are ``"from request"``."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _show(value: object) -> str:
    if value is None:
        return "unset"
    return repr(value) if isinstance(value, str) else str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


@dataclass(frozen=True, slots=True)
class SideResult:
    """One side's resolved configuration and block count, or why it has no keys."""

    vllm_version: str | None
    era: str | None
    hash_algo: str | None
    python_hash_seed: str | None
    block_size: int | None
    lookahead: int | None
    num_blocks: int | None
    error_type: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RequestDrift:
    """One request: identical keys, or where they diverge and why."""

    request_id: str
    features: tuple[str, ...]
    identical: bool
    #: Blocks the request has under FROM (under TO when FROM has no keys).
    num_blocks: int
    #: Leading blocks whose keys are identical on both sides (the surviving prefix).
    shared_blocks: int
    #: First block whose key differs (None when identical).
    first_diverging_block: int | None
    causes: tuple[Cause, ...]
    from_side: SideResult
    to_side: SideResult


@dataclass(frozen=True, slots=True)
class FeatureSummary:
    """Survival among the requests with one feature ("all": every request)."""

    feature: str
    requests: int
    requests_surviving: int
    blocks: int
    blocks_surviving: int

    @property
    def request_share(self) -> float | None:
        return self.requests_surviving / self.requests if self.requests else None

    @property
    def block_share(self) -> float | None:
        return self.blocks_surviving / self.blocks if self.blocks else None


@dataclass(frozen=True, slots=True)
class DriftReport:
    """The comparison of every request, and the survival summary ("all" first)."""

    from_config: DriftConfig
    to_config: DriftConfig
    requests: tuple[RequestDrift, ...]
    summary: tuple[FeatureSummary, ...]

    def summary_for(self, feature: str) -> FeatureSummary | None:
        return next((s for s in self.summary if s.feature == feature), None)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (shares included)."""
        return {
            "from": self.from_config.to_dict(),
            "to": self.to_config.to_dict(),
            "requests": [_jsonable(r) for r in self.requests],
            "summary": [
                {**_jsonable(s), "request_share": s.request_share, "block_share": s.block_share}
                for s in self.summary
            ],
        }


# --------------------------------------------------------------------------
# Reading requests.


def read_requests(lines: Iterable[str | bytes], limits: JsonLimits = JSON_LIMITS, *,
                  warnings: list[str] | None = None) -> list[Any]:
    """Decode JSON Lines (blank lines skipped) within ``limits``.

    A :class:`MalformedJSONError` (or :class:`~prefixkey.errors.JSONLimitError`)
    names the line; duplicate keys are warnings (``line N: …``) appended to
    ``warnings`` when given.
    """
    requests = []
    for number, raw in enumerate(bounded_lines(lines, limits), start=1):
        if raw.strip():
            line_warnings: list[str] = []
            try:
                requests.append(parse_json_line(raw, limits, warnings=line_warnings))
            except MalformedJSONError as exc:
                exc.args = (f"line {number}: {exc}",)
                raise
            if warnings is not None:
                warnings.extend(f"line {number}: {w}" for w in line_warnings)
    return requests


def builtin_corpus() -> list[Any]:
    """The request corpus shipped as ``prefixkey/data/drift_corpus.jsonl``."""
    text = resources.files("prefixkey").joinpath("data/drift_corpus.jsonl").read_text("utf-8")
    return read_requests(text.splitlines())


# --------------------------------------------------------------------------
# One side of one request.


@dataclass(frozen=True, slots=True)
class _Side:
    result: SideResult
    job: HashJob | None = None
    keys: tuple[BlockHash, ...] = ()
    extra: tuple[BlockExtraKeys, ...] = ()


def _side_job(obj: Any, config: DriftConfig, api_checks: bool) -> HashJob:
    """The request as ``config`` hashes it; a PrefixKeyError when it cannot be."""
    overrides = config.overrides()
    if isinstance(obj, HashJob):
        job = dataclasses.replace(
            obj, hasher=obj.hasher.replace(**overrides, strict=config.strict)
        )
        if api_checks:
            check_api_rules(job.request, job.hasher.release)
        return job
    merged = {**obj, **overrides} if isinstance(obj, Mapping) else obj
    return parse_request(merged, strict=config.strict, api_checks=api_checks)


def _fields(obj: Any, config: DriftConfig) -> Mapping[str, Any]:
    """The configuration fields a side asked for (what its result shows when it fails)."""
    given = obj.hasher.arguments if isinstance(obj, HashJob) else obj
    return {**given, **config.overrides()} if isinstance(given, Mapping) else {}


def _compute(obj: Any, config: DriftConfig, api_checks: bool) -> _Side:
    get = _fields(obj, config).get
    try:
        job = _side_job(obj, config, api_checks)
        keys = job.run()
    except PrefixKeyError as exc:
        version = get("vllm_version")
        size = get("block_size")
        return _Side(SideResult(
            version if isinstance(version, str) else None, None, get("hash_algo"),
            get("python_hash_seed"), size if type(size) is int else None, get("lookahead"),
            None, type(exc).__name__, str(exc),
        ))
    hasher = job.hasher
    seed = hasher.none_hash.seed if hasher.none_hash.seed_source == "PYTHONHASHSEED" else None
    if seed is None and isinstance(get("python_hash_seed"), str):
        seed = get("python_hash_seed")  # set, but this era's NONE_HASH does not use it
    result = SideResult(hasher.vllm_version, hasher.era.name, hasher.algorithm.name, seed,
                        hasher.block_size, hasher.lookahead, len(keys.block_hashes))
    return _Side(result, job, tuple(keys.block_hashes), tuple(keys.extra_keys))


def _features(obj: Any, sides: Sequence[_Side]) -> tuple[str, ...]:
    lookahead: object
    if isinstance(obj, HashJob):
        request = obj.request
        lora, mm, salt, embeds = (request.lora is not None, bool(request.mm_items),
                                  bool(request.cache_salt), request.prompt_embeds is not None)
        decode, lookahead = len(obj.hash_calls) > 1, obj.hasher.lookahead
    elif isinstance(obj, Mapping):
        lora, mm, salt, embeds = (
            obj.get("lora") is not None, bool(obj.get("mm_items")),
            bool(obj.get("cache_salt")), obj.get("prompt_embeds") is not None,
        )
        calls = obj.get("hash_calls")
        decode = (isinstance(calls, list) and len(calls) > 1) or (
            obj.get("num_prompt_tokens") is not None
        )
        lookahead = obj.get("lookahead")
    else:
        return ()
    found = {"lora": lora, "mm": mm, "salt": salt, "embeds": embeds, "decode": decode,
             "plain": not (lora or mm or salt or embeds),
             "lookahead": any(s.result.lookahead for s in sides) or bool(lookahead)}
    return tuple(f for f in FEATURES if found[f])


def _unavailable(side: _Side, which: str) -> Cause:
    return Cause(f"{which}_unavailable", 0,
                 f"{which.upper()} keys cannot be computed: {side.result.error_type}: "
                 f"{side.result.error}")


def _expected_blocks(obj: Any, config: DriftConfig) -> int:
    size = _fields(obj, config).get("block_size")
    tokens = obj.token_ids if isinstance(obj, HashJob) else (
        obj.get("token_ids") if isinstance(obj, Mapping) else None)
    if type(size) is not int or size < 1 or not isinstance(tokens, Sequence):
        return 0
    return len(tokens) // size


def _compare(index: int, obj: Any, from_config: DriftConfig,
             to_config: DriftConfig, api_checks: bool) -> RequestDrift:
    a, b = _compute(obj, from_config, api_checks), _compute(obj, to_config, api_checks)
    raw_id = obj.get("id") if isinstance(obj, Mapping) else None
    request_id = f"#{index + 1}" if raw_id is None else str(raw_id)
    features = _features(obj, (a, b))
    if a.job is None or b.job is None:
        causes = tuple(_unavailable(s, w) for s, w in ((a, "from"), (b, "to")) if s.job is None)
        blocks = (a.result.num_blocks if a.result.num_blocks is not None
                  else b.result.num_blocks)
        if blocks is None:
            blocks = _expected_blocks(obj, from_config)
        return RequestDrift(request_id, features, False, blocks, 0, 0 if blocks else None,
                            causes, a.result, b.result)
    first = first_difference(a.keys, b.keys)
    if first is None:
        return RequestDrift(request_id, features, True, len(a.keys), len(a.keys), None, (),
                            a.result, b.result)
    return RequestDrift(request_id, features, False, len(a.keys), first, first,
                        tuple(explain(a.job, a.extra, b.job, first)), a.result, b.result)


def _summarize(results: Sequence[RequestDrift]) -> tuple[FeatureSummary, ...]:
    def tally(name: str, group: list[RequestDrift]) -> FeatureSummary:
        return FeatureSummary(
            name, len(group), sum(r.identical for r in group),
            sum(r.num_blocks for r in group),
            sum(min(r.shared_blocks, r.num_blocks) for r in group),
        )

    rows = [tally("all", list(results))]
    for feature in FEATURES:
        group = [r for r in results if feature in r.features]
        if group:
            rows.append(tally(feature, group))
    return tuple(rows)


def drift(
    from_config: DriftConfig,
    to_config: DriftConfig,
    requests: Iterable[Any] | None = None,
    *,
    api_checks: bool = False,
) -> DriftReport:
    """Compare the keys of ``requests`` under two configurations.

    Each request is a typed :class:`~prefixkey.core.HashJob` (its hasher's
    settings are the request's own: a side's fields replace them) or a decoded
    JSON Lines request object (docs/request-format.md); ``None`` uses
    :func:`builtin_corpus`.

    Bad configurations raise (a PrefixKeyError subclass); a request that
    cannot be hashed on one side is reported with that side's reason.
    ``api_checks`` applies vLLM's API-server rules as ``prefixkey hash`` does
    (:func:`prefixkey.core.check_api_rules`).
    """
    from_config.validate()
    to_config.validate()
    objs = builtin_corpus() if requests is None else list(requests)
    results = tuple(_compare(i, obj, from_config, to_config, api_checks)
                    for i, obj in enumerate(objs))
    return DriftReport(from_config, to_config, results, _summarize(results))

