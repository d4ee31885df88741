"""Replay golden vectors produced by vLLM's own hashing functions.

``tests/vectors/<release>.jsonl`` come from ``tools/harvest_vectors.py`` running
the real functions of that release's wheel. Each record holds a request
(``case``) and what vLLM computed (``result``), or the error vLLM raised.
The public cross-check set is replayed too when present: the folder
``PREFIXKEY_PUBLIC_VECTORS`` names, by default ``../shared/vectors-public``
beside the checkout (where this project's workspace, and CI, keep it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from prefixkey.core import KNOWN_RELEASES, resolve_release
from prefixkey.testing import replay

HERE = Path(__file__).resolve().parent
OWN = sorted(HERE.glob("*.jsonl"))
CHECKOUT = HERE.parents[1]
PUBLIC_DIR = Path(os.environ.get("PREFIXKEY_PUBLIC_VECTORS")
                  or CHECKOUT.parent / "shared" / "vectors-public")
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
    # Names no path of the machine it runs on: the setting and its default, relative.
    reason="vLLM's public cross-check vectors (<release>.jsonl) are absent: set "
    "PREFIXKEY_PUBLIC_VECTORS to their folder (default: ../shared/vectors-public beside "
    "the checkout) to replay them",
)
@pytest.mark.parametrize("record", _records(PUBLIC) or [None])
def test_public_vectors(record: dict[str, Any]) -> None:
    assert replay(record) == []


def test_the_public_skip_reason_names_no_path_of_this_machine() -> None:
    marks = [m for m in getattr(test_public_vectors, "pytestmark", []) if m.name == "skipif"]
    reason = marks[0].kwargs["reason"]
    assert str(CHECKOUT.parent) not in reason and "PREFIXKEY_PUBLIC_VECTORS" in reason
