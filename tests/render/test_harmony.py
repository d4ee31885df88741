"""gpt-oss (Harmony) rendering beyond the vectors: the CLI edge, the library checks, options.

The ids compared are vLLM's own (tests/render/real_harmony_vectors.jsonl); the real
folder's tokenizer files come from the test cache (tests/real_models.py).
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest
from render_cases import RenderCase, render_cases

from prefixkey.cli import main
from prefixkey.render import ModelFolderError, RenderUnsupportedError, ServerOptions, _harmony

pytest.importorskip("openai_harmony", reason="needs the harmony extra (oss-harmony)")

CASES = {c.id: c for c in render_cases("real_harmony_")}
META = json.loads((Path(__file__).resolve().parent
                   / "real_harmony_vectors.meta.json").read_text("utf-8"))


def _render_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                tmp_path: Path, case: RenderCase, env: dict[str, str]) -> tuple[int, Any]:
    for name in ("VLLM_SYSTEM_START_DATE", "VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "a", "endpoint": case.endpoint, "body": case.body})
                      + "\n", encoding="utf-8")
    status = main(["render", "--model-dir", str(case.folder()), "--served-model-name",
                   "gpt-oss", str(source)])
    out = capsys.readouterr().out.splitlines()
    return status, json.loads(out[0]) if out else None


def test_the_cli_reads_the_replicas_date_and_flag_from_the_environment(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    pinned = CASES["gpt_oss/pinned/user"]
    status, line = _render_cli(capsys, monkeypatch, tmp_path, pinned,
                               {"VLLM_SYSTEM_START_DATE": "2025-01-15"})
    assert status == 0 and line["token_ids"] == pinned.token_ids
    flagged = CASES["gpt_oss/si/system-user"]
    status, line = _render_cli(capsys, monkeypatch, tmp_path, flagged, {
        "VLLM_SYSTEM_START_DATE": META["local_date"],
        "VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS": "1"})
    assert status == 0 and line["token_ids"] == flagged.token_ids
    unflagged = CASES["gpt_oss/system-user"]
    status, line = _render_cli(capsys, monkeypatch, tmp_path, unflagged, {
        "VLLM_SYSTEM_START_DATE": META["local_date"]})
    assert status == 0 and line["token_ids"] == unflagged.token_ids != flagged.token_ids


def test_a_bad_system_instructions_flag_is_refused_at_start(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    status, line = _render_cli(capsys, monkeypatch, tmp_path, CASES["gpt_oss/user"],
                               {"VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS": "yes"})
    assert status == 2 and line is None


def test_an_unverified_or_missing_harmony_library_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_version = importlib.metadata.version

    def version(name: str) -> str:
        return "0.0.10" if name == "oss-harmony" else real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(RenderUnsupportedError, match=r"0\.0\.10 is installed"):
        _harmony.HarmonyChat(system_instructions=False, start_date="2025-01-01",
                             vllm_version="0.31.0", clock=lambda: None)  # type: ignore[arg-type,return-value]

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    with pytest.raises(RenderUnsupportedError, match=r"prefixkey\[harmony\]"):
        _harmony.HarmonyChat(system_instructions=False, start_date="2025-01-01",
                             vllm_version="0.31.0", clock=lambda: None)  # type: ignore[arg-type,return-value]


def test_harmony_options_are_typed() -> None:
    with pytest.raises(ModelFolderError, match="VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS"):
        ServerOptions(model="m", gpt_oss_harmony_system_instructions=1)  # type: ignore[arg-type]
    with pytest.raises(ModelFolderError, match="VLLM_SYSTEM_START_DATE"):
        ServerOptions(model="m", system_start_date=20250115)  # type: ignore[arg-type]


def test_only_gpt_oss_takes_the_harmony_path() -> None:
    assert _harmony.is_harmony_model({"model_type": "gpt_oss"})
    assert not _harmony.is_harmony_model({"model_type": "llama"})


def test_special_token_text_in_a_tool_call_header_is_refused() -> None:
    """Harmony's encode refuses special-token text; vLLM's rewrite of the header would
    raise there, an answer not reproduced: refused, never encoded as text."""
    from prefixkey.render import Renderer

    case = CASES["gpt_oss/pinned/user"]
    r = Renderer(ServerOptions(model=str(case.folder()), system_start_date="2025-01-15"))
    call = {"id": "a", "type": "function", "function": {"name": "x<|end|>y", "arguments": "{}"}}
    body = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "tool_calls": [call]}]}
    with pytest.raises(RenderUnsupportedError, match=r"special token '<\|end\|>'"):
        r.render_chat(body)
