"""The README's library example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_library_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "README.md has no python example"
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # its own asserts run too
    keys = namespace["keys"]
    assert isinstance(keys, list) and len(keys) == 1000 // 16
    assert all(isinstance(k, bytes) and len(k) == 32 for k in keys)
