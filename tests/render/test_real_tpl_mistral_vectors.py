"""Replay vLLM's start-up probe in mistral mode (tools/build_real_tpl_mistral_bodies.py).

``real_tpl_mistral_bodies.jsonl`` serves Mistral 7B v0.3's folder with
``--tokenizer-mode mistral`` and each ``--chat-template`` file of the real_tpl_ corpus:
one raising ZeroDivisionError on the probe's ``[system, user, system, user]``
conversation, one that does not compile. ``real_tpl_mistral_vectors.jsonl`` is vLLM
0.31.0's answers, tests/render/releases/<release>/ the other releases' kept ones. A
server that did not start (status null, its exception: ``tools/harvest_render.py
--record-start-failures``) must be a ModelFolderError naming that exception
(render/_startup_probe.py: in mistral mode the probe renders ``--chat-template``'s text
alone); a server that started renders every body as vLLM did, or refuses it with its
status.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import pytest
from render_cases import RENDER_DIR, RenderCase, assert_replays, kept_case, render_cases

from prefixkey.render import ModelFolderError, Renderer, ServerOptions

CORPUS = "real_tpl_mistral_"
CASES = render_cases(CORPUS)
BASE = "0.31.0"
RELEASES = (BASE, *sorted(p.parent.name for p in (RENDER_DIR / "releases").glob(
    f"*/{CORPUS}vectors.jsonl")))


@lru_cache(maxsize=2)
def _renderer(release: str, template: str) -> Renderer | ModelFolderError:
    case = next(c for c in CASES if c.server["--chat-template"] == template)
    try:
        return Renderer(ServerOptions(
            model=str(case.folder()), served_model_name=(case.server["--served-model-name"],),
            tokenizer_mode="mistral", max_model_len=case.server["--max-model-len"],
            chat_template=str(RENDER_DIR / template), vllm_version=release))
    except ModelFolderError as exc:
        return exc


def _answer(case: RenderCase, release: str) -> tuple[RenderCase, dict[str, Any]]:
    if release == BASE:
        raw = {v["id"]: v for v in map(json.loads, (RENDER_DIR / f"{CORPUS}vectors.jsonl")
                                       .read_text("utf-8").splitlines())}[case.id]
        return case, raw
    kept = {v["id"]: v for v in map(json.loads, (
        RENDER_DIR / "releases" / release / f"{CORPUS}vectors.jsonl").read_text(
            "utf-8").splitlines())}[case.id]
    return kept_case(case, release, CORPUS), kept


def test_the_probe_template_stops_the_server_and_the_other_starts() -> None:
    assert BASE in RELEASES and len(RELEASES) >= 2
    for release in RELEASES:
        started = {c.id.split("/")[0]: _answer(c, release)[1]["status"] is not None
                   for c in CASES}
        assert started == {"mistral_cli_probe": False, "mistral_cli_syntax": True}, release


@pytest.mark.parametrize(("release", "case"), [
    pytest.param(release, case, id=f"{release}/{case.id}")
    for release in RELEASES for case in CASES])
def test_mistral_mode_answers_as_vllm(release: str, case: RenderCase) -> None:
    kept, answer = _answer(case, release)
    built = _renderer(release, case.server["--chat-template"])
    if answer["status"] is None:  # vLLM's server did not start
        assert isinstance(built, ModelFolderError), built
        assert built.field == "chat_template"
        kind, _, message = answer["startup"]["exception"].partition(": ")
        assert f"{kind.rsplit('.', 1)[-1]}: {message[:200]}" in str(built)
        return
    assert isinstance(built, Renderer), built
    assert_replays(built, kept)
