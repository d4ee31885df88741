"""Replay each release's rendering of a model folder served with a separate ``--tokenizer``
folder whose ``config.json`` has a model type the release does not know.

vLLM checks only the model folder's config.json at start-up (render/_folder.py
``check_config_loads``); the tokenizer folder's is read for the tokenizer class, a failure
to load it ignored (vLLM's ``get_tokenizer``), and transformers' ``AutoTokenizer`` falls
back to a generic config keeping the file's ``model_type`` and ``tokenizer_class``: the
class rules run on the unknown type, which registers no class (or TokenizersBackend, for a
type transformers lists with an incorrect hub class). ``real_tokdir_bodies.jsonl``
(tools/build_real_tokdir_bodies.py) is one server per tokenizer folder of
:data:`TOKENIZERS`; ``real_tokdir_vectors.jsonl`` is vLLM 0.31.0's render server's answers,
tests/render/releases/<release>/ the other releases'.
"""

from __future__ import annotations

import json
import sys

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
    server_renderer,
)

from prefixkey.render._hf_decision import release_facts

sys.path.insert(0, str(RENDER_DIR.parent.parent / "tools"))
from build_real_tokdir_bodies import TOKENIZERS

CORPUS = "real_tokdir_"
CASES = render_cases(CORPUS)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
_GPT2 = ("rebuilt", "GPT2Tokenizer")
_BACKEND = ("as_is", "TokenizersBackend")
_XLMR = ("rebuilt", "XLMRobertaTokenizer")
#: Each tokenizer folder's (path, class) at each release: its own facts' decision on the
#: tokenizer folder's model type, which the release's server's answers confirmed.
DECISIONS = {
    "drift_beam": {"0.29.0": _BACKEND, "0.30.0": _BACKEND, "0.31.0": _GPT2,
                   "0.32.0": _GPT2, "0.33.0": _GPT2},
    "drift_gte": {"0.29.0": _XLMR, "0.30.0": _XLMR, "0.31.0": _BACKEND, "0.32.0": _XLMR,
                  "0.33.0": _XLMR},
    "tokdir_internlm2": dict.fromkeys(RELEASES, _BACKEND),
}
#: The releases whose config readers know none of a tokenizer folder's model type: their
#: servers started all the same (the model folder's type is known).
UNKNOWN = {"drift_beam": {"0.31.0", "0.32.0"}, "drift_gte": {"0.31.0"},
           "tokdir_internlm2": set(RELEASES)}


def _tokenizer(case: RenderCase) -> str:
    return str(case.server["--tokenizer"]).removeprefix("real:")


def test_the_corpus_covers_every_tokenizer_folder() -> None:
    assert {_tokenizer(c) for c in CASES} == set(TOKENIZERS) == set(DECISIONS)


@pytest.mark.parametrize("folder", TOKENIZERS)
def test_each_release_knows_the_model_types_the_table_says(folder: str) -> None:
    config = json.loads((RENDER_DIR / "real" / folder / "config.json").read_text("utf-8"))
    for release in RELEASES:
        facts = release_facts(release)
        known = (config["model_type"] in facts.CONFIG_MODEL_TYPES
                 or config["model_type"] in facts.VLLM_CONFIG_TYPES)
        assert known is (release not in UNKNOWN[folder]), (folder, release)


@pytest.mark.parametrize("release", [r for r in RELEASES if r != "0.31.0"])
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


@pytest.mark.parametrize(("release", "folder"),
                         [(r, f) for f in TOKENIZERS for r in RELEASES])
def test_each_tokenizer_folder_takes_its_releases_decision(release: str, folder: str) -> None:
    case = next(c for c in CASES if _tokenizer(c) == folder)
    assert case.status is not None  # every server started
    decision = server_renderer(case, release).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == DECISIONS[folder][release]


@each_release_case(release_table(CORPUS, {r: set() for r in RELEASES}))
def test_vllm_rendering_with_an_unknown_tokenizer_type_replays(release: str,
                                                              case: RenderCase) -> None:
    assert_server_replays(case, release)
