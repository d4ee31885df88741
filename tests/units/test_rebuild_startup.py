"""Rebuilding classes' model types vLLM may not start for: the refusals' truth.

A refused rebuild's row and refusal say which architectures vLLM's render server starts
for (render/_vllm_startup.py, from tools/probe_vllm_startup.py's facts), and a folder
naming only architectures it does not start for is refused as such (real render servers:
a folder of LayoutLMv3Model exits "not supported for now"; MarkupLM, Udop and Lasr
folders start, tests/render/test_real_layout_vectors.py replays their answers).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_python_tokenizers import folder, refusal

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._hf_decision import decide_tokenizer
from prefixkey.render._vllm_startup import BASE_STARTUP, vllm_startup

#: The rebuilding classes' model types whose start-up was asked about when prefixkey did
#: not reproduce them (issue 19).
REBUILT_TYPES = frozenset({
    "esmc", "esmfold2", "lasr_ctc", "lasr_encoder", "layoutlmv2", "layoutlmv3", "layoutxlm",
    "luke", "markuplm", "mbart", "nllb-moe", "pegasus", "reformer", "rembert", "roformer",
    "seamless_m4t", "seamless_m4t_v2", "splinter", "tipsv2", "udop", "videoprism", "xglm"})


def _starts(model_type: str) -> set[bool | None]:
    return {vllm_startup((a,), model_type, "0.31.0").starts
            for a in BASE_STARTUP.ARCHITECTURES.get(model_type, ())}


def _why(model_type: str) -> str:
    return decide_tokenizer(model_type=model_type, architectures=[], tokenizer_mode="auto",
                            tokenizer_config={}, config={"model_type": model_type},
                            name="/m", has_tokenizer_json=True).why


@pytest.mark.parametrize(("model_type", "architecture", "cls"), [
    ("layoutlmv2", "LayoutLMv2ForTokenClassification", "LayoutLMv2Tokenizer"),
    ("layoutlmv3", "LayoutLMv3Model", "LayoutLMv3Tokenizer"),
    ("luke", "LukeForMaskedLM", "LukeTokenizer"),
    ("roformer", "RoFormerForCausalLM", "RoFormerTokenizer")])
def test_a_refused_rebuild_vllm_does_not_start_for_is_refused_as_such(
        tmp_path: Path, model_type: str, architecture: str, cls: str) -> None:
    assert _starts(model_type) == {False}
    (tmp_path / "tokenizer.json").write_text("{}", "utf-8")
    text = refusal(folder(tmp_path, model_type, architecture))
    assert (f"architecture {architecture!r} (model_type {model_type!r}): vLLM 0.31.0 does "
            "not start for it") in text
    assert "starts for none of its architectures" in _why(model_type)
    assert cls in _why(model_type)


def test_a_layoutxlm_folder_is_refused_for_its_layoutlmv2_architecture(tmp_path: Path) -> None:
    """LayoutXLM's folders are LayoutLMv2's config with the hub class LayoutXLMTokenizer:
    vLLM does not start for the architecture, whatever the class."""
    (tmp_path / "tokenizer.json").write_text("{}", "utf-8")
    text = refusal(folder(tmp_path, "layoutlmv2", "LayoutLMv2Model",
                          {"tokenizer_class": "LayoutXLMTokenizer"}))
    assert "vLLM 0.31.0 does not start for it" in text


def test_no_probed_rebuild_vllm_starts_for_is_left_unreproduced() -> None:
    # Each refusal of a probed type says vLLM does not start for it, or (RoFormer) what
    # vLLM's install lacks: no type vLLM starts for keeps "does not reproduce" alone.
    # (tipsv2 and videoprism: vLLM runs some architectures with its Transformers
    # backend's multimodal class, whose start-up needs the model's processor: not known.)
    started = {t for t in REBUILT_TYPES if True in _starts(t)}
    assert "mbart" in started  # reproduced since (MBartForConditionalGeneration starts)
    assert [t for t in sorted(started) if "which prefixkey does not reproduce" in _why(t)
            and "rjieba" not in _why(t)] == []


def test_a_release_that_did_not_probe_the_type_refuses_its_reproduction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A release whose start-up was not probed: not verified there."""
    import real_models

    from prefixkey.render import _vllm_startup

    source = real_models.folder("markuplm_rule")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    monkeypatch.setattr(_vllm_startup, "startup_facts", lambda version: None)
    with pytest.raises(RenderUnsupportedError, match="was not probed") as info:
        Renderer(ServerOptions(model=str(tmp_path), vllm_version="0.29.0")).render(
            "/v1/completions", {"model": str(tmp_path), "prompt": "x"})
    assert "0.29.0" in str(info.value)


def test_a_roformer_hub_class_is_refused_naming_rjieba(tmp_path: Path) -> None:
    """RoFormerTokenizer under an architecture vLLM starts for: vLLM 0.31.0's server exits
    with "You need to install rjieba to use RoFormerTokenizer" (a real start-up on such a
    folder); the refusal says so, and that jieba's segmentation is not reproduced."""
    (tmp_path / "tokenizer.json").write_text("{}", "utf-8")
    text = refusal(folder(tmp_path, "gpt2", "GPT2LMHeadModel",
                          {"tokenizer_class": "RoFormerTokenizer"}))
    assert "You need to install rjieba" in text
    assert "jieba's" in text and "prefixkey does not reproduce" in text


def test_vllm_0_29_does_not_start_a_markuplm_folder(tmp_path: Path) -> None:
    """vLLM 0.29.0's render server exits on markuplm_rule ("Model architectures
    ['MarkupLMForQuestionAnswering'] are not supported for now", a real start-up), where
    0.30.0's to 0.32.0's render it (real_layout_ corpora): refused as such under 0.29.0."""
    import real_models

    source = real_models.folder("markuplm_rule")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    with pytest.raises(RenderUnsupportedError, match=r"vLLM 0\.29\.0 does not start for it"):
        Renderer(ServerOptions(model=str(tmp_path), vllm_version="0.29.0")).render(
            "/v1/completions", {"model": str(tmp_path), "prompt": "x"})
