"""docs/render.md's example, from an OpenAI body to a routing decision, runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "render.md"


def test_render_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1, "docs/render.md should have one python example"
    assert len(blocks[0].strip().splitlines()) <= 30
    monkeypatch.chdir(REPO)  # the example names a corpus folder relative to the root
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # its own assert runs
    assert namespace["best"] is not None
