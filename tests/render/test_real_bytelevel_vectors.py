"""A folder declaring LlamaTokenizer over a ByteLevel tokenizer.json, per release.

transformers 5.24 (vLLM 0.29.0 and 0.30.0) loads such a folder (Llama 3 style files,
``tokenizer_class`` LlamaTokenizerFast) with TokenizersBackend, tokenizer.json as it is;
transformers 5.17 (vLLM 0.31.0) rebuilds it with LlamaTokenizer's Metaspace pipeline.
``real_bytelevel_029_*`` and ``real_bytelevel_031_*`` are one corpus of completions
bodies (tools/build_real_rebuild_bodies.py ``--byte-level``) as vLLM 0.29.0's and 0.31.0's
render servers answered it; each replays under its release.
"""

from __future__ import annotations

import pytest
from render_cases import (
    RenderCase,
    assert_server_replays,
    each_release_case,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.render import Renderer

RELEASES = {"029": "0.29.0", "031": "0.31.0"}
CASES = {key: render_cases(f"real_bytelevel_{key}_") for key in RELEASES}
PATHS = {"029": ("as_is", "TokenizersBackend"), "031": ("rebuilt", "LlamaTokenizer")}


def renderer(key: str) -> Renderer:
    return server_renderer(CASES[key][0], RELEASES[key])


def test_the_two_releases_answer_differently() -> None:
    answers = {key: {c.id: c.token_ids for c in cases} for key, cases in CASES.items()}
    assert answers["029"].keys() == answers["031"].keys()
    assert sum(answers["029"][k] != answers["031"][k] for k in answers["029"]) >= 10


@pytest.mark.parametrize("key", sorted(RELEASES))
def test_each_release_takes_its_path(key: str) -> None:
    decision = renderer(key).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == PATHS[key]


@each_release_case(release_table("real_bytelevel_", dict.fromkeys(RELEASES.values(), ())))
def test_each_releases_answers_replay(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
