"""Replay vLLM's rendering of folders giving both special-token lists (issue 19).

``real_specials_bodies.jsonl`` (tools/build_real_specials_bodies.py) holds the bodies of
test_real_wu_vectors.py, and texts holding both lists' tokens, over tests/render/real/
folders whose tokenizer_config.json gives ``additional_special_tokens`` beside a
non-empty ``extra_special_tokens``: another list (``*_lists``) or a dict of named tokens
(``*_named``), on the as-is, rebuilt and converted paths (render/_eras.py
``specials_merge``). The vectors are what vLLM 0.31.0's render server answered
(tools/harvest_render.py), the releases/ copies what the other releases' did: every 200
must give the same ids, every vLLM error an error with the same status.
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import get_args

import pytest
from real_models import folder as real_folder
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

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._eras import SpecialsMerge
from prefixkey.render._hf_specials import MERGES, Held

CASES = render_cases("real_specials_")
#: Each folder: the path and class vLLM's transformers loads it with.
CLASSES = {
    "specials_asis_lists": ("as_is", "TokenizersBackend"),
    "specials_asis_named": ("as_is", "TokenizersBackend"),
    "specials_rebuilt_lists": ("rebuilt", "Qwen2Tokenizer"),
    "specials_rebuilt_named": ("rebuilt", "Qwen2Tokenizer"),
    "specials_generic_named": ("converted", "TokenizersBackend"),
    "specials_pegasus_lists": ("converted", "PegasusTokenizer"),
}
#: The releases whose answers were kept (releases/<release>/real_specials_vectors.jsonl):
#: transformers 5.24 (0.29.0, 0.30.0) and 5.19 (0.32.0, 0.33.0).
KEPT = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")
#: The folders where the additional list becomes the extra list there (a dict of named
#: tokens beside it, no SentencePiece conversion replacing it).
BECOMES_EXTRA = frozenset({"specials_asis_named", "specials_rebuilt_named"})


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, CLASSES)


@pytest.mark.parametrize(("real", "path"), sorted(CLASSES.items()))
def test_each_folder_takes_its_path_and_gives_both_lists(real: str,
                                                        path: tuple[str, str]) -> None:
    r = real_renderer(CASES, real)
    config = r.folder.tokenizer_config
    assert config["additional_special_tokens"] and config["extra_special_tokens"]
    assert config["additional_special_tokens"] != config["extra_special_tokens"]
    decision = r.folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == path


def test_the_merge_table_has_a_row_for_every_rule_and_holding() -> None:
    """MERGES answers every era's ``specials_merge`` beside every holding of the extra
    key, so a new rule cannot reach a folder without its row."""
    assert set(MERGES) == set(itertools.product(get_args(SpecialsMerge), get_args(Held)))


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


@each_release_case(release_table("real_specials_", dict.fromkeys(KEPT, ())))
def test_other_releases_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


@pytest.mark.parametrize("release", KEPT)
def test_the_additional_list_becomes_the_extra_list_beside_named_tokens(release: str) -> None:
    """transformers 5.19 and 5.24 keep ``additional_special_tokens`` as a keyword beside
    a non-empty extra_special_tokens; once a dict of named tokens is moved out, it is the
    extra list: its tokens' text gets other ids than at 0.31.0 (which drops it). Beside
    another list nothing changes (the SentencePiece folders' ids differ by release for
    other reasons: render/_eras.py ``generic_spm``)."""
    for real in ("specials_asis_lists", "specials_asis_named", "specials_rebuilt_lists",
                 "specials_rebuilt_named"):
        case = next(c for c in CASES
                    if c.real == real and c.id.endswith("/completion-both-lists"))
        changed = kept_case(case, release, "real_specials_").token_ids != case.token_ids
        assert changed == (real in BECOMES_EXTRA), real


@pytest.mark.parametrize(("real", "release"), [
    ("camembert_rule", "0.32.0"), ("camembert_rule", "0.29.0"),
    ("llama3_tiktoken", "0.32.0"),
])
def test_a_class_reading_the_keyword_is_refused_there(tmp_path: Path, real: str,
                                                      release: str) -> None:
    """A rebuilt class that makes its own list from ``additional_special_tokens``
    (CamembertTokenizer), or a tiktoken conversion, would get the folder's list there:
    not harvested, refused with the reason."""
    folder = tmp_path / real
    shutil.copytree(real_folder(real), folder)
    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text("utf-8"))
    config.update(additional_special_tokens=["<custom_a>"],
                  extra_special_tokens={"image_token": "<custom_b>"})
    path.write_text(json.dumps(config), "utf-8")
    with pytest.raises(RenderUnsupportedError, match="additional_special_tokens beside "
                       "named extra_special_tokens"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512, vllm_version=release))
