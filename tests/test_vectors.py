"""Replay golden vectors produced by vLLM's own hashing functions.

``tests/vectors/<release>.jsonl`` come from ``tools/harvest_vectors.py`` running
the real functions of that release's wheel. Each record holds a request
(``case``) and what vLLM computed (``result``), or the error vLLM raised.
The public cross-check set in ``../shared/vectors-public`` is replayed too
when it sits beside the checkout (it does in CI).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.schemes import KNOWN_RELEASES, resolve_release
from prefixkey.vectors import replay

HERE = Path(__file__).parent
OWN = sorted((HERE / "vectors").glob("*.jsonl"))
PUBLIC_DIR = HERE.parent.parent / "shared" / "vectors-public"
PUBLIC = [p for p in (PUBLIC_DIR / f"{v}.jsonl" for v in KNOWN_RELEASES) if p.exists()]


def _records(paths: list[Path]) -> list[Any]:
    return [
        pytest.param(json.loads(line), id=f"{path.stem}:{json.loads(line)['id']}")
        for path in paths
        for line in path.read_text().splitlines()
    ]


def test_own_vectors_cover_every_known_release() -> None:
    assert {p.stem for p in OWN} >= {"0.31.0"}
    for path in OWN:
        resolve_release(path.stem)  # every harvested release has a scheme


@pytest.mark.parametrize("record", _records(OWN))
def test_own_vectors(record: dict[str, Any]) -> None:
    assert replay(record) == []


@pytest.mark.parametrize("record", _records(PUBLIC))
def test_public_vectors(record: dict[str, Any]) -> None:
    assert replay(record) == []
