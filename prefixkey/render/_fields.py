"""The body fields that decide token ids, validated as vLLM 0.31's request models do.

:class:`BodyFields` reads a chat-completions or completions body: the fields
its request model declares that change the ids (``add_special_tokens``,
``truncate_prompt_tokens``, ``max_tokens`` …), with their defaults and the
validators that reject a body. JSON values pydantic would coerce in ways not
reproduced here (a number where a flag goes, a float token id) are refused
with :class:`RenderUnsupportedError` rather than guessed.
:class:`TokenizeParams` is vLLM's ``renderers/params.py`` class of the same
name: the prompt-length bound, truncation and the context-length check.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ..core._api_rules import forbidden_salt_position
from ._eras import CacheSaltRule
from ._errors import RenderRequestError, RenderUnsupportedError

__all__ = ["BodyFields", "TokenizeParams", "dropped_kwarg_warning"]

_INT64_MAX: Final = 2**63 - 1
# pydantic's lax bool parsing of strings (and 0/1), which vLLM's models use.
_TRUE: Final = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE: Final = frozenset({"0", "off", "f", "false", "n", "no"})
_REASONING_EFFORTS: Final = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
_MAX_COMPLETION_PROMPTS: Final = 1024  # VLLM_MAX_COMPLETION_PROMPTS' default


class CharBound(Protocol):
    """What the length checks read of a tokenizer (a Hugging Face or a Mistral one)."""

    @property
    def max_chars_per_token(self) -> int: ...


def _bool(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if type(value) is bool:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    if value is None:
        raise RenderRequestError(name, "Input should be a valid boolean")
    raise RenderRequestError(name, f"Input should be a valid boolean, got {value!r}")


_INT_TEXT: Final = re.compile(r"\s*[+-]?[0-9]+(?:_[0-9]+)*\s*")
_INTEGRAL_TEXT: Final = re.compile(r"\s*[+-]?[0-9]+\.0*\s*")
# Strings vLLM's models are seen to refuse as ints (int_parsing, tests/render vectors):
# exponents, radix prefixes, words: any ASCII letter, or no digit at all.
_NOT_INT_TEXT: Final = re.compile(r".*[A-Za-z].*|[^0-9]*", re.DOTALL)


def _int(value: Any, name: str, position: int | None = None) -> int:
    """An int field as pydantic's lax mode reads JSON: bools, integral floats and integer
    strings (signs, underscores, surrounding spaces, ``"2.0"``) count; strings with a letter
    (exponents, radix prefixes) or no digit are vLLM's 400; other strings are not reproduced."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return int(value)
    if type(value) is float:
        if value.is_integer():
            return int(value)
        raise RenderRequestError(name, "Input should be a valid integer, got a number with a "
                                 "fractional part", position=position)
    if isinstance(value, str):
        if _INT_TEXT.fullmatch(value):
            return int(value)
        if _INTEGRAL_TEXT.fullmatch(value):
            return int(float(value))
        if _NOT_INT_TEXT.fullmatch(value):
            raise RenderRequestError(name, "Input should be a valid integer, unable to parse "
                                     f"string as an integer, got {value!r}", position=position)
        where = name if position is None else f"{name}[{position}]"
        raise RenderUnsupportedError(where, f"{value!r} as an integer is not reproduced "
                                     "(pydantic's string parsing)")
    raise RenderRequestError(name, f"Input should be a valid integer, got {value!r}",
                             position=position)


def _optional_int(body: Mapping[str, Any], name: str) -> int | None:
    value = body.get(name)
    return None if value is None else _int(value, name)


def _optional_str(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise RenderRequestError(name, "Input should be a valid string")
    return value


def _cache_salt(body: Mapping[str, Any], rule: CacheSaltRule) -> str | None:
    salt = body.get("cache_salt")
    if salt is None:
        return None
    if not rule.plain:  # a pydantic Field(min_length=1, max_length=N)
        if not isinstance(salt, str):
            raise RenderRequestError("cache_salt", "Input should be a valid string")
        if not salt or len(salt) > rule.max_chars:
            raise RenderRequestError("cache_salt", "String should have at least 1 character"
                                     if not salt else f"String should have at most "
                                     f"{rule.max_chars} characters")
        return salt
    if not isinstance(salt, str) or not salt:
        raise RenderRequestError("cache_salt", "Parameter 'cache_salt' must be a non-empty "
                                 "string if provided.")
    if len(salt) > rule.max_chars or forbidden_salt_position(salt) is not None:
        raise RenderRequestError("cache_salt", f"Parameter 'cache_salt' must be at most "
                                 f"{rule.max_chars} characters and must not contain '@', '/', "
                                 "'\\\\', or NUL.")
    return salt


def _token_prompt(value: list[Any], field: str) -> list[int]:
    if all(type(t) is int for t in value):
        ids = value
    else:  # what pydantic's lax mode makes of them (True, 2.0, "3")
        ids = [t if type(t) is int else _int(t, field, i) if isinstance(
            t, (bool, float, str)) else _not_an_id(t, field, i) for i, t in enumerate(value)]
    for i, t in enumerate(ids):
        if t < 0:
            raise RenderRequestError(field, "Input should be greater than or equal to 0",
                                     position=i)
    return ids


def _not_an_id(value: Any, field: str, position: int) -> int:
    raise RenderRequestError(field, f"must be an int, got {type(value).__name__}",
                             position=position)


# SamplingParams._verify_args (sampling_params.py): a body breaking one is a 400, so it
# has no ids to key. (lower, upper, lower bound inclusive); None is unbounded.
_SAMPLING_RANGES: Final = {
    "temperature": (0.0, 2.0, True), "top_p": (0.0, 1.0, False), "min_p": (0.0, 1.0, True),
    "presence_penalty": (-2.0, 2.0, True), "frequency_penalty": (-2.0, 2.0, True),
    "repetition_penalty": (0.0, None, False),
}


def _check_sampling(body: Mapping[str, Any]) -> None:
    """The sampling fields vLLM validates before it answers (it refuses the body otherwise)."""
    for name, (low, high, inclusive) in _SAMPLING_RANGES.items():
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, str):  # pydantic reads numbers from strings; only the range matters
            try:
                value = float(value)
            except ValueError:
                raise RenderRequestError(name, "Input should be a valid number, unable to "
                                         "parse string as a number") from None
        elif not isinstance(value, (int, float)):
            raise RenderRequestError(name, "Input should be a valid number")
        if not math.isfinite(value) or value < low or (value == low and not inclusive) or (
                high is not None and value > high):
            raise RenderRequestError(name, f"{name} is out of range, got {value}.")
    for name, minimum in (("n", 1), ("top_k", -1), ("min_tokens", 0)):
        value = body.get(name)
        if value is not None and _int(value, name) < minimum:
            raise RenderRequestError(name, f"{name} must be at least {minimum}, got {value}.")


def _prompts(body: Mapping[str, Any]) -> list[str | list[int]]:
    """A completions ``prompt`` as the engine prompts it gives (vLLM's ``prompt_to_seq``)."""
    if body.get("prompt_embeds") is not None:
        raise RenderUnsupportedError("prompt_embeds", "prompt embeddings are not rendered here")
    prompt = body.get("prompt")
    if prompt is None or prompt == "":
        raise RenderRequestError("prompt", "Either prompt or prompt_embeds must be provided "
                                 "and non-empty.")
    if isinstance(prompt, str):
        return [prompt]
    if not isinstance(prompt, list):
        raise RenderRequestError("prompt", "must be a string, an array of strings, an array of "
                                 "token ids or an array of those")
    if not prompt:
        raise RenderRequestError("prompt", "You must pass at least one prompt")
    # pydantic's union: strings when all are strings, else token ids read leniently
    # (``[1, "2"]`` is ``[1, 2]``), else one list of token ids per prompt.
    if all(isinstance(p, str) for p in prompt):
        prompts: list[str | list[int]] = list(prompt)
    elif not any(isinstance(p, list) for p in prompt):
        return [_token_prompt(prompt, "prompt")]
    elif all(isinstance(p, list) for p in prompt):
        prompts = [_token_prompt(p, f"prompt[{i}]") for i, p in enumerate(prompt)]
    else:
        raise RenderRequestError("prompt", "must not mix token-id arrays with other values")
    if len(prompts) > _MAX_COMPLETION_PROMPTS:
        raise RenderRequestError("prompt", f"prompt list length {len(prompt)} exceeds the "
                                 f"maximum allowed count of {_MAX_COMPLETION_PROMPTS}.")
    return prompts


@dataclass(frozen=True, slots=True)
class TokenizeParams:
    """vLLM's ``TokenizeParams`` for one request: its length bounds and truncation."""

    max_total_tokens: int
    max_output_tokens: int
    truncate_prompt_tokens: int | None
    truncation_side: str | None
    add_special_tokens: bool
    max_output_tokens_param: str
    #: The render era's ``output_budget`` is ``clamped`` (vLLM 0.32 renderers/params.py):
    #: the prompt may fill the context, truncation to the limit keeps one token back, and
    #: ``max_tokens`` is clamped to what is left (none left: 400) instead of reserved.
    clamped: bool = False
    #: A request without max_tokens still generates (vLLM 0.33: max_output_tokens None
    #: rather than 0), so truncation to the limit keeps a token back for it too.
    unset_generates: bool = False
    #: The side the tokenizer truncates on when the body names none: vLLM loads it
    #: truncating on the left for a generative runner, on the right for a pooling one
    #: (render/_runner.py).
    tokenizer_side: str = "left"

    def __post_init__(self) -> None:
        if self.max_output_tokens > self.max_total_tokens:
            raise RenderRequestError(
                self.max_output_tokens_param,
                f"{self.max_output_tokens_param}={self.max_output_tokens} cannot be greater "
                f"than max_model_len={self.max_total_tokens}. Please request fewer output "
                "tokens.")
        if self.truncate_prompt_tokens is not None and \
                self.truncate_prompt_tokens > self.max_input_tokens:
            raise RenderRequestError(
                "truncate_prompt_tokens",
                f"truncate_prompt_tokens={self.truncate_prompt_tokens} cannot be greater than "
                + ("max_model_len" if self.clamped else
                   f"max_model_len - {self.max_output_tokens_param}")
                + f" = {self.max_input_tokens}. Please request a smaller truncation size.")

    @property
    def max_input_tokens(self) -> int:
        if self.clamped:
            return self.max_total_tokens
        return self.max_total_tokens - self.max_output_tokens

    @property
    def truncate_to(self) -> int:
        """Where ``truncate_prompt_tokens=-1`` truncates (0.32: one token held back for
        output when the request generates)."""
        if self.clamped and (self.max_output_tokens != 0 or self.unset_generates):
            return max(0, self.max_input_tokens - 1)
        return self.max_input_tokens

    def encode_max_length(self) -> int | None:
        """The tokenizer's own truncation length (``get_encode_kwargs``), or None.

        Without ``truncate_prompt_tokens`` vLLM truncates to one token past the
        bound only to fail sooner; untruncated ids fail the same length check
        (the character bound already capped their cost), so none is applied.
        """
        length = self.truncate_prompt_tokens
        if length is None or self.truncation_side is not None:
            return None  # with a side: the full sequence, sliced from that side after
        return self.truncate_to if length < 0 else length

    def pre_tokenization(self, text: str, tokenizer: CharBound) -> str:
        """The character bound on the text (``_text_len_check``): an error, or a pre-trim."""
        if len(text) <= self.max_input_tokens:
            # Within the bound whatever the longest token is (every token has a character),
            # so the tokenizer's longest token is not looked up.
            return text
        chars = self.max_input_tokens * tokenizer.max_chars_per_token
        if self.truncate_prompt_tokens is None:
            if len(text) > chars:
                raise RenderRequestError(
                    "input_text", f"This model's maximum context length is "
                    f"{self.max_total_tokens} tokens. However, you requested "
                    f"{self.max_output_tokens} output tokens and your prompt contains "
                    f"{len(text)} characters (more than {chars} characters, which is the "
                    f"upper bound for {self.max_input_tokens} input tokens).")
        elif self.truncation_side is not None and len(text) > chars:
            text = text[-chars:] if self.truncation_side == "left" else text[:chars]
        return text

    def check_reused_length(self, length: int) -> None:
        """``get_max_tokens``' bound (entrypoints/serve/utils/api_utils.py), the only one
        ids reused from ``kv_transfer_params`` meet: the truncation size caps the length
        it counts, though the ids are not truncated; a length that leaves no output token
        makes the derived ``max_tokens`` 0, which SamplingParams refuses."""
        limit = self.truncate_prompt_tokens
        if limit is not None:
            length = min(length, self.max_total_tokens if limit == -1 else limit)
        if length > self.max_total_tokens:
            raise RenderRequestError(
                "kv_transfer_params.prompt_token_ids", f"Input length ({length}) exceeds "
                f"model's maximum context length ({self.max_total_tokens}).")
        if length == self.max_total_tokens:  # no room left: the max_tokens vLLM derives is 0
            raise RenderRequestError("max_tokens", "max_tokens must be at least 1, got 0.")

    def post_tokenization(self, ids: list[int], tokenizer: CharBound) -> list[int]:
        """Truncation (from the side the body names, else the tokenizer's) and the length
        check."""
        length = self.truncate_prompt_tokens
        if length is not None and length < 0:
            length = self.truncate_to
        if length is not None and length < len(ids):
            if length == 0:
                ids = []
            elif (self.truncation_side or self.tokenizer_side) == "left":
                ids = ids[-length:]
            else:
                ids = ids[:length]
        if len(ids) > self.max_input_tokens:
            at_least = "at least " if len(ids) == self.max_input_tokens + 1 else ""
            raise RenderRequestError(
                "input_tokens", f"This model's maximum context length is "
                f"{self.max_total_tokens} tokens. However, you requested "
                f"{self.max_output_tokens} output tokens and your prompt contains "
                f"{at_least}{len(ids)} input tokens, for a total of {at_least}"
                f"{len(ids) + self.max_output_tokens} tokens.")
        if len(ids) == self.max_total_tokens and (self.clamped or self.max_output_tokens == 0):
            # get_max_tokens clamps max_tokens (0.32) or derives it, when the body has none,
            # to what is left: 0, which SamplingParams refuses.
            raise RenderRequestError("max_tokens", "max_tokens must be at least 1, got 0.")
        return ids


@dataclass(frozen=True, slots=True)
class BodyFields:
    """What a body says that changes its token ids, validated."""

    is_chat: bool
    model: str | None
    cache_salt: str | None
    add_special_tokens: bool
    max_output_tokens: int
    max_output_tokens_param: str
    truncate_prompt_tokens: int | None
    truncation_side: str | None
    # chat only
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    documents: list[dict[str, str]] | None = None
    chat_template: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None
    reasoning_effort: str | None = None
    reused_token_ids: Any = None
    # completions only
    prompts: tuple[str | list[int], ...] = ()

    def tokenize_params(self, max_model_len: int, *, clamped: bool = False,
                        unset_generates: bool = False,
                        tokenizer_side: str = "left") -> TokenizeParams:
        # A chat body without max_tokens has 0 here; a completion's default is 16.
        return TokenizeParams(max_model_len, self.max_output_tokens,
                              self.truncate_prompt_tokens, self.truncation_side,
                              self.add_special_tokens, self.max_output_tokens_param, clamped,
                              unset_generates and self.is_chat, tokenizer_side)

    @staticmethod
    def _common(body: Any, salt: CacheSaltRule) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise RenderRequestError("body", "must be a JSON object")
        _check_sampling(body)
        model = body.get("model")
        if model is not None and not isinstance(model, str):
            raise RenderRequestError("model", "Input should be a valid string")
        truncate = _optional_int(body, "truncate_prompt_tokens")
        if truncate is not None and not -1 <= truncate <= _INT64_MAX:
            raise RenderRequestError("truncate_prompt_tokens", "Input should be greater than or "
                                     "equal to -1")
        side = body.get("truncation_side")
        if side not in (None, "left", "right"):
            raise RenderRequestError("truncation_side", "Input should be 'left' or 'right'")
        return {"model": model, "cache_salt": _cache_salt(body, salt),
                "truncate_prompt_tokens": truncate, "truncation_side": side}

    @classmethod
    def chat(cls, body: Any, salt: CacheSaltRule) -> BodyFields:
        common = cls._common(body, salt)
        if "messages" not in body:
            raise RenderRequestError("messages", "Field required")
        max_completion = _optional_int(body, "max_completion_tokens")
        if max_completion is not None:
            max_output, param = max_completion, "max_completion_tokens"
        else:
            max_output, param = _optional_int(body, "max_tokens") or 0, "max_tokens"
        if (max_completion is not None or body.get("max_tokens") is not None) and \
                max_output < 1:
            raise RenderRequestError(param, f"max_tokens must be at least 1, got {max_output}.")
        add_generation_prompt = _bool(body, "add_generation_prompt", True)
        continue_final = _bool(body, "continue_final_message", False)
        # The request model's check reads the raw values: an absent add_generation_prompt
        # passes it (its default applies later; the Harmony path never reads either).
        if body.get("continue_final_message") and body.get("add_generation_prompt"):
            raise RenderRequestError("continue_final_message", "Cannot set both "
                                     "`continue_final_message` and `add_generation_prompt` to "
                                     "True.")
        documents = body.get("documents")
        if documents is not None and not (isinstance(documents, list) and all(
                isinstance(d, dict) and all(isinstance(v, str) for v in d.values())
                for d in documents)):
            raise RenderRequestError("documents", "must be an array of objects of strings")
        kwargs = body.get("chat_template_kwargs")
        if kwargs is not None and not isinstance(kwargs, dict):
            raise RenderRequestError("chat_template_kwargs", "Input should be a valid "
                                     "dictionary")
        effort = body.get("reasoning_effort")
        if effort is not None and effort not in _REASONING_EFFORTS:
            raise RenderRequestError("reasoning_effort", f"Input should be one of "
                                     f"{', '.join(map(repr, _REASONING_EFFORTS))}")
        kv = body.get("kv_transfer_params")
        if kv is not None and not isinstance(kv, dict):
            raise RenderRequestError("kv_transfer_params", "Input should be a valid dictionary")
        # As given: what it means is the render era's (render/_reuse.py).
        reused = kv.get("prompt_token_ids") if kv else None
        return cls(
            is_chat=True, add_special_tokens=_bool(body, "add_special_tokens", False),
            max_output_tokens=max_output, max_output_tokens_param=param,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final, documents=documents,
            chat_template=_optional_str(body, "chat_template"), chat_template_kwargs=kwargs,
            reasoning_effort=effort, reused_token_ids=reused, **common)

    @classmethod
    def completion(cls, body: Any, salt: CacheSaltRule) -> BodyFields:
        common = cls._common(body, salt)
        echo = _bool(body, "echo", False) if body.get("echo") is not None else False
        if body.get("suffix") is not None:
            raise RenderRequestError("suffix", "suffix is only supported for models with FIM "
                                     "completion rendering")
        max_tokens = _optional_int(body, "max_tokens")
        max_tokens = 16 if max_tokens is None else max_tokens  # null means the default
        if max_tokens < 0 or (max_tokens == 0 and not echo):
            raise RenderRequestError("max_tokens", f"max_tokens must be at least 1, got "
                                     f"{max_tokens}.")
        return cls(is_chat=False, add_special_tokens=_bool(body, "add_special_tokens", True),
                   max_output_tokens=max_tokens, max_output_tokens_param="max_tokens",
                   prompts=tuple(_prompts(body)), **common)


def dropped_kwarg_warning(name: str, accepted: Iterable[str]) -> str:
    """The warning for a ``chat_template_kwargs`` entry the chat template does not take.

    vLLM keeps only the names the template reads (and transformers' own
    parameters) and drops the rest without a word, so a misspelled
    ``enable_thinkng`` renders as if it were absent; the warning names the
    name likely meant.
    """
    close = difflib.get_close_matches(name, sorted(accepted), n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"chat_template_kwargs {name!r} is not used by the chat template: vLLM "
            f"drops it{hint}")
