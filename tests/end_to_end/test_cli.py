"""The ``prefixkey hash`` command: JSON Lines in, one result or error record per line out."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from vector_records import vector_record

from prefixkey import Hasher, LoRA, Request
from prefixkey.cli import main
from prefixkey.core import BlockHash

# A request and vLLM 0.31.0's own results for it (sha256, block size 7, PYTHONHASHSEED unset).
WORKED = vector_record("0.31.0", "prefixkey-00032/sha256")
WORKED_NONE_HASH = WORKED["result"]["none_hash"]
WORKED_BLOCKS = WORKED["result"]["block_hashes"]
WORKED_INTS = WORKED["result"]["block_hashes_int64"]
WORKED_REQUEST = {"id": "worked", "block_size": 7, "hash_algo": "sha256",
                  "token_ids": WORKED["case"]["token_ids"]}


def hex_keys(keys: Sequence[BlockHash]) -> list[str]:
    """sha256 keys (bytes) as the CLI writes them."""
    assert all(isinstance(k, bytes) for k in keys)
    return [cast(bytes, k).hex() for k in keys]


def write_lines(path: Path, lines: list[Any]) -> Path:
    """Objects become JSON; str entries are written verbatim (raw, possibly broken, lines)."""
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def run_main(
    capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, list[dict[str, Any]], str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    records = [json.loads(line) for line in captured.out.splitlines()]
    return status, records, captured.err


def assert_worked(record: dict[str, Any]) -> None:
    assert "error" not in record
    assert record["none_hash"] == WORKED_NONE_HASH
    assert record["block_hashes"] == WORKED_BLOCKS
    assert record["block_hashes_int64"] == WORKED_INTS
    assert record["extra_keys"] == [None, None]
    assert record["hash_type"] == "bytes"
    assert record["resolved"] == {"vllm_version": "0.31.0", "era": "N", "hash_algo": "sha256",
                                  "seed_source": "default"}
    assert record["warnings"] == []


# --------------------------------------------------------------------------
# The worked values.


def test_worked_values_via_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "req.jsonl", [WORKED_REQUEST])
    status, records, err = run_main(capsys, "hash", str(path))
    assert status == 0
    assert err == ""
    assert len(records) == 1
    assert records[0]["id"] == "worked"
    assert_worked(records[0])


def test_worked_values_via_subprocess(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "req.jsonl", [WORKED_REQUEST, {
        "block_size": WORKED_REQUEST["block_size"], "token_ids": WORKED_REQUEST["token_ids"]}])
    proc = subprocess.run([sys.executable, "-m", "prefixkey", "hash", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 2
    for record in records:
        assert_worked(record)
    assert records[1]["id"] is None


def test_a_reader_that_goes_away_ends_the_job_quietly(tmp_path: Path) -> None:
    # `prefixkey hash big.jsonl | head -1`: no traceback, no message, SIGPIPE's status.
    path = write_lines(tmp_path / "req.jsonl", [WORKED_REQUEST] * 20000)
    proc = subprocess.Popen([sys.executable, "-m", "prefixkey", "hash", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert_worked(json.loads(first))
    assert stderr == b""


def test_worked_values_from_stdin(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    import io

    stdin = io.TextIOWrapper(io.BytesIO((json.dumps(WORKED_REQUEST) + "\n\n").encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    status, records, _ = run_main(capsys, "hash", "-")
    assert status == 0
    assert len(records) == 1  # blank lines are skipped
    assert_worked(records[0])


# --------------------------------------------------------------------------
# Bad lines, each between good ones.

GOOD: dict[str, Any] = {"block_size": 4, "token_ids": [1, 2, 3, 4, 5, 6, 7, 8]}
BASE = {"block_size": 4, "token_ids": [1, 2, 3, 4]}

BAD_LINES: list[tuple[str, Any, str, str | None]] = [
    ("invalid JSON", '{"block_size": 16, "token_ids": [1, 2', "MalformedJSONError", None),
    ("not JSON at all", "hello", "MalformedJSONError", None),
    ("array", [1, 2, 3], "InvalidRequestError", "<line>"),
    ("string", '"abc"', "InvalidRequestError", "<line>"),
    ("missing token_ids", {"block_size": 4}, "InvalidRequestError", "token_ids"),
    ("missing block_size", {"token_ids": [1, 2]}, "InvalidRequestError", "block_size"),
    ("bool token", {**BASE, "token_ids": [1, True]}, "InvalidRequestError", "token_ids"),
    ("float token", {**BASE, "token_ids": [1.5]}, "InvalidRequestError", "token_ids"),
    ("negative token", {**BASE, "token_ids": [1, 2, -3, 4]}, "InvalidRequestError", "token_ids"),
    ("string token", {**BASE, "token_ids": ["7"]}, "InvalidRequestError", "token_ids"),
    ("token_ids not array", {**BASE, "token_ids": "1 2 3"}, "InvalidRequestError", "token_ids"),
    ("block_size 0", {**BASE, "block_size": 0}, "InvalidRequestError", "block_size"),
    ("block_size bool", {**BASE, "block_size": True}, "InvalidRequestError", "block_size"),
    ("block_size float", {**BASE, "block_size": 4.0}, "InvalidRequestError", "block_size"),
    ("mm offset out of range",
     {**BASE, "mm_items": [{"identifier": "img", "offset": 3, "length": 2}]},
     "InvalidRequestError", "mm_items[0]"),
    ("mm negative offset",
     {**BASE, "mm_items": [{"identifier": "img", "offset": -1, "length": 2}]},
     "InvalidRequestError", "mm_items[0].offset"),
    ("mm missing identifier", {**BASE, "mm_items": [{"offset": 0, "length": 2}]},
     "InvalidRequestError", "mm_items[0].identifier"),
    ("mm unsorted",
     {**BASE, "mm_items": [{"identifier": "a", "offset": 2, "length": 1},
                           {"identifier": "b", "offset": 0, "length": 1}]},
     "InvalidRequestError", "mm_items[1].offset"),
    ("unknown hash_algo", {**BASE, "hash_algo": "md5"}, "UnknownAlgorithmError", "hash_algo"),
    ("unknown vllm_version", {**BASE, "vllm_version": "0.6.6"}, "UnknownVersionError",
     "vllm_version"),
    ("newer vllm_version strict", {**BASE, "vllm_version": "0.40.0"}, "UnknownVersionError",
     "vllm_version"),
    ("xxhash null seed", {**BASE, "hash_algo": "xxhash", "python_hash_seed": None},
     "UnreproducibleKeysError", "python_hash_seed"),
    ("xxhash_cbor no seed", {**BASE, "hash_algo": "xxhash_cbor"}, "UnreproducibleKeysError",
     "python_hash_seed"),
    ("seed not a string", {**BASE, "python_hash_seed": 0}, "InvalidRequestError",
     "python_hash_seed"),
    ("lora without path", {**BASE, "lora": {"name": "sql"}}, "InvalidRequestError", "lora.path"),
    ("lora without name", {**BASE, "lora": {"path": "/p"}}, "InvalidRequestError", "lora.name"),
    ("lora empty path (API)", {**BASE, "lora": {"name": "sql", "path": ""}},
     "InvalidRequestError", "lora.path"),
    ("salt with slash (API)", {**BASE, "cache_salt": "a/b"}, "InvalidRequestError", "cache_salt"),
    ("empty salt (API)", {**BASE, "cache_salt": ""}, "InvalidRequestError", "cache_salt"),
    ("salt not a string", {**BASE, "cache_salt": 5}, "InvalidRequestError", "cache_salt"),
    ("prompt_embeds bad hex",
     {**BASE, "prompt_embeds": {"dtype": "float32", "shape": [1, 1], "hex": "zz"}},
     "InvalidRequestError", "prompt_embeds.hex"),
    ("prompt_embeds wrong size",
     {**BASE, "prompt_embeds": {"dtype": "float32", "shape": [1, 1], "hex": "0000"}},
     "InvalidRequestError", "prompt_embeds.data"),
    ("prompt_embeds unknown dtype",
     {**BASE, "prompt_embeds": {"dtype": "int4", "shape": [1, 1], "hex": "00"}},
     "InvalidRequestError", "prompt_embeds.dtype"),
    ("prompt_embeds too many rows",
     {**BASE, "prompt_embeds": {"dtype": "float16", "shape": [5, 1], "hex": "00" * 10}},
     "InvalidRequestError", "prompt_embeds.shape"),
    ("hash_calls decreasing", {**BASE, "hash_calls": [3, 2]}, "InvalidRequestError",
     "hash_calls"),
    ("hash_calls past the tokens", {**BASE, "hash_calls": [2, 5]}, "InvalidRequestError",
     "hash_calls"),
    ("group size not a multiple", {**BASE, "group_block_sizes": [6]}, "InvalidRequestError",
     "group_block_sizes"),
]


def _bad_file(tmp_path: Path) -> tuple[Path, list[int]]:
    """Good line, then each bad line followed by a good line; returns the bad line numbers."""
    lines: list[Any] = [{**GOOD, "id": "good-0"}]
    bad_numbers = []
    for i, (_, line, _, _) in enumerate(BAD_LINES):
        if isinstance(line, dict):
            line = {**line, "id": f"bad-{i}"}
        lines.append(line)
        bad_numbers.append(len(lines))
        lines.append({**GOOD, "id": f"good-{i + 1}"})
    return write_lines(tmp_path / "bad.jsonl", lines), bad_numbers


def test_bad_lines_give_error_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, bad_numbers = _bad_file(tmp_path)
    status, records, err = run_main(capsys, "hash", str(path))
    assert status == 1
    assert f"{len(BAD_LINES)} request(s)" in err
    assert len(records) == 2 * len(BAD_LINES) + 1
    expected_good = hex_keys(Hasher(block_size=4).block_hashes(GOOD["token_ids"]))
    for number, record in enumerate(records, start=1):
        if number in bad_numbers:
            continue
        assert "error" not in record, record
        assert record["id"] == f"good-{number // 2}"
        assert record["block_hashes"] == expected_good
    for (name, line, kind, field), number in zip(BAD_LINES, bad_numbers, strict=True):
        record = records[number - 1]
        assert "error" in record, name
        error = record["error"]
        assert error["line"] == number, name
        assert error["type"] == kind, name
        assert error["field"] == field, name
        assert isinstance(error["message"], str) and error["message"], name
        assert record["id"] == (f"bad-{bad_numbers.index(number)}" if isinstance(line, dict)
                                else None), name


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({**BASE, "hash_algo": "md5"}, "hash_algo"),
        ({**BASE, "vllm_version": "0.6.6"}, "vllm_version"),
        ({**BASE, "vllm_version": "banana"}, "vllm_version"),
        ({**BASE, "hash_algo": "xxhash"}, "python_hash_seed"),
    ],
    ids=["algo", "old-version", "bad-version", "xxhash-seed"],
)
def test_config_error_records_name_their_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: dict[str, Any], field: str
) -> None:
    # errors.py: "Errors about caller input name the field ... so a router can log
    # exactly what was wrong without a traceback." These come from request fields.
    path = write_lines(tmp_path / "req.jsonl", [line])
    status, records, _ = run_main(capsys, "hash", str(path))
    assert status == 1
    assert records[0]["error"]["field"] == field


def test_no_api_checks_accepts_what_the_engine_hashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        {**BASE, "cache_salt": "a/b"},
        {**BASE, "cache_salt": ""},
        {**BASE, "lora": {"name": "sql", "path": ""}},
        {**BASE, "lora": {"name": "sql", "path": None}},
    ]
    path = write_lines(tmp_path / "req.jsonl", lines)
    status, records, err = run_main(capsys, "hash", "--no-api-checks", str(path))
    assert status == 0, records
    assert err == ""
    hasher = Hasher(block_size=4)
    expected = [
        hasher.block_hashes(Request([1, 2, 3, 4], cache_salt="a/b")),
        hasher.block_hashes(Request([1, 2, 3, 4])),
        hasher.block_hashes(Request([1, 2, 3, 4], lora=LoRA("sql", ""))),
        hasher.block_hashes(Request([1, 2, 3, 4], lora=LoRA("sql", None))),
    ]
    assert [r["block_hashes"] for r in records] == [hex_keys(e) for e in expected]
    assert records[0]["extra_keys"] == [[["cache_salt", "a/b"]]]
    assert records[0]["event_extra_keys"] == [["a/b"]]
    assert records[3]["extra_keys"] == [[["lora", "sql", None]]]


def test_api_checks_follow_the_release(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 0.17-0.29's API server took any non-empty salt and negative ids before 0.28.
    salt = "tenant/" + "x" * 130
    old = {**BASE, "vllm_version": "0.22.0", "python_hash_seed": "0"}
    lines = [{**old, "cache_salt": salt}, {**old, "token_ids": [1, -2, 3, 4]},
             {**BASE, "cache_salt": salt}, {**BASE, "token_ids": [1, -2, 3, 4]}]
    path = write_lines(tmp_path / "req.jsonl", lines)
    status, records, _ = run_main(capsys, "hash", str(path))
    assert status == 1
    assert [r.get("error", {}).get("field") for r in records] == [
        None, None, "cache_salt", "token_ids"]
    assert "vLLM 0.31.0" in records[3]["error"]["message"]


def test_unknown_field_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**WORKED_REQUEST, "colour": "blue"}])
    status, records, _ = run_main(capsys, "hash", str(path))
    assert status == 0
    record = records[0]
    assert "error" not in record
    assert record["block_hashes"] == WORKED_BLOCKS
    assert len(record["warnings"]) == 1
    assert "colour" in record["warnings"][0]


def test_lenient_newer_release_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**WORKED_REQUEST, "vllm_version": "0.40.0"}])
    status, records, _ = run_main(capsys, "hash", "--lenient", str(path))
    assert status == 0
    record = records[0]
    assert record["block_hashes"] == WORKED_BLOCKS
    assert record["resolved"]["vllm_version"] == "0.40.0"
    assert record["resolved"]["era"] == "O"
    assert len(record["warnings"]) == 1
    assert "0.40.0" in record["warnings"][0]
    # Without --lenient the same line is an error.
    status, records, _ = run_main(capsys, "hash", str(path))
    assert status == 1
    assert records[0]["error"]["type"] == "UnknownVersionError"


def test_features_and_calls_in_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = {
        "id": {"nested": [1]}, "block_size": 4, "token_ids": list(range(20)),
        "lora": {"name": "sql", "int_id": 3, "path": "/a"}, "cache_salt": "t",
        "mm_items": [{"identifier": "img", "offset": 2, "length": 4}],
        "num_prompt_tokens": 10, "group_block_sizes": [8],
    }
    path = write_lines(tmp_path / "req.jsonl", [line])
    status, records, _ = run_main(capsys, "hash", str(path))
    assert status == 0
    record = records[0]
    assert record["id"] == {"nested": [1]}
    request = Request(list(range(20)), lora=LoRA("sql", "/a", 3), cache_salt="t",
                      mm_items=[__import__("prefixkey").MMItem("img", 2, 4)])
    keys = Hasher(block_size=4).block_hashes(request)
    assert record["block_hashes"] == hex_keys(keys)
    assert record["new_hashes_per_call"] == [2, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert sum(record["new_hashes_per_call"]) == 5
    assert record["group_block_hashes"] == {"8": hex_keys([keys[1], keys[3]])}
    assert record["extra_keys"][0] == [["lora", "sql", "/a"], ["mm", "img", 2],
                                       ["cache_salt", "t"]]
    assert record["extra_keys"][1] == [["lora", "sql", "/a"], ["mm", "img", -2]]
    assert record["event_extra_keys"][0] == ["sql", ["img", 2], "t"]


def test_missing_file_is_exit_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["hash", str(tmp_path / "absent.jsonl")])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    assert "absent.jsonl" in captured.err


# --------------------------------------------------------------------------
# Robustness: one bad line must never take the other lines down.


def _run_subprocess(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "prefixkey", "hash", *args, str(path)],
                          capture_output=True, text=True, timeout=120, check=False,
                          encoding="utf-8", errors="replace")


def test_null_vllm_version_does_not_crash(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**WORKED_REQUEST, "vllm_version": None},
                                                 WORKED_REQUEST])
    proc = _run_subprocess(path)
    assert "Traceback" not in proc.stderr, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 2
    assert_worked(records[1])


def test_lone_surrogate_id_does_not_crash(tmp_path: Path) -> None:
    # Valid JSON ("\ud800" is a legal escape), echoed back as the id.
    path = tmp_path / "req.jsonl"
    path.write_text('{"id": "\\ud800", "block_size": 16, "token_ids": [1]}\n'
                    + json.dumps(WORKED_REQUEST) + "\n", encoding="utf-8")
    proc = _run_subprocess(path)
    assert "Traceback" not in proc.stderr, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 2
    assert_worked(records[1])


def test_invalid_utf8_line_is_an_error_record(tmp_path: Path) -> None:
    path = tmp_path / "req.jsonl"
    path.write_bytes(b'{"block_size": 16, "token_ids": [1], "cache_salt": "\xff"}\n'
                     + json.dumps(WORKED_REQUEST).encode() + b"\n")
    proc = _run_subprocess(path)
    assert "Traceback" not in proc.stderr, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == 2
    assert records[0]["error"]["line"] == 1
    assert_worked(records[1])
    assert proc.returncode == 1
