"""Replay vLLM 0.31.0's rendering of real Hugging Face model folders through prefixkey.render.

``real_hf_bodies.jsonl`` (tools/build_real_hf_bodies.py) holds chat and completions
bodies over the real folders of tests/render/real/ (Qwen3, DeepSeek-V3, Gemma 3,
Llama 3, the @lenml llama3_1 package's files (its template is Llama 3's), the @lenml
llama2 package's files (labelled Llama 2, their vocabulary is Mistral 7B's), and
``model_type`` mistral with ``LlamaTokenizer`` on the same files); ``real_hf_vectors.jsonl``
what vLLM's render server answered (tools/harvest_render.py). Every 200 must give the
same ids, every vLLM error an error with the same status. The folders' tokenizer files are
fetched into a cache (tests/real_models.py): without it these tests skip, under CI they
fetch.
"""

from __future__ import annotations

import json
from functools import cache

from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_replays,
    each_case,
    render_cases,
)

from prefixkey.render import Renderer, ServerOptions

CASES = render_cases("real_hf_")
FLAGS = {
    "--served-model-name": "served_model_name", "--max-model-len": "max_model_len",
    "--enable-auto-tool-choice": "enable_auto_tool_choice",
    "--tool-call-parser": "tool_call_parser",
}


@cache
def renderer(real: str, server: str) -> Renderer:
    case = next(c for c in CASES if c.real == real)
    fields = {FLAGS[k]: v for k, v in json.loads(server).items()}
    return Renderer(ServerOptions(model=str(case.folder()), **fields))


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, ("qwen3", "deepseek_v3", "gemma3", "llama3", "llama3_1",
                                       "llama2", "mistral_hf_llama2tok"))


@each_case(CASES)
def test_vllm_rendering_of_real_folders_replays(case: RenderCase) -> None:
    assert case.real is not None
    r = renderer(case.real, json.dumps(case.server, sort_keys=True))
    assert_replays(r, case)
