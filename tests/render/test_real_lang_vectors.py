"""Replay vLLM 0.31.0's rendering of the folders whose class ends its tokenizer with a
language-code template (MBartTokenizer, MBart50Tokenizer, NllbTokenizer,
SeamlessM4TTokenizer: render/_hf_rebuilds.py).

``real_lang_bodies.jsonl`` (tools/build_real_lang_bodies.py) holds the bodies; the folders
(tests/render/real/) are ``mbart_cc25`` and ``mbart50_rule`` (XLM-RoBERTa's SentencePiece
vocabulary, mBART's, with the language codes and ``<mask>`` appended as transformers'
MBart converters append them) and ``nllb_rule``, ``nllb_legacy_rule`` and
``seamless_m4t_rule`` (Llama 2's SentencePiece BPE vocabulary under those classes).
``real_lang_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. The files are fetched into a cache (tests/real_models.py): without
it these tests skip, under CI they fetch.
"""

from __future__ import annotations

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_replays,
    assert_takes_rebuild,
    real_renderer,
    render_cases,
)

from prefixkey.render import Renderer

CASES = render_cases("real_lang_")
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {"mbart_cc25": "MBartTokenizer", "mbart50_rule": "MBart50Tokenizer",
                  "nllb_rule": "NllbTokenizer", "nllb_legacy_rule": "NllbTokenizer",
                  "seamless_m4t_rule": "SeamlessM4TTokenizer"}
#: Where each folder's template puts its language code (its src_lang) and the eos token:
#: after the text (``suffix``: text, eos, code) or around it (``prefix``: code, text, eos).
PLACES = {"mbart_cc25": "suffix", "mbart50_rule": "prefix", "nllb_rule": "prefix",
          "nllb_legacy_rule": "suffix", "seamless_m4t_rule": "prefix"}


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real, 512)


def _ids() -> dict[str, list[int]]:
    return {c.id: c.token_ids[0] for c in CASES
            if c.status == 200 and c.endpoint == "/v1/completions"}


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)


@pytest.mark.parametrize(("real", "cls"), sorted(FOLDER_CLASSES.items()))
def test_each_folder_takes_its_class_rebuild(real: str, cls: str) -> None:
    assert_takes_rebuild(renderer(real), cls)


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


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert case.real is not None
    assert_replays(renderer(case.real), case)
