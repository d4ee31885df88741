"""docs/render-endpoint.md's example, a recorded render answer to keys, runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "render-endpoint.md"


def test_render_endpoint_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1, "docs/render-endpoint.md should have one python example"
    monkeypatch.chdir(REPO)  # the example reads the vectors relative to the root
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # its own asserts run
    assert namespace["keys"]
