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

from prefixkey.errors import PrefixKeyError, UnreproducibleKeysError
from prefixkey.jsonl import parse_request, run_job
from prefixkey.schemes import KNOWN_RELEASES

HERE = Path(__file__).parent
OWN = sorted((HERE / "vectors").glob("*.jsonl"))
PUBLIC_DIR = HERE.parent.parent / "shared" / "vectors-public"
PUBLIC = [p for p in (PUBLIC_DIR / f"{v}.jsonl" for v in KNOWN_RELEASES) if p.exists()]

COMPARED = (
    "block_hashes", "extra_keys", "event_extra_keys", "block_hashes_int64",
    "new_hashes_per_call",
)


def _records(paths: list[Path]) -> list[Any]:
    return [
        pytest.param(json.loads(line), id=f"{path.stem}:{json.loads(line)['id']}")
        for path in paths
        for line in path.read_text().splitlines()
    ]


def _replay(record: dict[str, Any]) -> None:
    case, expected = dict(record["case"]), record["result"]
    case["vllm_version"] = record["version"]
    case["engine_python"] = expected.get("python")  # matters for builtin hash() only
    if "error" in expected:
        # vLLM refused the request; so must we (with its API-side checks on).
        with pytest.raises(PrefixKeyError):
            run_job(parse_request(case, api_checks=True))
        return
    groups = expected.get("group_block_hashes", {})
    case["group_block_sizes"] = [case["block_size"] * int(k) for k in groups]
    try:
        got = run_job(parse_request(case))
    except UnreproducibleKeysError:
        # A configuration whose keys are random per engine process is refused
        # even for a request too short to have a key.
        assert expected["block_hashes"] == []
        return
    for key in COMPARED:
        assert got[key] == expected[key], key
    assert got["hash_type"] == expected["hash_type"] or not expected["block_hashes"]
    if expected["none_hash"] is not None:  # 0.7.2-0.8.2 have no NONE_HASH variable
        assert got["none_hash"] == expected["none_hash"]
    for k, hashes in groups.items():
        assert got["group_block_hashes"][str(case["block_size"] * int(k))] == hashes
    for group_id, keys in expected.get("block_hashes_with_group_id", {}).items():
        suffix = int(group_id).to_bytes(4, "big").hex()
        assert [h + suffix for h in got["block_hashes"]] == keys


def test_own_vectors_exist_for_every_known_release() -> None:
    assert OWN, "tests/vectors is empty: run tools/harvest_vectors.py"
    assert {p.stem for p in OWN} >= {"0.31.0"}


@pytest.mark.parametrize("record", _records(OWN))
def test_own_vectors(record: dict[str, Any]) -> None:
    _replay(record)


@pytest.mark.parametrize("record", _records(PUBLIC))
def test_public_vectors(record: dict[str, Any]) -> None:
    _replay(record)
