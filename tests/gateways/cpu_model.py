"""The test model as vLLM's CPU engine serves it: a copy with heads and blocks it takes.

vLLM's CPU attention takes head sizes from 32 and block sizes that are
multiples of 32 (docs/ray.md, "Ray Serve LLM's own recipe on CPU"); the test
model's heads are smaller. The copy keeps its tokenizer and template (what
renders the bodies, so prefixkey renders them from ``MODEL`` alike) and has no
weights: vLLM serves it with ``--load-format dummy``. Used by
``test_vllm_cpu_events.py`` and the Ray Serve LLM tools (``tools/ray_serve_llm_*``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

MODEL = Path(__file__).resolve().parents[1] / "render" / "models" / "qwen2_rebuilt"
#: The least block size vLLM's CPU attention takes.
BLOCK = 32


def cpu_model(folder: Path) -> str:
    """``folder`` (returned as the ``--model`` argument) filled with the test model's files,
    its heads widened to 32 dimensions."""
    for f in MODEL.iterdir():
        shutil.copy(f, folder / f.name)
    config = json.loads((MODEL / "config.json").read_text())
    config.update(hidden_size=128, intermediate_size=256)  # 4 heads of 32
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)
