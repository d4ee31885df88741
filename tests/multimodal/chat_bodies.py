"""The image chat corpus's bodies as posted: fixture references become image URLs.

``tests/multimodal/chat_vectors.jsonl`` stores each body with ``{"fixture", "as"}``
in place of an image URL, so the file stays small; the harvester
(tools/harvest_mm_chat.py) posted, and the replay test renders, the body this
module makes of it. Standard library only: the harvester runs in vLLM's venv.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

IMAGES = Path(__file__).resolve().parent / "images"


def materialize(value: Any) -> Any:
    """``value`` with each ``{"fixture", "as"}`` replaced by a file:// or data: URL."""
    if isinstance(value, dict):
        if set(value) == {"fixture", "as"}:
            path = IMAGES / value["fixture"]
            if value["as"] == "file":
                return {"url": path.as_uri()}
            return {"url": "data:image/png;base64," + base64.b64encode(
                path.read_bytes()).decode()}
        return {k: materialize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialize(v) for v in value]
    return value
