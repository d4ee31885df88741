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
    # vLLM's 404 as it is, and beside it what these options serve.
    hint = (f"these options serve {str(folder)!r} (--served-model-name, else --model) and the "
            "LoRA adapters 'sql' (--lora-modules); give the server's --served-model-name (or "
            "--lora-modules) as it was started")
    assert out[2] == {"id": "x", "error": {
        "type": "RenderRequestError", "message": "model: The model `nope` does not exist.",
        "field": "model", "line": 3, "hint": hint}}
    assert status == 1 and "1 request(s) could not be rendered" in err
    assert f"; hint: {hint})" in err


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
    assert main(["render", "--model-dir", str(folder), "--vllm-version", "0.28.0", empty]) == 2
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
    assert main(["render", "--model-dir", str(folder), "--tokenizer-mode", "kimi_k3",
                 empty]) == 2
    assert "RenderUnsupportedError: --tokenizer-mode" in capsys.readouterr().err


def test_a_kwarg_the_template_drops_is_a_warning(capsys: pytest.CaptureFixture[str],
                                                 folder: Path, tmp_path: Path) -> None:
    # vLLM keeps only the kwargs the template takes: a misspelled one renders as absent.
    kwargs = {"add_generation_promt": False, "add_generation_prompt": True}
    body = {"id": "c", "endpoint": "/v1/chat/completions", "block_size": 4,
            "body": {"messages": [CHAT], "chat_template_kwargs": kwargs}}
    warning = ("chat_template_kwargs 'add_generation_promt' is not used by the chat template: "
               "vLLM drops it (did you mean 'add_generation_prompt'?)")
    status, rendered, err = run(capsys, "render", "--model-dir", str(folder),
                                lines(tmp_path / "in.jsonl", body))
    assert status == 0 and "warnings" not in rendered[0]
    assert err.splitlines() == [f"prefixkey render: warning: line 1: {warning}"]
    status, hashed, err = run(capsys, "hash", "--model-dir", str(folder),
                              lines(tmp_path / "b.jsonl", body))
    assert status == 0 and hashed[0]["warnings"] == [warning]
    assert f"prefixkey hash: warning: line 1: {warning}" in err.splitlines()
    renderer = Renderer(ServerOptions(model=str(folder)))
    assert renderer.render_chat({"messages": [CHAT], "chat_template_kwargs": kwargs}
                                ).warnings == (warning,)
    assert renderer.render_chat({"messages": [CHAT], "chat_template_kwargs": {
        "add_generation_prompt": False}}).warnings == ()


@pytest.mark.parametrize("command", ["render", "hash"])
def test_a_missing_model_dir_is_named_by_its_flag(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path, command: str) -> None:
    source = lines(tmp_path / "in.jsonl", {"endpoint": "/v1/completions",
                                           "body": {"prompt": "a"}})
    missing, afile = tmp_path / "missing", tmp_path / "in.jsonl"
    for folder, why in ((missing, "does not exist"),
                        (afile, "is not a folder (a local model folder is needed)")):
        status, out, err = run(capsys, command, "--model-dir", str(folder), source)
        assert status == 2 and out == []
        assert err == (f"prefixkey {command}: ModelFolderError: --model-dir: "
                       f"{str(folder)!r} {why}\n")


def test_a_library_model_names_its_option(tmp_path: Path) -> None:
    from prefixkey.render import ModelFolderError

    with pytest.raises(ModelFolderError) as caught:
        Renderer(ServerOptions(model="org/some-model"))
    assert caught.value.field == "--model"
    assert "does not exist here (a hub name? prefixkey reads no hub" in str(caught.value)
    with pytest.raises(ModelFolderError) as caught:
        Renderer(ServerOptions(model="m"), str(tmp_path / "nope"))
    assert str(caught.value) == f"--model-dir: {str(tmp_path / 'nope')!r} does not exist"


def test_hash_model_dir_takes_defaults_for_lines_without_them(
        capsys: pytest.CaptureFixture[str], folder: Path, tmp_path: Path) -> None:
    body = {"endpoint": "/v1/completions", "body": {"prompt": "Hello world, once more"}}
    source = lines(tmp_path / "in.jsonl", {"id": "a", **body},
                   {"id": "b", **body, "block_size": 2, "hash_algo": "sha256"})
    status, out, err = run(capsys, "hash", "--model-dir", str(folder), "--block-size", "4",
                           "--hash-algo", "xxhash", "--python-hash-seed", "0", source)
    assert status == 0, err
    ids = list(Renderer(ServerOptions(model=str(folder))).render_completion(
        body["body"])[0].token_ids)
    xxhash = Hasher(block_size=4, hash_algo="xxhash", python_hash_seed="0")
    sha256 = Hasher(block_size=2, hash_algo="sha256", python_hash_seed="0")
    assert out[0]["block_hashes"] == [k.hex() for k in xxhash.block_hashes(ids)
                                      if isinstance(k, bytes)]
    assert out[1]["block_hashes"] == [k.hex() for k in sha256.block_hashes(ids)
                                      if isinstance(k, bytes)]  # the line's own values win
    status, out, _ = run(capsys, "hash", "--model-dir", str(folder), source)
    assert out[0]["error"]["field"] == "block_size"


@pytest.mark.parametrize("command", ["render", "hash"])
def test_a_folder_that_cannot_be_rendered_answers_every_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    # Issue 19, item 5: one error record per input line and exit 1, as every command does.
    refused = build_folder(tmp_path / "models", "generic",
                           tokenizer_config={"tokenizer_class": "TapasTokenizer"})
    source = lines(tmp_path / "in.jsonl",
                   {"id": "a", "endpoint": "/v1/chat/completions", "body": {"messages": [CHAT]}},
                   {"id": "b", "endpoint": "/v1/completions", "body": {"prompt": "x"}})
    argv = [command, "--model-dir", str(refused), source]
    status, out, err = run(capsys, *(argv if command == "render" else [*argv, "--lenient"]))
    assert status == 1 and [o["id"] for o in out] == ["a", "b"]
    assert all("TapasTokenizer" in o["error"]["message"] for o in out)
    assert "every body will be an error record" in err
