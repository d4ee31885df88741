"""Hostile JSON Lines through every command that reads them (issue 14 item 1).

One bad line costs that line: an error record (``hash``, ``events decode``,
``audit``) or a typed error on stderr with exit status 2 (``drift``,
``fingerprint``, which read every request first), never a traceback, and the
lines after it are still read. Each case here once aborted the command, was
accepted silently, or printed output that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prefixkey.cli import main

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "examples" / "events.recording.jsonl"
AUDIT_RECORDING = ROOT / "examples" / "audit" / "recording.jsonl"
PLAIN = {"id": "ok", "block_size": 4, "token_ids": [1, 2, 3, 4, 5, 6, 7, 8]}
NESTED = "[" * 5_000 + "]" * 5_000
HUGE = "9" * 5_000


def strict_json(line: str) -> Any:
    """``json.loads`` without Python's NaN/Infinity extension: what any other reader accepts."""
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")
    return json.loads(line, parse_constant=refuse)


def write(path: Path, *lines: Any) -> str:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n"
                            for x in lines), encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, [strict_json(line) for line in out.splitlines()], err


def hash_errors(records: list[Any]) -> list[tuple[str, str | None, int]]:
    return [(r["error"]["type"], r["error"]["field"], r["error"]["line"])
            for r in records if "error" in r]


# ----------------------------------------------------------------------------- hash


@pytest.mark.parametrize(("line", "error"), [
    (NESTED, ("JSONLimitError", None)),
    ('{"id": ' + NESTED[4_960:-4_960] + ', "block_size": 4, "token_ids": [1]}',
     ("JSONLimitError", "id")),
    ('{"block_size": 4, "token_ids": [1, ' + HUGE + "]}", ("JSONLimitError", "token_ids")),
    ('{"id": ' + HUGE + ', "block_size": 4, "token_ids": [1]}', ("JSONLimitError", "id")),
    ('{"vllm_version": ' + HUGE + ', "block_size": 4, "token_ids": [1]}',
     ("JSONLimitError", "vllm_version")),
    ('{"id": NaN, "block_size": 4, "token_ids": [1, 2, 3, 4]}', ("MalformedJSONError", "id")),
    ('{"id": 1e999, "block_size": 4, "token_ids": [1, 2, 3, 4]}', ("MalformedJSONError", "id")),
    (json.dumps({"block_size": 4, "token_ids": [1, 2, 3, 4],
                 "group_block_sizes": [4 * (i + 1) for i in range(100_000)]}),
     ("InvalidRequestError", "group_block_sizes")),
], ids=["nested", "nested-id", "digits-token", "digits-id", "digits-version", "nan", "inf",
        "groups"])
def test_hash_turns_a_hostile_line_into_its_error_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, error: tuple[str, str]
) -> None:
    """Nesting and digits were tracebacks that lost the later lines; NaN was echoed as NaN
    (not JSON); 100k group sizes were all hashed."""
    status, records, err = run(capsys, "hash", write(tmp_path / "r.jsonl", PLAIN, line, PLAIN))
    assert status == 1
    assert hash_errors(records) == [(*error, 2)]
    assert [r["id"] for r in records] == ["ok", None, "ok"]
    assert records[0]["block_hashes"] == records[2]["block_hashes"] != []
    assert "Traceback" not in err and f"line 2: {error[0]}" in err


def test_hash_warns_of_duplicate_keys(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A duplicate key was silent: which value did the keys follow?"""
    line = '{"block_size": 4, "token_ids": [1, 2, 3, 4], "block_size": 2}'
    status, (record,), err = run(capsys, "hash", write(tmp_path / "r.jsonl", line))
    assert status == 0
    warning = "duplicate key 'block_size': the last value is used"
    assert record["warnings"] == [warning]
    assert f"prefixkey hash: warning: line 1: {warning}" in err
    assert len(record["block_hashes"]) == 2  # block_size 2: the last value


def test_hash_skips_an_overlong_line_and_reads_the_next(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = json.dumps({**PLAIN, "token_ids": list(range(2_000))})
    path = write(tmp_path / "r.jsonl", PLAIN, long, PLAIN)
    status, records, _ = run(capsys, "hash", path, "--max-line-bytes", "1000")
    assert status == 1
    assert hash_errors(records) == [("JSONLimitError", None, 2)]
    assert "line longer than 1000 bytes (max_line_bytes)" in records[1]["error"]["message"]
    assert [r["id"] for r in records] == ["ok", None, "ok"]
    status, records, _ = run(capsys, "hash", path, "--max-line-bytes", str(len(long)))
    assert status == 0 and len(records) == 3


def test_hash_memory_stays_bounded_on_a_huge_line(
    tmp_path: Path, bounded: Callable[..., dict[str, Any]]
) -> None:
    """A 200 MB line was read whole and parsed: 806 MB peak. Now at most the line limit
    (64 MiB by default) is kept of it, and the next line is hashed."""
    path = tmp_path / "huge.jsonl"
    with path.open("w") as out:
        out.write('{"block_size": 4, "token_ids": [')
        for _ in range(100):
            out.write("123456, " * 131_072)  # 1 MiB of token ids
        out.write("1]}\n" + json.dumps(PLAIN) + "\n")
    code = f"""
import contextlib, io, json
from prefixkey.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    status = main(["hash", {str(path)!r}])
print(json.dumps({{"status": status, "out": out.getvalue(), "peak": peak_rss()}}))
"""
    result = bounded(code, address_space=1536 * 1024 * 1024)
    records = [strict_json(line) for line in result["out"].splitlines()]
    assert result["status"] == 1
    assert hash_errors(records) == [("JSONLimitError", None, 1)]
    assert records[1]["id"] == "ok"
    assert result["peak"] < 300 * 1024 * 1024, result["peak"]


# ----------------------------------------------------------------------------- other readers


@pytest.mark.parametrize("command", [
    ["drift", "0.31.0", "0.32.0"],
    ["fingerprint"],
])
@pytest.mark.parametrize("line", [NESTED, '{"id": ' + HUGE + "}", '{"id": NaN}'])
def test_commands_reading_all_requests_fail_typed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], line: str
) -> None:
    path = write(tmp_path / "r.jsonl", PLAIN, line)
    status = main([*command, path])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(f"prefixkey {command[0]}: ")
    assert "line 2: " in err and "Error: " in err and "Traceback" not in err


def test_drift_warns_of_duplicate_keys(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "r.jsonl", '{"block_size": 4, "block_size": 4, "token_ids": [1]}')
    assert main(["drift", "0.31.0", "0.32.0", path]) == 0
    assert ("prefixkey drift: warning: line 1: duplicate key 'block_size': the last value is "
            "used") in capsys.readouterr().err


def test_events_decode_costs_one_record_per_hostile_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = RECORDING.read_text().splitlines()[0]
    path = write(tmp_path / "rec.jsonl", NESTED, good.replace("}", ', "x": NaN}', 1),
                 '{"recv_time": 1, "frames_b64": ["%s"]}' % ("A" * 4_000), good)
    status, records, err = run(capsys, "events", "decode", path, "--vllm-version", "0.31.0",
                               "--max-line-bytes", "3000")
    assert status == 1
    assert [r["error"]["line"] for r in records[:3]] == [1, 2, 3]
    assert "max_line_bytes" in records[2]["error"]["message"]
    assert records[3]["events"]
    assert "Traceback" not in err


def test_audit_costs_one_row_per_hostile_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    log = write(tmp_path / "log.jsonl", NESTED, '{"id": NaN, "block_size": 4}',
                '{"block_size": 4, "token_ids": [' + HUGE + "]}")
    status, (report,), err = run(capsys, "audit", str(AUDIT_RECORDING), log, "--json")
    assert status == 1  # nothing could be audited, and stderr says why
    assert [row["error"]["type"] for row in report["requests"]] == [
        "JSONLimitError", "MalformedJSONError", "JSONLimitError"]
    assert "Traceback" not in err
