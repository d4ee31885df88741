"""Facts per vLLM release: a base install's facts, and each release's delta.

``_hf_facts.py`` holds the tokenizer-class facts of the base install (vLLM 0.31.0,
transformers 5.17) in full; every other release's module (``_hf_facts_0_29_0.py``, …,
named by the release whose install it was read from) holds only how that install
differs from the facts of the module it names as its base (``BASE_MODULE``: the full
module or another release's delta, whichever gives the smaller delta, so deltas chain):
for each table, the entries it adds or changes (``<TABLE>_SET`` for a mapping,
``<TABLE>_ADD`` for a set) and the keys it drops (``<TABLE>_DROP``). :func:`load_facts`
applies a chain in order. The start-up facts (``_hf_startup_facts.py`` and its releases'
deltas, tables :data:`STARTUP_TABLES`) are kept the same way. They are written by
tools/extract_hf_tokenizers.py and tools/probe_vllm_startup.py, which load this module by
its path to compute a delta, so writing and reading a delta are one piece of code. Kept
free of package imports for that reason (:func:`load_facts` takes the module loader).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any, Final, Literal

__all__ = ["STARTUP_TABLES", "TABLES", "HfFacts", "apply_delta", "chain_of", "delta_of", "drifted",
           "facts_of", "load_facts", "package_facts"]

#: Each table of the facts, and its shape: ``map`` (key -> value) or ``set`` (keys; a
#: tuple's order does not matter to the rules, which test membership).
TABLES: Final[Mapping[str, Literal["map", "set"]]] = MappingProxyType({
    "REGISTERED_CLASS": "map",
    "BASE_MODELS": "map",
    "CONFIG_MODEL_TYPES": "set",
    "VLLM_CONFIG_TYPES": "set",
    "ROPE_LOAD_FAILURES": "map",
    "INCORRECT_HUB_CLASS": "set",
    "BACKEND_NAME_PATTERNS": "set",
    "VLLM_INCORRECT_HUB_CLASS": "set",
    "BYTE_LEVEL_BACKEND_HUB": "set",
    "ENCODER_DECODER_TYPES": "set",
    "DECODER_START_TYPES": "set",
    "PROCESSOR_TYPES": "set",
    "CLASSES": "map",
})
#: The start-up facts' tables (tools/probe_vllm_startup.py; render/_vllm_startup.py applies
#: them): the architectures vLLM's model registry lists, whether its Transformers modeling
#: backend takes transformers' class of each architecture transformers maps, the model
#: types whose default config vLLM reads as nested (multimodal), and each model type's
#: transformers architectures.
STARTUP_TABLES: Final[Mapping[str, Literal["map", "set"]]] = MappingProxyType({
    "REGISTERED": "set",
    "BACKEND": "map",
    "MULTIMODAL_TYPES": "set",
    "ARCHITECTURES": "map",
})
#: The tables naming model types (a type in a delta of one of these is a drifted type).
#: ENCODER_DECODER_TYPES, DECODER_START_TYPES, BASE_MODELS, VLLM_CONFIG_TYPES and
#: ROPE_LOAD_FAILURES are not: render/_folder.py reads each release's own.
MODEL_TYPE_TABLES: Final = ("REGISTERED_CLASS", "CONFIG_MODEL_TYPES", "INCORRECT_HUB_CLASS",
                            "VLLM_INCORRECT_HUB_CLASS")


@dataclass(frozen=True, slots=True)
class HfFacts:
    """One install's facts: the versions it was read from and every table by name."""

    transformers_version: str
    vllm_version: str
    tables: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        # facts.CLASSES, facts.REGISTERED_CLASS, ...: the rules read tables by their names.
        try:
            return self.tables[name]
        except KeyError:
            raise AttributeError(name) from None


def facts_of(namespace: Any, shapes: Mapping[str, Literal["map", "set"]] = TABLES) -> HfFacts:
    """The facts of a full facts module (``_hf_facts.py``; ``_hf_startup_facts.py`` with
    ``shapes`` :data:`STARTUP_TABLES`)."""
    tables: dict[str, Any] = {}
    for name, shape in shapes.items():
        value = getattr(namespace, name)
        tables[name] = MappingProxyType(dict(value)) if shape == "map" else value
    return HfFacts(namespace.TRANSFORMERS_VERSION, namespace.VLLM_VERSION,
                   MappingProxyType(tables))


def delta_of(base: HfFacts, release: Mapping[str, Any],
             shapes: Mapping[str, Literal["map", "set"]] = TABLES) -> dict[str, Any]:
    """A release's tables (full, by name) as their differences from ``base``: the
    ``<TABLE>_SET``/``_ADD``/``_DROP`` values a delta module holds, sorted."""
    out: dict[str, Any] = {}
    for name, shape in shapes.items():
        mine, theirs = base.tables[name], release[name]
        if shape == "map":
            out[f"{name}_SET"] = {k: theirs[k] for k in sorted(theirs)
                                  if k not in mine or mine[k] != theirs[k]}
        else:
            out[f"{name}_ADD"] = sorted(set(theirs) - set(mine))
        out[f"{name}_DROP"] = sorted(set(mine) - set(theirs))
    return out


def apply_delta(base: HfFacts, delta: Any,
                shapes: Mapping[str, Literal["map", "set"]] = TABLES) -> HfFacts:
    """A release's facts: ``base`` with a delta module's changes applied."""
    tables: dict[str, Any] = {}
    for name, shape in shapes.items():
        mine = base.tables[name]
        drop = set(getattr(delta, f"{name}_DROP"))
        if shape == "map":
            table = {k: v for k, v in mine.items() if k not in drop}
            table.update(getattr(delta, f"{name}_SET"))
            tables[name] = MappingProxyType(table)
        else:
            kept = [k for k in mine if k not in drop] + list(getattr(delta, f"{name}_ADD"))
            tables[name] = tuple(kept) if isinstance(mine, tuple) else frozenset(kept)
    return HfFacts(delta.TRANSFORMERS_VERSION, delta.VLLM_VERSION, MappingProxyType(tables))


def chain_of(module: str, load: Callable[[str], Any]) -> list[tuple[str, Any]]:
    """The facts module named ``module`` and each base it names in turn (``BASE_MODULE``),
    down to the full module, as (name, module) pairs (``load`` gives a module by name)."""
    chain = [(module, load(module))]
    while (base := getattr(chain[-1][1], "BASE_MODULE", None)) is not None:
        names = [name for name, _ in chain]
        # The tools never write a cycle (they refuse a base whose chain holds the module).
        assert base not in names, f"facts modules in a cycle: {' -> '.join(names)} -> {base}"
        chain.append((base, load(base)))
    return chain


def load_facts(module: str, load: Callable[[str], Any],
               shapes: Mapping[str, Literal["map", "set"]] = TABLES) -> HfFacts:
    """The facts of the facts module named ``module``: a full module's tables, or a
    delta's applied over its base's facts, each delta of the chain in turn."""
    chain = [namespace for _, namespace in chain_of(module, load)]
    facts = facts_of(chain.pop(), shapes)
    for delta in reversed(chain):
        facts = apply_delta(facts, delta, shapes)
    return facts


def package_facts(package: str, shapes: Mapping[str, Literal["map", "set"]] = TABLES
                  ) -> Callable[[str], HfFacts]:
    """:func:`load_facts` over the facts modules of ``package`` (imported by name), once
    per module."""

    @cache
    def facts(module: str) -> HfFacts:
        return load_facts(module, lambda name: importlib.import_module(f"{package}.{name}"),
                          shapes)

    return facts


def drifted(base: HfFacts, release: HfFacts) -> tuple[frozenset[str], frozenset[str]]:
    """The model types and name patterns whose facts differ between two installs."""
    changes = delta_of(base, release.tables)
    types: set[str] = set()
    for name in MODEL_TYPE_TABLES:
        for key in ("_SET", "_ADD", "_DROP"):
            types |= set(changes.get(name + key, ()))
    patterns = (set(changes["BACKEND_NAME_PATTERNS_ADD"])
                | set(changes["BACKEND_NAME_PATTERNS_DROP"]))
    return frozenset(types), frozenset(patterns)
