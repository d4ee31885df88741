"""The checks vLLM's API server makes before a request reaches the engine core, per release.

The engine core hashes whatever it is given (an empty or long salt, a
negative token id); the API server refuses some of it first, and what it
refuses changed from release to release. Each rule is a record: what it
refuses, the first release that refuses it, and where vLLM does. The rules
were read from the release wheels: each ``since`` release makes the check
and the release before it does not.

:func:`check_api_rules` is the one place the table is consulted; the core's
own checks (:mod:`._request`) are only the structural ones every release's
engine core would choke on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from packaging.version import Version

from ..errors import InvalidRequestError
from ._request import Request, checked_token_ids
from ._schemes import DEFAULT_VLLM_VERSION, resolve_release

__all__ = ["API_RULES", "ApiRule", "api_rules", "check_api_rules"]


@dataclass(frozen=True, slots=True)
class ApiRule:
    """One check of vLLM's API server, from the first release that makes it."""

    #: What it refuses, in a few words.
    name: str
    #: The first release whose API server makes the check.
    since: str
    #: Where vLLM makes it (module and function), for the next reader of the wheels.
    where: str
    #: Raises :class:`InvalidRequestError` for a request the rule refuses;
    #: its second argument is the release, for the message.
    check: Callable[[Request, str], None]


def _salt_non_empty(request: Request, release: str) -> None:
    if request.cache_salt == "":
        raise InvalidRequestError(
            "cache_salt", f"must be a non-empty string if given (vLLM {release}'s API server)")


def _salt_length(limit: int) -> Callable[[Request, str], None]:
    def check(request: Request, release: str) -> None:
        salt = request.cache_salt
        if salt is not None and len(salt) > limit:
            raise InvalidRequestError(
                "cache_salt", f"must be at most {limit} characters in vLLM {release}'s API "
                f"server, has {len(salt)}")
    return check


#: vLLM 0.30+'s ``validate_cache_salt``, the cache-salt rule written once (the rules
#: below, the renderer's own refusal and the Hypothesis strategies read it): at most
#: this many characters, and none of these.
CACHE_SALT_MAX_CHARS: Final = 128
CACHE_SALT_FORBIDDEN: Final = "@/\\\x00"


def forbidden_salt_position(salt: str) -> int | None:
    """Where the first character 0.30+ refuses in a cache salt is (None: nowhere)."""
    return next((i for i, c in enumerate(salt) if c in CACHE_SALT_FORBIDDEN), None)


def _salt_characters(request: Request, release: str) -> None:
    salt = request.cache_salt or ""
    bad = forbidden_salt_position(salt)
    if bad is not None:
        raise InvalidRequestError(
            "cache_salt", f"must not contain '@', '/', '\\' or NUL in vLLM {release}'s API "
            f"server (found {salt[bad]!r})", position=bad)


def _token_ids_non_negative(request: Request, release: str) -> None:
    # The prompt's ids only: the input processor checks the prompt (generated ids come
    # from the model). Checked ids (TokenIds) pass at once; min() runs at C speed.
    ids, _ = checked_token_ids(request.token_ids)
    if ids and min(ids) < 0:
        position = next(i for i, t in enumerate(ids) if t < 0)
        raise InvalidRequestError(
            "token_ids", f"must be non-negative in vLLM {release} (its input processor "
            f"refuses token id {ids[position]} as out of vocabulary)", position=position)


def _lora_path(request: Request, release: str) -> None:
    if request.lora is not None and not request.lora.path:
        raise InvalidRequestError("lora.path", "cannot be empty (vLLM asserts lora_path)")


def _lora_int_id(request: Request, release: str) -> None:
    lora = request.lora
    if lora is not None and lora.int_id is not None and lora.int_id < 1:
        raise InvalidRequestError(
            "lora.int_id", f"must be >= 1 in vLLM {release} (LoRARequest, 0.11+)")


#: Every rule, in the order they are checked (a request breaking several hears of the first).
API_RULES: Final = (
    ApiRule("an empty cache_salt", "0.9.0",
            "entrypoints/openai protocol: check_cache_salt_support (0.9-0.27), "
            "Field(min_length=1) (0.28-0.29), validate_cache_salt (0.30+)", _salt_non_empty),
    ApiRule(f"a cache_salt over {CACHE_SALT_MAX_CHARS} characters", "0.30.0",
            "entrypoints/generate/base/protocol.py validate_cache_salt",
            _salt_length(CACHE_SALT_MAX_CHARS)),
    ApiRule("'@', '/', '\\' or NUL in a cache_salt", "0.30.0",
            "entrypoints/generate/base/protocol.py validate_cache_salt", _salt_characters),
    # Still declared in 0.30+, where the 128-character rule above is met first.
    ApiRule("a cache_salt over 1024 characters", "0.29.0",
            "entrypoints/openai protocol: cache_salt Field(max_length=1024)", _salt_length(1024)),
    ApiRule("a negative prompt token id", "0.28.0",
            "v1/engine/input_processor.py InputProcessor._validate_model_input "
            "(when the server has a tokenizer)", _token_ids_non_negative),
    ApiRule("an empty LoRA path", "0.7.0",
            "lora/request.py LoRARequest.__post_init__ (assert lora_path)", _lora_path),
    ApiRule("a LoRA int id below 1", "0.11.0",
            "lora/request.py LoRARequest.__post_init__", _lora_int_id),
)


def api_rules(vllm_version: str = DEFAULT_VLLM_VERSION) -> tuple[ApiRule, ...]:
    """The rules release ``vllm_version``'s API server applies (a newer release than
    any known one: all of them)."""
    release = resolve_release(vllm_version, strict=False).release
    return tuple(rule for rule in API_RULES if Version(rule.since) <= release)


def check_api_rules(request: Request, vllm_version: str = DEFAULT_VLLM_VERSION) -> None:
    """Apply the checks release ``vllm_version``'s API server makes before a request
    reaches the engine core (:data:`API_RULES`).

    The engine core itself hashes whatever it is given, so these are opt-in
    (the CLI applies them to the lines it reads). Raises
    :class:`InvalidRequestError` naming the field and the release.
    """
    release = resolve_release(vllm_version, strict=False).release_name
    for rule in api_rules(vllm_version):
        rule.check(request, release)
