"""Replay each release's rendering of folders of model types its transformers registers
otherwise than 5.17 (0.31.0's): the decision applies the rules to the release's own facts
(render/_hf_decision.py ``release_facts``), and a type whose answers were replayed here is
one of the release's ``hf_replayed`` (render/_eras.py), no longer refused as drift.

``real_drift_bodies.jsonl`` (tools/build_real_drift_bodies.py) is one folder per drifted
type (:data:`FOLDERS`), a real vocabulary under the type's ``config.json`` (a hub
``tokenizer_class`` where the release ignores it); ``real_drift_vectors.jsonl`` is vLLM
0.31.0's render server's answers, tests/render/releases/<release>/ the other releases'.
"""

from __future__ import annotations

import sys

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_cases,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.render._eras import render_release

sys.path.insert(0, str(RENDER_DIR.parent.parent / "tools"))
from build_real_drift_bodies import FOLDERS

CORPUS = "real_drift_"
CASES = render_cases(CORPUS)
#: Each release's (path, class) for each folder: the release's own facts' decision, which
#: its server's answers confirmed. Neither transformers 5.17's config mapping nor vLLM
#: 0.31.0's own config registry has model_type 'gte': that server did not start for
#: drift_gte (its answers are the start failure), and prefixkey refuses the folder
#: (render/_folder.py ``check_config_loads``), so it takes no decision there.
_LATER = {"drift_qwen3_5": ("rebuilt", "Qwen3_5Tokenizer"),
          "drift_modernbert_decoder": ("as_is", "TokenizersBackend"),
          "drift_gte": ("rebuilt", "XLMRobertaTokenizer")}
DECISIONS = {
    "0.29.0": _LATER,
    "0.30.0": _LATER,
    "0.31.0": {"drift_qwen3_5": ("rebuilt", "GPT2Tokenizer"),
               "drift_modernbert_decoder": ("rebuilt", "GPT2Tokenizer")},
    "0.32.0": _LATER,
    "0.33.0": _LATER,
}
KEPT = sorted(set(DECISIONS) - {"0.31.0"})


def test_the_corpus_covers_every_folder() -> None:
    assert {c.name for c in CASES} == set(FOLDERS)


@pytest.mark.parametrize("release", KEPT)
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


@pytest.mark.parametrize(("release", "folder"),
                         [(r, f) for r, folders in sorted(DECISIONS.items()) for f in folders])
def test_each_folder_takes_its_releases_decision(release: str, folder: str) -> None:
    case = next(c for c in CASES if c.name == folder)
    decision = server_renderer(case, release).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == DECISIONS[release][folder]
    assert release == "0.31.0" or FOLDERS[folder] in render_release(release).hf_replayed


def test_a_folder_without_a_decision_did_not_start() -> None:
    """Each folder a release takes no decision for is one its server did not start for."""
    for release, folders in DECISIONS.items():
        for folder in set(FOLDERS) - set(folders):
            cases = [c for c in release_cases(CORPUS, release) if c.name == folder]
            assert cases and all(c.status is None and c.startup for c in cases)


@each_release_case(release_table(CORPUS, dict.fromkeys(sorted(DECISIONS), ())))
def test_vllm_rendering_of_the_drifted_types_replays(release: str, case: RenderCase) -> None:
    """Every folder at every release: its answers, or where the server did not start,
    the refusal naming vLLM's exception (render_cases.py ``assert_server_replays``)."""
    assert_server_replays(case, release)
