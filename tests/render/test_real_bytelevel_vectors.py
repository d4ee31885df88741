"""A folder declaring LlamaTokenizer over a ByteLevel tokenizer.json, per release.

transformers 5.24 (vLLM 0.29.0 and 0.30.0) loads such a folder (Llama 3 style files,
``tokenizer_class`` LlamaTokenizerFast) with TokenizersBackend, tokenizer.json as it is;
transformers 5.17 (vLLM 0.31.0) rebuilds it with LlamaTokenizer's Metaspace pipeline.
``real_bytelevel_029_*`` and ``real_bytelevel_031_*`` are one corpus of completions
bodies (tools/build_real_rebuild_bodies.py ``--byte-level``) as vLLM 0.29.0's and 0.31.0's
render servers answered it; each replays under its release.
"""

from __future__ import annotations

from functools import cache

import pytest
from render_cases import RenderCase, render_cases

from prefixkey.render import Renderer, RenderRequestError, ServerOptions

RELEASES = {"029": "0.29.0", "031": "0.31.0"}
CASES = {key: render_cases(f"real_bytelevel_{key}_") for key in RELEASES}
PATHS = {"029": ("as_is", "TokenizersBackend"), "031": ("rebuilt", "LlamaTokenizer")}


@cache
def renderer(key: str) -> Renderer:
    case = CASES[key][0]
    return Renderer(ServerOptions(model=str(case.folder()), vllm_version=RELEASES[key],
                                  served_model_name=("real-llama3_llamatok_rule",),
                                  max_model_len=2048))


def test_the_two_releases_answer_differently() -> None:
    answers = {key: {c.id: c.token_ids for c in cases} for key, cases in CASES.items()}
    assert answers["029"].keys() == answers["031"].keys()
    assert sum(answers["029"][k] != answers["031"][k] for k in answers["029"]) >= 10


@pytest.mark.parametrize("key", sorted(RELEASES))
def test_each_release_takes_its_path(key: str) -> None:
    decision = renderer(key).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == PATHS[key]


@pytest.mark.parametrize("case", [c for cases in CASES.values() for c in cases],
                         ids=[f"{k}/{c.id}" for k, cases in CASES.items() for c in cases])
def test_each_releases_answers_replay(case: RenderCase) -> None:
    key = next(k for k, cases in CASES.items() if case in cases)
    if case.status == 200:
        rendered = renderer(key).render(case.endpoint, case.body)
        assert [list(x.token_ids) for x in rendered] == case.token_ids
        return
    with pytest.raises(RenderRequestError) as info:
        renderer(key).render(case.endpoint, case.body)
    assert info.value.status == case.status, (info.value, case.error)
