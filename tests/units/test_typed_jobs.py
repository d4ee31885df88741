"""Typed jobs: ``Hasher.replace``; drift and audit over typed requests match the JSON path."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey import Hasher, InvalidRequestError
from prefixkey.analysis import (
    AUDIT_FIELDS,
    DriftConfig,
    LoggedRequest,
    RequestDrift,
    audit,
    builtin_corpus,
    drift,
)
from prefixkey.core import HashJob
from prefixkey.errors import PrefixKeyError
from prefixkey.jsonl import parse_request

REPLACEMENTS: list[dict[str, Any]] = [
    {"vllm_version": "0.33.0"},
    {"vllm_version": "0.30.0", "hash_algo": "sha256_cbor"},
    {"block_size": 4},
    {"python_hash_seed": "0", "hash_algo": "xxhash"},
    {"vllm_version": "0.33.0", "lookahead": 2},
    {"vllm_version": "0.9.2", "hash_algo": None, "engine_python": "3.12"},
]


@pytest.mark.parametrize("changes", REPLACEMENTS)
def test_replace_is_a_hasher_built_with_the_changed_arguments(changes: dict[str, Any]) -> None:
    base: dict[str, Any] = {"block_size": 16, "python_hash_seed": "0"}
    replaced = Hasher(**base).replace(**changes)
    fresh = Hasher(**{**base, **changes})
    tokens = list(range(100, 164))
    assert repr(replaced) == repr(fresh)
    assert replaced.block_hashes(tokens) == fresh.block_hashes(tokens)


def test_replace_keeps_the_release_default_algorithm() -> None:
    # hash_algo=None means "the release's default", not the algorithm it resolved to.
    old = Hasher(block_size=16, vllm_version="0.9.2", python_hash_seed="0",
                 engine_python="3.12")
    assert old.algorithm.name == "builtin"
    assert old.replace(vllm_version="0.31.0").algorithm.name == "sha256"


def test_replace_names_an_unknown_argument() -> None:
    with pytest.raises(InvalidRequestError) as info:
        Hasher(block_size=16).replace(blocksize=4)
    assert info.value.field == "blocksize"


def _typed(objs: list[Any]) -> tuple[list[HashJob], list[Any]]:
    """The corpus requests that parse on their own, as jobs and as JSON objects."""
    jobs, kept = [], []
    for obj in objs:
        try:
            jobs.append(parse_request(obj))
        except PrefixKeyError:
            continue
        kept.append(obj)
    return jobs, kept


def _without_id(result: RequestDrift) -> RequestDrift:
    # A failed side echoes the fields asked for: a JSON request without "lookahead"
    # says None where its job's hasher was built with the default, 0.
    return dataclasses.replace(
        result, request_id="",
        from_side=dataclasses.replace(result.from_side, lookahead=result.from_side.lookahead or 0),
        to_side=dataclasses.replace(result.to_side, lookahead=result.to_side.lookahead or 0),
    )


@pytest.mark.parametrize(
    ("source", "target"),
    [("0.30.0", "0.31.0"), ("0.31.0", "0.31.0:algo=xxhash,seed=0"),
     ("0.31.0", "0.31.0:block_size=32"), ("0.32.0", "0.33.0:lookahead=1"),
     ("0.18.1", "0.19.0"), ("0.10.1", "0.10.2")],
)
def test_drift_over_jobs_matches_drift_over_json(source: str, target: str) -> None:
    jobs, objs = _typed(builtin_corpus())
    assert len(jobs) > 10
    a, b = DriftConfig.parse(source), DriftConfig.parse(target)
    typed, json_ = drift(a, b, jobs), drift(a, b, objs)
    assert [_without_id(r) for r in typed.requests] == [_without_id(r) for r in json_.requests]
    assert typed.summary == json_.summary
    assert not all(r.identical for r in typed.requests)  # the pairs do change some keys


def test_drift_over_jobs_applies_api_checks() -> None:
    job = parse_request({"block_size": 4, "token_ids": list(range(8)), "cache_salt": "a/b"})
    config = DriftConfig.parse("0.31.0")
    plain = drift(config, config, [job])
    checked = drift(config, config, [job], api_checks=True)
    assert plain.requests[0].identical
    assert checked.requests[0].from_side.error_type == "InvalidRequestError"


AUDIT_SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "audit"


def test_audit_over_typed_requests_matches_the_request_log() -> None:
    lines = (AUDIT_SAMPLE / "requests.jsonl").read_bytes().splitlines()
    typed = []
    for line in lines:
        obj = json.loads(line)
        job = parse_request({k: v for k, v in obj.items() if k not in AUDIT_FIELDS})
        typed.append(LoggedRequest(job, obj.get("id"), obj.get("replica"),
                                   obj.get("arrival_time"), obj.get("cached_tokens")))
    recording = (AUDIT_SAMPLE / "recording.jsonl").read_bytes().splitlines()
    from_lines = audit(recording, lines).to_dict()
    assert audit(recording, typed).to_dict() == from_lines
    assert {"full", "partial", "miss"} <= set(from_lines["totals"]["outcomes"])
    # A replica override (another seed: every key of replica-a changes) goes
    # through Hasher.replace on the typed path and through the fields on the other.
    replicas = {"replica-a": DriftConfig.parse("0.31.0:seed=1")}
    overridden = audit(recording, lines, replicas=replicas).to_dict()
    assert audit(recording, typed, replicas=replicas).to_dict() == overridden
    assert overridden["totals"]["predicted_hit_tokens"] < from_lines["totals"][
        "predicted_hit_tokens"]
