"""Fuzz the JSON Lines request path: parse_json_line, parse_request, run_job (issue 14, item 4).

Seeds are request objects of the golden vectors (tests/vectors, one file per
release) and of :func:`prefixkey.testing.strategies.request_objects`,
mutated in their JSON structure and their bytes. A line must give a result
or a PrefixKeyError, and either record (the result, or the error record
``prefixkey hash`` writes, which echoes the id) must be strict JSON.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from fuzzing import Fuzz, batches, mutate_json, strict_json
from hypothesis import given
from hypothesis import strategies as st

from prefixkey.errors import PrefixKeyError
from prefixkey.jsonl import error_record, parse_json_line, parse_request, run_job
from prefixkey.testing.strategies import request_objects

pytestmark = pytest.mark.fuzz

VECTORS = Path(__file__).parent.parent / "vectors"


def _cases(per_release: int = 12) -> list[dict[str, Any]]:
    cases = []
    for path in sorted(VECTORS.glob("*.jsonl")):
        with path.open(encoding="utf-8") as lines:
            for _, line in zip(range(per_release), lines, strict=False):
                record = json.loads(line)
                case = {"id": record["id"], "vllm_version": record["version"], **record["case"]}
                if "python" in record["result"]:  # builtin hash() is keyed by the engine's Python
                    case["engine_python"] = record["result"]["python"]
                cases.append(case)
    return cases


CASES = _cases()
VERSIONS = sorted({case["vllm_version"] for case in CASES})
CORPUS = [json.dumps(case).encode() for case in CASES]


def hash_line(data: bytes) -> None:
    """What ``prefixkey hash`` does with one line, its output checked for strict JSON."""
    obj = parse_json_line(data)
    request_id = obj.get("id") if isinstance(obj, dict) else None
    try:
        record = run_job(parse_request(obj, api_checks=True), request_id)
    except PrefixKeyError as exc:
        strict_json(error_record(exc, request_id, 1))
        raise
    strict_json(record)


def test_mutated_vector_requests() -> None:
    fuzz = Fuzz("requests/mutated", hash_line)
    if not fuzz.replaying():
        fuzz.run(batches(fuzz.rng, lambda rng: mutate_json(rng, rng.choice(CASES), CORPUS)))
    fuzz.finish()


def test_structured_requests() -> None:
    """Hypothesis request objects of every release, each hashed as is and mutated."""
    fuzz = Fuzz("requests/structured", hash_line)
    if not fuzz.replaying():

        @given(st.sampled_from(VERSIONS).flatmap(lambda v: request_objects(vllm_version=v)),
               st.integers(0, 2**32))
        def feed(obj: dict[str, Any], mutation: int) -> None:
            if fuzz.expired:
                return
            fuzz.one(json.dumps(obj).encode())
            fuzz.one(mutate_json(random.Random(mutation), obj, CORPUS))

        fuzz.hypothesis(feed)
    fuzz.finish()


def test_json_values() -> None:
    """Any JSON value Hypothesis builds, as a request line."""
    fuzz = Fuzz("requests/json-values", hash_line)
    if not fuzz.replaying():
        scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                   | st.text(max_size=20))
        values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6)
                              | st.dictionaries(st.text(max_size=12), inner, max_size=6),
                              max_leaves=20)
        fields = st.fixed_dictionaries(
            {}, optional={name: values for name in CASES[0]})

        @given(values | fields)
        def feed(value: Any) -> None:
            if not fuzz.expired:
                fuzz.one(json.dumps(value).encode())

        fuzz.hypothesis(feed)
    fuzz.finish()


# What crashed prefixkey/jsonl.py before its input limits: each is a typed error now.
@pytest.mark.parametrize("line", [
    b'{"token_ids": ' + b"[" * 100_000 + b"]" * 100_000 + b', "block_size": 16}',
    b'{"token_ids": [' + b"1" * 5000 + b'], "block_size": 16}',
    b'{"id": ' + b"1" * 5000 + b', "token_ids": [], "block_size": 16}',
    b'{"id": NaN, "token_ids": [], "block_size": 16}',
    b'{"id": -Infinity, "token_ids": [1], "block_size": 16}',
], ids=["deep-nesting", "huge-int-token", "huge-int-id", "nan-id", "infinity-id"])
def test_former_jsonl_crashes_are_typed_errors(line: bytes) -> None:
    with pytest.raises(PrefixKeyError):
        hash_line(line)
