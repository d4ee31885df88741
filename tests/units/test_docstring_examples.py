"""Every code example in the package's docstrings runs (issue 21, item 7).

Two kinds of example live in docstrings:

* ``>>>`` examples run as doctests, in their module's namespace;
* ``::`` blocks whose text is Python (not a JSON line or a key layout) are run as far
  as they can be without a network or a model: their imports are executed (a name
  that moved fails here), every name they read must be bound by the block, their
  module or the imports, or be one of the few values a reader supplies
  (:data:`SUPPLIED`), and every attribute they read of an imported module must exist.

A module whose optional extra is missing is skipped with the command that installs
it (and fails under ``CI=true``, where every extra is installed).
"""

from __future__ import annotations

import ast
import builtins
import doctest
import importlib
import os
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

PACKAGE: Final = Path(__file__).resolve().parents[2] / "prefixkey"

#: Values an example leaves to its reader (the request's tokens, a body, received
#: frames...): names an example may read without binding them.
SUPPLIED: Final = frozenset({
    "token_ids", "body", "frames", "batch", "seq", "replicas", "index", "router",
})


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if "_hf_facts" in path.name or parts[-1] == "__main__":
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _docstrings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield getattr(node, "lineno", 1), doc


def literal_blocks(doc: str) -> Iterator[str]:
    """The indented blocks that follow a line ending in ``::`` (reST literal blocks)."""
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].rstrip().endswith("::"):
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block = []
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
                block.append(lines[j])
                j += 1
            if block:
                yield textwrap.dedent("\n".join(block)).strip("\n")
            i = j
        else:
            i += 1


def python_example(block: str) -> ast.Module | None:
    """The block's syntax tree if it is Python code: it parses and is more than one
    expression (a JSON line parses as a dict display)."""
    try:
        tree = ast.parse(block)
    except SyntaxError:
        return None
    if all(isinstance(stmt, ast.Expr) for stmt in tree.body):
        return None
    return tree


def _examples() -> list[tuple[str, int, str]]:
    found: list[tuple[str, int, str]] = []
    for module in _modules():
        path = PACKAGE.parent / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for line, doc in _docstrings(ast.parse(path.read_text(encoding="utf-8"))):
            found.extend((module, line, block) for block in literal_blocks(doc)
                         if python_example(block) is not None)
    return found


def _import(module: str) -> types.ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = (f"{module} needs an extra that is not installed ({exc}): "
                   "python -m pip install -e '.[dev]'")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _bound_names(tree: ast.Module) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound


def check_example(module: types.ModuleType, block: str) -> None:
    """Run what of ``block`` runs offline; raise AssertionError (or ImportError) if not."""
    tree = python_example(block)
    assert tree is not None
    namespace = dict(vars(module))
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            exec(compile(ast.Module([stmt], []), "<example>", "exec"), namespace)
    compile(tree, "<example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    bound = _bound_names(tree)
    unbound = sorted({node.id for node in ast.walk(tree)
                      if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                      and node.id not in bound and node.id not in namespace
                      and not hasattr(builtins, node.id) and node.id not in SUPPLIED})
    assert not unbound, f"the example reads names nothing binds: {unbound}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            _check_attributes(node, namespace)


def _check_attributes(node: ast.Attribute, namespace: dict[str, object]) -> None:
    """``a.b.c`` where ``a`` is an imported module: each step of a module must exist."""
    chain: list[str] = []
    root: ast.expr = node
    while isinstance(root, ast.Attribute):
        chain.insert(0, root.attr)
        root = root.value
    if not isinstance(root, ast.Name):
        return
    owner = namespace.get(root.id)
    for attr in chain:
        if not isinstance(owner, types.ModuleType):
            return
        assert hasattr(owner, attr), f"{owner.__name__} has no {attr!r}"
        owner = getattr(owner, attr)


EXAMPLES: Final = _examples()


def test_examples_are_found() -> None:
    """The collector sees the package's examples (the subscriber's among them)."""
    modules = {module for module, _, _ in EXAMPLES}
    assert {"prefixkey", "prefixkey.fleet.feed._subscriber",
            "prefixkey.testing.strategies"} <= modules


@pytest.mark.parametrize(("module", "line", "block"), EXAMPLES,
                         ids=[f"{m}:{line}" for m, line, _ in EXAMPLES])
def test_literal_example_runs(module: str, line: int, block: str) -> None:
    check_example(_import(module), block)


@pytest.mark.parametrize("module", _modules())
def test_doctests_pass(module: str) -> None:
    path = PACKAGE.parent / Path(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    if ">>>" not in path.read_text(encoding="utf-8"):
        return
    mod = _import(module)
    failures, tried = doctest.testmod(mod, verbose=False, report=True,
                                      optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0


# -- the checker can fail ----------------------------------------------------------------

@pytest.mark.parametrize(("block", "error"), [
    ("from prefixkey import PrefixIndex\nindex = PrefixIndex()", ImportError),
    ("from prefixkey import Hasher\nkeys = Hasher(16).block_hashes(tokenz)", AssertionError),
    ("import prefixkey.fleet\nindex = prefixkey.fleet.NoSuchIndex()", AssertionError),
])
def test_a_wrong_example_fails(block: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        check_example(importlib.import_module("prefixkey"), block)


def test_json_lines_and_layouts_are_not_examples() -> None:
    assert python_example('{"recv_time": 1.0, "frames_b64": ["AA=="]}') is None
    assert python_example("{ns}:stats, :lastts   counters") is None
    assert python_example("x = 1") is not None
