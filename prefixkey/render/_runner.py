"""Which runner vLLM gives a folder, and so on which side its tokenizer truncates.

vLLM loads the tokenizer with ``truncation_side="left"`` for a generative runner and
``"right"`` for a pooling one (``tokenizers/registry.py``, 0.29-0.33), so a body's
``truncate_prompt_tokens`` without ``truncation_side`` keeps the end of a generative
model's prompt and the start of a pooling model's (the special tokens counted in, as
the tokenizer truncates before adding them; a list of ids is sliced the same way).
The runner is ``--runner auto``'s (``ModelConfig._get_default_runner_type``): the first
architecture of ``config.json`` the release's model registry knows, by what its class
does, or else the first ``_SUFFIX_TO_DEFAULTS`` suffix it ends with; none: generate.
Those facts are each release's own (``_runner_facts.py``, written from its install by
tools/extract_runner_facts.py). Before them all, a sentence-transformers ``modules.json``
naming a Pooling module makes vLLM pool whatever the architecture
(render/_sentence_transformers.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from ._errors import RenderUnsupportedError
from ._fields import TokenizeParams
from ._runner_facts import REGISTERED, SUFFIXES

__all__ = [
    "TRUNCATION_SIDES",
    "Runner",
    "refuse_unknown_side",
    "runner_type",
    "tokenizer_side",
]

Runner = Literal["generate", "pooling"]
#: The side vLLM's tokenizer truncates on, per runner (tokenizers/registry.py).
TRUNCATION_SIDES: Final[Mapping[str, str]] = {"generate": "left", "pooling": "right"}


def runner_type(architectures: tuple[str, ...], vllm_version: str, *,
                st_pooling: bool = False) -> Runner | str:
    """The runner vLLM ``vllm_version`` picks for ``architectures`` (``--runner auto``), or
    why it is not known here; ``st_pooling``: the folder's ``modules.json`` has a Pooling
    module, which vLLM asks about first."""
    if st_pooling:
        return "pooling"
    if vllm_version not in REGISTERED:
        return (f"which runner vLLM {vllm_version} picks was not extracted from its install "
                "(tools/extract_runner_facts.py)")
    registered = REGISTERED[vllm_version]
    for arch in architectures:
        own = registered.get(arch) or next(
            (runner for suffix, runner in SUFFIXES[vllm_version] if arch.endswith(suffix)),
            "none")
        if own == "error":
            return (f"vLLM {vllm_version}'s class for architecture {arch!r} could not be "
                    "imported in the install its runner facts were extracted from (a module it "
                    "needs is missing there, e.g. torchaudio), so which runner it picks is not "
                    "known")
        if own == "generate" or own == "pooling":
            return own
    return "generate"


def tokenizer_side(runner: Runner | str) -> str:
    """The side the tokenizer truncates on (an unknown runner's is never used: refused)."""
    return TRUNCATION_SIDES.get(runner, "left")


def refuse_unknown_side(params: TokenizeParams, runner: Runner | str) -> None:
    """Refuse the tokenizer's own truncation (``truncate_prompt_tokens`` without
    ``truncation_side``) where its side is not known: ``runner`` says why."""
    if params.truncate_prompt_tokens is None or params.truncation_side is not None:
        return
    if runner not in TRUNCATION_SIDES:
        raise RenderUnsupportedError("truncate_prompt_tokens", runner)
