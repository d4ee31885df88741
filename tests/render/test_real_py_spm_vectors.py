"""Replay vLLM 0.31.0's rendering of folders whose tokenizer is a SentencePiece Python
tokenizer (GPTSw3Tokenizer, BertGenerationTokenizer, SiglipTokenizer, MarianTokenizer,
M2M100Tokenizer, PLBartTokenizer, Speech2TextTokenizer: render/_python_spm.py).

``real_py_spm_bodies.jsonl`` (tools/build_real_pyspm_bodies.py) holds chat and
completions bodies over tests/render/real/*_py folders: a real SentencePiece model
(mistral_common's ``tokenizer.model.v1``, BPE with byte fallback; the sentencepiece
sdist's ``test/test_model.model``, Unigram with NFKC) under each class's
``tokenizer_config.json``, with a vocab.json built from the model where the class reads
one. ``real_py_spm_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. The four encoder-decoder configs (Marian, M2M100, PLBart,
Speech2Text) render chat only: vLLM answers every completions body over them "No
token_ids rendered". The files are fetched into a cache (tests/real_models.py): without
it these tests skip, under CI they fetch.
"""

from __future__ import annotations

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_replays,
    real_renderer,
    render_cases,
)

from prefixkey.render import Renderer, RenderUnsupportedError
from prefixkey.render._hf_python import PYTHON_CODECS

CASES = render_cases("real_py_spm_")
#: Each folder and the class vLLM's transformers picked for it.
FOLDER_CLASSES = {"gpt_sw3_py": "GPTSw3Tokenizer", "bert_generation_py": "BertGenerationTokenizer",
                  "siglip_py": "SiglipTokenizer", "marian_py": "MarianTokenizer",
                  "m2m_100_py": "M2M100Tokenizer", "plbart_py": "PLBartTokenizer",
                  "speech_to_text_py": "Speech2TextTokenizer"}
ENCODER_DECODER = {"marian_py", "m2m_100_py", "plbart_py", "speech_to_text_py"}
#: vLLM may run SiglipModel as a pooling model, whose tokenizer truncates on the right:
#: prefixkey refuses to truncate for it (test_real_wu_vectors.py) rather than guess.
POOLING_TRUNCATION = {"siglip_py/completion-truncate", "siglip_py/completion-truncate-no-specials",
                      "siglip_py/completion-truncate-ends-eos"}


def renderer(real: str) -> Renderer:
    case = next(c for c in CASES if c.real == real)
    return real_renderer(CASES, real, case.server.get("--max-model-len"))


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)
    assert {c for c in FOLDER_CLASSES.values()} == {
        name for name, codec in PYTHON_CODECS.items() if codec.spm is not None}


@pytest.mark.parametrize(("real", "cls"), sorted(FOLDER_CLASSES.items()))
def test_each_folder_takes_its_sentencepiece_codec(real: str, cls: str) -> None:
    decision = renderer(real).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("python", cls)
    assert decision.recipe == PYTHON_CODECS[cls].name


def test_vllm_renders_no_completion_over_an_encoder_decoder_config() -> None:
    """Each one a 400; but for a body vLLM refuses before rendering (an empty prompt),
    its reason is that no ids were rendered."""
    messages = {c.error["message"] for c in CASES
                if c.real in ENCODER_DECODER and c.endpoint == "/v1/completions"}
    assert "No token_ids rendered" in messages
    assert all(m == "No token_ids rendered" or m.startswith(("Either prompt", "This model's"))
               for m in messages), messages
    assert {c.status for c in CASES if c.real in ENCODER_DECODER
            and c.endpoint == "/v1/completions"} == {400}


@pytest.mark.parametrize("case", [c for c in CASES if c.id not in POOLING_TRUNCATION],
                         ids=[c.id for c in CASES if c.id not in POOLING_TRUNCATION])
def test_vllm_rendering_of_sentencepiece_python_folders_replays(case: RenderCase) -> None:
    assert_replays(renderer(case.real or ""), case)


@pytest.mark.parametrize("case", [c for c in CASES if c.id in POOLING_TRUNCATION],
                         ids=sorted(POOLING_TRUNCATION))
def test_truncating_for_siglip_is_refused_not_guessed(case: RenderCase) -> None:
    assert case.status == 200  # vLLM truncated; which end depends on its runner
    with pytest.raises(RenderUnsupportedError, match="pooling"):
        renderer("siglip_py").render(case.endpoint, case.body)
