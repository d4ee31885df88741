"""The package's layers, enforced: no import points up, none sideways unless named, no cycle.

Every import counts: module level, inside functions, under ``TYPE_CHECKING``, and the
lazy names a package ``__init__`` maps to its modules (a dict of name → sibling
module, as ``prefixkey.fleet.feed`` keeps for its pyzmq-backed names). CONTRIBUTING.md
("Layout") draws the same graph. The checker is tested on sources that break each
rule, so the contract test can fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest

PACKAGE: Final = Path(__file__).resolve().parents[2] / "prefixkey"

#: Each unit of the package (a subpackage or a top-level module) and its layer: a unit
#: may import from lower layers only. ``prefixkey`` is the top-level façade.
LAYERS: Final[Mapping[str, float]] = {
    "_version": 0,
    "errors": 0,
    "_extras": 0.5,  # MissingExtraError for the extras' imports (errors only)
    "_json_lines": 0.5,  # the safe JSON Lines reader (errors only)
    "core": 1,
    "jsonl": 2,  # the request/result format
    "events": 3,
    "multimodal": 3,
    "render": 4,
    # fleet's rooms: the replicas' identity, the index, routing over it, the live feed
    # into it, and the façade over all three.
    "fleet._replicas": 5.0,
    "fleet.index": 5.1,
    "fleet.routing": 5.2,
    "fleet.feed": 5.3,
    "fleet": 5.9,
    "analysis": 6,
    "testing": 6,
    "gateways": 7,
    "cli": 8,
    "prefixkey": 9,
    "__main__": 9,  # python -m prefixkey
}
#: Imports allowed inside one layer, (importer, imported). None today.
SIDEWAYS: Final[frozenset[tuple[str, str]]] = frozenset()


def unit_of(module: str) -> str:
    """The longest LAYERS entry holding the module: ``prefixkey.fleet.index._redis`` →
    ``fleet.index``, ``prefixkey.core._hasher`` → ``core``, ``prefixkey`` → ``prefixkey``."""
    parts = module.split(".")[1:]
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LAYERS:
            return ".".join(parts[:end])
    return parts[0] if parts else "prefixkey"


def _lazy_targets(tree: ast.Module, package: str,
                  siblings: frozenset[str] | set[str]) -> Iterator[str]:
    """Modules a package ``__init__`` loads by name: values of a name → module dict."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for value in node.value.values:
                if (isinstance(value, ast.Constant) and isinstance(value.value, str)
                        and value.value in siblings):
                    yield f"{package}.{value.value}"


def imports_of(source: str, module: str, *, is_package: bool = False,
               siblings: frozenset[str] | set[str] = frozenset()) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every prefixkey import in ``source``."""
    tree = ast.parse(source)
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                targets = ([".".join([*base, node.module])] if node.module
                           else [".".join([*base, alias.name]) for alias in node.names])
            else:
                targets = [node.module or ""]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "prefixkey":
                yield node.lineno, target
    if is_package:
        for target in _lazy_targets(tree, ".".join(package), siblings):
            yield 0, target


def layer_violations(source: str, module: str, *, is_package: bool = False,
                     siblings: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Imports of ``module`` that point up, or sideways without being named in SIDEWAYS."""
    me = unit_of(module)
    problems = []
    for line, target in imports_of(source, module, is_package=is_package, siblings=siblings):
        other = unit_of(target)
        if other == me:
            continue
        if other not in LAYERS:  # `from .. import name`: a name of the façade itself
            other = "prefixkey"
        if LAYERS[other] > LAYERS[me] or (
                LAYERS[other] == LAYERS[me] and (me, other) not in SIDEWAYS):
            problems.append(f"{module}:{line} ({me}) imports {target} ({other})")
    return problems


def _modules() -> Iterator[tuple[str, Path, bool]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        is_package = path.name == "__init__.py"
        yield ".".join(parts[:-1] if is_package else parts), path, is_package


def _siblings(path: Path) -> set[str]:
    return {p.stem for p in path.parent.glob("*.py")} - {"__init__"}


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("prefixkey.fleet.feed._learning", "from ...events import fingerprint", 0),
        ("prefixkey.fleet.feed._learning", "from ...analysis import fingerprint", 1),
        ("prefixkey.fleet.feed._learning", "def f():\n    from ...analysis import fingerprint", 1),
        ("prefixkey.fleet.feed._learning",
         "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ...cli import main", 1),
        ("prefixkey.core._hasher", "from ..events import EventBatch", 1),
        ("prefixkey.core._hasher", "from .. import errors", 0),
        ("prefixkey.events._decode", "from ..multimodal import MMHasher", 1),  # sideways
        ("prefixkey.render._media", "from ..multimodal import MMHasher", 0),
        ("prefixkey.testing._export", "from .. import __version__", 1),  # the façade
        ("prefixkey.testing._export", "from .._version import __version__", 0),
        ("prefixkey.analysis._audit", "import prefixkey.cli", 1),
        ("prefixkey.cli._hash", "from prefixkey.fleet import Router", 0),
        ("prefixkey.events._recording", "from .._json_lines import parse_json_line", 0),
        ("prefixkey._json_lines", "from .core import Request", 1),
        ("prefixkey.fleet.feed._feed", "from ..index import PrefixIndex", 0),
        ("prefixkey.fleet.index._memory", "from ..routing import Router", 1),
        ("prefixkey.fleet.routing._router", "from .. import Router", 1),  # the façade
        ("prefixkey.fleet.index._memory", "from .._replicas import ReplicaId", 0),
    ],
)
def test_checker_catches_each_kind_of_violation(module: str, source: str,
                                                expected: int) -> None:
    assert len(layer_violations(source, module)) == expected


def test_checker_sees_lazy_names_of_a_package() -> None:
    source = '_LAZY = {"Subscriber": "_subscriber", "audit": "_audit"}'
    found = layer_violations(source, "prefixkey.fleet", is_package=True,
                             siblings={"_subscriber"})
    assert found == []
    found = layer_violations('_LAZY = {"x": "_x"}\nimport prefixkey.analysis',
                             "prefixkey.fleet", is_package=True, siblings={"_x"})
    assert len(found) == 1


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module) for module, _, _ in _modules()}
    assert units <= set(LAYERS), units - set(LAYERS)


def test_no_import_points_up_or_sideways() -> None:
    problems = [
        problem
        for module, path, is_package in _modules()
        for problem in layer_violations(path.read_text("utf-8"), module,
                                        is_package=is_package, siblings=_siblings(path))
    ]
    assert problems == []


def test_no_module_import_cycle() -> None:
    """Inside a unit too: modules import each other without a cycle (Tarjan's SCCs)."""
    graph: dict[str, set[str]] = {}
    paths = {module: (path, is_package) for module, path, is_package in _modules()}

    def resolve(target: str) -> str:
        while target not in paths and "." in target:
            target = target.rsplit(".", 1)[0]
        return target

    for module, (path, is_package) in paths.items():
        graph[module] = {
            resolve(target)
            for _, target in imports_of(path.read_text("utf-8"), module, is_package=is_package,
                                        siblings=_siblings(path))
        } - {module}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    assert cycles == []
