"""Replay vLLM's rendering of the converted path's last gaps (issue 19).

``real_convgap_bodies.jsonl`` (tools/build_real_convgap_bodies.py) holds the bodies of
test_real_wu_vectors.py, and texts holding special tokens, over tests/render/real/
folders with a SentencePiece model and no tokenizer.json: ``SentencePieceBackend``
named by tokenizer_class (transformers' Python SentencePiece base class:
render/_python_spm.py), ``PythonBackend`` in tokenizer_config.json and
``PreTrainedTokenizer`` in config.json (AutoTokenizer builds TokenizersBackend for
both: the generic backend's conversion), and PegasusTokenizer with the folder's own
``additional_special_tokens``, alone and beside an empty ``extra_special_tokens``
(render/_eras.py ``specials_merge``). The vectors are what vLLM 0.31.0's render server
answered (tools/harvest_render.py), the releases/ copies what the other releases' did:
every 200 must give the same ids, every vLLM error an error with the same status.
"""

from __future__ import annotations

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    each_case,
    each_release_case,
    kept_case,
    real_renderer,
    release_table,
    render_cases,
)

from prefixkey.render import Renderer
from prefixkey.render._hf_python import PYTHON_CODECS

CASES = render_cases("real_convgap_")
#: Each folder: the path and class vLLM's transformers loads it with.
CLASSES = {
    "convgap_spm_backend": ("python", "SentencePieceBackend"),
    "convgap_python_backend": ("converted", "TokenizersBackend"),
    "convgap_pretrained_tokenizer": ("converted", "TokenizersBackend"),
    "convgap_pegasus_extras": ("converted", "PegasusTokenizer"),
    "convgap_pegasus_empty_extras": ("converted", "PegasusTokenizer"),
}
#: The releases whose answers were kept (releases/<release>/real_convgap_vectors.jsonl).
KEPT = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, CLASSES)


@pytest.mark.parametrize(("real", "path"), sorted(CLASSES.items()))
def test_each_folder_takes_its_class(real: str, path: tuple[str, str]) -> None:
    folder = next(c for c in CASES if c.real == real).folder()
    assert not (folder / "tokenizer.json").exists()
    decision = renderer(real).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == path


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


def test_the_listed_tokens_change_the_ids() -> None:
    """The folder's own list makes its tokens special (split out of the text) at 0.31.0;
    beside an empty extra_special_tokens it is dropped there."""
    def ids(real: str) -> object:
        return next(c.token_ids for c in CASES
                    if c.real == real and c.id.endswith("/completion-listed-tokens"))
    assert ids("convgap_pegasus_extras") != ids("convgap_pegasus_empty_extras")


@each_release_case(release_table("real_convgap_", dict.fromkeys(KEPT, ())))
def test_other_releases_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    """vLLM 0.29.0, 0.30.0 (transformers 5.24), 0.32.0 and 0.33.0 (5.19) answered as kept
    in releases/<release>/real_convgap_vectors.jsonl: the empty extra list replaced there."""
    assert_server_replays(case, release)


def test_sentencepiece_backend_is_verified_where_its_answers_were_kept() -> None:
    assert PYTHON_CODECS["SentencePieceBackend"].releases == frozenset(
        {"0.31.0", *KEPT})


@pytest.mark.parametrize("release", KEPT)
def test_the_empty_extra_list_is_replaced_there(release: str) -> None:
    """transformers 5.19 and 5.24 replace the empty extra_special_tokens with the folder's
    additional_special_tokens (render/_eras.py ``specials_merge``): the listed tokens'
    text gets other ids than at 0.31.0, and the same as with the list alone."""
    def listed(real: str, at: str | None) -> object:
        case = next(c for c in CASES
                    if c.real == real and c.id.endswith("/completion-listed-tokens"))
        return (case if at is None else kept_case(case, at, "real_convgap_")).token_ids
    empty = listed("convgap_pegasus_empty_extras", release)
    assert empty != listed("convgap_pegasus_empty_extras", None)
    assert empty == listed("convgap_pegasus_extras", release)
