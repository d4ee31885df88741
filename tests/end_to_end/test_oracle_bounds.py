"""The oracle's exchanges with a foreign implementation are bounded (issue 14, item 3).

A process that floods its stdout, never reads its stdin or writes a huge
stderr costs the oracle at most ``max_line_bytes`` and ``timeout``. The
floods run in a subprocess whose address space is limited to 1 GiB (the
``bounded`` fixture) and whose run is timed, so an oracle that reads without
a bound fails there instead of taking the machine with it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prefixkey.testing import (
    AnswerTooLongError,
    ForeignImplementation,
    ImplementationCrashedError,
    ImplementationTimeoutError,
    OracleError,
    check_implementation,
)

HOSTILE = Path(__file__).parent / "oracle_impls" / "hostile.py"
MiB, GiB = 1024**2, 1024**3


def hostile(mode: str, *args: str) -> list[str]:
    return [sys.executable, str(HOSTILE), "--mode", mode, *args]


# Reads [command, request, asks, pause] on stdin, then asks `asks` times (sleeping
# `pause` s between); prints what each ask gave, the seconds it took and the peak
# RSS as one JSON line.
_CHILD = r"""
import json, time
from prefixkey.testing import ForeignImplementation
command, request, asks, pause = json.load(sys.stdin)
answers = []
with ForeignImplementation(command, timeout=3) as implementation:
    for _ in range(asks):
        start = time.monotonic()
        try:
            answers.append({"answer": implementation.ask(request)})
        except Exception as exc:
            answers.append({"error": type(exc).__name__, "message": str(exc)})
        answers[-1]["seconds"] = time.monotonic() - start
        time.sleep(pause)
print(json.dumps({"answers": answers, "peak_rss": peak_rss()}))
"""

Bounded = Callable[..., dict[str, Any]]


def _ask_in_child(bounded: Bounded, command: list[str], request: dict[str, Any], *,
                  asks: int = 1, pause: float = 0.0) -> list[dict[str, Any]]:
    outcome = bounded(_CHILD, address_space=GiB, timeout=60,
                      stdin=json.dumps([command, request, asks, pause]))
    assert outcome["peak_rss"] < 200 * MiB, outcome
    answers: list[dict[str, Any]] = outcome["answers"]
    return answers


def test_a_flood_without_newlines_is_cut_at_the_line_limit(bounded: Bounded) -> None:
    [answer] = _ask_in_child(bounded, hostile("flood"), {"id": 0})
    assert answer["error"] == "AnswerTooLongError", answer
    assert "max_line_bytes (1048576)" in answer["message"]  # the limit, not the timeout


def test_a_flood_of_short_lines_is_not_buffered(bounded: Bounded) -> None:
    # Only what one answer needs is read: the rest waits in the pipe.
    answers = _ask_in_child(bounded, hostile("lines"), {"id": 0}, asks=2, pause=1.0)
    assert [a.get("answer") for a in answers] == [{}, {}], answers


def test_a_large_request_to_a_process_that_never_reads_times_out(bounded: Bounded) -> None:
    request = {"id": 0, "token_ids": list(range(200_000))}  # well over a pipe's buffer
    [answer] = _ask_in_child(bounded, hostile("deaf"), request)
    assert answer["error"] == "ImplementationTimeoutError", answer
    assert "the request was not read within 3 s" in answer["message"]
    assert 2.5 < answer["seconds"] < 10


def test_the_line_limit_is_inclusive() -> None:
    with ForeignImplementation(hostile("pad", "100"), max_line_bytes=100) as at_limit:
        assert set(at_limit.ask({"id": 0})) == {"pad"}
    with (ForeignImplementation(hostile("pad", "101"), max_line_bytes=100) as over,
          pytest.raises(AnswerTooLongError, match=r"max_line_bytes \(100\)")):
        over.ask({"id": 0})


def test_no_answer_within_the_timeout() -> None:
    with ForeignImplementation(hostile("deaf"), timeout=0.5) as implementation:
        start = time.monotonic()
        with pytest.raises(ImplementationTimeoutError, match=r"no answer within 0\.5 s"):
            implementation.ask({"id": 0})
        assert time.monotonic() - start < 5


def test_stderr_keeps_its_tail() -> None:
    with ForeignImplementation(hostile("stderr", str(4 * MiB))) as implementation:
        with pytest.raises(ImplementationCrashedError, match="exit status 4"):
            implementation.ask({"id": 0})
        assert implementation.stderr_tail(10) == "eeeeeelast"
        assert len(implementation.stderr_tail(10 * MiB)) == 64 * 1024


def test_check_implementation_reports_a_flood_as_garbled() -> None:
    start = time.monotonic()
    report = check_implementation(hostile("flood"), max_examples=5, seed=0, timeout=3)
    assert report.status == "garbled", report.to_dict()
    assert "max_line_bytes" in report.differences[0]
    assert time.monotonic() - start < 60


def test_bad_bounds() -> None:
    with pytest.raises(OracleError, match="timeout"):
        ForeignImplementation(hostile("deaf"), timeout=0)
    with pytest.raises(OracleError, match="max_line_bytes"):
        ForeignImplementation(hostile("deaf"), max_line_bytes=0)
