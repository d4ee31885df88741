"""``prefixkey simulate`` on the command line: text, --json, --html, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefixkey.cli import main

EXCERPT = Path(__file__).resolve().parents[1] / "fixtures" / "mooncake" / \
    "conversation_first200.jsonl"


def test_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["simulate", str(EXCERPT), "--limit", "30", "--replicas", "3",
                   "--policy", "ours,least-outstanding", "--blocks", "10000"])
    out = capsys.readouterr().out
    assert status == 0
    assert "30 requests, 3 replicas x 10000 blocks" in out
    for name in ("ours", "least-outstanding", "pooled"):
        assert f"\n{name} " in out


def test_json_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "report.html"
    argv = ["simulate", str(EXCERPT), "--limit", "20", "--replicas", "2", "--json",
            "--policy", "round-robin", "--no-pooled", "--event-lag-ms", "0",
            "--prefill-rate", "5000", "--max-concurrency", "8", "--decode-s-per-token", "0.01",
            "--html", str(page)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["requests"] == 20
    assert report["config"]["time"] == {"prefill_tokens_per_s": 5000.0, "max_concurrency": 8,
                                        "decode_s_per_token": 0.01, "event_lag_s": 0.0}
    (result,) = report["results"]
    assert result["policy"] == "round-robin" and result["per_replica_requests"] == [10, 10]
    assert "<svg" in page.read_text(encoding="utf-8")


def test_bad_trace_line_is_a_message_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"token_ids": [1, 2]}\n{"timestamp": 3}\n', encoding="utf-8")
    assert main(["simulate", str(trace)]) == 2
    err = capsys.readouterr().err
    assert "prefixkey simulate: InvalidRequestError" in err and "line 2" in err


def test_unknown_policy_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["simulate", str(EXCERPT), "--policy", "ours,best"])
    assert info.value.code == 2
    assert "unknown policy best" in capsys.readouterr().err
