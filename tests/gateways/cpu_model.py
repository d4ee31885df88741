"""The test model as a real vLLM 0.29 CPU engine serves it, and the keys prefixkey expects.

vLLM's CPU attention takes head sizes from 32 and block sizes that are
multiples of 32 (docs/ray.md, "Ray Serve LLM's own recipe on CPU"); the test
model's heads are smaller. The copy keeps its tokenizer and template (what
renders the bodies, so prefixkey renders them from ``MODEL`` alike) and has no
weights: vLLM serves it with ``--load-format dummy``. Used by
``test_vllm_cpu_events.py`` and the Ray Serve LLM tools (``tools/ray_serve_llm_*``),
whose engines all hash with sha256 under ``PYTHONHASHSEED=0``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from prefixkey import Hasher
from prefixkey.events import EventHash
from prefixkey.fleet import ReplicaScheme
from prefixkey.render import Renderer, ServerOptions

MODEL = Path(__file__).resolve().parents[1] / "render" / "models" / "qwen2_rebuilt"
#: The release Ray Serve LLM 2.60 pins (``vllm[audio]==0.29.0``).
RELEASE = "0.29.0"
#: The least block size vLLM's CPU attention takes.
BLOCK = 32
#: A chat body of at least three full blocks.
BODY: dict[str, Any] = {"model": "tiny", "max_tokens": 1, "messages": [
    {"role": "system", "content": "You answer questions about parcels. " * 12},
    {"role": "user", "content": "Where is parcel 42?"}]}


def cpu_model(folder: Path) -> str:
    """``folder`` (returned as the ``--model`` argument) filled with the test model's files,
    its heads widened to 32 dimensions."""
    for f in MODEL.iterdir():
        shutil.copy(f, folder / f.name)
    config = json.loads((MODEL / "config.json").read_text())
    config.update(hidden_size=128, intermediate_size=256)  # 4 heads of 32
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


class ExpectedKeys:
    """The engines' key scheme, and the keys they publish for a chat body (rendered by 0.29's
    rules, served as ``tiny``)."""

    def __init__(self) -> None:
        self.scheme = ReplicaScheme(Hasher(block_size=BLOCK, hash_algo="sha256",
                                           python_hash_seed="0", vllm_version=RELEASE))
        self._renderer = Renderer(ServerOptions(model=str(MODEL), served_model_name=("tiny",),
                                                vllm_version=RELEASE))

    def of(self, body: dict[str, Any]) -> set[EventHash]:
        (rendered,) = self._renderer.render("/v1/chat/completions", body)
        return set(map(self.scheme.publish, self.scheme.hasher.block_hashes(rendered.request)))
