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

from prefixkey.core import KNOWN_RELEASES, resolve_release
from prefixkey.testing import replay

HERE = Path(__file__).resolve().parent
OWN = sorted(HERE.glob("*.jsonl"))
PUBLIC_DIR = HERE.parents[2] / "shared" / "vectors-public"
PUBLIC = [p for p in (PUBLIC_DIR / f"{v}.jsonl" for v in KNOWN_RELEASES) if p.exists()]


def _records(paths: list[Path]) -> list[Any]:
    return [
        pytest.param(json.loads(line), id=f"{path.stem}:{json.loads(line)['id']}")
        for path in paths
        for line in path.read_text().splitlines()
    ]


def test_own_vectors_cover_every_known_release() -> None:
    assert {p.stem for p in OWN} == set(KNOWN_RELEASES)
    for path in OWN:
        resolve_release(path.stem)  # every harvested release has a scheme


@pytest.mark.parametrize("record", _records(OWN))
def test_own_vectors(record: dict[str, Any]) -> None:
    assert replay(record) == []


@pytest.mark.skipif(
    not PUBLIC,
    reason=f"the public cross-check set is not at {PUBLIC_DIR} (it sits beside the checkout "
    "in this project's workspace); place vLLM's public vectors there to replay them",
)
@pytest.mark.parametrize("record", _records(PUBLIC) or [None])
def test_public_vectors(record: dict[str, Any]) -> None:
    assert replay(record) == []
