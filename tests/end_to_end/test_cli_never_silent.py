"""The command line never fails silently: each formerly silent case, its message and exit status.

Misspelled fields, requests without a full block, empty inputs, ``drift``
without ``--lenient`` or the API checks, ``fingerprint`` on a recording,
``audit`` with its arguments swapped, the release ``resolved`` shows, and
help text on every option.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
AUDIT_SAMPLE = ROOT / "examples" / "audit"
EVENTS_SAMPLE = ROOT / "examples" / "events.recording.jsonl"

PLAIN = {"block_size": 4, "token_ids": [1, 2, 3, 4, 5, 6, 7, 8]}
SALT_HINT = "unknown field 'cache_slat' ignored (did you mean 'cache_salt'?)"


def write_lines(path: Path, lines: list[Any]) -> Path:
    """Objects become JSON; str entries are written verbatim."""
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
                    encoding="utf-8")
    return path


def run_text(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[Any], str]:
    """A command whose output is JSON Lines (or --json)."""
    status, out, err = run_text(capsys, *argv)
    return status, [json.loads(line) for line in out.splitlines()], err


# --------------------------------------------------------------------------
# hash: unknown fields


def test_misspelled_key_field_is_an_error_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Hashed without the salt, the key would be silently wrong.
    path = write_lines(tmp_path / "req.jsonl", [{**PLAIN, "cache_slat": "tenant-a"}, PLAIN,
                                                {**PLAIN, "cache_salt": "a", "cache_slat": "b"},
                                                {**PLAIN, "colour": "blue"}])
    status, records, err = run(capsys, "hash", str(path))
    assert status == 1
    assert records[0]["error"]["field"] == "cache_slat"
    assert "did you mean 'cache_salt'?" in records[0]["error"]["message"]
    assert "--allow-misspelled-fields" in records[0]["error"]["message"]
    # With the field itself present, or no key-changing field near, it stays a warning.
    assert [("error" in r) for r in records[1:]] == [False, False, False]
    assert "prefixkey hash: 1 request(s) could not be hashed (first: line 1: " in err


@pytest.mark.parametrize(("line", "field", "typo"), [
    ({"block_szie": 4, "token_ids": [1]}, "block_size", "block_szie"),
    ({"block_size": 4, "tokens_ids": [1]}, "token_ids", "tokens_ids"),
    ({**PLAIN, "lora": {"name": "a", "pth": "/p"}}, "lora.path", "pth"),
    ({**PLAIN, "lora": {"nme": "a", "path": "/p"}}, "lora.name", "nme"),
    ({**PLAIN, "mm_items": [{"identifer": "i", "offset": 0, "length": 1}]},
     "mm_items[0].identifier", "identifer"),
])
def test_a_misspelled_required_field_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: dict[str, Any], field: str,
    typo: str,
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [line])
    for flags in ((), ("--allow-misspelled-fields",)):
        status, records, _ = run(capsys, "hash", *flags, str(path))
        assert status == 1
        error = records[0]["error"]
        assert error["field"] == field
        assert "is required" in error["message"]
        assert f"found {typo!r}: did you mean {field.rsplit('.', 1)[-1]!r}?" in error["message"]


def test_misspelled_field_warns_on_stderr_and_in_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**PLAIN, "cache_slat": "tenant-a"}, PLAIN])
    status, records, err = run(capsys, "hash", "--allow-misspelled-fields", str(path))
    assert status == 0
    assert records[0]["warnings"] == [SALT_HINT]
    assert f"prefixkey hash: warning: line 1: {SALT_HINT}" in err.splitlines()
    # What the warning is about: the salt was not hashed (keys as without it).
    assert records[0]["block_hashes"] == records[1]["block_hashes"]


def test_a_repeated_warning_is_said_once_then_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**PLAIN, "cache_slat": "t"}] * 3)
    status, records, err = run(capsys, "hash", "--allow-misspelled-fields", str(path))
    assert status == 0
    assert all(r["warnings"] == [SALT_HINT] for r in records)
    assert err.splitlines() == [f"prefixkey hash: warning: line 1: {SALT_HINT}",
                                f"prefixkey hash: warning: 2 more line(s): {SALT_HINT}"]


def test_strict_makes_unknown_fields_error_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**PLAIN, "id": "a"},
                                                {**PLAIN, "id": "b", "cache_slat": "t"},
                                                {**PLAIN, "id": "c", "colour": "blue"}])
    status, records, err = run(capsys, "hash", "--strict", str(path))
    assert status == 1
    assert "error" not in records[0] and records[0]["warnings"] == []
    assert records[1] == {"id": "b", "error": {
        "type": "InvalidRequestError", "field": "cache_slat", "line": 2,
        "message": "cache_slat: is not a request field (did you mean 'cache_salt'?)"}}
    assert records[2]["error"]["field"] == "colour"
    assert records[2]["error"]["message"] == "colour: is not a request field"
    assert "prefixkey hash: 2 request(s) could not be hashed (first: line 2: " in err


def test_strict_is_about_fields_and_lenient_about_releases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newer = {**PLAIN, "vllm_version": "0.40.0"}
    path = write_lines(tmp_path / "req.jsonl", [newer])
    status, records, _ = run(capsys, "hash", "--strict", str(path))
    assert status == 1 and records[0]["error"]["type"] == "UnknownVersionError"
    status, records, err = run(capsys, "hash", "--strict", "--lenient", str(path))
    assert status == 0 and "error" not in records[0]
    assert "newer than any known release" in err


# --------------------------------------------------------------------------
# hash: no full block, empty input, the resolved release


@pytest.mark.parametrize(("tokens", "block_size"), [([1, 2, 3], 16), ([], 4)])
def test_a_request_without_a_full_block_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tokens: list[int], block_size: int
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{"block_size": block_size, "token_ids": tokens}])
    status, records, err = run(capsys, "hash", str(path))
    assert status == 0
    assert records[0]["block_hashes"] == []
    warning = (f"no full block: {len(tokens)} token(s) at block_size {block_size}, so no keys "
               "(vLLM caches only full blocks)")
    assert records[0]["warnings"] == [warning]
    assert err == f"prefixkey hash: warning: line 1: {warning}\n"


def test_a_full_block_has_no_such_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{"block_size": 4, "token_ids": [1, 2, 3, 4]}])
    status, records, err = run(capsys, "hash", str(path))
    assert status == 0 and len(records[0]["block_hashes"]) == 1
    assert records[0]["warnings"] == [] and err == ""


def test_empty_input_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "req.jsonl", ["", "   "])
    status, records, err = run(capsys, "hash", str(path))
    assert status == 0 and records == []
    assert err == f"prefixkey hash: warning: no requests in {path} (empty input), nothing hashed\n"


@pytest.mark.parametrize("version", ["0.31", "v0.31.0", "0.31.0rc1", "0.31.0+cu124"])
def test_resolved_shows_the_normalised_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**PLAIN, "vllm_version": "0.31.0"},
                                                {**PLAIN, "vllm_version": version}])
    status, (given, spelled), _ = run(capsys, "hash", str(path))
    assert status == 0
    assert spelled["resolved"]["vllm_version"] == "0.31.0"
    assert spelled["resolved"] == given["resolved"]
    assert spelled["block_hashes"] == given["block_hashes"]


def test_resolved_release_of_a_lenient_guess(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**PLAIN, "vllm_version": "0.40"}])
    status, records, _ = run(capsys, "hash", "--lenient", str(path))
    assert status == 0
    assert records[0]["resolved"]["vllm_version"] == "0.40.0"


# --------------------------------------------------------------------------
# drift: --lenient, the API checks, empty input


def test_drift_lenient(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "drift", "0.31.0", "0.40.0")
    assert status == 2
    assert "prefixkey drift: UnknownVersionError: vllm_version 0.40.0 is newer" in err
    status, (report,), err = run(capsys, "drift", "--lenient", "--json", "0.31.0", "0.40.0")
    assert status == 0
    assert err.startswith("prefixkey drift: warning: vLLM 0.40.0 is newer than any known "
                          "release; assuming the keys of vLLM 0.33.0")
    assert report["requests"] and {r["to_side"]["era"] for r in report["requests"]} <= {"O"}


def test_drift_makes_the_api_checks_hash_makes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "req.jsonl", [{**PLAIN, "cache_salt": "a/b"}])
    _, (hashed,), _ = run(capsys, "hash", str(path))
    status, (report,), _ = run(capsys, "drift", "--json", "0.30.0", "0.31.0", str(path))
    assert status == 0
    (row,) = report["requests"]
    for side, release in ((row["from_side"], "0.30.0"), (row["to_side"], "0.31.0")):
        assert side["error_type"] == hashed["error"]["type"] == "InvalidRequestError"
        # The same rule, named with each side's release (hash's line is 0.31.0).
        assert side["error"] == hashed["error"]["message"].replace("0.31.0", release)
    assert [c["kind"] for c in row["causes"]] == ["from_unavailable", "to_unavailable"]
    # --no-api-checks hashes what the engine core would, as for hash.
    status, (report,), _ = run(capsys, "drift", "--json", "--no-api-checks", "0.30.0",
                               "0.31.0", str(path))
    assert status == 0
    (row,) = report["requests"]
    assert row["from_side"]["error"] is None and row["to_side"]["num_blocks"] == 2


def test_drift_empty_input_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "req.jsonl", [""])
    status, _, err = run_text(capsys, "drift", "0.30.0", "0.31.0", str(path))
    assert status == 0
    assert err == (f"prefixkey drift: warning: no requests in {path} (empty input), "
                   "nothing compared\n")


# --------------------------------------------------------------------------
# fingerprint: recordings


def test_fingerprint_reads_the_bundled_audit_recording(
    capsys: pytest.CaptureFixture[str]
) -> None:
    # The sample was recorded from 0.31.0 keys (sha256, PYTHONHASHSEED unset).
    status, (report,), err = run(capsys, "fingerprint", str(AUDIT_SAMPLE / "recording.jsonl"),
                                 "--vllm-version", "0.31.0", "--json")
    assert status == 0 and err == ""
    assert report["events_used"] > 0
    assert {"era": "N", "hash_algo": "sha256", "python_hash_seed": None}.items() <= next(
        c for c in report["candidates"] if c["era"] == "N").items()


def test_fingerprint_of_a_recording_equals_that_of_its_decoded_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The other path: `events decode`, then the BlockStored events as fingerprint's input.
    for recording in (AUDIT_SAMPLE / "recording.jsonl", EVENTS_SAMPLE):
        _, messages, _ = run(capsys, "events", "decode", str(recording),
                             "--vllm-version", "0.31.0")
        stored = [e for m in messages for e in m["events"] if e["type"] == "BlockStored"]
        events = write_lines(tmp_path / "events.jsonl", stored)
        status, (direct,), _ = run(capsys, "fingerprint", str(events), "--json")
        assert status == 0
        status, (recorded,), _ = run(capsys, "fingerprint", str(recording),
                                     "--vllm-version", "0.31.0", "--json")
        assert status == 0
        assert recorded == direct
        assert recorded["events_total"] == len(stored) > 0


def test_fingerprint_of_a_recording_without_vllm_version_hints(
    capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_text(capsys, "fingerprint", str(EVENTS_SAMPLE))
    assert status == 1
    assert err.splitlines() == [
        f"prefixkey fingerprint: none of the 8 event(s) in {EVENTS_SAMPLE} is usable (see the "
        "skipped reasons), nothing fingerprinted",
        f"prefixkey fingerprint: hint: {EVENTS_SAMPLE} looks like a recording of KV-event "
        "messages: pass --vllm-version X (the replica's release) to decode it",
    ]


def test_fingerprint_empty_input_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "empty.jsonl", [""])
    status, _, err = run_text(capsys, "fingerprint", str(path))
    assert status == 1
    assert err == (f"prefixkey fingerprint: no BlockStored events in {path}, "
                   "nothing fingerprinted\n")
    status, _, err = run_text(capsys, "fingerprint", str(path), "--vllm-version", "0.31.0")
    assert status == 1
    assert "no BlockStored messages in" in err


def test_fingerprint_says_which_messages_it_could_not_decode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (AUDIT_SAMPLE / "recording.jsonl").read_text().splitlines()
    path = write_lines(tmp_path / "rec.jsonl", [*lines, '{"frames_b64": 5}'])
    status, (report,), err = run(capsys, "fingerprint", str(path), "--vllm-version", "0.31.0",
                                 "--json")
    assert status == 0 and report["verdict"] == "ambiguous"
    assert err == (f"prefixkey fingerprint: warning: 1 of {len(lines) + 1} message(s) could "
                   f"not be decoded and were left out (first: line {len(lines) + 1}: "
                   "RecordingFormatError: frames_b64: must be a list of base64 strings)\n")


# --------------------------------------------------------------------------
# audit: nothing audited


def test_audit_with_swapped_arguments_fails_with_a_hint(
    capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_text(capsys, "audit", str(AUDIT_SAMPLE / "requests.jsonl"),
                         str(AUDIT_SAMPLE / "recording.jsonl"))
    assert status == 1
    lines = err.splitlines()
    assert lines[0].startswith("prefixkey audit: nothing audited: none of the 13 request "
                               "line(s) could be audited (first: line 1: InvalidRequestError:")
    assert lines[1] == ("prefixkey audit: hint: the arguments look swapped: the RECORDING "
                        "(KV-event messages, frames_b64) comes first, then the REQUEST_LOG "
                        "(requests)")
    status, _, err = run_text(capsys, "audit", str(AUDIT_SAMPLE / "recording.jsonl"),
                         str(AUDIT_SAMPLE / "requests.jsonl"))
    assert status == 0 and err == ""


def test_audit_of_an_empty_request_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = write_lines(tmp_path / "log.jsonl", [""])
    status, _, err = run_text(capsys, "audit", str(AUDIT_SAMPLE / "recording.jsonl"), str(log))
    assert status == 1
    assert err == f"prefixkey audit: no requests in {log} (empty input), nothing audited\n"


def test_audit_of_an_empty_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recording = write_lines(tmp_path / "rec.jsonl", [""])
    status, _, err = run_text(capsys, "audit", str(recording),
                              str(AUDIT_SAMPLE / "requests.jsonl"))
    assert status == 0
    assert err == (f"prefixkey audit: warning: no messages in {recording} (empty input): "
                   "every request meets an empty cache\n")


# --------------------------------------------------------------------------
# help


def _options(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, str | None]]:
    """(command and option, help) of every option and command, recursively."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found += [(f"{path} {a.dest}", a.help) for a in action._choices_actions]
            for name, sub in action.choices.items():
                found += _options(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            found.append((f"{path} {'/'.join(action.option_strings) or action.dest}",
                          action.help))
    return found


def test_every_option_has_help_text() -> None:
    options = _options(build_parser(), "prefixkey")
    names = {name for name, _ in options}
    assert {"prefixkey hash --strict", "prefixkey events decode --framing",
            "prefixkey oracle --seed", "prefixkey vectors --count"} <= names
    assert [name for name, text in options if not text] == []


def test_audit_lenient_covers_the_replica_option(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", str(AUDIT_SAMPLE / "recording.jsonl"), str(AUDIT_SAMPLE / "requests.jsonl"),
            "--replica", "replica-a=0.40.0", "--json"]
    status, _, err = run_text(capsys, *argv)
    assert status == 2 and "UnknownVersionError: vllm_version 0.40.0 is newer" in err
    status, (report,), _ = run(capsys, *argv, "--lenient")
    assert status == 0 and report["totals"]["requests"] > 0


def test_events_decode_empty_input_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "empty.jsonl", ["", " "])
    status, records, err = run(capsys, "events", "decode", str(path), "--vllm-version", "0.31.0")
    assert status == 0 and records == []
    assert err == (f"prefixkey events decode: warning: no messages in {path} (empty input), "
                   "nothing decoded\n")
