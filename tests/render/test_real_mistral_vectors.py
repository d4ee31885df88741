"""vLLM 0.31.0's ``--tokenizer-mode mistral`` rendering of real Mistral folders, replayed.

``real_mistral_vectors.jsonl`` is what vLLM's render server answered for
``real_mistral_bodies.jsonl`` (tools/build_mistral_bodies.py, tools/harvest_render.py)
over Mistral 7B v0.3 (SentencePiece ``tokenizer.model.v3``) and Mistral NeMo
(``tekken.json``), and over the wheel's SentencePiece files of instruct versions v1, v2
and v7 (with 7B v0.3's config): the files of the mistral_common 1.13.1 wheel, fetched
into the test cache. Every 200 must render to the same ids (and ``cache_salt``); every
error must be a :class:`RenderRequestError` with vLLM's status, never a refusal. Needs
mistral_common (the ``mistral`` extra, in ``test``).
"""

from __future__ import annotations

import pytest
from render_cases import RenderCase, each_case, render_cases, server_renderer

from prefixkey.render import (
    COMPLETIONS_ENDPOINT,
    RenderRequestError,
    RenderUnsupportedError,
)

pytest.importorskip("mistral_common")

CASES = render_cases("real_mistral_")
def test_the_corpus_covers_both_tokenizers_every_version_and_vllm_refusals() -> None:
    # Tekken v3 (NeMo); SentencePiece v3 (7B v0.3) and the wheel's v1, v2 and v7 files.
    folders = {"mistral7b_v03", "mistral_nemo", "mistral_spm_v1", "mistral_spm_v2",
               "mistral_spm_v7"}
    assert {c.real for c in CASES} == folders
    assert all(c.server["--tokenizer-mode"] == "mistral" for c in CASES)
    for name in folders:
        mine = [c for c in CASES if c.real == name]
        assert 40 <= len(mine) <= 100
        assert {c.status for c in mine} == {200, 400, 404}


@each_case(CASES)
def test_vllm_mistral_rendering_replays(case: RenderCase) -> None:
    r = server_renderer(case)
    if case.status == 200:
        rendered = r.render(case.endpoint, case.body)
        ids = [list(x.token_ids) for x in rendered]
        expected = case.token_ids
        assert ids == (expected if case.endpoint == COMPLETIONS_ENDPOINT else [expected])
        answers = case.response if isinstance(case.response, list) else [case.response]
        assert [x.request.cache_salt for x in rendered] == [a["cache_salt"] for a in answers]
        assert all(x.prompt is None for x in rendered)  # vLLM answers ids, not text
        return
    with pytest.raises(RenderRequestError) as info:
        r.render(case.endpoint, case.body)
    assert not isinstance(info.value, RenderUnsupportedError)
    assert info.value.status == case.status, info.value
