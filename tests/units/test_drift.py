"""Drift and ``prefixkey drift``: which requests keep their keys across a change."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey import Hasher, Request
from prefixkey.analysis import (
    FROM_REQUEST,
    DriftConfig,
    DriftReport,
    RequestDrift,
    builtin_corpus,
    drift,
    read_requests,
)
from prefixkey.cli import main
from prefixkey.errors import (
    InvalidRequestError,
    MalformedJSONError,
    UnknownAlgorithmError,
    UnknownVersionError,
)


def by_id(report: DriftReport) -> dict[str, RequestDrift]:
    return {r.request_id: r for r in report.requests}


@pytest.fixture(scope="module")
def upgrade_031() -> DriftReport:
    return drift(DriftConfig.parse("0.30.0"), DriftConfig.parse("0.31.0"))


# --------------------------------------------------------------------------
# The built-in corpus.


def test_builtin_corpus_covers_the_features() -> None:
    corpus = builtin_corpus()
    assert 15 <= len(corpus) <= 30
    assert len({obj["id"] for obj in corpus}) == len(corpus)
    assert any(obj.get("lora", {}).get("int_id") for obj in corpus if obj.get("lora"))
    assert any(obj.get("lora") and "int_id" not in obj["lora"] for obj in corpus)
    assert any(obj.get("cache_salt") for obj in corpus)
    assert any(obj.get("prompt_embeds") for obj in corpus)
    assert any(obj.get("hash_calls") for obj in corpus)
    assert any(len(obj.get("mm_items", [])) > 1 for obj in corpus)
    seeded = [obj for obj in corpus if obj.get("python_hash_seed") == "0"]
    assert 3 <= len(seeded) < len(corpus) / 2
    assert {obj["block_size"] for obj in corpus} >= {8, 16, 32}


def test_030_to_031_token_only_requests_survive(upgrade_031: DriftReport) -> None:
    results = by_id(upgrade_031)
    plain = [r for r in upgrade_031.requests if "plain" in r.features]
    assert len(plain) == 9
    for result in plain:
        assert result.identical, result.request_id
        assert result.causes == ()
        assert result.first_diverging_block is None
        assert result.shared_blocks == result.num_blocks > 0
    assert results["plain-256"].num_blocks == 16
    assert results["plain-40-partial"].num_blocks == 2  # the partial block has no key


def test_030_to_031_lora_requests_differ_from_block_0(upgrade_031: DriftReport) -> None:
    results = by_id(upgrade_031)
    for name in ("lora-int-id", "lora-no-int-id", "lora-seed0"):
        result = results[name]
        assert not result.identical
        assert result.first_diverging_block == 0
        assert result.shared_blocks == 0
        assert [c.kind for c in result.causes] == ["era:lora_key"]
        message = result.causes[0].message
        assert "LoRA path joins the key" in message
        assert "instead of the adapter name (0.31.0" in message
        assert message.endswith("every block differs")


def test_030_to_031_salt_and_mm_differ_at_their_first_feature_block(
    upgrade_031: DriftReport,
) -> None:
    results = by_id(upgrade_031)
    expected = {"salt": 0, "salt-seed0": 0, "mm-block0": 0, "mm-spanning": 0,
                "mm-block1": 1, "mm-two-items-seed0": 1, "mm-decode-window": 2,
                "mm-decode-boundary": 0, "embeds": 0, "embeds-seed0": 0, "lora-mm-salt": 0}
    for name, block in expected.items():
        result = results[name]
        assert not result.identical, name
        assert result.first_diverging_block == block, name
        assert result.shared_blocks == block, name
        tagging = [c for c in result.causes if c.kind == "era:tagged"]
        assert len(tagging) == 1, name
        assert tagging[0].message.startswith("0.31.0 tags extra keys; this request has")
        assert tagging[0].from_block == block
    assert "blocks from the first image (block 1) on differ" in \
        results["mm-block1"].causes[0].message
    assert "this request has a cache salt: every block differs" in \
        results["salt"].causes[0].message


def test_030_to_031_decode_window_cause(upgrade_031: DriftReport) -> None:
    result = by_id(upgrade_031)["mm-decode-window"]
    assert [c.kind for c in result.causes] == ["era:mm_window", "era:tagged"]
    window = result.causes[0]
    assert window.from_block == 2
    assert "multimodal window changes (0.31.0)" in window.message
    assert "finds the items by window" in window.message
    # Only window-sensitive requests get the window cause.
    assert all(c.kind != "era:mm_window" for c in by_id(upgrade_031)["mm-block1"].causes)


def test_030_to_031_summary(upgrade_031: DriftReport) -> None:
    overall = upgrade_031.summary_for("all")
    assert overall is not None
    assert (overall.requests, overall.requests_surviving) == (23, 9)
    assert (overall.blocks, overall.blocks_surviving) == (89, 46)
    plain = upgrade_031.summary_for("plain")
    assert plain is not None and plain.request_share == 1.0 and plain.block_share == 1.0
    lora = upgrade_031.summary_for("lora")
    assert lora is not None and (lora.requests, lora.blocks_surviving) == (4, 0)
    mm = upgrade_031.summary_for("mm")
    assert mm is not None
    assert (mm.requests, mm.requests_surviving, mm.blocks_surviving) == (7, 0, 4)
    decode = upgrade_031.summary_for("decode")
    assert decode is not None and (decode.requests, decode.requests_surviving) == (3, 1)
    assert upgrade_031.summary_for("lookahead") is None


def test_shared_prefix_matches_real_keys(upgrade_031: DriftReport) -> None:
    obj = next(o for o in builtin_corpus() if o["id"] == "mm-block1")
    request = read_requests([json.dumps(obj)])[0]
    from prefixkey.jsonl import parse_request

    old = parse_request({**request, "vllm_version": "0.30.0"})
    new = parse_request({**request, "vllm_version": "0.31.0"})
    a, b = old.hasher.block_hashes(old.request), new.hasher.block_hashes(new.request)
    assert a[0] == b[0] and a[1] != b[1]
    assert by_id(upgrade_031)["mm-block1"].shared_blocks == 1


# --------------------------------------------------------------------------
# Configuration changes.


def test_identical_configs_keep_every_key() -> None:
    report = drift(DriftConfig.parse("0.31.0"), DriftConfig.parse("0.31.0"))
    overall = report.summary_for("all")
    assert overall is not None
    assert overall.request_share == 1.0 and overall.block_share == 1.0
    assert all(r.identical and not r.causes for r in report.requests)


def test_seed_change_changes_every_key() -> None:
    report = drift(DriftConfig.parse("0.31.0:seed=unset"), DriftConfig.parse("0.31.0:seed=0"))
    for result in report.requests:
        assert not result.identical
        assert result.first_diverging_block == 0 and result.shared_blocks == 0
        if result.request_id == "plain-xxhash-seed0":
            # xxhash without PYTHONHASHSEED: a random NONE_HASH, reported as such.
            assert [c.kind for c in result.causes] == ["from_unavailable"]
            assert result.from_side.error_type == "UnreproducibleKeysError"
            continue
        assert [c.kind for c in result.causes] == ["none_hash"]
        assert result.causes[0].message == (
            "NONE_HASH seed differs (unset: default 'vllm-none-hash' (0.29.0+) vs "
            "PYTHONHASHSEED '0'): all keys differ"
        )
    overall = report.summary_for("all")
    assert overall is not None and overall.blocks_surviving == 0


def test_request_seed_kept_unless_overridden() -> None:
    report = drift(DriftConfig.parse("0.31.0"), DriftConfig.parse("0.31.0:seed=0"))
    results = by_id(report)
    assert results["plain-64-seed0"].identical  # its own seed is already "0"
    assert not results["plain-32"].identical
    assert report.from_config.python_hash_seed is FROM_REQUEST
    assert results["plain-64-seed0"].from_side.python_hash_seed == "0"
    assert results["plain-32"].from_side.python_hash_seed is None


def test_algorithm_change() -> None:
    report = drift(DriftConfig.parse("0.31.0:seed=0"),
                   DriftConfig.parse("0.31.0:algo=xxhash,seed=0"))
    results = by_id(report)
    assert results["plain-xxhash-seed0"].identical
    cbor = results["plain-cbor"]
    assert [c.kind for c in cbor.causes] == ["hash_algo"]
    assert cbor.causes[0].message == (
        "hash algorithm differs (sha256_cbor vs xxhash; cbor vs pickle serialization, "
        "32- vs 16-byte keys): all keys differ"
    )
    assert results["lora-seed0"].causes[0].message.startswith(
        "hash algorithm differs (sha256 vs xxhash; 32- vs 16-byte keys)")
    assert results["lora-seed0"].to_side.hash_algo == "xxhash"


def test_block_size_change() -> None:
    report = drift(DriftConfig.parse("0.31.0"), DriftConfig.parse("0.31.0:block_size=32"))
    results = by_id(report)
    assert results["plain-bs32-96"].identical  # already 32
    result = results["plain-256"]
    assert (result.num_blocks, result.first_diverging_block) == (16, 0)
    assert result.to_side.num_blocks == 8
    assert [c.message for c in result.causes] == [
        "hash block size differs (16 vs 32): blocks cover different tokens, all keys differ"
    ]


def test_lookahead_change() -> None:
    report = drift(DriftConfig.parse("0.33.0"), DriftConfig.parse("0.33.0:lookahead=1"))
    result = by_id(report)["plain-32"]
    assert [c.kind for c in result.causes] == ["lookahead"]
    assert "lookahead" in result.features
    assert by_id(drift(DriftConfig.parse("0.32.0"), DriftConfig.parse("0.33.0")))[
        "lora-mm-salt"].identical


def test_lora_int_id_to_name() -> None:
    report = drift(DriftConfig.parse("0.11.0:seed=0"), DriftConfig.parse("0.11.1:seed=0"))
    results = by_id(report)
    assert results["lora-int-id"].causes[0].message.startswith(
        "LoRA keyed by the adapter name instead of the server's int id (0.11.1")
    assert results["salt"].identical
    # Era I needs the int id: that side is reported, not crashed.
    no_id = results["lora-no-int-id"]
    assert not no_id.identical and no_id.first_diverging_block == 0
    assert no_id.from_side.error_type == "InvalidRequestError"
    assert no_id.to_side.error is None and no_id.to_side.num_blocks == 2
    assert [c.kind for c in no_id.causes] == ["from_unavailable"]


def test_mm_offset_change_019() -> None:
    report = drift(DriftConfig.parse("0.18.1:seed=0"), DriftConfig.parse("0.19.0:seed=0"))
    results = by_id(report)
    assert results["mm-block1"].causes[0].message == (
        "mm offset now relative to block (0.19.0): blocks from the first image (block 1) "
        "on differ"
    )
    boundary = results["mm-decode-boundary"]
    assert [(c.kind, c.from_block) for c in boundary.causes] == [
        ("era:mm_key", 0), ("era:mm_window", 2)]
    assert "a block starting where an item ends still names it" in boundary.causes[1].message
    assert results["lora-mm-salt"].first_diverging_block == 2
    assert results["lora-seed0"].identical


def test_unreproducible_side_is_reported() -> None:
    report = drift(DriftConfig.parse("0.28.0"), DriftConfig.parse("0.29.0"))
    results = by_id(report)
    plain = results["plain-32"]
    assert not plain.identical and plain.shared_blocks == 0
    assert plain.from_side.error_type == "UnreproducibleKeysError"
    assert plain.from_side.num_blocks is None
    assert plain.to_side.num_blocks == 2 and plain.num_blocks == 2
    assert [c.kind for c in plain.causes] == ["from_unavailable"]
    assert "random NONE_HASH" in plain.causes[0].message
    assert results["plain-64-seed0"].identical
    overall = report.summary_for("all")
    assert overall is not None and 0 < overall.requests_surviving < overall.requests


def test_custom_requests_and_bad_request() -> None:
    requests = [
        {"id": "ok", "block_size": 4, "token_ids": [1, 2, 3, 4, 5, 6, 7, 8]},
        {"block_size": 4, "token_ids": [1, 2.5]},
    ]
    report = drift(DriftConfig("0.30.0"), DriftConfig("0.31.0"), requests)
    ok, bad = report.requests
    assert ok.identical and ok.num_blocks == 2
    assert bad.request_id == "#2" and not bad.identical
    assert {c.kind for c in bad.causes} == {"from_unavailable", "to_unavailable"}
    assert bad.from_side.error_type == "InvalidRequestError"


def test_keys_match_the_hasher() -> None:
    report = drift(DriftConfig("0.31.0"), DriftConfig("0.31.0", python_hash_seed="0"),
                   [{"id": "x", "block_size": 16, "token_ids": list(range(1, 41))}])
    (result,) = report.requests
    a = Hasher(block_size=16).block_hashes(Request(list(range(1, 41))))
    b = Hasher(block_size=16, python_hash_seed="0").block_hashes(list(range(1, 41)))
    assert all(x != y for x, y in zip(a, b, strict=True))
    assert result.num_blocks == len(a) == 2 and result.shared_blocks == 0


@pytest.mark.parametrize(
    ("spec", "error", "field"),
    [
        ("0.31.0:algo=md5", UnknownAlgorithmError, "hash_algo"),
        ("0.12.0:algo=xxhash", UnknownAlgorithmError, "hash_algo"),
        ("banana", UnknownVersionError, "vllm_version"),
        ("0.31.0:colour=red", InvalidRequestError, "config"),
        ("0.31.0:block_size=x", InvalidRequestError, "block_size"),
        ("0.31.0:block_size=0", InvalidRequestError, "block_size"),
        ("0.31.0:lookahead=1", InvalidRequestError, "lookahead"),
        (":seed=0", InvalidRequestError, "config"),
    ],
)
def test_bad_config(spec: str, error: type[Exception], field: str) -> None:
    with pytest.raises(error) as info:
        DriftConfig.parse(spec)
    assert getattr(info.value, "field", None) == field


def test_config_parse_values() -> None:
    config = DriftConfig.parse("0.31.0:algo=xxhash,seed=0,block_size=32")
    assert config == DriftConfig("0.31.0", "xxhash", "0", 32)
    assert DriftConfig.parse("0.31.0:seed=unset").python_hash_seed is None
    assert DriftConfig.parse("0.31.0:seed=").python_hash_seed == ""
    assert config.describe() == "0.31.0 (algo='xxhash', seed='0', block_size=32)"
    assert config.to_dict()["lookahead"] == "from request"


def test_read_requests_names_the_bad_line() -> None:
    with pytest.raises(MalformedJSONError, match="line 2: invalid JSON"):
        read_requests(['{"block_size": 4, "token_ids": []}', "{oops"])
    assert read_requests(["", b'{"a": 1}']) == [{"a": 1}]


# --------------------------------------------------------------------------
# The command.


def test_cli_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drift", "0.30.0", "0.31.0"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == ("FROM 0.30.0 [scheme of 0.29.0-0.30.0]  ->  "
                        "TO 0.31.0 [scheme of 0.31.0-0.32.0]")
    assert lines[1] == "scheme changes crossed:"
    assert lines[2].startswith("  0.31.0: extra keys are tagged")
    assert any(line.startswith("plain-32 ") and line.endswith("identical (2 of 2 blocks)")
               for line in lines)
    mm = next(line for line in lines if line.startswith("mm-block1 "))
    assert "diverges at block 1 of 4 (1 shared): 0.31.0 tags extra keys" in mm
    assert "  all            9/23     39.1%      46/89     51.7%" in lines
    assert "  plain          9/9     100.0%      42/42    100.0%" in lines


def test_cli_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "req.jsonl"
    path.write_text(json.dumps({"id": "a", "block_size": 4, "token_ids": list(range(12)),
                                "cache_salt": "s"}) + "\n\n")
    assert main(["drift", "0.30.0", "0.31.0:seed=0", str(path), "--json"]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert data["from"]["vllm_version"] == "0.30.0"
    assert data["to"]["python_hash_seed"] == "0"
    assert data["from"]["python_hash_seed"] == "from request"
    (request,) = data["requests"]
    assert request["request_id"] == "a" and request["identical"] is False
    assert request["num_blocks"] == 3 and request["first_diverging_block"] == 0
    assert [c["kind"] for c in request["causes"]] == ["none_hash", "era:tagged"]
    assert request["features"] == ["salt"]
    assert data["summary"][0] == {"feature": "all", "requests": 1, "requests_surviving": 0,
                                  "blocks": 3, "blocks_surviving": 0, "request_share": 0.0,
                                  "block_share": 0.0}


@pytest.mark.parametrize("argv", [
    ["drift", "0.31.0:algo=md5", "0.31.0"],
    ["drift", "0.31.0", "nonsense"],
    ["drift", "0.31.0", "0.31.0:seed"],
])
def test_cli_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("prefixkey drift: ")
    assert "Error: " in captured.err


def test_cli_malformed_requests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("{not json\n")
    assert main(["drift", "0.30.0", "0.31.0", str(path)]) == 2
    assert "MalformedJSONError: line 1: invalid JSON" in capsys.readouterr().err


def test_cli_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["drift", "0.30.0", "0.31.0", "/nonexistent/requests.jsonl"]) == 2
    assert "No such file" in capsys.readouterr().err
