"""The architecture, enforced: the hashing core is sans-IO and the top level stays light.

``prefixkey.core`` may import itself, ``prefixkey.errors``, xxhash, msgpack,
packaging and the standard library less what does I/O or reads the process's
environment (sockets, threads, subprocesses, logging, ``os``). The checker is
tested on sources that break each rule, so the contract test can fail.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "prefixkey"
CORE = PACKAGE / "core"

ALLOWED_THIRD_PARTY = frozenset({"xxhash", "msgpack", "packaging"})
# Standard-library modules that do I/O, start threads or read the environment.
FORBIDDEN_STDLIB = frozenset({
    "asyncio", "concurrent", "http", "logging", "multiprocessing", "os", "pathlib", "selectors",
    "shutil", "signal", "socket", "socketserver", "ssl", "subprocess", "tempfile", "threading",
    "_thread", "urllib", "io",
})


def core_violations(source: str, module: str) -> list[str]:
    """Imports of ``module`` (dotted, inside prefixkey.core) that break the core's contract."""
    package = module.split(".")[:-1] if not module.endswith("__init__") else module.split(".")
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                if node.module:
                    targets = [".".join([*base, node.module])]
                else:  # from .. import name: each name may be a module
                    targets = [".".join([*base, alias.name]) for alias in node.names]
            else:
                targets = [node.module or ""]
        else:
            continue
        for target in targets:
            top = target.split(".")[0]
            if top == "prefixkey":
                inside = target == "prefixkey.errors" or target.startswith("prefixkey.core")
                if not inside:
                    problems.append(f"{module}:{node.lineno} imports {target}")
            elif top in ALLOWED_THIRD_PARTY or top == "__future__":
                continue
            elif top not in sys.stdlib_module_names or top in FORBIDDEN_STDLIB:
                problems.append(f"{module}:{node.lineno} imports {target}")
    return problems


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from ._hasher import Hasher", 0),
        ("from ..errors import PrefixKeyError", 0),
        ("import xxhash\nimport hashlib\nfrom packaging.version import Version", 0),
        ("from ..events import EventBatch", 1),
        ("from prefixkey.jsonl import parse_request", 1),
        ("from .. import jsonl", 1),
        ("from .. import errors", 0),
        ("import os", 1),
        ("import threading, socket", 2),
        ("from logging import getLogger", 1),
        ("import numpy", 1),
        ("import zmq", 1),
    ],
)
def test_checker_catches_each_kind_of_violation(source: str, expected: int) -> None:
    assert len(core_violations(source, "prefixkey.core._example")) == expected


def test_core_imports_nothing_from_the_edges() -> None:
    modules = sorted(CORE.glob("*.py"))
    assert len(modules) > 5
    problems = [
        problem
        for path in modules
        for problem in core_violations(
            path.read_text(), f"prefixkey.core.{path.stem}"
        )
    ]
    assert problems == []


def test_import_prefixkey_loads_no_edge() -> None:
    code = (
        "import sys, prefixkey; "
        "print(' '.join(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('zmq', 'redis', 'hypothesis', 'numpy', 'tokenizers', 'jinja2') "
        "or m.startswith(('prefixkey.analysis', 'prefixkey.fleet', 'prefixkey.events', "
        "'prefixkey.testing', 'prefixkey.cli', 'prefixkey.jsonl', 'prefixkey.render')))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert loaded == []


def test_fleet_imports_without_pyzmq() -> None:
    # The subscriber (pyzmq) loads on first use; the index and router do not need it.
    code = (
        "import sys; sys.modules['zmq'] = None; "
        "from prefixkey.fleet import PrefixIndex, Router; "
        "import prefixkey.fleet as f\n"
        "try:\n    f.Subscriber\nexcept ImportError:\n    print('lazy')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["lazy"]


def test_top_level_is_small() -> None:
    import prefixkey

    assert 15 <= len(prefixkey.__all__) <= 25
    assert all(hasattr(prefixkey, name) for name in prefixkey.__all__)
