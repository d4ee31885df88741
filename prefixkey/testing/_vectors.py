"""Golden vectors: vLLM's own keys for a request, and replaying them through prefixkey.

A vector record (the schema of ``tests/vectors/*.jsonl``, written by
``tools/harvest_vectors.py``) holds a request in the JSON Lines format
(``case``) and what a vLLM release computed for it (``result``), or the error
it raised. :func:`replay` hashes the case with prefixkey and lists every
difference, so tests and the release-checking tool share one definition of
"reproduces".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..core import resolve_release
from ..errors import PrefixKeyError, UnreproducibleKeysError
from ..jsonl import parse_request, run_job

__all__ = ["COMPARED_FIELDS", "replay"]

#: Result fields that must equal vLLM's.
COMPARED_FIELDS: Final = (
    "block_hashes", "extra_keys", "event_extra_keys", "block_hashes_int64",
    "new_hashes_per_call",
)


def replay(record: Mapping[str, Any], *, vllm_version: str | None = None) -> list[str]:
    """Differences between prefixkey and the record's vLLM result (empty: reproduced).

    ``vllm_version`` replays the case under another release's scheme (to ask
    whether a new release belongs to a known era).
    """
    case, expected = dict(record["case"]), record["result"]
    case["vllm_version"] = vllm_version or record["version"]
    case["engine_python"] = expected.get("python")  # matters for builtin hash() only
    if "error" in expected:
        # vLLM refused the request; so must we (with its API-side checks on).
        try:
            run_job(parse_request(case, api_checks=True))
        except PrefixKeyError:
            return []
        return [f"vLLM raised {expected['error']!r}; prefixkey hashed it"]
    groups = expected.get("group_block_hashes", {})
    case["group_block_sizes"] = [case["block_size"] * int(k) for k in groups]
    try:
        got = run_job(parse_request(case))
    except UnreproducibleKeysError as exc:
        # A configuration whose keys are random per engine process is refused
        # even for a request too short to have a key.
        return [] if expected["block_hashes"] == [] else [f"refused: {exc}"]
    except PrefixKeyError as exc:
        return [f"{type(exc).__name__}: {exc}"]
    want = dict(expected)
    if want["event_extra_keys"] is None and (
            resolve_release(case["vllm_version"]).era.published_extra_keys == "hashed"):
        # Before 0.31 vLLM has no to_event_extra_keys for the harvester to call: its
        # block pool publishes generate_block_hash_extra_keys' tuples, the hashed ones.
        want["event_extra_keys"] = expected["extra_keys"] or None
    problems = [f"{key} differs" for key in COMPARED_FIELDS if got[key] != want[key]]
    if expected["block_hashes"] and got["hash_type"] != expected["hash_type"]:
        problems.append("hash_type differs")
    if expected["none_hash"] is not None and got["none_hash"] != expected["none_hash"]:
        problems.append("none_hash differs")  # 0.7.2-0.8.2 have no NONE_HASH variable
    for k, hashes in groups.items():
        if got["group_block_hashes"][str(case["block_size"] * int(k))] != hashes:
            problems.append(f"group_block_hashes[{k}] differs")
    for group_id, keys in expected.get("block_hashes_with_group_id", {}).items():
        suffix = int(group_id).to_bytes(4, "big").hex()
        if [h + suffix for h in got["block_hashes"]] != keys:
            problems.append(f"block_hashes_with_group_id[{group_id}] differs")
    return problems
