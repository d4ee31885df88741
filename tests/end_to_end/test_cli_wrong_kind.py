"""A file of another format than the command reads: say what it looks like, and which
command reads it (prefixkey/cli/_formats.py), keeping one output record per input line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.cli import main

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "examples" / "events.recording.jsonl"
REQUESTS = ROOT / "examples" / "requests.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def write_lines(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_hash_of_a_recording_says_it_is_one(capsys: pytest.CaptureFixture[str]) -> None:
    status, records, err = run(capsys, "hash", str(RECORDING))
    count = sum(1 for line in RECORDING.read_text().splitlines() if line.strip())
    assert status == 1 and len(records) == count  # one error record per line, as before
    for number, record in enumerate(records, start=1):
        assert record["error"]["line"] == number
        assert record["error"]["field"] == "token_ids"
        assert "this looks like a KV-event recording (prefixkey listen --record)" in (
            record["error"]["message"])
        assert "prefixkey fingerprint --vllm-version X" in record["error"]["message"]
    assert "KV-event recording" in err


def test_hash_of_other_formats_names_them(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    status, decoded, _ = run(capsys, "events", "decode", "--vllm-version", "0.31.0",
                             str(RECORDING))
    assert status == 0
    _, results, _ = run(capsys, "hash", str(REQUESTS))
    body = {"endpoint": "/v1/chat/completions", "body": {"messages": []}}
    lines = [decoded[0], decoded[0]["events"][0], results[0], body,
             {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
             {"block_size": 4}]  # a request missing its ids: no hint
    path = write_lines(tmp_path / "mixed.jsonl", lines)
    status, records, err = run(capsys, "hash", str(path))
    assert status == 1 and len(records) == len(lines)
    # A BlockStored event has token_ids and block_size: hashed, with the hint as a warning.
    event_hint = ("this looks like KV events (BlockStored), not prefixkey hash's input; "
                  "did you mean prefixkey fingerprint?")
    assert event_hint in records[1]["warnings"]
    assert f"prefixkey hash: warning: line 2: {event_hint}" in err.splitlines()
    messages = [r["error"]["message"] if "error" in r else "" for r in records]
    assert "decoded KV-event messages (prefixkey events decode)" in messages[0]
    assert "prefixkey hash results, an output" in messages[2]
    assert "OpenAI body lines" in messages[3] and "hash --model-dir DIR" in messages[3]
    assert "bare OpenAI request bodies" in messages[4]
    assert messages[5] == "token_ids: is required"


def test_fingerprint_of_a_request_file_says_it_is_one(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    status, _, err = run(capsys, "fingerprint", "--json", str(REQUESTS))
    assert status == 1
    assert (f"prefixkey fingerprint: hint: {REQUESTS} looks like request lines "
            "(docs/request-format.md), not prefixkey fingerprint's input; did you mean "
            "prefixkey hash?") in err.splitlines()


@pytest.mark.parametrize("command", [("fingerprint",), ("events", "decode")])
def test_swapped_version_and_file_are_named(capsys: pytest.CaptureFixture[str],
                                            command: tuple[str, ...]) -> None:
    status, records, err = run(capsys, *command, "--vllm-version", str(RECORDING), "0.31.0")
    assert status == 2 and records == []
    assert (f"--vllm-version {str(RECORDING)!r} is a file, not a vLLM release (e.g. 0.31.0); "
            f"the input file goes last: did you mean --vllm-version 0.31.0 {RECORDING}?") in err
