"""Replay vLLM 0.31.0's rendering of more folders whose Unigram or WordPiece class
rebuilds tokenizer.json.

``real_wu2_bodies.jsonl`` (tools/build_real_wu2_bodies.py) holds the bodies of
test_real_wu_vectors.py over tests/render/real/ folders that put one of its real
vocabularies (llama.cpp's GGUF files in the llama-cpp-python sdist) under a
tokenizer_config.json naming another class (``mpnet_rule``: MPNetTokenizer over
bge-small-en-v1.5's WordPiece vocabulary, its RoBERTa-style <s> / </s> defaults absent
from it, so added after it) or over the XLM-RoBERTa SentencePiece vocabulary
(``barthez_rule``: BarthezTokenizer; ``deberta_v2_rule``: DebertaV2Tokenizer with
``do_lower_case`` and ``split_by_punct``, its [CLS]/[SEP]/... defaults absent from the
vocabulary, so added after it). ``real_wu2_vectors.jsonl`` is what vLLM 0.31.0's
render server answered (tools/harvest_render.py): every 200 must give the same ids, every
vLLM error an error with the same status. The files are fetched into a cache
(tests/real_models.py): without it these tests skip, under CI they fetch.
"""

from __future__ import annotations

from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    class_rebuild_test,
    each_case,
    real_renderer,
    render_cases,
)

from prefixkey.render import Renderer

CASES = render_cases("real_wu2_")
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {"barthez_rule": "BarthezTokenizer", "deberta_v2_rule": "DebertaV2Tokenizer",
                  "mpnet_rule": "MPNetTokenizer"}


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)


test_each_folder_takes_its_class_rebuild = class_rebuild_test(FOLDER_CLASSES, renderer)


def test_barthez_normalizes_without_the_charsmap() -> None:
    """BarthezTokenizer drops the file's charsmap for its own normalizer (whitespace runs
    and line breaks to one space, NFC, right strip): vLLM's answers for it differ from
    XLMRobertaTokenizer's on the same vocabulary (test_real_wu_vectors.py) where the charsmap
    maps characters (compatibility forms, controls, unknown ones)."""
    ids = {c.id: c.token_ids for c in (*CASES, *render_cases("real_wu_")) if c.status == 200}
    for key in ("compat", "controls", "unknown"):
        assert (ids[f"barthez_rule/completion-{key}"]
                != ids[f"xlm_roberta/completion-{key}"]), key
    for key in ("ascii", "space-runs", "newlines"):
        assert ids[f"barthez_rule/completion-{key}"] == ids[f"xlm_roberta/completion-{key}"]


def test_deberta_v2_options_and_its_own_template() -> None:
    """DebertaV2Tokenizer: its default [CLS] / [SEP] are not in the vocabulary, so they
    are added after it (250002, 250003) and its own template puts them around the text;
    ``do_lower_case`` and ``split_by_punct`` change the pieces."""
    ids = {c.id: c.token_ids for c in CASES if c.status == 200}
    first, *_ = ids["deberta_v2_rule/completion-ascii"]
    assert (first[0], first[-1]) == (250002, 250003)
    for key in ("mixed-case", "punct"):
        deberta = ids[f"deberta_v2_rule/completion-{key}-no-specials"]
        assert deberta != ids[f"barthez_rule/completion-{key}-no-specials"], key


def test_mpnet_is_bert_pieces_in_roberta_tokens() -> None:
    """MPNetTokenizer: BertTokenizer's pieces (vLLM's answers without special tokens are
    bge-small's, test_real_wu_vectors.py) between its own <s> ... </s>, added after the
    vocabulary (30522, 30523), by a RobertaProcessing."""
    ids = {c.id: c.token_ids for c in (*CASES, *render_cases("real_wu_")) if c.status == 200}
    for key in ("mixed-case", "accents", "chinese", "long-word-101"):
        assert (ids[f"mpnet_rule/completion-{key}-no-specials"]
                == ids[f"bert_bge/completion-{key}-no-specials"]), key
    first, *_ = ids["mpnet_rule/completion-ascii"]
    assert (first[0], first[-1]) == (30522, 30523)


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)
