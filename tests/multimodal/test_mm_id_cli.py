"""``prefixkey mm-id`` on the committed fixtures: vLLM's identifiers, typed error records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.cli import main

HERE = Path(__file__).resolve().parent
IMAGES = sorted((HERE / "images").iterdir())
MODEL = "Qwen/Qwen2-VL-2B-Instruct"


def _harvested(version: str, **config: Any) -> dict[str, dict[str, Any]]:
    """Per fixture, vLLM's record for ``version`` under exactly ``config``."""
    out = {}
    for line in (HERE / "vectors.jsonl").read_text().splitlines():
        record = json.loads(line)
        rest = {k: v for k, v in record.items()
                if k not in ("identifier", "error", "message", "file", "vllm_version")}
        if record["vllm_version"] == version and rest == {"model": MODEL, **config}:
            out[record["file"]] = record
    return out


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any], str]:
    status = main(["mm-id", *argv])
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


@pytest.mark.parametrize(("version", "argv", "config"), [
    ("0.31.0", [], {}),
    ("0.33.0", ["--mm-hasher-algorithm", "sha256"], {"algorithm": "sha256"}),
    ("0.27.0", ["--mm-hasher-algorithm", "sha512"], {"algorithm": "sha512"}),
    ("0.11.0", [], {}),
])
def test_every_fixture_gets_vllm_s_identifier_or_an_error_record(
        version: str, argv: list[str], config: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    expected = _harvested(version, **config)
    status, records, err = _run(["--model", MODEL, "--vllm-version", version, *argv,
                                 *map(str, IMAGES)], capsys)
    assert [Path(r["file"]).name for r in records] == [p.name for p in IMAGES]
    for record in records:
        want = expected[Path(record["file"]).name]
        if "identifier" in record:
            assert record["identifier"] == want["identifier"]
        else:
            assert set(record["error"]) == {"type", "message", "field", "line"}
    failed = sum("error" in r for r in records)
    assert failed and status == 1 and f"{failed} of {len(IMAGES)}" in err


def test_unreadable_files_are_error_records(capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    big.write_bytes(b"\0" * 100)
    status, records, _ = _run(["--model", MODEL, "--max-file-bytes", "10",
                               str(tmp_path / "missing.png"), str(big)], capsys)
    assert status == 1
    assert [r["error"]["field"] for r in records] == ["file", "file"]


@pytest.mark.parametrize("argv", [
    ["--vllm-version", "0.14.0", "--mm-hasher-algorithm", "sha512"],
    ["--vllm-version", "0.5.0"],
    ["--media-io-kwargs", '{"image": {"rgba_background_color": "white"}}'],
])
def test_unusable_configurations_exit_2(argv: list[str],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    status, records, err = _run(["--model", MODEL, *argv, str(IMAGES[0])], capsys)
    assert status == 2 and not records and err.startswith("prefixkey mm-id: ")
