"""The JSON Lines request/result format (docs/request-format.md), a public contract.

:func:`parse_request` turns one decoded JSON object into a typed
:class:`~prefixkey.core.HashJob`; :func:`run_job` hashes it and returns the
result object. Errors are
:class:`~prefixkey.errors.PrefixKeyError` subclasses naming the field;
:func:`error_record` turns one into the error line the CLI writes.

Input is hostile until checked: lines are read and decoded by the safe reader
(:mod:`prefixkey._json_lines`, re-exported here: :class:`JsonLimits`,
:func:`bounded_lines`, :func:`parse_json_line`), and the request's own bounds (group
sizes, multimodal items, lookahead) are :class:`JsonLimits` fields too.
"""

from __future__ import annotations

import base64
import binascii
import difflib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from itertools import pairwise
from typing import Any, Final

from ._json_lines import JSON_LIMITS, JsonLimits, bounded_lines, parse_json_line
from .core import (
    DEFAULT_VLLM_VERSION,
    Hasher,
    HashJob,
    LoRA,
    MMItem,
    PromptEmbeds,
    Request,
    TokenIds,
    block_hash_to_int64,
    check_api_rules,
    check_token_ids,
    event_extra_keys,
)
from .core._checks import check_int
from .errors import InvalidRequestError, PrefixKeyError

__all__ = [
    "JSON_LIMITS", "JsonLimits", "bounded_lines", "error_record", "hash_to_json",
    "parse_json_line", "parse_request", "run_job", "value_to_json",
]


_KNOWN_FIELDS: Final = frozenset({
    "id", "vllm_version", "hash_algo", "python_hash_seed", "block_size", "token_ids",
    "hash_calls", "num_prompt_tokens", "engine_python", "lookahead", "lora", "cache_salt",
    "mm_items", "prompt_embeds", "group_block_sizes",
    "prompt",  # informational: the text prefixkey render rendered, not hashed
})


def _get(obj: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = obj.get(name, default)
    if value is None or value is default:
        return value
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise InvalidRequestError(name, "must not be a boolean")
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InvalidRequestError(name, f"must be {names}, got {type(value).__name__}")
    return value


def _int_list(obj: Mapping[str, Any], name: str,
              limits: JsonLimits | None = None) -> list[int] | None:
    """An array of ints; with ``limits``, at most ``max_<name>`` of them."""
    value: list[int] | None = _get(obj, name, list, None)
    if value is None:
        return None
    if limits is not None:
        bound = f"max_{name}"
        _check_count(name, value, getattr(limits, bound), bound)
    for i, item in enumerate(value):
        if type(item) is not int:
            raise InvalidRequestError(
                name, f"must be an int, got {type(item).__name__} {item!r}", position=i
            )
    return value


_LORA_FIELDS: Final = ("name", "path", "int_id")
_MM_FIELDS: Final = ("identifier", "offset", "length")


def _parse_lora(value: Any) -> LoRA | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidRequestError("lora", "must be an object with name and path, or null")
    if "name" not in value:
        raise _required(value, "name", "lora.name", _LORA_FIELDS)
    if "path" not in value:
        raise _required(value, "path", "lora.path", _LORA_FIELDS,
                        " (vLLM 0.31 hashes the path)")
    int_id = value.get("int_id")
    if isinstance(int_id, bool):
        raise InvalidRequestError("lora.int_id", "must be an int, got bool")
    return LoRA(value["name"], value["path"], int_id)


def _parse_mm_items(value: Any, limits: JsonLimits) -> tuple[MMItem, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidRequestError("mm_items", "must be an array of objects")
    _check_count("mm_items", value, limits.max_mm_items, "max_mm_items")
    items = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise InvalidRequestError("mm_items", "must be an object", position=i)
        for key in _MM_FIELDS:
            if key not in item:
                raise _required(item, key, f"mm_items[{i}].{key}", _MM_FIELDS)
        try:
            items.append(MMItem(item["identifier"], item["offset"], item["length"]))
        except InvalidRequestError as exc:
            raise InvalidRequestError(
                (exc.field or "mm_items").replace("mm_items.", f"mm_items[{i}]."), exc.reason
            ) from None
    return tuple(items)


def _parse_prompt_embeds(value: Any) -> PromptEmbeds | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidRequestError("prompt_embeds", "must be an object with dtype, shape, hex")
    shape = value.get("shape")
    if not isinstance(shape, list) or not all(type(d) is int for d in shape):
        raise InvalidRequestError("prompt_embeds.shape", "must be an array of ints")
    try:
        if isinstance(value.get("hex"), str):
            data = bytes.fromhex(value["hex"])
        elif isinstance(value.get("b64"), str):
            data = base64.b64decode(value["b64"], validate=True)
        else:
            raise InvalidRequestError("prompt_embeds.hex", "hex or b64 data is required")
    except (ValueError, binascii.Error) as exc:
        raise InvalidRequestError("prompt_embeds.hex", f"is not valid: {exc}") from None
    dtype = value.get("dtype")
    if not isinstance(dtype, str):
        raise InvalidRequestError("prompt_embeds.dtype", "must be a string")
    return PromptEmbeds(data, dtype, tuple(shape))


@lru_cache(maxsize=64)
def _hasher(version: str, algo: str | None, seed: str | None, block_size: int,
            lookahead: int, engine_python: str | None, strict: bool) -> Hasher:
    return Hasher(block_size=block_size, hash_algo=algo, python_hash_seed=seed,
                  vllm_version=version, lookahead=lookahead, engine_python=engine_python,
                  strict=strict)


def _check_count(name: str, value: list[Any], limit: int, bound: str) -> None:
    if len(value) > limit:
        raise InvalidRequestError(name, f"has {len(value)} entries, more than {limit} "
                                  f"(JsonLimits.{bound})")


# The fields that change a key or its hasher: leaving one out (misspelled) gives a wrong key.
_KEY_FIELDS: Final = _KNOWN_FIELDS - {"id", "prompt"}
# Missing, these are an error of their own (which names the misspelling).
_REQUIRED: Final = frozenset({"token_ids", "block_size"})
_CLOSE: Final = 0.75  # difflib ratio: "cache_slat" ~ "cache_salt", "tokens_ids" ~ "token_ids"


def _meant(name: str, fields: Iterable[str]) -> str | None:
    """The field of ``fields`` a misspelled ``name`` likely meant, if any."""
    close = difflib.get_close_matches(name, sorted(fields), n=1, cutoff=_CLOSE)
    return close[0] if close else None


def _did_you_mean(name: str) -> str:
    """The request field a misspelled ``name`` likely meant (``cache_slat``), as a hint."""
    meant = _meant(name, _KNOWN_FIELDS)
    return f" (did you mean {meant!r}?)" if meant else ""


def _required(obj: Mapping[str, Any], name: str, field: str, known: Iterable[str],
              why: str = "") -> InvalidRequestError:
    """``field`` is missing from ``obj``: the error, naming a key that looks like a
    misspelling of ``name`` (``block_szie``) when ``obj`` has one."""
    known = frozenset(known)
    typo = next((str(k) for k in obj if k not in known and _meant(str(k), [name])), None)
    hint = f"; found {typo!r}: did you mean {name!r}?" if typo is not None else ""
    return InvalidRequestError(field, f"is required{why}{hint}")


def _misspelled(obj: Mapping[str, Any], unknown: list[Any]) -> InvalidRequestError | None:
    """The error for the first unknown field that looks like a misspelled key-changing
    field the request leaves out (``cache_slat`` without ``cache_salt``), if any."""
    for name in unknown:
        meant = _meant(str(name), _KEY_FIELDS)
        if meant is not None and meant not in obj and meant not in _REQUIRED:
            return InvalidRequestError(
                str(name), f"is not a request field: did you mean {meant!r}? Its value would "
                f"be left out of the keys (pass allow_misspelled_fields, or "
                f"--allow-misspelled-fields, to hash the line without it)")
    return None


def parse_request(
    obj: Any, *, strict: bool = True, api_checks: bool = False,
    reject_unknown_fields: bool = False, allow_misspelled_fields: bool = False,
    limits: JsonLimits = JSON_LIMITS,
) -> HashJob:
    """Validate one request object (already JSON-decoded) and bind its hasher.

    ``limits`` bounds the request's cost: its group sizes, multimodal items
    and lookahead (:class:`JsonLimits`).

    An unknown field that looks like a misspelling of a field that changes
    the keys (``cache_slat``), while that field is absent, is an
    :class:`InvalidRequestError`: its value would silently be left out of the
    keys. ``allow_misspelled_fields`` makes it a warning like any other
    unknown field; ``reject_unknown_fields`` makes every unknown field an error.
    """
    if not isinstance(obj, Mapping):
        raise InvalidRequestError("<line>", f"must be a JSON object, got {type(obj).__name__}")
    unknown = [name for name in obj if name not in _KNOWN_FIELDS]
    if unknown and reject_unknown_fields:
        name = str(unknown[0])
        raise InvalidRequestError(name, f"is not a request field{_did_you_mean(name)}")
    if unknown and not allow_misspelled_fields and (error := _misspelled(obj, unknown)):
        raise error
    warnings = [f"unknown field {name!r} ignored{_did_you_mean(str(name))}" for name in unknown]
    engine_python = _get(obj, "engine_python", str, None)
    if "token_ids" not in obj:
        raise _required(obj, "token_ids", "token_ids", _KNOWN_FIELDS)
    ids = _get(obj, "token_ids", (list, TokenIds), None)
    if ids is None:
        raise InvalidRequestError("token_ids", "must be an array of ints")
    # Checked once, here (rendered ids arrive as TokenIds, already checked): the hasher
    # takes TokenIds (and their slices) as they are.
    token_ids = check_token_ids(ids)
    block_size = obj.get("block_size")
    if block_size is None:
        if "block_size" in obj:
            raise InvalidRequestError("block_size", "must be an int >= 1, got null")
        raise _required(obj, "block_size", "block_size", _KNOWN_FIELDS,
                        " (the engine's hash block size)")
    version = _get(obj, "vllm_version", str, None)
    if version is None:  # absent or null: the default release
        version = DEFAULT_VLLM_VERSION
    algo = _get(obj, "hash_algo", str, None)
    seed = _get(obj, "python_hash_seed", str, None)
    check_int("block_size", block_size)
    lookahead = obj.get("lookahead")
    lookahead = check_int("lookahead", 0 if lookahead is None else lookahead, least=0)
    if lookahead > limits.max_lookahead:
        raise InvalidRequestError("lookahead", f"must be at most {limits.max_lookahead} "
                                  f"(JsonLimits.max_lookahead), got {lookahead}")
    hasher = _hasher(version, algo, seed, block_size, lookahead, engine_python, strict)

    hash_calls = _int_list(obj, "hash_calls")
    num_prompt = _get(obj, "num_prompt_tokens", int, None)
    if hash_calls is not None:
        if not hash_calls:
            raise InvalidRequestError("hash_calls", "must not be empty")
        for i, (a, b) in enumerate(pairwise(hash_calls)):
            if b <= a:
                raise InvalidRequestError("hash_calls", "must be strictly increasing",
                                          position=i + 1)
        if hash_calls[0] < 0 or hash_calls[-1] > len(token_ids):
            raise InvalidRequestError(
                "hash_calls", f"entries must lie in [0, {len(token_ids)}] (the token count)"
            )
        calls = tuple(hash_calls)
    elif num_prompt is not None:
        if not 0 <= num_prompt <= len(token_ids):
            raise InvalidRequestError(
                "num_prompt_tokens", f"must lie in [0, {len(token_ids)}], got {num_prompt}"
            )
        calls = (num_prompt, *range(num_prompt + 1, len(token_ids) + 1))
    else:
        calls = (len(token_ids),)

    group_sizes = _int_list(obj, "group_block_sizes", limits) or []
    for i, size in enumerate(group_sizes):
        if size < block_size or size % block_size:
            raise InvalidRequestError(
                "group_block_sizes", f"must be multiples of block_size {block_size}", position=i
            )
    salt = obj.get("cache_salt")
    request = Request(
        token_ids[: calls[0]],
        lora=_parse_lora(obj.get("lora")),
        cache_salt=salt,
        mm_items=_parse_mm_items(obj.get("mm_items"), limits),
        prompt_embeds=_parse_prompt_embeds(obj.get("prompt_embeds")),
    )
    request.check_inside(len(token_ids))
    if api_checks:
        check_api_rules(request, hasher.release)
    return HashJob(
        hasher=hasher,
        request=request,
        token_ids=token_ids,
        hash_calls=calls,
        report_calls=hash_calls is not None or num_prompt is not None,
        group_block_sizes=tuple(group_sizes),
        warnings=(*hasher.warnings, *warnings),
    )


def hash_to_json(value: int | bytes | None, *, tagged: bool = False,
                 hex_ints: bool = False) -> Any:
    """One block hash in JSON, the one encoding every JSON output of prefixkey uses.

    Digest bytes are a hex string and ints a JSON int, as the release published
    them (``prefixkey events decode``); with ``hex_ints`` an int is its hex
    digits, ``-`` if negative (the result format's ``block_hashes``, so every
    key is a string); with ``tagged`` ``{"int": n}`` or ``{"hex": "…"}`` (the
    wire fixtures' form). None stays None.

    >>> hash_to_json(bytes([1, 171])), hash_to_json(-255), hash_to_json(-255, hex_ints=True)
    ('01ab', -255, '-ff')
    >>> hash_to_json(b"\\x01", tagged=True), hash_to_json(7, tagged=True)
    ({'hex': '01'}, {'int': 7})
    """
    if value is None:
        return None
    if isinstance(value, bytes):
        return {"hex": value.hex()} if tagged else value.hex()
    if tagged:
        return {"int": value}
    return format(value, "x") if hex_ints else value


def value_to_json(value: Any) -> Any:
    """Any other value (extra keys, event fields): tuples and lists become arrays, bytes
    ``{"hex": …}`` (never mistaken for a string); str, int, float and None stay.

    >>> value_to_json(("lora", (b"\\xff", 3), None))
    ['lora', [{'hex': 'ff'}, 3], None]
    """
    if value is None:  # a block without extra keys: most blocks of most requests
        return None
    if isinstance(value, (tuple, list)):
        # A str or int item is kept without a call: the extra keys of every block of a
        # request (a LoRA name, a salt, offsets) are mostly those, and a call per item
        # made this the JSON line's largest cost after hashing (issue 21's measurement).
        return [v if type(v) is str or type(v) is int else value_to_json(v) for v in value]
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    return value


def _no_full_block(job: HashJob) -> str:
    hasher = job.hasher
    lookahead = f" (plus lookahead {hasher.lookahead})" if hasher.lookahead else ""
    return (f"no full block: {len(job.token_ids)} token(s) at block_size {hasher.block_size}"
            f"{lookahead}, so no keys (vLLM caches only full blocks)")


def run_job(job: HashJob, request_id: Any = None) -> dict[str, Any]:
    """Hash one job; the result object of the JSON Lines format."""
    keys = job.run()
    hasher, hashes = keys.hasher, keys.block_hashes
    # An empty result is a valid answer, but rarely the one meant (block_size too large?).
    empty = (_no_full_block(job),) if not hashes else ()
    is_bytes = hasher.era.hash_type == "bytes"
    result: dict[str, Any] = {
        "id": request_id,
        "block_hashes": [hash_to_json(h, hex_ints=True) for h in hashes],
        # Int-keyed releases publish their ints as they are.
        "block_hashes_int64": (
            [block_hash_to_int64(h) for h in hashes] if is_bytes else None  # type: ignore[arg-type]
        ),
        "extra_keys": [value_to_json(k) for k in keys.extra_keys],
        "event_extra_keys": [
            value_to_json(event_extra_keys(k, hasher.era, lookahead=hasher.lookahead))
            for k in keys.extra_keys
        ] or None if hasher.era.published_extra_keys != "none" else None,
        "none_hash": hash_to_json(hasher.none_hash.value, hex_ints=True),
        "hash_type": hasher.era.hash_type,
        "resolved": {
            "vllm_version": hasher.release,
            "era": hasher.era.name,
            "hash_algo": hasher.algorithm.name,
            "seed_source": hasher.none_hash.seed_source,
        },
        "warnings": [*keys.warnings, *empty],
    }
    if job.report_calls:
        result["new_hashes_per_call"] = list(keys.new_hashes_per_call)
    if keys.group_block_hashes:
        result["group_block_hashes"] = {
            str(size): [hash_to_json(h, hex_ints=True) for h in group]
            for size, group in keys.group_block_hashes.items()
        }
    return result


def error_record(exc: PrefixKeyError, request_id: Any, line: int | None) -> dict[str, Any]:
    """The error line for a request that could not be hashed.

    An error with a ``hint`` (prefixkey's advice beside a message that is vLLM's
    own, e.g. a 404's) carries it in ``error.hint``.
    """
    error = {
        "type": type(exc).__name__,
        "message": str(exc),
        "field": exc.field,
        "line": line,
    }
    hint = getattr(exc, "hint", None)
    if isinstance(hint, str):
        error["hint"] = hint
    return {"id": request_id, "error": error}

