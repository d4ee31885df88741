"""docs/render-harmony.md's example runs as written, on the real gpt-oss folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import real_models

pytest.importorskip("openai_harmony", reason="needs the harmony extra (oss-harmony)")

DOC = Path(__file__).resolve().parents[2] / "docs" / "render-harmony.md"
FOLDER_LINE = 'folder = "/models/gpt-oss-20b"'


def test_harmony_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1
    assert FOLDER_LINE in blocks[0]
    folder = real_models.folder("gpt_oss")  # skipped without the fetch cache
    code = blocks[0].replace(FOLDER_LINE, f"folder = {str(folder)!r}")
    namespace: dict[str, object] = {}
    exec(compile(code, str(DOC), "exec"), namespace)  # its own asserts run
    assert len(namespace["keys"]) >= 1  # type: ignore[arg-type]
