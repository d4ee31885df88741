"""``prefixkey events decode``: a recording in, one decoded batch or error per message out."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.cli import main
from prefixkey.events import END_SEQ

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "events.recording.jsonl"
FIXTURES = ROOT / "tests" / "fixtures" / "events"


def _b64(*frames: bytes) -> list[str]:
    return [base64.b64encode(f).decode() for f in frames]


def _payloads(version: str) -> dict[str, bytes]:
    lines = map(json.loads, (FIXTURES / f"{version}.jsonl").read_text().splitlines())
    return {x["name"]: bytes.fromhex(x["payload_hex"]) for x in lines}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    status = main(list(argv))
    out = capsys.readouterr()
    return status, [json.loads(x) for x in out.out.splitlines()], out.err


def test_decodes_the_example_recording(capsys: pytest.CaptureFixture[str]) -> None:
    status, records, err = _run(capsys, "events", "decode", str(EXAMPLE),
                                "--vllm-version", "0.31.0")
    assert status == 0 and err == ""
    assert len(records) == len(EXAMPLE.read_text().splitlines())
    first = records[0]
    assert first["source"] == "replica-a" and first["topic"] == "" and first["seq"] == 0
    assert first["data_parallel_rank"] == 0 and first["ts"] == 1700000000.25
    stored = first["events"][0]
    assert stored["type"] == "BlockStored"
    assert stored["block_hashes"] == [123456789, 2**64 - 1, -(2**63)]
    assert records[1]["source"] == "tcp://10.0.0.7:5557" and records[1]["topic"] == "kv"
    bytes_event = records[2]["events"][0]
    assert all(isinstance(h, str) and len(h) == 64 for h in bytes_event["block_hashes"])
    mixed = next(r for r in records if r["seq"] == 3)
    assert mixed["events"][1]["extra_keys"] == [
        [["mmhash-a", 3], "salt-2", {"hex": hashlib.sha256(b"embeds-block-0").hexdigest()}],
        None]
    assert all(r["warnings"] == [] for r in records)


def test_bad_messages_are_error_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _payloads("0.26.0")["mixed"]
    lines = [
        json.dumps({"recv_time": 1.0, "source": "a", "frames_b64": _b64(b"", b"\0" * 8, good)}),
        "not json",
        json.dumps({"recv_time": 2.0, "source": "b", "frames_b64": _b64(b"", b"\0" * 8)}),
        json.dumps({"recv_time": 3.0, "source": "c",
                    "frames_b64": _b64(b"", b"\0" * 8, good[:-4])}),
        json.dumps({"recv_time": 4.0, "source": "d", "frames_b64": ["@@"]}),
        json.dumps({"recv_time": "x", "frames_b64": []}),
        "",
        json.dumps([1]),
        json.dumps({"recv_time": 5, "source": "e", "frames_b64": _b64(b"t", b"\0" * 7 + b"\1",
                                                                      good)}),
    ]
    path = tmp_path / "rec.jsonl"
    path.write_text("\n".join(lines) + "\n")
    status, records, err = _run(capsys, "events", "decode", str(path), "--vllm-version", "0.26.0")
    assert status == 1 and "6 message(s) could not be decoded" in err
    assert [r.get("error", {}).get("type") for r in records] == [
        None, "RecordingFormatError", "EventFramingError", "MalformedPayloadError",
        "RecordingFormatError", "RecordingFormatError", "RecordingFormatError", None]
    assert records[2]["error"]["line"] == 3 and records[2]["source"] == "b"
    assert records[4]["error"]["field"] == "frames_b64[0]"
    assert records[-1]["seq"] == 1 and records[-1]["topic"] == "t"


def test_wrong_version_and_newer_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = _payloads("0.33.0")["optional_fields_set"]
    path = tmp_path / "rec.jsonl"
    path.write_text(json.dumps({"recv_time": 1, "source": "s",
                                "frames_b64": _b64(b"", b"\0" * 8, payload)}) + "\n")
    status, records, err = _run(capsys, "events", "decode", str(path), "--vllm-version", "0.29.0")
    assert status == 0
    assert records[0]["warnings"] and "ignored unknown fields" in err
    status, records, _ = _run(capsys, "events", "decode", str(path), "--vllm-version", "0.23.0")
    assert status == 1 and records[0]["error"]["event_index"] == 0
    status, records, err = _run(capsys, "events", "decode", str(path), "--vllm-version", "0.8.0")
    assert status == 2 and records == [] and "UnknownVersionError" in err
    status, records, err = _run(capsys, "events", "decode", str(path), "--vllm-version",
                                "0.99.0", "--lenient")
    assert status == 0 and "newer than any known release" in err


def test_replay_framing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    payload = _payloads("0.24.0")["int_hashes_minimal"]
    path = tmp_path / "replay.jsonl"
    path.write_text("".join(json.dumps({"recv_time": 1, "source": "r", "frames_b64": f}) + "\n"
                            for f in (_b64((5).to_bytes(8, "big"), payload),
                                      _b64(b"", (6).to_bytes(8, "big"), payload),
                                      _b64(END_SEQ, b""))))
    status, records, _ = _run(capsys, "events", "decode", str(path), "--vllm-version", "0.24.0",
                              "--framing", "replay")
    assert status == 0
    assert [r.get("seq") for r in records] == [5, 6, None]
    assert records[2]["replay_end"] is True


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io
    import sys

    data = EXAMPLE.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    status, records, _ = _run(capsys, "events", "decode", "-", "--vllm-version", "0.31.0")
    assert status == 0 and len(records) == len(data.splitlines())
