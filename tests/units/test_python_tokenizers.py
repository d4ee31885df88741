"""Python tokenizers (no ``tokenizers`` backend): what is reproduced, and the refusals' truth.

transformers' Python tokenizer classes are refused unless render/_hf_python.py records
them (byte and code point tokenizers). A model type registering one says which of its
architectures vLLM 0.31's render server starts for (render/_vllm_startup.py, from the
facts tools/probe_vllm_startup.py writes); a folder naming only architectures vLLM does
not start for is refused as such.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prefixkey.render import ModelFolderError, Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_decision import decide_tokenizer
from prefixkey.render._vllm_startup import BASE_STARTUP, vllm_startup


def started(model_type: str) -> list[str]:
    """The type's architectures vLLM 0.31.0 starts for, each alone."""
    return [a for a in BASE_STARTUP.ARCHITECTURES.get(model_type, ())
            if vllm_startup((a,), model_type, "0.31.0").starts]


def folder(tmp_path: Path, model_type: str, architecture: str,
           tokenizer_config: dict[str, object] | None = None) -> Path:
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": model_type, "architectures": [architecture],
         "max_position_embeddings": 512}), "utf-8")
    if tokenizer_config is not None:
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(tokenizer_config), "utf-8")
    return tmp_path


def refusal(path: Path) -> str:
    with pytest.raises(RenderUnsupportedError) as info:
        Renderer(ServerOptions(model=str(path)))
    return str(info.value)


def test_no_type_vllm_starts_for_keeps_the_general_python_refusal() -> None:
    # Every Python tokenizer of a model type some architecture of which vLLM 0.31 starts
    # (probed) is reproduced (render/_hf_python.py) or refused for a reason of its own
    # (PYTHON_REFUSED, e.g. the library vLLM's install lacks): "does not reproduce" is left
    # only to types vLLM never starts, where no replica could be routed to.
    general = []
    for model_type in BASE_STARTUP.ARCHITECTURES:
        if not started(model_type):
            continue
        decision = decide_tokenizer(model_type=model_type, architectures=started(model_type),
                                    tokenizer_mode="auto", tokenizer_config={},
                                    config={"model_type": model_type}, name="folder",
                                    has_tokenizer_json=False)
        if decision.path == "refused" and "is a Python tokenizer (no tokenizers backend), " \
                "which prefixkey does not reproduce" in decision.why:
            general.append(model_type)
    assert general == []


def test_biogpt_is_refused_for_the_library_vllms_install_lacks(tmp_path: Path) -> None:
    # vLLM 0.31.0's render server on a biogpt folder (vocab.json, merges.txt) exits with
    # "ImportError: You need to install sacremoses to use BioGptTokenizer".
    text = refusal(folder(tmp_path, "biogpt", "BioGptForCausalLM"))
    assert "BioGptTokenizer is a Python tokenizer whose __init__ imports sacremoses" in text
    assert "vLLM's render server does not start" in text
    assert "You need to install sacremoses to use BioGptTokenizer" in text


@pytest.mark.parametrize(("name", "text"), [
    ("BasicTokenizer", "not a tokenizer (it has no from_pretrained)"),
    ("FastSpeech2ConformerTokenizer", "imports g2p_en"),
    ("FlaubertTokenizer", "imports sacremoses"),
    ("CpmAntTokenizer", "imports rjieba")])
def test_a_class_named_by_tokenizer_class_is_refused_with_its_reason(
        tmp_path: Path, name: str, text: str) -> None:
    assert text in refusal(folder(tmp_path, "gpt2", "GPT2LMHeadModel",
                                  {"tokenizer_class": name}))


@pytest.mark.parametrize(("model_type", "architecture", "missing"), [
    ("ctrl", "CTRLLMHeadModel", "vocab.json"),
    ("blenderbot-small", "BlenderbotSmallForCausalLM", "merges.txt")])
def test_a_fastbpe_folder_without_its_files_is_an_error_naming_them(
        tmp_path: Path, model_type: str, architecture: str, missing: str) -> None:
    path = folder(tmp_path, model_type, architecture)
    if missing == "merges.txt":
        (path / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(
            ("__start__", "__end__", "__unk__", "__null__"))}), "utf-8")
    with pytest.raises(ModelFolderError, match=missing.replace(".", r"\.")):
        Renderer(ServerOptions(model=str(path)))


def test_a_ctc_folder_without_its_vocabulary_is_an_error_naming_it(tmp_path: Path) -> None:
    path = folder(tmp_path, "wav2vec2", "Wav2Vec2ForCTC")
    with pytest.raises(ModelFolderError, match=r"vocab\.json"):
        Renderer(ServerOptions(model=str(path)))


@pytest.mark.parametrize(("model_type", "architecture"), [
    ("xlm", "XLMWithLMHeadModel"), ("canine", "CanineModel"), ("perceiver", "PerceiverModel"),
    ("speecht5", "SpeechT5ForTextToSpeech"), ("vits", "VitsModel")])
def test_a_folder_vllm_does_not_start_for_is_refused_as_such(
        tmp_path: Path, model_type: str, architecture: str) -> None:
    assert vllm_startup((architecture,), model_type, "0.31.0").starts is False
    text = refusal(folder(tmp_path, model_type, architecture))
    assert (f"architecture {architecture!r} (model_type {model_type!r}): vLLM 0.31.0 does "
            "not start for it") in text
    assert "no vLLM server tokenizes this folder" in text


def test_the_table_rows_say_what_vllm_starts_for() -> None:
    def why(model_type: str) -> str:
        return decide_tokenizer(model_type=model_type, architectures=[], tokenizer_mode="auto",
                                tokenizer_config={}, config={"model_type": model_type},
                                name="/m", has_tokenizer_json=True).why
    assert "vLLM 0.31.0 starts for none of its architectures" in why("tapas")
    assert "TapasForMaskedLM" in why("tapas")
    assert "vLLM 0.31.0 starts for GPT2ForSequenceClassification" in why("gpt-sw3")
    assert "list no architecture of it" in why("rag")
    assert "processor" in why("dia") and "not known" in why("dia")
    # Reproduced, yet vLLM starts for none of the type's own architectures: both said.
    canine = decide_tokenizer(model_type="canine", architectures=[], tokenizer_mode="auto",
                              tokenizer_config={}, config={"model_type": "canine"},
                              name="/m", has_tokenizer_json=False)
    assert canine.path == "python" and "starts for none" in canine.why


def test_a_type_of_a_reproduced_class_renders_under_an_architecture_vllm_serves(
        tmp_path: Path) -> None:
    path = folder(tmp_path, "canine", "GPT2LMHeadModel")
    (rendered,) = Renderer(ServerOptions(model=str(path))).render_completion({"prompt": "hé"})
    assert list(rendered.request.token_ids) == [0xE000, ord("h"), ord("é"), 0xE001]


@pytest.mark.parametrize(("setting", "field"), [
    ({"eos_token": "<eos>"}, "eos_token"), ({"extra_ids": 3}, "extra_ids"),
    ({"do_lower_case": True}, "do_lower_case"),
    ({"additional_special_tokens": ["<x>"]}, "additional_special_tokens")])
def test_settings_a_codec_does_not_record_are_refused(
        tmp_path: Path, setting: dict[str, object], field: str) -> None:
    path = folder(tmp_path, "gpt2", "GPT2LMHeadModel",
                  {"tokenizer_class": "ByT5Tokenizer", **setting})
    assert field in refusal(path)
