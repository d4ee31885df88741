"""Replay vLLM 0.31.0's rendering of folders whose tokenizer is a vocabulary-file Python
tokenizer: fastBPE-style (CTRLTokenizer, BlenderbotSmallTokenizer: render/_hf_python.py's
``bpe_words``) or BERT's Python WordPiece (RoCBertTokenizer, BertJapaneseTokenizer:
``wordpiece``).

``real_py_bpe_bodies.jsonl`` (tools/build_python_bodies.py ``--bpe``) holds chat and
completions bodies over tests/render/real/ctrl_rule (model type ctrl) and
blenderbot_small_rule (blenderbot-small, its decoder-only architecture): OpenAI CLIP's
real merges written as these classes' vocab.json/merges.txt (tests/real_models.py's
``clip_fastbpe``: a real vocabulary under the classes' format, not their own).
``real_py_fairseq_bodies.jsonl`` (``--fairseq``) the same over phobert_rule and
bertweet_rule (GPT-2 folders naming PhobertTokenizer, BertweetTokenizer): the same merges
as a fairseq dictionary (vocab.txt) and fastBPE codes (bpe.codes).
``real_py_wp_bodies.jsonl`` (``--wordpiece``) holds the same over roc_bert_rule (model
type roc_bert), bert_japanese_rule and bert_japanese_char_rule (GPT-2 folders naming
BertJapaneseTokenizer, basic then wordpiece or character, cased): bert-base-uncased's
real WordPiece vocabulary (llama.cpp's GGUF, ``wordpiece_vocab_txt``) as their
vocab.txt. ``*_vectors.jsonl`` are what vLLM's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. The files are fetched into a cache: without it these tests skip,
under CI they fetch.

tests/render/releases/<release>/real_py_{bpe,wp,fairseq}_vectors.jsonl hold vLLM
0.29.0's, 0.30.0's, 0.32.0's and 0.33.0's answers for the same bodies (tools/build_python_bodies.py
``--keep-release``), replayed with that ``--vllm-version``; vLLM 0.29.0 does not start
for blenderbot-small's architectures (its harvest: "not supported for now"), so that
folder is refused there (its class renders there named by a GPT-2 folder:
test_real_py_gpt2_vectors.py).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from render_cases import (
    GPT2_PY_FOLDERS,
    GPT2_PY_RELEASES,
    NAMED_PY_FOLDERS,
    RENDER_DIR,
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    each_case,
    each_release_case,
    kept_vectors,
    real_renderer,
    release_table,
    render_cases,
)

from prefixkey.render import VERIFIED_RELEASES, Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_python import PYTHON_CODECS

#: Each corpus: its codec unit and the class of each folder.
CORPORA = {
    "real_py_bpe_": ("bpe_words", {"ctrl_rule": "CTRLTokenizer",
                                   "blenderbot_small_rule": "BlenderbotSmallTokenizer"}),
    "real_py_wp_": ("wordpiece", {"roc_bert_rule": "RoCBertTokenizer",
                                  "bert_japanese_rule": "BertJapaneseTokenizer",
                                  "bert_japanese_char_rule": "BertJapaneseTokenizer"}),
    "real_py_fairseq_": ("bpe_words", {"phobert_rule": "PhobertTokenizer",
                                       "bertweet_rule": "BertweetTokenizer"}),
}
CASES = [(corpus, case) for corpus in CORPORA for case in render_cases(corpus)]
FOLDER_CLASSES = {f: c for _, classes in CORPORA.values() for f, c in classes.items()}


def _renderer(corpus: str, real: str) -> Renderer:
    return real_renderer(render_cases(corpus), real)


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_each_corpus_covers_its_folders_and_both_answers(corpus: str) -> None:
    assert_covers_both_answers(render_cases(corpus), CORPORA[corpus][1])


def test_the_corpora_cover_every_class_of_their_units() -> None:
    units = {unit for unit, _ in CORPORA.values()}
    assert {c for c, codec in PYTHON_CODECS.items()
            if codec.unit in units and c not in NAMED_PY_FOLDERS.values()} == set(
        FOLDER_CLASSES.values())
    for unit, classes in CORPORA.values():
        assert {PYTHON_CODECS[c].unit for c in classes.values()} == {unit}


@pytest.mark.parametrize(("corpus", "folder"), [
    (corpus, folder) for corpus, (_, classes) in CORPORA.items() for folder in classes])
def test_each_folder_takes_its_python_codec(corpus: str, folder: str) -> None:
    decision = _renderer(corpus, folder).folder.tokenizer_decision
    cls = FOLDER_CLASSES[folder]
    assert (decision.path, decision.tokenizer_class) == ("python", cls)
    assert decision.recipe == PYTHON_CODECS[cls].name


@each_case([c for _, c in CASES])
def test_vllm_rendering_of_vocabulary_file_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


RELEASES = ("0.29.0", "0.30.0", "0.32.0", "0.33.0")
#: (release, folder) whose server did not start.
NOT_STARTED = {("0.29.0", "blenderbot_small_rule")}


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_the_releases_answered_every_body_of_the_folders_they_start_for(corpus: str) -> None:
    for release in RELEASES:
        assert set(kept_vectors(release, corpus)) == {
            c.id for c in render_cases(corpus) if (release, c.real) not in NOT_STARTED}


@pytest.mark.parametrize(("corpus", "folder"), [
    (corpus, folder) for corpus, (_, classes) in CORPORA.items() for folder in classes])
def test_each_class_opens_the_releases_that_answered_it(corpus: str, folder: str) -> None:
    """A class renders at 0.31.0 and the releases whose answers for its folder are kept;
    any other verified release refuses it, naming the release (or its start-up)."""
    cls = FOLDER_CLASSES[folder]
    twin = GPT2_PY_RELEASES if cls in GPT2_PY_FOLDERS.values() else frozenset()
    answered = {"0.31.0", *twin, *(r for r in RELEASES if (r, folder) not in NOT_STARTED)}
    assert PYTHON_CODECS[cls].releases == frozenset(answered)
    for release in sorted(set(VERIFIED_RELEASES) - answered):
        match = ("does not start" if (release, folder) in NOT_STARTED
                 else f"not vLLM {release}'s")
        with pytest.raises(RenderUnsupportedError, match=match):
            real_renderer(render_cases(corpus), folder, release)


@pytest.mark.parametrize(("release", "folder"), sorted(NOT_STARTED))
def test_a_folder_the_release_does_not_start_for_is_refused(release: str, folder: str) -> None:
    with pytest.raises(RenderUnsupportedError, match=f"vLLM {release} does not start"):
        real_renderer((c for _, c in CASES), folder, release)


@each_release_case(release_table(tuple(CORPORA), {
    release: {folder for r, folder in NOT_STARTED if r == release} for release in RELEASES}))
def test_a_release_renders_the_vocabulary_file_corpora(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


def _edited_folder(tmp_path: Path, corpus: str, folder: str, **config: Any) -> Path:
    """The real folder copied with tokenizer_config.json's keys set (None: removed)."""
    case = next(c for c in render_cases(corpus) if c.real == folder)
    target = tmp_path / folder
    shutil.copytree(case.folder(), target)
    path = target / "tokenizer_config.json"
    document = {**json.loads(path.read_text("utf-8")), **config}
    path.write_text(json.dumps({k: v for k, v in document.items() if v is not None}), "utf-8")
    return target


def _token(content: str, **flags: bool) -> dict[str, Any]:
    return {"content": content, "lstrip": False, "normalized": False, "rstrip": False,
            "single_word": False, "special": True, **flags}


def test_a_saved_folders_added_tokens_decoder_of_its_own_tokens_changes_nothing(
        tmp_path: Path) -> None:
    # transformers (PythonBackend.__init__) registers added_tokens_decoder's tokens, then
    # adds the named tokens it lacks at their vocabulary ids: the same tokens either way.
    decoder = {str(i): _token(t) for i, t in enumerate(
        ("__null__", "__start__", "__end__", "__unk__"))}
    folder = _edited_folder(tmp_path, "real_py_bpe_", "blenderbot_small_rule",
                            added_tokens_decoder=decoder)
    saved = Renderer(ServerOptions(model=str(folder), served_model_name=("real-x",),
                                   max_model_len=512))
    for case in render_cases("real_py_bpe_"):
        if case.real == "blenderbot_small_rule" and case.status == 200:
            body = {**case.body, "model": "real-x"}
            assert [list(r.token_ids) for r in saved.render(case.endpoint, body)] == [
                list(r.token_ids) for r in _renderer("real_py_bpe_", case.real).render(
                    case.endpoint, case.body)]


@pytest.mark.parametrize("decoder", [
    {"49411": _token("<extra>")}, {"7": _token("__unk__")},
    {"3": _token("__unk__", lstrip=True)}])
def test_other_added_tokens_are_refused_naming_the_entry(tmp_path: Path,
                                                         decoder: dict[str, Any]) -> None:
    folder = _edited_folder(tmp_path, "real_py_bpe_", "blenderbot_small_rule",
                            added_tokens_decoder=decoder)
    with pytest.raises(RenderUnsupportedError, match=r"added_tokens_decoder\["):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))


@pytest.mark.parametrize(("setting", "value", "text"), [
    ("word_tokenizer_type", "mecab", "needs fugashi (MeCab word splitting)"),
    ("word_tokenizer_type", "sudachi", "needs sudachipy"),
    ("subword_tokenizer_type", "sentencepiece", "only wordpiece and character"),
    ("never_split", ["foo"], "is not reproduced"),
    ("do_lower_case", "yes", "only true or false")])
def test_bert_japanese_settings_beyond_basic_wordpiece_are_refused(
        tmp_path: Path, setting: str, value: Any, text: str) -> None:
    folder = _edited_folder(tmp_path, "real_py_wp_", "bert_japanese_rule", **{setting: value})
    with pytest.raises(RenderUnsupportedError, match=f"{setting}.*{re.escape(text)}"):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))


def test_bertweets_tweet_normalization_is_refused(tmp_path: Path) -> None:
    folder = _edited_folder(tmp_path, "real_py_fairseq_", "bertweet_rule", normalization=True)
    with pytest.raises(RenderUnsupportedError, match=re.escape(
            "normalization True: BertweetTokenizer with it (its port of NLTK's TweetTokenizer")):
        Renderer(ServerOptions(model=str(folder), max_model_len=512))


def test_a_named_token_the_vocabulary_lacks_is_added_after_it() -> None:
    # PythonBackend.__init__: the fairseq dictionary (after <s> <pad> </s> <unk>) has no
    # "<mask>", which is added at the vocabulary's length; the corpus's "specials" bodies
    # hold vLLM's answer for it.
    case = next(c for c in render_cases("real_py_fairseq_") if c.real == "phobert_rule")
    lines = (case.folder() / "vocab.txt").read_text("utf-8").splitlines()
    rendered = _renderer("real_py_fairseq_", "phobert_rule").render(
        "/v1/completions", {"model": "real-phobert_rule", "prompt": "<mask>",
                            "add_special_tokens": False})
    assert [list(r.token_ids) for r in rendered] == [[4 + len(lines)]]


def test_bpe_applies_out_of_order_merges_as_transformers_does() -> None:
    # tools/build_python_bpe_merges.py: a CTRLTokenizer folder whose merges are ranked at
    # random (a merge of a merged symbol may rank first), and CTRLTokenizer's ids
    # (transformers 5.17, vLLM 0.31's) for each word.
    vectors = json.loads((RENDER_DIR / "python_bpe_vectors.json").read_text("utf-8"))
    assert vectors["transformers"] == "5.17.0" and len(vectors["ids"]) > 1800
    r = Renderer(ServerOptions(model=str(RENDER_DIR / vectors["folder"]), max_model_len=512))
    assert r.folder.tokenizer_decision.recipe == "ctrl"
    body = {"model": r.options.served_names[0], "add_special_tokens": False}
    got = {w: [list(x.token_ids) for x in r.render("/v1/completions", {**body, "prompt": w})]
           for w in vectors["ids"]}
    assert got == {w: [ids] for w, ids in vectors["ids"].items()}
