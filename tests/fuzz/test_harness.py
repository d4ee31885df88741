"""The fuzz harness itself: what it calls a finding, and the replay of one."""

from __future__ import annotations

import time
from pathlib import Path

import fuzzing
import pytest
from fuzzing import REPORTS, Fuzz, memory_bound

from prefixkey.errors import InvalidRequestError


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFIXKEY_FUZZ_DIR", str(tmp_path))
    monkeypatch.delenv("PREFIXKEY_FUZZ_REPLAY", raising=False)


def _finish(fuzz: Fuzz) -> None:
    try:
        fuzz.finish()
    finally:
        REPORTS.remove(fuzz.report)  # not a target: kept out of the summary


def _typed(data: bytes) -> None:
    raise InvalidRequestError("token_ids", "bad")


def _untyped(data: bytes) -> None:
    raise KeyError(data)


def test_typed_errors_pass() -> None:
    fuzz = Fuzz("harness/typed", _typed)
    fuzz.one(b"x")
    _finish(fuzz)
    assert (fuzz.report.inputs, fuzz.report.typed_errors, fuzz.report.failures) == (1, 1, 0)


def test_an_untyped_error_is_a_finding_written_for_replay(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    fuzz = Fuzz("harness/untyped", _untyped)
    fuzz.one(b"\x00hostile")
    with pytest.raises(AssertionError, match="1 finding"):
        _finish(fuzz)
    [saved] = (tmp_path / "failures").glob("*.bin")
    assert saved.read_bytes() == b"\x00hostile"
    assert "KeyError" in saved.with_suffix(".txt").read_text(encoding="utf-8")
    monkeypatch.setenv("PREFIXKEY_FUZZ_REPLAY", str(saved))
    with pytest.raises(KeyError):
        Fuzz("harness/untyped", _untyped).replaying()
    with pytest.raises(pytest.skip.Exception):
        Fuzz("harness/typed", _typed).replaying()


def test_memory_past_the_bound_is_a_finding() -> None:
    def hog(data: bytes) -> None:
        bytearray(memory_bound(len(data)) + 1)

    fuzz = Fuzz("harness/memory", hog)
    for _ in range(16):  # every 16th input is traced
        fuzz.one(b"")
    with pytest.raises(AssertionError, match="allocated"):
        _finish(fuzz)


def test_a_slow_input_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzzing, "TIME_BOUND", 0.01)
    fuzz = Fuzz("harness/slow", lambda data: time.sleep(0.02))
    fuzz.one(b"")
    with pytest.raises(AssertionError, match="took"):
        _finish(fuzz)
    assert fuzz.report.slowest >= 0.02


def test_budget_and_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREFIXKEY_FUZZ_SECONDS", "0")
    assert Fuzz("harness/t", _typed).expired
    first = Fuzz("harness/t", _typed).seed
    assert Fuzz("harness/t", _typed).seed == first
    assert Fuzz("harness/u", _typed).seed != first
    monkeypatch.setenv("PREFIXKEY_FUZZ_SEED", "1")
    assert Fuzz("harness/t", _typed).seed != first


def test_reports_and_failures_stay_in_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PREFIXKEY_FUZZ_DIR they go to the checkout's build/ (git-ignored), not /tmp."""
    monkeypatch.delenv("PREFIXKEY_FUZZ_DIR")
    checkout = Path(__file__).resolve().parents[2]
    assert fuzzing.out_dir() == checkout / "build" / "prefixkey-fuzz"
    assert "build/" in (checkout / ".gitignore").read_text().splitlines()
