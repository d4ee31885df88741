"""``prefixkey render`` and ``prefixkey hash --model-dir``: bodies in, ids or keys out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from render_folders import build_folder

from prefixkey import Hasher, LoRA, Request
from prefixkey.cli import main
from prefixkey.render import Renderer, ServerOptions

CHAT = {"role": "user", "content": "Hello, world! How are you today?"}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]], str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, [json.loads(line) for line in captured.out.splitlines()], captured.err


def lines(path: Path, *objs: Any) -> str:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_folder(tmp_path_factory.mktemp("models"), "llama")


def test_render_writes_request_lines(capsys: pytest.CaptureFixture[str], folder: Path,
                                     tmp_path: Path) -> None:
    source = lines(
        tmp_path / "in.jsonl",
        {"id": "c", "endpoint": "/v1/chat/completions", "block_size": 4,
         "body": {"messages": [CHAT], "model": "sql", "cache_salt": "s"}},
        {"id": "p", "endpoint": "/v1/completions", "body": {"prompt": ["Hello", "world"]}},
        {"id": "x", "endpoint": "/v1/completions", "body": {"prompt": "a", "model": "nope"}},
    )
    status, out, err = run(capsys, "render", "--model-dir", str(folder),
                           "--lora-modules", "sql=/adapters/sql", source)
    renderer = Renderer(ServerOptions(model=str(folder),
                                      lora_modules=ServerOptions.lora_modules_from(
                                          ["sql=/adapters/sql"])))
    chat = renderer.render_chat({"messages": [CHAT], "model": "sql"})
    assert out[0] == {"id": "c", "block_size": 4, "token_ids": list(chat.token_ids),
                      "lora": {"name": "sql", "path": "/adapters/sql", "int_id": 1},
                      "cache_salt": "s", "mm_items": [], "prompt": chat.prompt}
    assert out[1]["token_ids"] == [list(r.token_ids) for r in
                                   renderer.render_completion({"prompt": ["Hello", "world"]})]
    assert "prompt" not in out[1]
    assert out[2] == {"id": "x", "error": {
        "type": "RenderRequestError", "message": "model: The model `nope` does not exist.",
        "field": "model", "line": 3}}
    assert status == 1 and "1 request(s) could not be rendered" in err


def test_render_then_hash_is_hash_with_model_dir(capsys: pytest.CaptureFixture[str],
                                                 folder: Path, tmp_path: Path) -> None:
    body = {"id": "c", "endpoint": "/v1/chat/completions", "block_size": 4,
            "body": {"messages": [CHAT] * 3, "cache_salt": "salt"}}
    status, rendered, _ = run(capsys, "render", "--model-dir", str(folder),
                              lines(tmp_path / "in.jsonl", body))
    assert status == 0
    _, piped, _ = run(capsys, "hash", lines(tmp_path / "r.jsonl", *rendered))
    _, direct, _ = run(capsys, "hash", "--model-dir", str(folder),
                       lines(tmp_path / "b.jsonl", body))
    assert piped == direct and piped[0]["warnings"] == []
    expected = Hasher(block_size=4).block_hashes(
        Request(rendered[0]["token_ids"], cache_salt="salt"))
    assert direct[0]["block_hashes"] == [k.hex() for k in expected if isinstance(k, bytes)]


def test_hash_model_dir_splits_prompt_lists_and_checks_conflicts(
        capsys: pytest.CaptureFixture[str], folder: Path, tmp_path: Path) -> None:
    source = lines(
        tmp_path / "in.jsonl",
        {"id": "p", "endpoint": "/v1/completions", "block_size": 2,
         "body": {"prompt": ["Hello world", "Hello"]}},
        {"id": "s", "endpoint": "/v1/completions", "block_size": 2, "cache_salt": "a",
         "body": {"prompt": "Hello world", "cache_salt": "b"}},
        {"id": "l", "endpoint": "/v1/completions", "block_size": 2,
         "lora": {"name": "sql", "path": "/x"}, "body": {"prompt": "Hello world"}},
        {"id": "t", "block_size": 2, "token_ids": [1, 2, 3, 4]},
    )
    status, out, _ = run(capsys, "hash", "--model-dir", str(folder), source)
    assert [o["id"] for o in out] == ["p#0", "p#1", "s", "l", "t"]
    assert out[2]["error"]["type"] == "InvalidRequestError"
    assert out[2]["error"]["field"] == "cache_salt"
    # The body names the base model, so the line's adapter stands (the body implies none).
    ids = Renderer(ServerOptions(model=str(folder))).render_completion(
        {"prompt": "Hello world"})[0].token_ids
    keys = Hasher(block_size=2).block_hashes(Request(ids, lora=LoRA("sql", "/x")))
    assert out[3]["block_hashes"] == [k.hex() for k in keys if isinstance(k, bytes)]
    assert "error" not in out[4] and status == 1


def test_bad_options_are_exit_status_2(capsys: pytest.CaptureFixture[str], folder: Path,
                                       tmp_path: Path) -> None:
    empty = lines(tmp_path / "in.jsonl")
    assert main(["render", "--model-dir", str(tmp_path / "missing"), empty]) == 2
    assert main(["render", "--model-dir", str(folder), "--vllm-version", "0.30.0", empty]) == 2
    assert main(["hash", "--model-dir", str(folder), "--default-chat-template-kwargs", "{",
                 empty]) == 2
    err = capsys.readouterr().err
    assert "ModelFolderError" in err and "RenderUnsupportedError" in err


@pytest.mark.parametrize(("flag", "length"), [("2k", 2000), ("1K", 1024), ("1.5k", 1500),
                                              ("auto", 2048), ("-1", 2048), ("100", 100)])
def test_max_model_len_reads_as_vllm_reads_it(capsys: pytest.CaptureFixture[str], folder: Path,
                                              tmp_path: Path, flag: str, length: int) -> None:
    # The llama folder's context is 2048: one token over the bound is refused, at it not.
    def body(n: int) -> dict[str, Any]:
        return {"id": n, "endpoint": "/v1/completions",
                "body": {"prompt": [5] * n, "max_tokens": 1}}
    source = lines(tmp_path / "in.jsonl", body(length - 1), body(length))
    status, out, _ = run(capsys, "render", "--model-dir", str(folder), "--max-model-len", flag,
                         source)
    assert "error" not in out[0] and out[1]["error"]["field"] == "input_tokens" and status == 1


def test_a_tokenizer_mode_without_jinja_is_refused(capsys: pytest.CaptureFixture[str],
                                                  folder: Path, tmp_path: Path) -> None:
    empty = lines(tmp_path / "in.jsonl")
    assert main(["render", "--model-dir", str(folder), "--tokenizer-mode", "mistral",
                 empty]) == 2
    assert "RenderUnsupportedError: --tokenizer-mode" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["render", "hash"])
def test_a_folder_that_cannot_be_rendered_answers_every_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    # Issue 19, item 5: one error record per input line and exit 1, as every command does.
    refused = build_folder(tmp_path / "models", "generic",
                           tokenizer_config={"tokenizer_class": "GPT2Tokenizer"})
    source = lines(tmp_path / "in.jsonl",
                   {"id": "a", "endpoint": "/v1/chat/completions", "body": {"messages": [CHAT]}},
                   {"id": "b", "endpoint": "/v1/completions", "body": {"prompt": "x"}})
    argv = [command, "--model-dir", str(refused), source]
    status, out, err = run(capsys, *(argv if command == "render" else [*argv, "--lenient"]))
    assert status == 1 and [o["id"] for o in out] == ["a", "b"]
    assert all("GPT2Tokenizer" in o["error"]["message"] for o in out)
    assert "every body will be an error record" in err
