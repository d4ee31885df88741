"""Messages and echoes that were untrue or unreadable (issue 23, item 15).

* A JSON depth limit with no flag: a tool schema nested 14 objects deep is
  refused at 32; ``--max-json-depth`` raises it (to 256 at most).
* Token ids of 2**64 and more were hashed though the docs bounded them below 2**64: vLLM
  hashes them (the golden vectors hold them), so the docs were wrong and now say so.
* A request ``id`` holding a lone surrogate was echoed as ``"\\ud800"``, which no
  strict JSON reader takes (it is no Unicode): written as U+FFFD, with a warning.
* A 200 KB vLLM ``param`` was echoed whole as the error's field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.cli import main
from prefixkey.jsonl import parse_request
from prefixkey.render import RenderRequestError, RenderResponseParser


def _records(capsys: pytest.CaptureFixture[str], *argv: str) -> list[Any]:
    main(list(argv))
    out = capsys.readouterr().out
    # Strict: valid UTF-8 text with no lone surrogate escaped in it.
    for line in out.splitlines():
        json.dumps(json.loads(line), ensure_ascii=False).encode("utf-8")
    return [json.loads(line) for line in out.splitlines()]


def _schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for i in range(depth):
        schema = {"type": "object", "properties": {f"p{i}": schema}}
    return schema


def test_a_deep_tool_schema_passes_with_the_flag(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    line = {"id": "deep", "block_size": 2, "token_ids": [1, 2, 3, 4],
            "tools": [{"type": "function", "function": {"name": "f",
                                                        "parameters": _schema(14)}}]}
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (refused,) = _records(capsys, "hash", str(path))
    assert refused["error"]["type"] == "JSONLimitError"
    (hashed,) = _records(capsys, "hash", "--max-json-depth", "64", str(path))
    assert "block_hashes" in hashed and hashed["id"] == "deep"
    with pytest.raises(SystemExit):
        main(["hash", "--max-json-depth", "100000", str(path)])
    capsys.readouterr()


@pytest.mark.parametrize("big", [2**64, 2**64 + 7, 10**4000],
                         ids=["2**64", "2**64+7", "10**4000"])
def test_token_ids_past_64_bits_are_hashed_as_vllm_does(big: int) -> None:
    # The docs bounded ids below 2**64, yet they were hashed: the docs were wrong. vLLM's
    # engine core hashes them (tests/vectors hold 2**64 with vLLM's keys); only the digit
    # limit bounds them, and the docs now say so.
    text = (Path(__file__).parents[2] / "docs" / "request-format.md").read_text("utf-8")
    assert "bounded below 2**64" not in text and "2**64 and beyond" in text
    job = parse_request({"block_size": 2, "token_ids": [1, 2, big, 4]})
    assert len(job.token_ids) == 4


def test_a_lone_surrogate_id_is_written_as_unicode(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ids.jsonl"
    path.write_text('{"id": "a\\ud800b", "block_size": 2, "token_ids": [1, 2]}\n'
                    '{"id": "x\\udfff", "block_size": 2}\n'
                    '{"id": "\\ud83d\\ude00", "block_size": 2, "token_ids": [1, 2]}\n',
                    encoding="utf-8")
    hashed, failed, astral = _records(capsys, "hash", str(path))
    assert hashed["id"] == "a\ufffdb" and "lone surrogate" in hashed["warnings"][-1]
    assert failed["id"] == "x\ufffd" and "lone surrogate" in failed["error"]["warnings"][-1]
    assert astral["id"] == "\U0001f600" and not astral["warnings"]  # a pair is Unicode


def test_a_huge_vllm_param_is_not_echoed() -> None:
    parser = RenderResponseParser()
    answer = {"error": {"message": "bad", "type": "BadRequestError", "param": "x" * 200_000,
                        "code": 400}}
    with pytest.raises(RenderRequestError) as err:
        parser.parse("/v1/completions", 400, answer)
    assert err.value.field == "body" and len(str(err.value)) < 200
    assert "200,000 characters, not echoed" in str(err.value)
    short = {"error": {"message": "bad", "type": "BadRequestError",
                       "param": "body.messages.0.content", "code": 400}}
    with pytest.raises(RenderRequestError) as err:
        parser.parse("/v1/completions", 400, short)
    assert err.value.field == "messages[0].content"
