"""Replay each release's check of reused prefill prompt ids against the largest id it
admits.

From 0.32 on vLLM answers 400 "Token id N is out of vocabulary" for a reused id past both
its tokenizer's ``max_token_id`` (render/_tokenizer.py ``HfTokenizer.max_token_id``) and
config.json's ``vocab_size`` less one; 0.31 takes the ids as they are.
``real_reuse_bodies.jsonl`` (tools/build_real_reuse_bodies.py) reuses ids around both
bounds over the Qwen3 tokenizer under its own config and under a smaller ``vocab_size``;
``real_reuse_vectors.jsonl`` is vLLM 0.31.0's render server's answers,
tests/render/releases/<release>/ 0.32.0's and 0.33.0's.
"""

from __future__ import annotations

import pytest
from render_cases import (
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
    server_renderer,
)

CORPUS = "real_reuse_"
CASES = render_cases(CORPUS)
RELEASES = ("0.31.0", "0.32.0", "0.33.0")


@pytest.mark.parametrize("release", [r for r in RELEASES if r != "0.31.0"])
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


def test_the_tokenizer_bound_is_the_qwen3_tokenizers_largest_added_id() -> None:
    case = next(c for c in CASES if c.name == "reuse_small_vocab")
    assert server_renderer(case, "0.32.0").tokenizer.max_token_id() == 151668


@pytest.mark.parametrize("release", ["0.32.0", "0.33.0"])
def test_each_bound_admits_its_last_id_and_no_more(release: str) -> None:
    """The corpus reaches past both bounds: some bodies are vLLM's 400, some render."""
    cases = release_table(CORPUS, {release: ()})[release]
    statuses = {c.id.rsplit("-", 1)[-1]: c.status for c in cases if c.name == "reuse_small_vocab"}
    assert statuses == {"150999": 200, "151000": 200, "151642": 200, "151643": 200,
                        "151668": 200, "151669": 400}


@each_release_case(release_table(CORPUS, {r: set() for r in RELEASES}))
def test_vllm_checks_of_reused_ids_replay(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
