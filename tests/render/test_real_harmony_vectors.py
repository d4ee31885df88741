"""Replay vLLM 0.31.0's rendering of gpt-oss bodies (Harmony) through prefixkey.render.

``real_harmony_vectors.jsonl`` is what vLLM's render server answered for each body of
``real_harmony_bodies.jsonl`` (tools/build_harmony_bodies.py, tools/harvest_render.py)
over the real folder ``tests/render/real/gpt_oss`` (gpt-oss-20b's config.json; its
tokenizer files are fetched into the test cache, tests/real_models.py). vLLM writes the
replica's local date into every chat prompt unless ``VLLM_SYSTEM_START_DATE`` pins it:
the harvest recorded its date (``local_date`` in the meta file), and the replay pins the
renderer's clock to it. Every body must replay: the same ids, or a typed error where vLLM
answered one, with its status.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from pathlib import Path

import pytest
from render_cases import RenderCase, each_case, render_cases, server_options

from prefixkey.errors import PrefixKeyError
from prefixkey.render import (
    Renderer,
    RenderRequestError,
    RenderUnsupportedError,
)

pytest.importorskip("openai_harmony", reason="needs the harmony extra (oss-harmony)")

HERE = Path(__file__).resolve().parent
CASES = render_cases("real_harmony_")
META = json.loads((HERE / "real_harmony_vectors.meta.json").read_text("utf-8"))
#: The harvest's local date: the one vLLM wrote where nothing pinned it.
HARVEST_DATE = datetime.strptime(META["local_date"], "%Y-%m-%d")


@cache
def renderer(server: str) -> Renderer:
    case = next(c for c in CASES if json.dumps(c.server, sort_keys=True) == server)
    return Renderer(server_options(case), clock=lambda: HARVEST_DATE)


def test_the_corpus_is_whole() -> None:
    assert 60 <= len(CASES) <= 120
    assert {c.status for c in CASES} == {200, 400, 404}
    assert {c.endpoint for c in CASES} == {"/v1/chat/completions", "/v1/completions"}
    assert META["versions"]["oss-harmony"] == "0.0.11"


@each_case(CASES)
def test_vllm_harmony_rendering_replays(case: RenderCase) -> None:
    r = renderer(json.dumps(case.server, sort_keys=True))
    if case.status == 200:
        rendered = r.render(case.endpoint, case.body)
        ids = [list(x.token_ids) for x in rendered]
        expected = case.token_ids
        assert ids == (expected if case.endpoint == "/v1/completions" else [expected])
        answers = case.response if isinstance(case.response, list) else [case.response]
        assert [x.request.cache_salt for x in rendered] == [a["cache_salt"] for a in answers]
        return
    with pytest.raises(PrefixKeyError) as info:
        r.render(case.endpoint, case.body)
    assert not isinstance(info.value, RenderUnsupportedError), info.value
    assert isinstance(info.value, RenderRequestError)
    assert info.value.status == case.status


def _case(ident: str) -> RenderCase:
    return next(c for c in CASES if c.id == f"gpt_oss/{ident}")


def test_the_date_is_the_clocks_unless_pinned() -> None:
    """Unpinned, the date is the clock's local date per request (it moves with it)."""
    case = _case("user")
    folder_options = server_options(case)
    today = Renderer(folder_options, clock=lambda: HARVEST_DATE)
    later = Renderer(folder_options, clock=lambda: datetime(2031, 5, 6, 23, 59))
    ids = list(today.render_chat(case.body).token_ids)
    assert ids == case.token_ids
    moved = list(later.render_chat(case.body).token_ids)
    assert moved != ids
    import openai_harmony as h

    encoding = h.load_harmony_encoding(h.HarmonyEncodingName.HARMONY_GPT_OSS)
    assert f"Current date: {META['local_date']}\n" in encoding.decode(ids)
    assert "Current date: 2031-05-06\n" in encoding.decode(moved)
    pinned_case = _case("pinned/user")
    pinned = Renderer(server_options(pinned_case), clock=lambda: datetime(2031, 5, 6))
    assert list(pinned.render_chat(pinned_case.body).token_ids) == pinned_case.token_ids
