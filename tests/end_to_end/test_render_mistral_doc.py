"""docs/render-mistral.md's example runs as written, over the real Mistral NeMo folder."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "render-mistral.md"


def test_render_mistral_example_runs() -> None:
    pytest.importorskip("mistral_common")
    sys.path.insert(0, str(REPO / "tests"))
    import real_models

    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1, "docs/render-mistral.md should have one python example"
    assert len(blocks[0].strip().splitlines()) <= 30
    # What the example is given: NeMo's config.json and tekken.json (skipped without the
    # cache, fetched under CI).
    namespace: dict[str, object] = {
        "mistral_folder": str(real_models.folder("mistral_nemo"))}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # its own asserts run
    assert namespace["keys"]
