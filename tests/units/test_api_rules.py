"""vLLM's API-server checks follow the release (prefixkey/core/_api_rules.py).

Each rule is tested on both sides of its first release, as read from the
wheels: the release before it accepts what the rule refuses. The keys of
prompts holding negative token ids (which vLLM's engine core hashes) are
vLLM's own: ``tests/fixtures/negative_token_ids.jsonl`` is
``python tools/harvest_negative_ids.py 0.27.1 0.28.0 0.31.0`` (those wheels' functions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey import Hasher, LoRA, Request
from prefixkey.core import API_RULES, api_rules, check_api_rules
from prefixkey.errors import InvalidRequestError
from prefixkey.jsonl import parse_request, run_job
from prefixkey.testing import replay

NEGATIVE_VECTORS = Path(__file__).resolve().parents[1] / "fixtures" / "negative_token_ids.jsonl"

# (what, request, field, last release accepting it, first release refusing it)
BOUNDARIES: list[tuple[str, Request, str, str | None, str]] = [
    ("salt over 128", Request([1], cache_salt="s" * 129), "cache_salt", "0.29.0", "0.30.0"),
    ("salt with slash", Request([1], cache_salt="tenant/a"), "cache_salt", "0.29.0", "0.30.0"),
    ("salt with at", Request([1], cache_salt="a@b"), "cache_salt", "0.29.0", "0.30.0"),
    ("salt with NUL", Request([1], cache_salt="a\x00b"), "cache_salt", "0.29.0", "0.30.0"),
    ("salt over 1024", Request([1], cache_salt="s" * 1025), "cache_salt", "0.28.0", "0.29.0"),
    ("empty salt", Request([1], cache_salt=""), "cache_salt", "0.8.5", "0.9.0"),
    ("negative token id", Request([3, -1, 2]), "token_ids", "0.27.1", "0.28.0"),
    ("LoRA int id 0", Request([1], lora=LoRA("a", "/a", 0)), "lora.int_id", "0.10.2", "0.11.0"),
    ("empty LoRA path", Request([1], lora=LoRA("a", "")), "lora.path", None, "0.7.0"),
]


@pytest.mark.parametrize(("what", "request_", "field", "before", "since"), BOUNDARIES,
                         ids=[b[0] for b in BOUNDARIES])
def test_each_rule_applies_from_its_first_release(
    what: str, request_: Request, field: str, before: str | None, since: str
) -> None:
    if before is not None:
        check_api_rules(request_, before)
    for release in (since, "0.33.0"):
        with pytest.raises(InvalidRequestError) as info:
            check_api_rules(request_, release)
        assert info.value.field == field
        assert "is required" not in str(info.value)


def test_the_issue_example_hashes_under_0_22() -> None:
    # 0.17-0.29's API server took any non-empty salt; 0.30 refuses these.
    salt = "tenant/" + "x" * 130
    line = {"vllm_version": "0.22.0", "python_hash_seed": "0", "block_size": 1,
            "token_ids": [1, 2], "cache_salt": salt}
    result = run_job(parse_request(line, api_checks=True))
    assert result["extra_keys"][0] == [salt]  # 0.22 keys the salt untagged
    with pytest.raises(InvalidRequestError):
        parse_request({**line, "vllm_version": "0.30.0"}, api_checks=True)


def test_the_rules_are_a_table_ordered_by_check() -> None:
    assert [r.since for r in api_rules("0.27.1")] == ["0.9.0", "0.7.0", "0.11.0"]
    assert len(api_rules("0.31.0")) == len(API_RULES)
    assert len(api_rules("0.40.0")) == len(API_RULES)  # newer than known: every rule
    # A salt breaking both length rules hears of the release's own bound.
    with pytest.raises(InvalidRequestError, match="at most 128 "):
        check_api_rules(Request([1], cache_salt="s" * 2000), "0.31.0")
    with pytest.raises(InvalidRequestError, match="at most 1024 "):
        check_api_rules(Request([1], cache_salt="s" * 2000), "0.29.0")


def test_negative_ids_are_refused_at_their_position_and_release() -> None:
    with pytest.raises(InvalidRequestError) as info:
        parse_request({"block_size": 2, "token_ids": [1, 2, -7, 4]}, api_checks=True)
    assert (info.value.field, info.value.position) == ("token_ids", 2)
    assert "0.31.0" in str(info.value)
    ok = run_job(parse_request({"vllm_version": "0.27.1", "python_hash_seed": "0", "block_size": 2,
                                "token_ids": [1, 2, -7, 4]}, api_checks=True))
    assert len(ok["block_hashes"]) == 2


def test_non_int_ids_are_still_the_cores_error() -> None:
    with pytest.raises(InvalidRequestError) as info:
        check_api_rules(Request([1, "2"]))  # type: ignore[list-item]
    assert info.value.position == 1


def _negative_records() -> list[Any]:
    return [json.loads(line) for line in NEGATIVE_VECTORS.read_text().splitlines()]


@pytest.mark.parametrize("record", _negative_records(),
                         ids=lambda r: f"{r['version']}:{r['id']}")
def test_negative_ids_key_as_vllms_engine_core_keys_them(record: dict[str, Any]) -> None:
    assert "error" not in record["result"]
    assert replay(record) == []
    case = {**record["case"], "vllm_version": record["version"]}
    if record["version"] >= "0.28.0":
        with pytest.raises(InvalidRequestError):
            parse_request(case, api_checks=True)
    else:
        parse_request(case, api_checks=True)


def test_the_core_hashes_negative_ids_with_every_algorithm() -> None:
    for algo in ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor"):
        hasher = Hasher(block_size=2, hash_algo=algo, python_hash_seed="0")
        state = hasher.start(Request([1, -2]))
        state.append([-(2**63), 5])
        assert state.block_hashes == hasher.block_hashes(Request([1, -2, -(2**63), 5]))
