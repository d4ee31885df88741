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

from render_cases import (
    RenderCase,
    assert_covers_both_answers,
    assert_server_replays,
    each_case,
    render_cases,
)

CASES = render_cases("real_hf_")


def test_the_corpus_covers_every_folder_and_both_answers() -> None:
    assert_covers_both_answers(CASES, ("qwen3", "deepseek_v3", "gemma3", "llama3", "llama3_1",
                                       "llama2", "mistral_hf_llama2tok"))


@each_case(CASES)
def test_vllm_rendering_of_real_folders_replays(case: RenderCase) -> None:
    assert_server_replays(case)
