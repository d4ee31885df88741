"""Fingerprinting and ``prefixkey fingerprint``: configurations inferred from KV events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey import Hasher, block_hash_to_int64
from prefixkey.analysis import FingerprintReport, fingerprint
from prefixkey.cli import main

TOKENS = list(range(500, 564))  # four blocks of 16


def keys_for(version: str, algo: str, seed: str | None, *, tokens: list[int] = TOKENS,
             block_size: int = 16, engine_python: str | None = None) -> list[Any]:
    hasher = Hasher(block_size=block_size, vllm_version=version, hash_algo=algo,
                    python_hash_seed=seed, engine_python=engine_python)
    return list(hasher.block_hashes(tokens))


def event(keys: list[Any], form: str, *, tokens: list[int] = TOKENS, block_size: int = 16,
          **extra: Any) -> dict[str, Any]:
    if form == "bytes":
        hashes: list[Any] = [k.hex() for k in keys]
    elif isinstance(keys[0], int):
        hashes = list(keys)
    else:
        hashes = [block_hash_to_int64(k) for k in keys]
    return {"block_hashes": hashes, "parent_block_hash": None, "token_ids": tokens,
            "block_size": block_size, **extra}


def fitting(report: FingerprintReport) -> set[tuple[str, str, str | None]]:
    return {(c.era, c.hash_algo, c.python_hash_seed) for c in report.candidates}


@pytest.mark.parametrize("form", ["bytes", "int64"])
def test_031_sha256_seed_unset_is_029_to_033(form: str) -> None:
    report = fingerprint([event(keys_for("0.31.0", "sha256", None), form)])
    assert report.verdict == "ambiguous"
    assert fitting(report) == {("M", "sha256", None), ("N", "sha256", None),
                               ("O", "sha256", None)}
    assert [(f.era, f.first_release, f.last_release) for f in report.families] == [
        ("M", "0.29.0", "0.30.0"), ("N", "0.31.0", "0.32.0"), ("O", "0.33.0", "0.33.0")]
    assert report.summary == ("ambiguous: 3 candidates in 3 release families fit "
                              "(vLLM 0.29.0-0.33.0; sha256; PYTHONHASHSEED unset)")
    assert report.reasons[0].startswith("releases 0.29.0-0.33.0 (3 release families) compute the "
                                        "same keys for token-only blocks with sha256")
    assert (report.events_used, report.blocks_used, report.hash_form) == (1, 4, form)


@pytest.mark.parametrize("form", ["bytes", "int64"])
def test_030_xxhash_seed_0(form: str) -> None:
    report = fingerprint([event(keys_for("0.30.0", "xxhash", "0"), form)])
    assert report.verdict == "ambiguous"
    # xxhash is offered from 0.13.0: era J1's candidate starts there (J has none).
    eras = ("J1", "K", "L", "L1", "M", "N", "O")
    assert fitting(report) == {(era, "xxhash", "0") for era in eras}
    assert report.families[0].candidates[0].first_release == "0.13.0"
    assert report.families[0].candidates[0].last_release == "0.16.0"


@pytest.mark.parametrize("form", ["bytes", "int64"])
def test_020_sha256_cbor_seed_0(form: str) -> None:
    report = fingerprint([event(keys_for("0.20.0", "sha256_cbor", "0"), form)])
    eras = ("I", "J", "J1", "K", "L", "L1", "M", "N", "O")
    assert fitting(report) == {(era, "sha256_cbor", "0") for era in eras}
    assert report.summary.startswith("ambiguous: 9 candidates in 9 release families fit "
                                     "(vLLM 0.10.2-0.33.0; sha256_cbor; PYTHONHASHSEED '0')")


def test_given_seed_is_tried() -> None:
    events = [event(keys_for("0.31.0", "sha256_cbor", "1234"), "bytes")]
    assert fingerprint(events).verdict == "none"
    report = fingerprint(events, seeds=["1234"])
    assert report.seeds_tried == (None, "0", "1234")
    eras = ("I", "J", "J1", "K", "L", "L1", "M", "N", "O")
    assert fitting(report) == {(era, "sha256_cbor", "1234") for era in eras}


def test_seed_not_tried_gives_none_with_reasons() -> None:
    report = fingerprint([event(keys_for("0.31.0", "sha256", "1234"), "int64")])
    assert report.verdict == "none"
    assert report.families == () and report.candidates == ()
    assert report.summary.startswith(
        "none: keys cannot be reproduced from these events, because of PYTHONHASHSEED set "
        "to a value not tried (tried: unset, '0')")
    assert any("random NONE_HASH" in r for r in report.reasons)
    assert any("hash block size" in r for r in report.reasons)


def test_wrong_block_size_gives_none() -> None:
    keys = keys_for("0.31.0", "sha256", None, tokens=TOKENS, block_size=32)
    # Published as if the blocks were 16 tokens: two keys cannot cover 64 tokens.
    report = fingerprint([event(keys + keys, "bytes", block_size=16)])
    assert report.verdict == "none"


def test_builtin_and_int_forms_of_old_releases() -> None:
    report = fingerprint([event(keys_for("0.10.0", "sha256_cbor_64bit", "0"), "int64")])
    assert fitting(report) == {("H", "sha256_cbor_64bit", "0"),
                               ("H1", "sha256_cbor_64bit", "0")}
    builtin = keys_for("0.9.2", "builtin", "0", engine_python="3.12")
    assert all(isinstance(k, int) for k in builtin)
    assert ("G", "builtin", "0") in fitting(fingerprint([event(builtin, "int64")]))


def test_skipped_events_say_why() -> None:
    keys = keys_for("0.31.0", "sha256", None)
    events: list[Any] = [
        event(keys, "bytes"),
        {**event(keys[2:], "int64", tokens=TOKENS[32:]),
         "parent_block_hash": block_hash_to_int64(keys[1])},
        {**event(keys[2:], "bytes", tokens=TOKENS[32:]), "parent_block_hash": keys[1].hex()},
        event(keys, "bytes", extra_keys=[["sql"], None, None, None]),
        event(keys, "bytes", lora_name="sql"),
        event(keys, "bytes", tokens=TOKENS[:-1]),
        {"type": "BlockRemoved", "block_hashes": [1]},
        {**event(keys, "bytes"), "block_hashes": ["zz"]},
        [1, 2],
        event(keys, "int64", extra_keys=[None, None, None, None]),
    ]
    report = fingerprint(events)
    assert (report.events_total, report.events_used, report.blocks_used) == (10, 2, 8)
    assert report.hash_form == "mixed"
    reasons = {s.index: s.reason for s in report.skipped}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8, 9]
    assert reasons[2] == ("parent given as a 64-bit int: the chain cannot be resumed from a "
                          "truncated key")
    assert reasons[3].startswith("parent given: the blocks continue a chain")
    assert reasons[4].startswith("blocks carry extra keys")
    assert "LoRA" in reasons[5]
    assert reasons[6].startswith("63 token_ids for 4 blocks of 16")
    assert reasons[7] == "a BlockRemoved event, not BlockStored"
    assert "not hex" in reasons[8]
    assert reasons[9].startswith("not a JSON object")
    assert fitting(report) == {("M", "sha256", None), ("N", "sha256", None),
                               ("O", "sha256", None)}


def test_no_usable_events() -> None:
    report = fingerprint([{"block_hashes": [1], "parent_block_hash": 7, "token_ids": [1],
                           "block_size": 1}])
    assert report.verdict == "no_events"
    assert report.hash_form == "none" and report.events_used == 0
    assert report.summary.startswith("no usable events")


def test_several_events_narrow_nothing_but_must_all_fit() -> None:
    good = event(keys_for("0.31.0", "sha256", None), "bytes")
    other = event(keys_for("0.31.0", "sha256", "0"), "bytes")
    assert fingerprint([good, good]).verdict == "ambiguous"
    assert fingerprint([good, other]).verdict == "none"


def test_cli_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys = keys_for("0.30.0", "xxhash", "7")
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(event(keys, "int64")) + "\n"
                    + json.dumps({**event(keys, "int64"), "parent_block_hash": 5}) + "\n")
    assert main(["fingerprint", str(path), "--seed", "7"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "events: 2 read, 1 used (4 blocks, int64 form), 1 skipped"
    assert lines[1].startswith("  skipped event 2: parent given as a 64-bit int")
    assert lines[2] == "seeds tried: unset, '0', '7'"
    assert lines[3] == ("verdict: ambiguous: 7 candidates in 7 release families fit "
                        "(vLLM 0.13.0-0.33.0; xxhash; PYTHONHASHSEED '7')")
    assert "  vLLM 0.13.0-0.16.0:" in lines
    assert "    xxhash       seed '7'      vLLM 0.13.0-0.16.0" in lines


def test_cli_json_and_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(event(keys_for("0.31.0", "sha256", "99"), "bytes")) + "\n")
    assert main(["fingerprint", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "none"
    assert data["candidates"] == [] and data["families"] == []
    assert data["seeds_tried"] == [None, "0"]
    assert data["summary"].startswith("none: keys cannot be reproduced from these events")


def test_cli_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("{\n")
    assert main(["fingerprint", str(path)]) == 2
    assert "MalformedJSONError: line 1" in capsys.readouterr().err
    assert main(["fingerprint", str(tmp_path / "missing.jsonl")]) == 2


def test_typed_events_give_the_report_of_their_json() -> None:
    # The fleet's learner passes typed BlockStored events, never their JSON.
    from prefixkey.events import BlockRemoved, BlockStored, event_to_json

    keys = keys_for("0.31.0", "sha256", None)
    typed: list[Any] = [
        BlockStored(tuple(keys), None, tuple(TOKENS), 16),
        BlockStored(tuple(block_hash_to_int64(k) for k in keys), None, tuple(TOKENS), 16),
        BlockStored(tuple(keys[2:]), keys[1], tuple(TOKENS[32:]), 16),
        BlockStored(tuple(keys), None, tuple(TOKENS), 16, lora_name="sql"),
        BlockStored(tuple(keys), None, tuple(TOKENS), 16,
                    extra_keys=(("sql",), None, None, None)),
        BlockRemoved(tuple(keys)),
    ]
    from_typed = fingerprint(typed)
    assert from_typed == fingerprint(event_to_json(e) for e in typed)
    assert (from_typed.events_used, from_typed.hash_form) == (2, "mixed")
    assert [s.index for s in from_typed.skipped] == [3, 4, 5, 6]
