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

#: page → its examples in order: (the name each is given, the real folder, the extra's module)
PAGES = {
    "render-mistral.md": (("mistral_folder", "mistral_nemo", "mistral_common"),),
    "render-harmony.md": (("harmony_folder", "gpt_oss", "openai_harmony"),),
    "render-deepseek.md": (("deepseek_folder", "deepseek_v32", "tokenizers"),
                           ("deepseek_v41_image_folder", "deepseek_v41_image", "PIL")),
}


@pytest.mark.parametrize(("page", "index"), [(page, i) for page, examples in sorted(PAGES.items())
                                             for i in range(len(examples))])
def test_the_example_runs_on_the_real_folder(page: str, index: int) -> None:
    name, folder, module = PAGES[page][index]
    pytest.importorskip(module)
    doc = DOCS / page
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == len(PAGES[page]), f"{page} should have {len(PAGES[page])} examples"
    assert blocks[index].startswith(f"# given: {name} ")
    namespace: dict[str, object] = {name: str(real_models.folder(folder))}
    exec(compile(blocks[index], str(doc), "exec"), namespace)  # its own asserts run
    assert namespace["keys"]
