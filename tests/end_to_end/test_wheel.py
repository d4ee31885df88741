"""The built wheel, installed (not editable) in a fresh virtualenv, has everything the CLI needs.

An editable install reads the checkout, so a module or data file missing from
the wheel would pass every other test. This one builds the wheel from a copy
of the sources (the checkout gets no ``build/``), installs it with its
dependencies from the package index into a new virtualenv without system site
packages, and runs the installed ``prefixkey`` from a folder outside the
checkout: on the bundled sample requests, and ``drift`` on the corpus the
package ships as data. Both must print what the checkout prints.

It takes tens of seconds, so it runs under ``CI`` (``.ci/run``) or with
``PREFIXKEY_TEST_WHEEL=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from prefixkey.cli import main

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "prefixkey"
SAMPLE = REPO / "examples" / "requests.jsonl"

pytestmark = pytest.mark.skipif(
    not (os.environ.get("CI") or os.environ.get("PREFIXKEY_TEST_WHEEL")),
    reason="builds the wheel and installs it in a new virtualenv (tens of seconds): set "
    "CI=true or PREFIXKEY_TEST_WHEEL=1 to run it",
)


def _run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def _checked(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"{proc.args}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    return proc.stdout


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtualenv with the wheel (and only its declared dependencies) installed."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(PACKAGE, source / "prefixkey",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _checked(_run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", tmp / "dist",
                  source, cwd=tmp))
    (wheel,) = (tmp / "dist").glob("prefixkey-*.whl")
    env_dir = tmp / "venv"
    _checked(_run(sys.executable, "-m", "venv", env_dir, cwd=tmp))
    _checked(_run(env_dir / "bin" / "python", "-m", "pip", "install", "-q", wheel, cwd=tmp))
    yield env_dir


def test_installed_from_the_wheel_not_the_checkout(venv: Path) -> None:
    out = _checked(_run(venv / "bin" / "python", "-c",
                        "import prefixkey; print(prefixkey.__file__)", cwd=venv))
    installed = Path(out.strip()).parent
    assert installed.is_relative_to(venv), installed
    # Every module and data file of the checkout's package is in the wheel.
    expected = _files(PACKAGE)
    assert {"py.typed", "data/drift_corpus.jsonl"} <= expected
    assert expected - _files(installed) == set()


def test_installed_cli_hashes_the_sample_like_the_checkout(
    venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _checked(_run(venv / "bin" / "prefixkey", "hash", SAMPLE, cwd=tmp_path))
    assert main(["hash", str(SAMPLE)]) == 0
    expected = capsys.readouterr().out
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == len(SAMPLE.read_text(encoding="utf-8").splitlines())
    assert all("error" not in r and r["block_hashes"] for r in records), records
    assert out == expected


def test_installed_drift_reads_the_packaged_corpus(
    venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _checked(_run(venv / "bin" / "prefixkey", "drift", "0.30.0", "0.31.0", "--json",
                        cwd=tmp_path))
    assert main(["drift", "0.30.0", "0.31.0", "--json"]) == 0
    assert json.loads(out) == json.loads(capsys.readouterr().out)
