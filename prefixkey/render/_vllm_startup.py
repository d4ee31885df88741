"""Whether vLLM's render server starts for a folder's architectures, per release.

The server's first step (``create_model_config``) has the model registry resolve
``config.json``'s ``architectures`` (``ModelRegistry.inspect_model_cls``); when it
cannot, the server exits ("Model architectures [...] are not supported for now", or
that the architecture moved to a plugin) and no vLLM server tokenizes the folder, so
prefixkey must not render it either, whatever path its tokenizer takes. The registry
decides from names, in this order:

- when no architecture is one it lists, the first one's transformers class, if its
  Transformers modeling backend takes it (``_try_resolve_transformers``); a nested
  (multimodal) config makes that the multimodal backend class, which loads the model's
  processor at start-up (a minimal folder without one fails: not verified here);
- each architecture it lists (a class the facts' install could not import, for want
  of torchaudio or CUDA extensions, counts: a server with them starts), or whose name
  with its suffix replaced (``_normalize_arch``) is one it lists (the runner then
  depends on the options: not verified here).

The facts are each release's own (``_hf_startup_facts.py``, vLLM 0.31.0's, and the
other releases' deltas, tools/probe_vllm_startup.py; which classes fail to import:
``_runner_facts.py``). The rule is consulted once per folder (render/_folder.py for the
Hugging Face paths, render/_mistral.py for Mistral's format).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Final

from . import _hf_startup_facts
from ._eras import render_release
from ._errors import RenderUnsupportedError
from ._hf_facts_delta import STARTUP_TABLES, HfFacts, package_facts
from ._runner_facts import REGISTERED as RUNNER_REGISTERED
from ._runner_facts import SUFFIXES

__all__ = ["Startup", "check_vllm_starts", "startup_facts", "vllm_startup"]

#: Each start-up facts module's facts, by its name (a delta's over its chain of bases).
_module_facts: Final = package_facts(__name__.rpartition(".")[0], STARTUP_TABLES)
#: vLLM 0.31.0's start-up facts, in full (the base the other releases' deltas chain to).
BASE_STARTUP: Final = _module_facts(_hf_startup_facts.__name__.rpartition(".")[2])


@dataclass(frozen=True, slots=True)
class Startup:
    """Whether a release's server starts for some architectures (None: not known), and why."""

    starts: bool | None
    why: str


@cache
def startup_facts(vllm_version: str) -> HfFacts | None:
    """The release's start-up facts (None: not probed under it)."""
    module = render_release(vllm_version).startup_facts
    return None if module is None else _module_facts(module)


def _normalized(arch: str, registered: frozenset[str], vllm_version: str) -> str | None:
    """A listed architecture ``arch`` may stand for once a suffix of it is replaced."""
    suffixes = [suffix for suffix, _ in SUFFIXES[vllm_version]]
    for suffix in suffixes:
        if arch.endswith(suffix):
            for other in suffixes:
                base = arch.replace(suffix, other)
                if base != arch and base in registered:
                    return base
    return None


@cache
def _registry(vllm_version: str, release: str) -> tuple[frozenset[str], frozenset[str]]:
    """The release's registered architectures and those its facts' install could not
    import, as sets once per release (a folder's decision asks for several)."""
    facts = startup_facts(vllm_version)
    assert facts is not None
    return (frozenset(facts.REGISTERED),
            frozenset(a for a, r in RUNNER_REGISTERED[release].items() if r == "error"))


def vllm_startup(architectures: Sequence[str], model_type: str, vllm_version: str) -> Startup:
    """Whether vLLM ``vllm_version``'s registry resolves ``architectures`` (non-empty) of a
    folder whose ``config.json`` has ``model_type``."""
    release = render_release(vllm_version).release
    facts = startup_facts(vllm_version)
    if facts is None or release not in RUNNER_REGISTERED:
        return Startup(None, f"which architectures vLLM {vllm_version} starts for was not "
                       "probed (tools/probe_vllm_startup.py)")
    registered, unimportable = _registry(vllm_version, release)
    listed = [a for a in architectures if a in registered]
    first = architectures[0]
    if listed:
        # A listed class the facts' install could not import (torchaudio, CUDA-only
        # extensions) imports where the server has them: its runner alone stays unknown
        # (render/_runner.py refuses the truncation that depends on it).
        importable = [a for a in listed if a not in unimportable] or listed
        return Startup(True, f"vLLM {vllm_version}'s model registry lists {importable[0]}")
    if not listed and facts.BACKEND.get(first):
        if model_type in facts.MULTIMODAL_TYPES:
            return Startup(None, (
                f"vLLM {vllm_version} would run {first} with its Transformers modeling "
                f"backend's multimodal class (model_type {model_type!r} has a nested "
                "config), whose start-up loads the model's processor (a folder without "
                "one does not start); not verified"))
        return Startup(True, f"vLLM {vllm_version} runs {first} with its Transformers "
                       "modeling backend")
    normalized = [(a, b) for a in architectures if a not in registered
                  for b in [_normalized(a, registered, release)] if b is not None]
    if normalized:
        return Startup(None, (
            f"vLLM {vllm_version}'s model registry would take architecture "
            f"{normalized[0][0]!r} as {normalized[0][1]}, depending on the runner; "
            "not verified"))
    if first not in facts.BACKEND:
        return Startup(None, (
            f"architecture {first!r} is neither in vLLM {vllm_version}'s model registry nor "
            "a class of transformers' auto mappings, whose start-ups were probed; not "
            "verified"))
    return Startup(False, (
        f"architecture {first!r} (model_type {model_type!r}): vLLM {vllm_version} does not "
        f"start for it (its model registry lists none of {list(architectures)} and its "
        f"Transformers modeling backend does not take transformers' {first}), so no vLLM "
        "server tokenizes this folder"))


def check_vllm_starts(architectures: Sequence[str], model_type: str, vllm_version: str, *,
                      unknown_refused: bool = True) -> None:
    """Refuse a folder vLLM ``vllm_version``'s render server does not start for, and (with
    ``unknown_refused``, for a folder that would otherwise render) one whose start-up is
    not known; no architecture (render/_folder.py ``config_architectures`` has filled in
    vLLM's own default first) is left to the paths' own checks."""
    if not architectures:
        return
    found = vllm_startup(architectures, model_type, vllm_version)
    if found.starts is False or (found.starts is None and unknown_refused):
        raise RenderUnsupportedError("config.json", found.why)
