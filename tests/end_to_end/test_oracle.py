"""The oracle passes a correct foreign implementation and shrinks a planted bug."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from prefixkey.cli import main
from prefixkey.testing import ImplementationStartError, OracleError, check_implementation

IMPLS = Path(__file__).parent / "oracle_impls"
CORRECT = [sys.executable, str(IMPLS / "correct.py")]


def wrong(bug: str) -> list[str]:
    return [sys.executable, str(IMPLS / "wrong.py"), "--bug", bug]


def test_correct_implementation_passes() -> None:
    report = check_implementation(CORRECT, max_examples=60, seed=1,
                                  compare=("block_hashes", "extra_keys", "none_hash",
                                           "block_hashes_int64", "event_extra_keys"))
    assert report.ok and report.examples == 60 and report.restarts == 0


def test_correct_implementation_passes_an_old_release() -> None:
    report = check_implementation(CORRECT, vllm_version="0.9.0", max_examples=30, seed=2)
    assert report.ok, report.to_dict()


def test_forgotten_salt_is_found_and_shrunk() -> None:
    report = check_implementation(wrong("salt"), max_examples=200, seed=3)
    assert report.status == "mismatch"
    request = report.request
    assert request is not None and report.expected is not None and report.got is not None
    assert request["cache_salt"]  # the minimal request has a salt ...
    assert len(request["cache_salt"]) == 1
    assert 1 <= len(request["token_ids"]) <= 2  # ... and a block or so of tokens
    assert not {"lora", "mm_items", "prompt_embeds", "hash_calls"} & set(request)
    assert report.expected["block_hashes"] != report.got["block_hashes"]
    assert report.differences == ("block_hashes differs",)


def test_narrow_token_ids_are_found() -> None:
    report = check_implementation(wrong("wide-ids"), max_examples=200, seed=4)
    assert report.status == "mismatch" and report.request is not None
    assert max(report.request["token_ids"]) == 65536
    assert len(report.request["token_ids"]) <= 16


def test_a_crash_is_shrunk_and_the_implementation_restarted() -> None:
    report = check_implementation(wrong("crash"), max_examples=100, seed=5)
    assert report.status == "crashed" and report.request is not None
    assert "lora" in report.request and report.restarts >= 1
    assert "exit status 3" in report.differences[0]


def test_garbled_output() -> None:
    report = check_implementation(wrong("garble"), max_examples=50, seed=6,
                                  features=["cache_salt"], block_size=2)
    assert report.status == "garbled" and report.got is None


def test_errors_before_running() -> None:
    with pytest.raises(ImplementationStartError):
        check_implementation(["/nonexistent/prefixkey-impl"], max_examples=1)
    with pytest.raises(OracleError, match="compare"):
        check_implementation(CORRECT, compare=("nope",))
    with pytest.raises(OracleError, match="no reproducible"):
        check_implementation(CORRECT, vllm_version="0.31.0", hash_algos=["builtin"])


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["oracle", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    quoted = " ".join(json.dumps(part) for part in CORRECT)
    code, out, _ = _cli(capsys, "--command", quoted, "--max-examples", "20", "--seed", "1")
    assert code == 0 and out.startswith("passed 20 requests")
    bad = " ".join(json.dumps(part) for part in wrong("salt"))
    code, out, _ = _cli(capsys, "--command", bad, "--max-examples", "100", "--seed", "3")
    assert code == 1
    assert json.loads(out.splitlines()[1])["cache_salt"]
    assert "expected block_hashes" in out and "got      block_hashes" in out
    code, out, _ = _cli(capsys, "--command", quoted, "--max-examples", "5", "--json",
                        "--compare", "none_hash", "--features", "lora", "--hash-algo", "xxhash")
    assert code == 0 and json.loads(out)["status"] == "passed"
    crash = " ".join(json.dumps(part) for part in wrong("crash"))
    code, out, _ = _cli(capsys, "--command", crash, "--max-examples", "50", "--seed", "5",
                        "--features", "lora")
    assert code == 2 and out.startswith("crashed")
    code, out, err = _cli(capsys, "--command", "/nonexistent/prefixkey-impl")
    assert code == 2 and "ImplementationStartError" in err and "Traceback" not in err
