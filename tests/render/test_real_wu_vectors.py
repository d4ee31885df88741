"""Replay vLLM 0.31.0's rendering of folders whose WordPiece or Unigram class rebuilds
tokenizer.json.

``real_wu_bodies.jsonl`` (tools/build_real_wu_bodies.py) holds completions and chat bodies
over tests/render/real/ folders whose tokenizer.json is written from a real vocabulary
(llama.cpp's GGUF vocabularies in the llama-cpp-python sdist: bge-small-en-v1.5's
WordPiece vocabulary, bert-base-uncased's; an XLM-RoBERTa SentencePiece vocabulary with its
scores and charsmap) under a config that makes transformers 5.17 pick the class:
``bert_bge`` is bge-small's own config (BertTokenizer), the ``*_rule`` folders name
another class over the same files. ``real_wu_vectors.jsonl`` is what vLLM's render server
answered (tools/harvest_render.py): every 200 must give the same ids, every vLLM error an
error with the same status. The files are fetched into a cache (tests/real_models.py):
without it these tests skip, under CI they fetch.
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

CASES = render_cases("real_wu_")
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {"bert_bge": "BertTokenizer", "distilbert_cased_rule": "DistilBertTokenizer",
                  "dpr_rule": "DPRQuestionEncoderTokenizer",
                  "funnel_rule": "FunnelTokenizer", "xlm_roberta": "XLMRobertaTokenizer",
                  "t5_rule": "T5Tokenizer", "albert_rule": "AlbertTokenizer",
                  "camembert_rule": "CamembertTokenizer", "xlnet_rule": "XLNetTokenizer",
                  "big_bird_rule": "BigBirdTokenizer"}


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)


test_each_folder_takes_its_class_rebuild = class_rebuild_test(FOLDER_CLASSES, renderer)


def test_the_options_the_classes_read_change_the_ids() -> None:
    """do_lower_case / strip_accents (DistilBert: off; DPR: lowercases whatever the file
    says), and the classes' own post-processors: the answers differ where they should."""
    ids = {c.id: c.token_ids for c in CASES if c.status == 200}
    key = "completion-mixed-case"
    assert ids[f"bert_bge/{key}"] == ids[f"dpr_rule/{key}"]
    assert ids[f"bert_bge/{key}"] != ids[f"distilbert_cased_rule/{key}"]
    assert ids["bert_bge/completion-ascii"][0][0] == 101  # [CLS]
    assert ids["xlm_roberta/completion-ascii"][0][0] == 0  # <s>
    assert ids["t5_rule/completion-ascii"][0][-1] == 2  # </s>, no bos


@each_case(CASES)
def test_vllm_rendering_of_wordpiece_and_unigram_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)
