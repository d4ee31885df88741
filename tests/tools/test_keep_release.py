"""Keeping a release's harvested answers (tools/release_vectors.py ``compact``, the builders'
``--keep-release RELEASE DIR``) over a harvest directory that holds compact records.

A partial harvest (``tools/harvest_render.py --only``) into a directory seeded with a kept
release's file writes the other servers' records back as they were, compact; keeping that
file again must keep them unchanged beside the fresh full answers, and a record that is
neither shape must be refused, not half kept. The records are committed harvests' own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS.parent / "tools"))

import build_python_bodies  # noqa: E402
from release_vectors import COMPACT_KEYS, compact  # noqa: E402


def _records(path: Path) -> list[dict[str, Any]]:
    text = path.read_text("utf-8")
    return [json.loads(line) for line in text.splitlines() if line]


#: Full harvested records of each shape: a chat answer, a completions list, a 400, and a
#: server that did not start.
_FULL = _records(TESTS / "render" / "real_trunc_vectors.jsonl")
_STARTUP = [r for r in _records(TESTS / "render" / "real_drift_vectors.jsonl") if "startup" in r]
CASES = {
    "chat 200": next(r for r in _FULL if r["status"] == 200 and isinstance(r["response"], dict)),
    "completions 200": next(r for r in _FULL if isinstance(r["response"], list)),
    "error 400": next(r for r in _FULL if r["status"] == 400),
    "not started": _STARTUP[0],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compact_keeps_a_compact_record(name: str) -> None:
    kept = compact(CASES[name])
    assert "response" not in kept and set(kept) <= COMPACT_KEYS
    assert compact(kept) == kept


@pytest.mark.parametrize("record", [
    {"id": "a/b", "status": 200, "token_ids": [1]},  # no cache_salt: not a compact record
    {"id": "a/b", "status": 200, "token_ids": [1], "cache_salt": None, "error": None,
     "endpoint": "/v1/completions"},  # a key compact drops: a damaged full record
], ids=["no cache_salt", "extra key"])
def test_compact_refuses_a_record_of_neither_shape(record: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="neither a harvested answer"):
        compact(record)


def test_keep_release_over_a_seeded_harvest(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The builders' --keep-release over a file mixing compact records (the seed) and
    full ones (the servers harvested again): every line kept as its compact form."""
    corpus = "real_trunc_"
    full = _FULL[:40]
    seeded = [compact(r) if i % 2 else r for i, r in enumerate(full)]
    harvest = tmp_path / "harvest"
    harvest.mkdir()
    (harvest / f"{corpus}vectors.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in seeded), "utf-8")
    render_dir = tmp_path / "render"
    (render_dir / "releases" / "0.30.0").mkdir(parents=True)
    monkeypatch.setattr(build_python_bodies, "RENDER_DIR", render_dir)
    build_python_bodies.keep_release("0.30.0", harvest, (corpus,))
    kept = _records(render_dir / "releases" / "0.30.0" / f"{corpus}vectors.jsonl")
    assert kept == [compact(r) for r in full]

