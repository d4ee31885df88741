"""Replay each release's rendering of folders of model types its transformers registers
otherwise than 5.17 (0.31.0's): the decision applies the rules to the release's own facts
(render/_hf_decision.py ``release_facts``), and a type whose answers were replayed here is
one of the release's ``hf_replayed`` (render/_eras.py), no longer refused as drift.

``real_drift_bodies.jsonl`` (tools/build_real_drift_bodies.py) is one folder per drifted
type (:data:`FOLDERS`), a real vocabulary and a hub ``tokenizer_class`` under the type's
``config.json`` (its own architecture or Qwen3ForCausalLM, which the releases that know
the type start for); ``real_drift_vectors.jsonl`` is vLLM 0.31.0's render server's answers,
tests/render/releases/<release>/ the other releases' (a folder a server did not start for:
its exception).
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
#: Each release's (path, class) for each folder its server started for: the release's own
#: facts' decision, which its server's answers confirmed. beam, minicpmv4_7, omniasr_ctc
#: and unlimited_ocr stand for the types those facts decide alike at 0.29/0.30
#: (TokenizersBackend or ParakeetTokenizer registered, hub class honoured) and 0.32/0.33
#: (TokenizersBackend registered; vLLM's TokenizersBackend for unlimited_ocr, step5 and
#: step5_vl): render/_hf_decision.py ``type_rule_facts``.
_LATER = {"drift_qwen3_5": ("rebuilt", "Qwen3_5Tokenizer"),
          "drift_modernbert_decoder": ("as_is", "TokenizersBackend"),
          "drift_gte": ("rebuilt", "XLMRobertaTokenizer"),
          "drift_minicpmv4_7": ("as_is", "TokenizersBackend")}
#: siglip2 ignores its hub class at 5.24: Siglip2Tokenizer over Qwen3's vocabulary, its
#: null unk_token the BPE's unk "None" (a token of that vocabulary).
_TF5_24 = _LATER | {"drift_beam": ("as_is", "TokenizersBackend"),
                    "drift_omniasr_ctc": ("rebuilt", "GPT2Tokenizer"),
                    "drift_unlimited_ocr": ("rebuilt", "GPT2Tokenizer"),
                    "drift_hyperclovax_vision_v2": ("rebuilt", "GPT2Tokenizer"),
                    "drift_siglip2": ("rebuilt", "Siglip2Tokenizer")}
_TF5_19 = _LATER | {"drift_unlimited_ocr": ("as_is", "TokenizersBackend"),
                    "drift_siglip2": ("rebuilt", "GPT2Tokenizer"),
                    "drift_hyperclovax_vision_v2": ("rebuilt", "GPT2Tokenizer")}
DECISIONS = {
    "0.29.0": _TF5_24,
    "0.30.0": _TF5_24,
    "0.31.0": {"drift_qwen3_5": ("rebuilt", "GPT2Tokenizer"),
               "drift_modernbert_decoder": ("rebuilt", "GPT2Tokenizer"),
               "drift_siglip2": ("rebuilt", "GPT2Tokenizer")},
    "0.32.0": _TF5_19,
    "0.33.0": _TF5_19 | {"drift_beam": ("rebuilt", "GPT2Tokenizer")},
}
#: The folders each release's server did not start for (neither its transformers' config
#: mapping nor vLLM's own config registry knows the model type), which prefixkey refuses
#: naming that failure (render/_folder.py ``check_config_loads``; replayed below).
NOT_STARTED = {"0.31.0": {"drift_beam", "drift_gte", "drift_minicpmv4_7", "drift_omniasr_ctc",
                          "drift_unlimited_ocr", "drift_hyperclovax_vision_v2"},
               "0.32.0": {"drift_beam", "drift_omniasr_ctc"}, "0.33.0": {"drift_omniasr_ctc"}}
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


@pytest.mark.parametrize("release", sorted(DECISIONS))
def test_the_folders_not_replayed_are_the_ones_no_server_started_for(release: str) -> None:
    folders = set(DECISIONS[release])
    stopped = NOT_STARTED.get(release, set())
    assert not folders & stopped and folders | stopped == set(FOLDERS)
    cases = release_cases(CORPUS, release)
    assert {c.name for c in cases if c.status is None} == stopped
    assert all(c.startup is not None for c in cases if c.name in stopped)


@each_release_case(release_table(CORPUS, {r: () for r in sorted(DECISIONS)}))
def test_vllm_rendering_of_the_drifted_types_replays(release: str, case: RenderCase) -> None:
    """Every folder at every release: its answers, or where the server did not start, the
    refusal naming vLLM's exception (render_cases.py ``assert_server_replays``)."""
    assert_server_replays(case, release)
