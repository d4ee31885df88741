"""An encoder-decoder config: vLLM renders its chat, and no completion.

``real_encdec_bodies.jsonl`` (tools/build_real_encdec_bodies.py) holds chat, completion
and token-id bodies over ``mbart_encdec`` (tests/render/real/): MBartTokenizer's folder
under mBART's own config (MBartForConditionalGeneration, ``is_encoder_decoder``).
``real_encdec_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py): its chat ids are those of any model, and every completion
(text or token ids) is a 400 "No token_ids rendered": vLLM takes an encoder-decoder
model's encoder prompt ids, which its completion renderer leaves empty. Each answer must
replay: every 200 the same ids, every error an error with the same status.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from render_cases import RenderCase, assert_replays, real_renderer, render_cases

from prefixkey.render import Renderer, RenderRequestError, ServerOptions

CASES = render_cases("real_encdec_")


def test_vllm_renders_chat_and_no_completion() -> None:
    for case in CASES:
        chat = case.endpoint == "/v1/chat/completions"
        assert (case.status, case.error and case.error["message"]) == (
            (200, None) if chat else (400, "No token_ids rendered")), case.id
    assert any(c.endpoint == "/v1/completions" and isinstance(c.body["prompt"], list)
               for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_vllm_rendering_of_the_folder_replays(case: RenderCase) -> None:
    assert_replays(real_renderer(CASES, "mbart_encdec", 512), case)


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
