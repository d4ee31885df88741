"""Replay vLLM 0.31.0's rendering of folders whose class calls its tokenizer its own way.

``real_layout_bodies.jsonl`` (tools/build_real_layout_bodies.py) holds the bodies of
test_real_wu_vectors.py over tests/render/real/ folders of a model type vLLM starts for
whose registered class rebuilds tokenizer.json (render/_hf_rebuilds.py):
``markuplm_rule`` (MarkupLMForQuestionAnswering; MarkupLMTokenizer over Llama 3's
byte-level vocabulary: its call encodes a text's whitespace-separated words as
pretokenized), ``udop_rule`` (UdopForConditionalGeneration; UdopTokenizer, whose call
refuses a text, so vLLM answers every body that tokenizes one with a 400), ``lasr_rule``
(LasrForCTC; LasrTokenizer, T5's pipeline with unk id 3, over the XLM-RoBERTa
SentencePiece vocabulary), ``dpr_context_rule`` (DPRContextEncoderTokenizer over
bge-small-en-v1.5's WordPiece vocabulary) and ``esmc_rule`` (EsmcForMaskedLM;
EsmcTokenizer, whose model is its own amino acid vocabulary, over bge-small's
tokenizer.json, whose added tokens stay); ``layoutlmv2_rule``, ``layoutlmv3_rule`` and
``layoutxlm_rule`` name LayoutLMv2Tokenizer, LayoutLMv3Tokenizer and LayoutXLMTokenizer
(whose own model types vLLM does not start for) in a GPT-2 folder vLLM starts for: like
Udop's, their call refuses a text. ``real_layout_vectors.jsonl`` is what vLLM
0.31.0's render server answered (tools/harvest_render.py), ``real_layout_030_``,
``real_layout_032_`` and ``real_layout_033_`` the same bodies answered by vLLM 0.30.0's,
0.32.0's and 0.33.0's (replayed with ``vllm_version`` set): every 200 must give the same
ids, every vLLM error an error with the same status. The files are fetched into a cache
(tests/real_models.py): without it these tests skip, under CI they fetch.
"""

from __future__ import annotations

import json

import pytest
import real_models
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    class_rebuild_test,
    each_case,
    each_release_case,
    real_renderer,
    release_table,
    render_cases,
)

from prefixkey.render import ModelFolderError, Renderer, ServerOptions

CASES = render_cases("real_layout_")
#: The same bodies answered by other releases' render servers (replayed as those).
RELEASE_CASES = {"0.30.0": render_cases("real_layout_030_"),
                 "0.32.0": render_cases("real_layout_032_"),
                 "0.33.0": render_cases("real_layout_033_")}
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {"markuplm_rule": "MarkupLMTokenizer", "udop_rule": "UdopTokenizer",
                  "lasr_rule": "LasrTokenizer", "dpr_context_rule": "DPRContextEncoderTokenizer",
                  "esmc_rule": "EsmcTokenizer", "layoutlmv2_rule": "LayoutLMv2Tokenizer",
                  "layoutlmv3_rule": "LayoutLMv3Tokenizer",
                  "layoutxlm_rule": "LayoutXLMTokenizer"}
#: The folders whose class's call refuses every text (words with boxes wanted).
REFUSING = frozenset({"udop_rule", "layoutlmv2_rule", "layoutlmv3_rule", "layoutxlm_rule"})


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    """Both answers for each folder but the refusing ones, whose every answer is a 400."""
    assert {c.real for c in CASES} == set(FOLDER_CLASSES)
    assert_covers_both_answers(tuple(c for c in CASES if c.real not in REFUSING),
                               set(FOLDER_CLASSES) - REFUSING)


test_each_folder_takes_its_class_rebuild = class_rebuild_test(FOLDER_CLASSES, renderer)


@pytest.mark.parametrize("real", sorted(REFUSING))
def test_a_class_wanting_boxes_refuses_every_text(real: str) -> None:
    """UdopTokenizer's, LayoutLMv2/v3Tokenizer's and LayoutXLMTokenizer's call wants words
    with their boxes: vLLM answered every body that tokenizes a text (a prompt, a rendered
    chat) with a 400 saying so, none with ids (the others: the empty prompt's, the
    missing chat template's)."""
    cases = [c for c in CASES if c.real == real]
    assert cases and {c.status for c in cases} == {400}
    assert sum("Words must" in str(c.error) for c in cases) >= len(cases) - 2


def test_markuplm_encodes_words() -> None:
    """MarkupLMTokenizer: whitespace runs, tabs and line breaks only separate words (their
    ids are the single-space text's), and a word after the first gets its space back."""
    ids = {c.id: c.token_ids for c in CASES if c.status == 200}
    for key, single in (("space-runs", "leading spaces and runs of spaces tabs"),
                        ("newlines", "line one line two indented")):
        (vllm,) = ids[f"markuplm_rule/completion-{key}-no-specials"]
        (rendered,) = renderer("markuplm_rule").render("/v1/completions", {
            "model": "real-markuplm_rule", "add_special_tokens": False, "prompt": single})
        assert vllm == list(rendered.token_ids), key


def test_dpr_context_is_the_question_encoders_pipeline() -> None:
    """DPRContextEncoderTokenizer's __init__ is DPRQuestionEncoderTokenizer's: vLLM's ids
    are the same on the same vocabulary (test_real_wu_vectors.py's dpr_rule)."""
    ids = {c.id: c.token_ids for c in (*CASES, *render_cases("real_wu_")) if c.status == 200}
    keys = [c.id.split("/", 1)[1] for c in CASES if c.real == "dpr_context_rule"
            and c.status == 200]
    assert keys
    for key in keys:
        assert ids[f"dpr_context_rule/{key}"] == ids[f"dpr_rule/{key}"], key


def test_esmc_encodes_with_its_own_vocabulary() -> None:
    """EsmcTokenizer: one id per amino acid letter, among its 33 tokens, whatever the
    file's vocabulary (bge-small's 30522 WordPiece entries); any other character is
    its <unk> (3)."""
    ids = {c.id: c.token_ids for c in CASES if c.status == 200}
    (protein,) = ids["esmc_rule/completion-protein-no-specials"]
    assert len(protein) == len("MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ") and max(protein) < 33
    (lower,) = ids["esmc_rule/completion-protein-lower-no-specials"]
    assert lower[:10] == [3] * 10


def test_markuplm_without_tags_dict_is_a_folder_error(tmp_path: pytest.TempPathFactory) -> None:
    """MarkupLMTokenizer.__init__ requires tags_dict: without it transformers fails and
    vLLM's server does not start (a real start-up on such a folder)."""
    folder = real_models.folder("markuplm_rule")
    target = tmp_path / "markuplm"  # type: ignore[operator]
    target.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (target / name).write_bytes((folder / name).read_bytes())
    (target / "tokenizer_config.json").write_text(json.dumps({}), "utf-8")
    with pytest.raises(ModelFolderError, match="tags_dict"):
        Renderer(ServerOptions(model=str(target))).render(
            "/v1/completions", {"model": str(target), "prompt": "x"})


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


@pytest.mark.parametrize("release", sorted(RELEASE_CASES))
def test_the_other_releases_answered_the_same_bodies(release: str) -> None:
    assert [c.id for c in RELEASE_CASES[release]] == [c.id for c in CASES]


@each_release_case(release_table("real_layout_", dict.fromkeys(sorted(RELEASE_CASES), ())))
def test_other_releases_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
