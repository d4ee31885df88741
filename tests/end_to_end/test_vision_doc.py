"""docs/multimodal.md's image chat example runs as written on a real Qwen2-VL folder.

Its ``# given: qwen_folder`` line names the folder it is handed: the real folder
``qwen2_vl`` of the fetch cache (tests/real_models.py; skipped without the cache,
fetched under CI).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import real_models

ROOT = Path(__file__).resolve().parents[2]


def test_the_image_chat_example_runs_on_the_real_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("PIL", reason="the multimodal extra (Pillow) is not installed")
    doc = ROOT / "docs" / "multimodal.md"
    blocks = [b for b in re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"),
                                    re.DOTALL) if b.startswith("# given: qwen_folder ")]
    assert len(blocks) == 1, "docs/multimodal.md should have one qwen_folder example"
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"qwen_folder": str(real_models.folder("qwen2_vl"))}
    exec(compile(blocks[0], str(doc), "exec"), namespace)  # its own asserts run
    assert namespace["keys"]
