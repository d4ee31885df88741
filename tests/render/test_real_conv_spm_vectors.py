"""Replay vLLM 0.31.0's rendering of more classes converting a SentencePiece model.

``real_conv_spm_bodies.jsonl`` (tools/build_real_conv_spm_bodies.py) holds the bodies of
test_real_wu_vectors.py over tests/render/real/ folders holding a SentencePiece model
and no tokenizer.json: Gemma 3's vocabulary written as its tokenizer.model
(tests/real_models.py's ``spm_model`` edit) under GemmaTokenizer (``conv_gemma3``, a
Gemma 3 folder) and Siglip2Tokenizer, Mistral 7B's BPE model under CodeLlamaTokenizer,
and the sentencepiece 0.2.1 sdist's Unigram test model under ReformerTokenizer (which
builds a BPE over it), BigBirdTokenizer, DebertaV2Tokenizer, BarthezTokenizer,
RemBertTokenizer, XGLMTokenizer and FNetTokenizer (the generic backend's tokenizer with
AlbertTokenizer's named tokens), and XLM-R's Unigram vocabulary (llama.cpp's GGUF) written
as a SentencePiece model under PegasusTokenizer. The vectors are what vLLM 0.31.0's render server
answered (tools/harvest_render.py): every 200 must give the same ids, every vLLM error
an error with the same status. The files are fetched into a cache (tests/real_models.py):
without it these tests skip, under CI they fetch.
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
from prefixkey.render._hf_rebuilds import REBUILDS

CASES = render_cases("real_conv_spm_")
#: Each folder and the class vLLM's transformers converted it for.
CLASSES = {
    "conv_gemma3": "GemmaTokenizer", "conv_siglip2": "Siglip2Tokenizer",
    "conv_code_llama": "CodeLlamaTokenizer", "conv_reformer": "ReformerTokenizer",
    "conv_big_bird": "BigBirdTokenizer", "conv_deberta_v2": "DebertaV2Tokenizer",
    "conv_barthez": "BarthezTokenizer", "conv_rembert": "RemBertTokenizer",
    "conv_xglm": "XGLMTokenizer", "conv_fnet": "FNetTokenizer",
    "conv_pegasus": "PegasusTokenizer"}


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, CLASSES)


@pytest.mark.parametrize(("real", "cls"), sorted(CLASSES.items()))
def test_each_folder_takes_its_class_conversion(real: str, cls: str) -> None:
    folder = next(c for c in CASES if c.real == real).folder()
    assert not (folder / "tokenizer.json").exists()
    decision = renderer(real).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("converted", cls)
    # FNetTokenizer has no __init__ of its own: the generic backend's conversion.
    assert decision.recipe == (REBUILDS[cls].name if cls in REBUILDS else "spm")


@each_case(CASES)
def test_vllm_rendering_of_the_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


def _release_renderer(release: str, real: str) -> Renderer:
    return real_renderer(CASES, real, release)


@each_release_case(release_table("real_conv_spm_", {"0.32.0": (), "0.33.0": ()}))
def test_vllm_0_32_and_0_33_rendering_of_the_folders_replays(release: str,
                                                             case: RenderCase) -> None:
    """vLLM 0.32.0 and 0.33.0 (transformers 5.19; 0.33.0: its overlay) answered the
    corpus as kept in releases/<release>/real_conv_spm_vectors.jsonl."""
    assert_server_replays(case, release)


@each_release_case(release_table("real_conv_spm_", {"0.30.0": ()}))
def test_vllm_0_30_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    """vLLM 0.30.0 (transformers 5.24) answered the folders as kept in
    releases/0.30.0/real_conv_spm_vectors.jsonl (FNet's through 5.24's generic build,
    the era's ``generic_spm``)."""
    assert_server_replays(case, release)


@each_release_case(release_table("real_conv_spm_", {"0.29.0": ()}))
def test_vllm_0_29_rendering_of_the_folders_replays(release: str, case: RenderCase) -> None:
    """vLLM 0.29.0 (transformers 5.24, as 0.30.0) answered every body as kept in
    releases/0.29.0/real_conv_spm_vectors.jsonl."""
    assert_server_replays(case, release)


def test_vllm_0_30_answers_fnet_otherwise() -> None:
    """The generic backend's conversion in transformers 5.24 gave other answers for
    nearly every FNet body, and the same for every other folder's."""
    for real, at_least in (("conv_fnet", 40), ("conv_gemma3", 0)):
        cases = [c for c in CASES if c.real == real]
        kept = [kept_case(c, "0.30.0", "real_conv_spm_") for c in cases]
        differ = sum((k.status, k.token_ids) != (c.status, c.token_ids)
                     for c, k in zip(cases, kept, strict=True))
        assert differ >= at_least if at_least else differ == 0, real
