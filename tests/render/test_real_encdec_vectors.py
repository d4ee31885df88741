"""An encoder-decoder config: vLLM renders its chat, and no completion.

``real_encdec_bodies.jsonl`` (tools/build_real_encdec_bodies.py) holds chat, completion
and token-id bodies over ``mbart_encdec`` (tests/render/real/): MBartTokenizer's folder
under mBART's own config (MBartForConditionalGeneration, ``is_encoder_decoder``).
``real_encdec_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py): its chat ids are those of any model, and every completion
(text or token ids) is a 400 "No token_ids rendered": vLLM takes an encoder-decoder
model's encoder prompt ids, which its completion renderer leaves empty. Each answer must
replay: every 200 the same ids, every error an error with the same status.
``real_encdec_032_`` is the same bodies answered by vLLM 0.32.0's server, replayed with
``vllm_version`` set (vLLM 0.29.0 does not start for MBartForConditionalGeneration: "not
supported in-tree anymore").
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from render_cases import RenderCase, assert_replays, render_cases

from prefixkey.render import Renderer, RenderRequestError, ServerOptions

#: Corpus prefix -> the release whose render server answered it.
RELEASES = {"real_encdec_": "0.31.0", "real_encdec_032_": "0.32.0"}
ALL_CASES = {prefix: render_cases(prefix) for prefix in RELEASES}
CASES = ALL_CASES["real_encdec_"]


def test_vllm_renders_chat_and_no_completion() -> None:
    for case in (c for cases in ALL_CASES.values() for c in cases):
        chat = case.endpoint == "/v1/chat/completions"
        assert (case.status, case.error and case.error["message"]) == (
            (200, None) if chat else (400, "No token_ids rendered")), case.id
    assert any(c.endpoint == "/v1/completions" and isinstance(c.body["prompt"], list)
               for c in CASES)


@lru_cache(maxsize=1)  # an XLM-RoBERTa-size Unigram tokenizer holds about 260 MB
def renderer(prefix: str) -> Renderer:
    return Renderer(ServerOptions(model=str(CASES[0].folder()),
                                  served_model_name=("real-mbart_encdec",), max_model_len=512,
                                  vllm_version=RELEASES[prefix]))


@pytest.mark.parametrize(("prefix", "case"), [(p, c) for p, cases in ALL_CASES.items()
                                               for c in cases],
                         ids=[f"{p}{c.id}" for p, cases in ALL_CASES.items() for c in cases])
def test_vllm_rendering_of_the_folder_replays(prefix: str, case: RenderCase) -> None:
    assert_replays(renderer(prefix), case)


def test_a_config_without_the_flag_takes_its_model_types_default(tmp_path: Path) -> None:
    """MBartConfig's ``is_encoder_decoder`` defaults to true (transformers 5.17
    models/mbart/configuration_mbart.py): a config.json that does not say is an
    encoder-decoder's too; one that says false renders completions (mbart_cc25,
    test_real_lang_vectors.py)."""
    source = CASES[0].folder()
    folder = tmp_path / "mbart"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).symlink_to(source / name)
    (folder / "config.json").write_text(json.dumps(
        {"architectures": ["MBartForConditionalGeneration"], "model_type": "mbart"}))
    renderer = Renderer(ServerOptions(model=str(folder), served_model_name=("m",),
                                      max_model_len=512))
    assert renderer.folder.encoder_decoder
    with pytest.raises(RenderRequestError, match="No token_ids rendered") as info:
        renderer.render("/v1/completions", {"model": "m", "prompt": "Hello world"})
    assert info.value.status == 400
    chat = renderer.render("/v1/chat/completions",
                           {"model": "m", "messages": [{"role": "user", "content": "Hi"}]})
    assert chat[0].token_ids
