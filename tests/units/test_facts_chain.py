"""Facts deltas chain (render/_hf_facts_delta.py): a delta over another release's delta
loads as the facts it was written from, and a chain that loops is caught."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from prefixkey.render._hf_facts_delta import chain_of, delta_of, facts_of, load_facts

SHAPES: Any = {"MAP": "map", "SET": "set", "ORDERED": "set"}
#: Each install's tables, in full: the full module's first, each next written over the one
#: before it (a chain of three deltas: entries added, changed, dropped and added back).
INSTALLS: list[dict[str, Any]] = [
    {"MAP": {"a": "1", "b": ("x", "y"), "c": None}, "SET": frozenset({"p", "q"}),
     "ORDERED": ("*one*", "*two*")},
    {"MAP": {"a": "2", "b": ("x", "y"), "d": "4"}, "SET": frozenset({"q", "r"}),
     "ORDERED": ("*two*",)},
    {"MAP": {"a": "2", "c": None, "d": "4"}, "SET": frozenset({"q", "r", "p"}),
     "ORDERED": ("*two*", "*three*")},
    {"MAP": {}, "SET": frozenset(), "ORDERED": ()},
]


def _modules() -> dict[str, Any]:
    modules: dict[str, Any] = {"full": SimpleNamespace(
        TRANSFORMERS_VERSION="t0", VLLM_VERSION="v0", **INSTALLS[0])}
    for i, tables in enumerate(INSTALLS[1:], 1):
        base = load_facts(f"m{i - 1}" if i > 1 else "full", modules.__getitem__, SHAPES)
        modules[f"m{i}"] = SimpleNamespace(
            TRANSFORMERS_VERSION=f"t{i}", VLLM_VERSION=f"v{i}",
            BASE_MODULE=f"m{i - 1}" if i > 1 else "full", **delta_of(base, tables, SHAPES))
    return modules


@pytest.mark.parametrize("index", range(len(INSTALLS)))
def test_a_chained_delta_loads_as_its_install(index: int) -> None:
    modules = _modules()
    name = f"m{index}" if index else "full"
    facts = load_facts(name, modules.__getitem__, SHAPES)
    want = facts_of(SimpleNamespace(TRANSFORMERS_VERSION=f"t{index}",
                                    VLLM_VERSION=f"v{index}", **INSTALLS[index]), SHAPES)
    assert facts.transformers_version == want.transformers_version
    assert facts.vllm_version == want.vllm_version
    assert dict(facts.MAP) == dict(want.MAP)
    assert set(facts.SET) == set(want.SET) and type(facts.SET) is frozenset
    assert sorted(facts.ORDERED) == sorted(want.ORDERED) and type(facts.ORDERED) is tuple
    assert [n for n, _ in chain_of(name, modules.__getitem__)] == (
        [f"m{i}" for i in range(index, 0, -1)] + ["full"])


def test_a_chain_that_loops_is_caught() -> None:
    modules = _modules()
    modules["m1"].BASE_MODULE = "m3"
    with pytest.raises(AssertionError, match="cycle: m3 -> m2 -> m1 -> m3"):
        load_facts("m3", modules.__getitem__, SHAPES)
