"""vLLM's own results, looked up by record id in ``tests/vectors/<release>.jsonl``.

Those files hold what each release's real hashing functions computed
(``tools/harvest_vectors.py``); a test that needs an expected key takes it from
them instead of pasting a value whose origin nobody can check.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).resolve().parent / "vectors"


@functools.cache
def _records(release: str) -> dict[str, dict[str, Any]]:
    lines = (VECTORS / f"{release}.jsonl").read_text(encoding="utf-8").splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def vector_record(release: str, record_id: str) -> dict[str, Any]:
    """The record ``record_id`` (e.g. ``"prefixkey-00006/sha256"``) of ``release``'s vectors."""
    return _records(release)[record_id]
