"""Golden-vector export: deterministic, replayable, string forms equal the ints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.cli import main
from prefixkey.jsonl import parse_request, run_job
from prefixkey.testing import export_vectors, generate_records


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_is_deterministic(tmp_path: Path) -> None:
    a = export_vectors("0.31.0", tmp_path / "a", count=25, seed=7)
    b = export_vectors("0.31.0", tmp_path / "b", count=25, seed=7)
    assert a.read_bytes() == b.read_bytes()
    assert a.name == "0.31.0.jsonl" and len(_lines(a)) == 25
    other = export_vectors("0.31.0", tmp_path / "c", count=25, seed=8)
    assert other.read_bytes() != a.read_bytes()


@pytest.mark.parametrize("release", ["0.7.0", "0.9.0", "0.10.0", "0.13.0", "0.31.0", "0.33.0"])
def test_vectors_replay_and_string_forms(release: str) -> None:
    records = generate_records(release, count=20, seed=1)
    assert len({r["id"] for r in records}) == 20
    assert any(r["result"]["block_hashes"] for r in records)
    for record in records:
        request, result = record["request"], record["result"]
        assert request["vllm_version"] == release and request["id"] == record["id"]
        replayed = run_job(parse_request(json.loads(json.dumps(request)), api_checks=True),
                           request["id"])
        assert {k: v for k, v in result.items() if not k.startswith("block_hashes_int64_")
                } == replayed
        strings = result["block_hashes_int64_str"]
        if strings is None:  # 0.8.3-0.10.1 sha256: 256-bit int keys
            assert result["hash_type"] == "int" and result["block_hashes_int64_hex"] is None
            continue
        ints = result["block_hashes_int64"]
        if result["hash_type"] == "int":  # int-keyed releases publish their keys
            assert ints is None
            ints = [int(h, 16) if h[0] != "-" else -int(h[1:], 16)
                    for h in result["block_hashes"]]
        assert strings == [str(v) for v in ints]
        for text, value in zip(result["block_hashes_int64_hex"], ints, strict=True):
            assert len(text) == 16 and int(text, 16) == value % 2**64


def test_int_release_string_forms() -> None:
    records = generate_records("0.9.0", count=30, seed=2)
    builtin = [r for r in records
               if r["request"]["hash_algo"] == "builtin" and r["result"]["block_hashes"]]
    assert builtin
    for r in builtin:
        assert r["result"]["block_hashes_int64_str"] == [
            str(int(h, 16) if h[0] != "-" else -int(h[1:], 16))
            for h in r["result"]["block_hashes"]]


def test_readme_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["vectors", "--release", "0.29.0", "--out", str(tmp_path), "--count", "5",
                 "--seed", "3"])
    assert code == 0 and "0.29.0.jsonl" in capsys.readouterr().out
    readme = (tmp_path / "README.md").read_text()
    assert "prefixkey 0.1.0" in readme and "checked bit for bit" in readme
    assert "block_hashes_int64_hex" in readme and "--seed 3" in readme
    assert len(_lines(tmp_path / "0.29.0.jsonl")) == 5
    assert main(["vectors", "--release", "0.1.0", "--out", str(tmp_path)]) == 2
    assert "UnknownVersionError" in capsys.readouterr().err
