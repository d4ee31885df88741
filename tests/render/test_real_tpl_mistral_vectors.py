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

from render_cases import (
    BASE_RELEASE,
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    release_table,
    render_cases,
)

CORPUS = "real_tpl_mistral_"
CASES = render_cases(CORPUS)
RELEASES = (BASE_RELEASE, *sorted(p.parent.name for p in (RENDER_DIR / "releases").glob(
    f"*/{CORPUS}vectors.jsonl")))
TABLE = release_table(CORPUS, dict.fromkeys(RELEASES, ()))


def test_the_probe_template_stops_the_server_and_the_other_starts() -> None:
    assert set(RELEASES) == {"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}
    for release, cases in TABLE.items():
        assert {c.id for c in cases} == {c.id for c in CASES}, release
        started = {c.id.split("/")[0]: c.status is not None for c in cases}
        assert started == {"mistral_cli_probe": False, "mistral_cli_syntax": True}, release


@each_release_case(TABLE)
def test_mistral_mode_answers_as_vllm(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
