"""JSON Lines input limits (issue 14 item 1): each formerly hostile line, through the library.

Deep nesting was a ``RecursionError``, a long integer a raw ``ValueError``,
``NaN`` was accepted (and echoed as ``NaN``, which is not JSON), an overlong
line was read whole, 100k group sizes were all hashed and duplicate keys were
silent. Each test drives one of them and wants a typed error naming the limit,
the field and the line, or a warning.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey import InvalidRequestError, JSONLimitError, MalformedJSONError, PrefixKeyError
from prefixkey.analysis import audit, read_requests
from prefixkey.events import EventDecoder, RecordingFormatError, decode_recording
from prefixkey.jsonl import JSON_LIMITS, bounded_lines, parse_json_line, parse_request, run_job

ROOT = Path(__file__).resolve().parents[2]
RECORDING = (ROOT / "examples" / "events.recording.jsonl").read_bytes().splitlines(keepends=True)
PLAIN: dict[str, Any] = {"block_size": 4, "token_ids": list(range(12))}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def limit_error(raw: str | bytes, **limits: int) -> JSONLimitError:
    with pytest.raises(JSONLimitError) as info:
        parse_json_line(raw, dataclasses.replace(JSON_LIMITS, **limits))
    return info.value


# ----------------------------------------------------------------------------- nesting


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_nesting_past_the_recursion_limit_is_a_typed_error(depth: int) -> None:
    """Was ``RecursionError`` from the C parser, escaping every caller."""
    error = limit_error(nested(depth))
    assert error.limit == "max_depth"
    assert "nesting deeper than 32 levels" in str(error)


def test_nesting_past_max_depth_names_the_field() -> None:
    deepest = {"id": json.loads(nested(JSON_LIMITS.max_depth - 1)), **PLAIN}
    assert parse_json_line(json.dumps(deepest)) == deepest
    error = limit_error(json.dumps({**PLAIN, "id": json.loads(nested(JSON_LIMITS.max_depth))}))
    assert (error.limit, error.field) == ("max_depth", "id")
    # Objects count as levels too, and the bound is the caller's.
    deep_objects = '{"id": ' + '{"a": ' * 5 + "1" + "}" * 5 + "}"
    assert limit_error(deep_objects, max_depth=5).field == "id"
    assert parse_json_line(deep_objects, dataclasses.replace(JSON_LIMITS, max_depth=6))


def test_brackets_inside_strings_are_not_nesting() -> None:
    line = json.dumps({**PLAIN, "id": "[" * 100 + "{" * 100})
    assert parse_json_line(line)["id"] == "[" * 100 + "{" * 100


# ----------------------------------------------------------------------------- integers


@pytest.mark.parametrize(("field", "position", "line"), [
    ("token_ids", 1, '{"block_size": 4, "token_ids": [1, %s, 3]}'),
    ("id", None, '{"id": -%s, "block_size": 4, "token_ids": [1]}'),
    ("vllm_version", None, '{"vllm_version": %s, "block_size": 4, "token_ids": [1]}'),
])
def test_an_int_past_the_digit_limit_is_a_typed_error_naming_the_field(
    field: str, position: int | None, line: str
) -> None:
    """Was a raw ``ValueError`` (CPython's 4300-digit limit for int(str))."""
    error = limit_error(line % ("9" * 4_301))
    assert (error.limit, error.field, error.position) == ("max_int_digits", field, position)
    assert "more than 4300 digits" in str(error)
    assert parse_json_line(line % ("9" * 4_300))[field] is not None


def test_a_tighter_digit_limit_is_checked_per_int() -> None:
    line = '{"token_ids": [1, %s]}'
    assert parse_json_line(line % ("9" * 20),
                           dataclasses.replace(JSON_LIMITS, max_int_digits=20))
    error = limit_error(line % ("9" * 21), max_int_digits=20)
    assert (error.field, error.position) == ("token_ids", 1)
    assert "more than 20 digits" in str(error)


@pytest.mark.parametrize(("field", "request_fields"), [
    ("mm_items[0].offset", {"mm_items": [{"identifier": "x", "offset": 10**4299, "length": 10}]}),
    ("prompt_embeds.shape", {"prompt_embeds": {"dtype": "float32", "shape": [10**4299, 10],
                                               "hex": ""}}),
    ("vllm_version", {"vllm_version": "0." + "9" * 4_400}),
    ("lora.int_id", {"lora": {"name": "a", "path": "/a", "int_id": 2**63}}),
])
def test_a_long_int_inside_the_limit_is_still_a_typed_error(
    field: str, request_fields: dict[str, Any]
) -> None:
    """Ints of up to 4300 digits parse; their sums (an item's end, the embeddings' byte
    count) or a version part of more digits were raw ``ValueError`` from str() or int()."""
    line = json.dumps({**PLAIN, **request_fields})
    with pytest.raises(PrefixKeyError) as info:
        run_job(parse_request(parse_json_line(line)))
    assert (info.value.field or "").startswith(field)


# ----------------------------------------------------------------------------- non-finite


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_non_finite_numbers_are_refused(number: str) -> None:
    """``NaN`` was accepted, and ``prefixkey hash`` echoed ``"id": NaN``, which is not JSON."""
    with pytest.raises(MalformedJSONError) as info:
        parse_json_line('{"block_size": 4, "token_ids": [1], "id": ' + number + "}")
    assert not isinstance(info.value, JSONLimitError)
    assert info.value.field == "id"
    assert parse_json_line('{"id": 1e308}')["id"] == 1e308


# ----------------------------------------------------------------------------- duplicate keys


def test_duplicate_keys_are_a_warning() -> None:
    """Silently the last value; now said, at any level."""
    warnings: list[str] = []
    line = '{"block_size": 4, "block_size": 8, "lora": {"name": "a", "name": "b"}}'
    value = parse_json_line(line, warnings=warnings)
    assert value == {"block_size": 8, "lora": {"name": "b"}}
    assert warnings == ["duplicate key 'name': the last value is used",
                        "duplicate key 'block_size': the last value is used"]
    parse_json_line(json.dumps(PLAIN), warnings=warnings)
    assert len(warnings) == 2


# ----------------------------------------------------------------------------- line length


def test_an_overlong_line_is_refused_by_its_length() -> None:
    limit = 64
    fits = json.dumps({"id": "x" * (limit - 10)}).encode()
    fits += b" " * (limit - len(fits))
    assert parse_json_line(fits + b"\n", dataclasses.replace(JSON_LIMITS, max_line_bytes=limit))
    error = limit_error(fits + b" \n", max_line_bytes=limit)
    assert error.limit == "max_line_bytes"


def test_a_stream_keeps_at_most_the_limit_of_an_overlong_line() -> None:
    """Was read whole (a 200 MB line peaked at 806 MB); now its rest is skipped in pieces."""
    limits = dataclasses.replace(JSON_LIMITS, max_line_bytes=1000)
    stream = io.BytesIO(b'{"a": 1}\n' + b"[" * 5_000_000 + b"\n" + b'{"b": 2}\n' + b"[" * 1001)
    lines = list(bounded_lines(stream, limits))
    assert [len(line) for line in lines] == [9, 1001, 9, 1001]
    assert [parse_json_line(lines[i], limits) for i in (0, 2)] == [{"a": 1}, {"b": 2}]
    for line in lines[1::2]:
        with pytest.raises(JSONLimitError, match="max_line_bytes"):
            parse_json_line(line, limits)
    # Lines already in memory pass through, and are refused by their length.
    assert list(bounded_lines(["x" * 5000], limits)) == ["x" * 5000]


# ----------------------------------------------------------------------------- per request


@pytest.mark.parametrize(("field", "value", "bound"), [
    ("group_block_sizes", [4 * (i + 1) for i in range(100_000)] + [3], "max_group_block_sizes"),
    ("mm_items", [{"identifier": "x", "offset": 0, "length": 1}] * 5_000, "max_mm_items"),
])
def test_a_request_array_past_its_bound_is_refused_before_its_entries(
    field: str, value: list[Any], bound: str
) -> None:
    """100k group sizes each cost a pass over the block keys (seconds of CPU)."""
    with pytest.raises(InvalidRequestError) as info:
        parse_request({**PLAIN, field: value})
    assert info.value.field == field
    assert f"JsonLimits.{bound}" in str(info.value)
    # The bound is the caller's: raised, the array is checked entry by entry.
    with pytest.raises(InvalidRequestError, match="must be"):
        parse_request({**PLAIN, field: value}, api_checks=False,
                      limits=dataclasses.replace(JSON_LIMITS, **{bound: len(value)}))


def test_lookahead_is_bounded() -> None:
    """Each block's key carries ``lookahead`` token ids: the cost grows with it."""
    request = {**PLAIN, "vllm_version": "0.33.0"}
    bound = JSON_LIMITS.max_lookahead
    assert run_job(parse_request({**request, "lookahead": bound}))["block_hashes"] == []
    with pytest.raises(InvalidRequestError) as info:
        parse_request({**request, "lookahead": bound + 1})
    assert info.value.field == "lookahead"
    # Below the bound, a lookahead keys only the blocks it has seen past.
    keyed = run_job(parse_request({**request, "lookahead": 4}))["block_hashes"]
    assert len(keyed) == 2


# ----------------------------------------------------------------------------- readers


def test_read_requests_names_the_line_and_keeps_the_type() -> None:
    lines = [json.dumps(PLAIN), '{"id": 1, "id": 2}', nested(2_000), json.dumps(PLAIN)]
    with pytest.raises(JSONLimitError) as info:
        read_requests(lines)
    assert str(info.value).startswith("line 3: nesting deeper than 32 levels")
    warnings: list[str] = []
    assert read_requests(lines[:2], warnings=warnings)[1] == {"id": 2}
    assert warnings == ["line 2: duplicate key 'id': the last value is used"]


def test_decode_recording_costs_one_record_per_hostile_line() -> None:
    """A nested or overlong recording line was a traceback that lost every later line."""
    limits = dataclasses.replace(JSON_LIMITS, max_line_bytes=4096)
    stream = io.BytesIO(b"".join([
        nested(1_500).encode() + b"\n",
        b'{"recv_time": NaN, "frames_b64": []}\n',
        b"[" * 100_000 + b"\n",
        RECORDING[0].replace(b'"source"', b'"source": "dup", "source"', 1),
    ]))
    records = list(decode_recording(stream, EventDecoder("0.31.0"), limits=limits))
    errors = [r["error"] for r in records[:3]]
    assert [(e["type"], e["line"]) for e in errors] == [("RecordingFormatError", n)
                                                        for n in (1, 2, 3)]
    assert "max_depth" in errors[0]["message"] and "max_line_bytes" in errors[2]["message"]
    assert errors[1]["field"] == "recv_time"
    assert records[3]["events"] and records[3]["source"] == "replica-a"
    assert records[3]["warnings"][0] == "duplicate key 'source': the last value is used"


def test_audit_takes_hostile_lines_as_errors() -> None:
    log = [nested(5_000), '{"id": NaN, "block_size": 4, "token_ids": [1]}']
    report = audit([nested(5_000), b"[" * 100], log,
                   limits=dataclasses.replace(JSON_LIMITS, max_line_bytes=50))
    assert [r.error["type"] for r in report.requests if r.error] == [
        "JSONLimitError", "MalformedJSONError"]
    assert len(report.recording["errors"]) == 2


def test_every_limit_error_is_a_prefixkey_error() -> None:
    assert issubclass(JSONLimitError, MalformedJSONError)
    assert issubclass(RecordingFormatError, PrefixKeyError)
