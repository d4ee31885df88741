"""Whether vLLM's render server starts for a folder, per release: one rule, every path.

render/_vllm_startup.py applies each release's start-up facts (tools/probe_vllm_startup.py)
to the architectures of every folder prefixkey renders, whatever its tokenizer path. The
table's answers are real start-ups: vLLM's own ``create_model_config`` on a minimal folder
of the architecture (``probe_vllm_startup.py --startup``, run under each release's install),
confirmed for some by a real render server (the tool's docstring) or by harvested corpora
(a folder with answers: its server started).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._eras import render_release, verified_releases
from prefixkey.render._vllm_startup import check_vllm_starts, vllm_startup

ROOT = Path(__file__).resolve().parent.parent.parent
RELEASES = verified_releases()

#: (model_type, architecture) -> the releases whose start-up accepted it (probe_vllm_startup.py
#: --startup under each release's vision-capable install: a class, where the others answered
#: "not supported for now" or, for mBART at 0.29.0, "not supported in-tree anymore").
STARTED: dict[tuple[str, str], frozenset[str]] = {
    ("llama", "LlamaForCausalLM"): frozenset(RELEASES),
    ("gpt2", "GPT2LMHeadModel"): frozenset(RELEASES),
    ("mbart", "MBartForConditionalGeneration"): frozenset(
        {"0.30.0", "0.31.0", "0.32.0", "0.33.0"}),
    ("mbart", "MBartForCausalLM"): frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"}),
    ("biogpt", "BioGptForCausalLM"): frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"}),
    ("wav2vec2", "Wav2Vec2ForCTC"): frozenset({"0.30.0", "0.31.0", "0.32.0", "0.33.0"}),
    ("markuplm", "MarkupLMForQuestionAnswering"): frozenset(
        {"0.30.0", "0.31.0", "0.32.0", "0.33.0"}),
    ("layoutlmv3", "LayoutLMv3Model"): frozenset({"0.30.0"}),
    ("canine", "CanineModel"): frozenset(),
    ("xlm", "XLMWithLMHeadModel"): frozenset(),
}


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("model_type", "architecture"), sorted(STARTED))
def test_the_rule_answers_as_each_release_started(release: str, model_type: str,
                                                  architecture: str) -> None:
    found = vllm_startup((architecture,), model_type, release)
    assert found.starts is (release in STARTED[model_type, architecture]), found.why


def _mbart(tmp_path: Path) -> Path:
    import real_models

    source = real_models.folder("mbart_cc25")
    for file in source.iterdir():
        if file.is_file() and file.name != "fetched.json":
            (tmp_path / file.name).write_bytes(file.read_bytes())
    return tmp_path


def test_an_mbart_folder_is_refused_under_0_29_and_rendered_under_0_31(tmp_path: Path) -> None:
    """vLLM 0.29.0 starts neither mBART architecture (MBartForCausalLM: "not supported for
    now"; MBartForConditionalGeneration: "not supported in-tree anymore", its bart plugin);
    0.31.0's server answered mbart_cc25's bodies (real_lang_vectors.jsonl)."""
    path = _mbart(tmp_path)
    with pytest.raises(RenderUnsupportedError) as info:
        Renderer(ServerOptions(model=str(path), vllm_version="0.29.0"))
    assert info.value.field == "config.json"
    assert ("architecture 'MBartForCausalLM' (model_type 'mbart'): vLLM 0.29.0 does not start "
            "for it") in str(info.value)
    (rendered,) = Renderer(ServerOptions(model=str(path), vllm_version="0.31.0")
                           ).render_completion({"prompt": "hello"})
    assert rendered.request.token_ids


@pytest.mark.parametrize("release", RELEASES)
def test_an_as_is_folder_vllm_does_not_start_for_is_refused_on_every_release(
        tmp_path: Path, release: str) -> None:
    """An as-is tokenizer (no rebuild, no Python class) is checked too: a folder naming
    only CanineModel gets no ids from any release."""
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "canine", "architectures": ["CanineModel"],
         "max_position_embeddings": 512, "tokenizer_class": "PreTrainedTokenizerFast"}),
        "utf-8")
    (tmp_path / "tokenizer.json").write_text(json.dumps(
        {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": None,
         "post_processor": None, "decoder": None,
         "model": {"type": "WordLevel", "vocab": {"a": 0, "[UNK]": 1}, "unk_token": "[UNK]"}}),
        "utf-8")
    with pytest.raises(RenderUnsupportedError, match=rf"vLLM {release} does not start for it"):
        Renderer(ServerOptions(model=str(tmp_path), vllm_version=release))


def test_unknown_architectures_and_guesses_are_refused_as_unverified() -> None:
    for release in RELEASES:
        with pytest.raises(RenderUnsupportedError, match="not verified"):
            check_vllm_starts(("NoSuchModelForCausalLM",), "llama", release)
    # A multimodal type's Transformers backend loads its processor at start-up.
    found = vllm_startup(("Tipsv2Model",), "tipsv2", "0.31.0")
    assert found.starts is None and "processor" in found.why


@pytest.mark.parametrize("release", RELEASES)
def test_the_startup_facts_are_those_of_the_installed_vllm(release: str) -> None:
    from vllm_venvs import vllm_command

    python, env = vllm_command(release, test="tests/units/test_vllm_startup.py", vision=True)
    module = render_release(release).startup_facts
    assert module is not None
    done = subprocess.run([str(python), "tools/probe_vllm_startup.py", "--check",
                           "--out", f"prefixkey/render/{module}.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("release", RELEASES)
def test_the_rule_agrees_with_real_startups(release: str) -> None:
    """vLLM's own start-up step on a minimal folder of each architecture of a few types:
    started exactly when the rule says (a minimal folder has no processor: "error: ..."
    rows, multimodal types, are left out)."""
    from vllm_venvs import vllm_command

    python, env = vllm_command(release, test="tests/units/test_vllm_startup.py", vision=True)
    types = "biogpt,canine,layoutlmv3,mbart,wav2vec2,xlm"
    done = subprocess.run([str(python), "tools/probe_vllm_startup.py", "--startup", types],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout.splitlines()[-1])
    assert set(answers) == set(types.split(","))
    for model_type, row in answers.items():
        for arch, cls in row.items():
            found = vllm_startup((arch,), model_type, release)
            started = cls is not None and not cls.startswith("error: ")
            assert found.starts is started, (arch, cls, found.why)


@pytest.mark.parametrize("release", RELEASES)
def test_a_config_without_architectures_gets_its_types_base_class(release: str) -> None:
    """vLLM's config reader fills a config.json naming no architectures with its model
    type's transformers base class (MODEL_MAPPING_NAMES; its answers:
    tests/render/test_real_trunc_vectors.py ``byt5_noarch``, GPT2Model run as a pooling
    model); a type without one (or with a pair of classes) is refused."""
    from prefixkey.render._folder import config_architectures

    assert config_architectures({"model_type": "gpt2"}, release) == ("GPT2Model",)
    assert config_architectures({"model_type": "gpt2", "architectures": []},
                                release) == ("GPT2Model",)
    assert config_architectures({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]},
                                release) == ("GPT2LMHeadModel",)
    for model_type, why in (("funnel", "as one architecture"), ("nonesuch", "no base class")):
        with pytest.raises(RenderUnsupportedError, match=why):
            config_architectures({"model_type": model_type}, release)
