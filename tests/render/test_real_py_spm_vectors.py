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

import json
import shutil
from pathlib import Path

import pytest
from render_cases import (
    GPT2_PY_FOLDERS,
    GPT2_PY_RELEASES,
    NAMED_PY_FOLDERS,
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

from prefixkey.render import Renderer, RenderRequestError, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_python import PYTHON_CODECS

CASES = render_cases("real_py_spm_")
#: Each folder and the class vLLM's transformers picked for it.
FOLDER_CLASSES = {"gpt_sw3_py": "GPTSw3Tokenizer", "bert_generation_py": "BertGenerationTokenizer",
                  "siglip_py": "SiglipTokenizer", "marian_py": "MarianTokenizer",
                  "m2m_100_py": "M2M100Tokenizer", "m2m_100_langs_py": "M2M100Tokenizer",
                  "plbart_py": "PLBartTokenizer",
                  "speech_to_text_py": "Speech2TextTokenizer"}
ENCODER_DECODER = {"marian_py", "m2m_100_py", "m2m_100_langs_py", "plbart_py",
                   "speech_to_text_py"}



def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)
    assert {c for c in FOLDER_CLASSES.values()} == {
        name for name, codec in PYTHON_CODECS.items()
        if codec.spm is not None and name not in NAMED_PY_FOLDERS.values()
        # The base class itself: test_real_convgap_vectors.py's corpus.
        and name != "SentencePieceBackend"}


@pytest.mark.parametrize(("real", "cls"), sorted(FOLDER_CLASSES.items()))
def test_each_folder_takes_its_sentencepiece_codec(real: str, cls: str) -> None:
    decision = renderer(real).folder.tokenizer_decision
    assert (decision.path, decision.tokenizer_class) == ("python", cls)
    assert decision.recipe == PYTHON_CODECS[cls].name


def test_vllm_renders_no_completion_over_an_encoder_decoder_config() -> None:
    """Each one a 400; but for a body vLLM refuses before rendering (an empty prompt),
    its reason is that no ids were rendered."""
    messages = {(c.error or {}).get("message") for c in CASES
                if c.real in ENCODER_DECODER and c.endpoint == "/v1/completions"}
    assert "No token_ids rendered" in messages
    assert all(m == "No token_ids rendered" or str(m).startswith(
        ("Either prompt", "This model's")) for m in messages), messages
    body = {"model": "real-marian_py", "prompt": "Hello world"}
    with pytest.raises(RenderRequestError, match="No token_ids rendered"):
        renderer("marian_py").render("/v1/completions", body)


def test_an_encoder_decoder_completion_is_refused_where_vllm_won_t_start(tmp_path: Path) -> None:
    """0.29.0, which starts no T5 architecture, refuses it, naming the release; 0.31.0
    answers vLLM's 400. A T5 config (encoder-decoder by its class default; its
    decoder start token id given, as T5 checkpoints give it: BertTokenizer has no bos)
    over the bert_bge folder's tokenizer files (its tokenizer_config.json names the class)."""
    source = next(c for c in render_cases("real_wu_") if c.real == "bert_bge").folder()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(source / name, tmp_path / name)
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "t5", "architectures": ["T5ForConditionalGeneration"],
        "n_positions": 512, "decoder_start_token_id": 0}), "utf-8")
    body = {"model": str(tmp_path), "prompt": "Hello world"}
    with pytest.raises(RenderUnsupportedError, match=r"vLLM 0\.29\.0 does not start"):
        Renderer(ServerOptions(model=str(tmp_path), vllm_version="0.29.0")).render(
            "/v1/completions", body)
    with pytest.raises(RenderRequestError, match="No token_ids rendered"):
        Renderer(ServerOptions(model=str(tmp_path))).render("/v1/completions", body)
    assert {c.status for c in CASES if c.real in ENCODER_DECODER
            and c.endpoint == "/v1/completions"} == {400}


#: SiglipModel is a pooling architecture (render/_runner_facts.py): its truncating bodies
#: (``siglip_py/completion-truncate*``) are cut on the right, special tokens counted in.
@each_case(CASES)
def test_vllm_rendering_of_sentencepiece_python_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)


#: Releases whose answers for the corpus were harvested and are kept compactly
#: (tools/build_real_pyspm_bodies.py ``--keep-release``), and the folders each answered:
#: vLLM 0.29.0 starts none of the encoder-decoder architectures.
KEPT = {"0.29.0": frozenset({"gpt_sw3_py", "bert_generation_py", "siglip_py"}),
        "0.30.0": frozenset(FOLDER_CLASSES), "0.32.0": frozenset(FOLDER_CLASSES),
        "0.33.0": frozenset(FOLDER_CLASSES)}
#: transformers 5.19 (vLLM 0.32, 0.33) and 5.24 (0.29, 0.30) widened GPTSw3Tokenizer's
#: whitespace set: the bodies with an em space answer otherwise than 0.31.0's.
WIDER_SPACES = {"gpt_sw3_py/chat-system-user", "gpt_sw3_py/chat-text-specials-spaced",
                "gpt_sw3_py/chat-after-special-specials-spaced",
                "gpt_sw3_py/completion-specials-spaced",
                "gpt_sw3_py/completion-specials-spaced-no-specials"}


def _release_renderer(release: str, real: str) -> Renderer:
    return real_renderer(CASES, real, release)


def test_the_kept_releases_answered_every_body_and_gpt_sw3_spaces_differ() -> None:
    base = {c.id: c.token_ids for c in CASES}
    for release, folders in KEPT.items():
        kept = kept_vectors(release, "real_py_spm_")
        assert set(kept) == {c.id for c in CASES if c.real in folders}
        differ = {k for k, v in kept.items() if v["token_ids"] != base[k]}
        assert differ == WIDER_SPACES, release


@each_release_case(release_table("real_py_spm_", {
    release: set(FOLDER_CLASSES) - folders for release, folders in sorted(KEPT.items())}))
def test_a_kept_release_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


@pytest.mark.parametrize(("release", "real"), [
    ("0.29.0", real) for real in sorted(set(FOLDER_CLASSES) - KEPT["0.29.0"])])
def test_a_release_not_harvested_refuses_the_classes(release: str, real: str) -> None:
    """Refused: the release's start-up for the architecture says why (vLLM 0.29.0 starts
    none of the encoder-decoder ones), or that the class was not checked against that
    release's answers (a folder whose model type is another's, GPT-SW3's config being
    gpt2)."""
    with pytest.raises(RenderUnsupportedError,
                       match=f"vLLM {release} (does not start|starts for was not probed)|"
                             f"not vLLM {release}'s; not verified"):
        _release_renderer(release, real)


def test_each_class_renders_the_releases_that_answered_it() -> None:
    """``PythonCodec.releases``: the releases whose server answered the class's folders
    (the kept ones and 0.31.0's own), or its GPT-2 twin's (real_py_gpt2_); any other
    refuses it."""
    for real, cls in FOLDER_CLASSES.items():
        twin = GPT2_PY_RELEASES if cls in GPT2_PY_FOLDERS.values() else frozenset()
        answered = frozenset({r for r, folders in KEPT.items() if real in folders}
                             | {"0.31.0"} | twin)
        assert PYTHON_CODECS[cls].releases == answered, cls
