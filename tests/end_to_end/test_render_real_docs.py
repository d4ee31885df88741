"""The render pages whose example needs a real model folder run as written.

Each example's ``# given:`` line names the folder it is handed: a real folder of the
fetch cache (tests/real_models.py; skipped without the cache, fetched under CI).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import real_models

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: page → (the name its example is given, the real folder, the extra's module)
PAGES = {
    "render-mistral.md": ("mistral_folder", "mistral_nemo", "mistral_common"),
    "render-harmony.md": ("harmony_folder", "gpt_oss", "openai_harmony"),
    "render-deepseek.md": ("deepseek_folder", "deepseek_v32", "tokenizers"),
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_example_runs_on_the_real_folder(page: str) -> None:
    name, folder, module = PAGES[page]
    pytest.importorskip(module)
    doc = DOCS / page
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 1, f"{page} should have one python example"
    assert blocks[0].startswith(f"# given: {name} ")
    namespace: dict[str, object] = {name: str(real_models.folder(folder))}
    exec(compile(blocks[0], str(doc), "exec"), namespace)  # its own asserts run
    assert namespace["keys"]
