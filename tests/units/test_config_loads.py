"""Whether vLLM's config reader loads a folder's config.json, per release: one rule.

vLLM registers its own config classes (``_CONFIG_REGISTRY``) with transformers'
``AutoConfig``, which then loads config.json by its ``model_type``
(``CONFIG_MAPPING``); a type neither has fails the server's start-up (its ModelConfig's
validation error), so prefixkey refuses the folder (render/_folder.py
``check_config_loads``) over each release's facts (``CONFIG_MODEL_TYPES``,
``VLLM_CONFIG_TYPES``: tools/extract_hf_tokenizers.py). The table's answers are vLLM's
own: its config reader run on a minimal config.json under each release's install
(:func:`test_the_rule_agrees_with_vllms_config_reader`), and for gte and deepseek_v41 the
harvested corpora (real_drift_, real_dsv4_: answered where loaded, a start failure else).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from prefixkey.render import ModelFolderError
from prefixkey.render._eras import verified_releases
from prefixkey.render._folder import check_config_loads

ROOT = Path(__file__).resolve().parent.parent.parent
RELEASES = verified_releases()

#: model_type -> the releases whose config reader loads a config.json of it (and no
#: auto_map): transformers' (gte, minicpmv4_7: not 5.17's, 0.31.0's), vLLM's own (chatglm,
#: RefinedWeb; deepseek_v41 from 0.30.0), both (llama), neither (nonesuch; minicpmv4_7
#: at 0.31.0).
LOADED: dict[str, frozenset[str]] = {
    "llama": frozenset(RELEASES),
    "chatglm": frozenset(RELEASES),
    "RefinedWeb": frozenset(RELEASES),
    "gte": frozenset(RELEASES) - {"0.31.0"},
    "deepseek_v41": frozenset(RELEASES) - {"0.29.0"},
    "minicpmv4_7": frozenset(RELEASES) - {"0.31.0"},
    "nonesuch": frozenset(),
}
#: auto_map names an AutoConfig (the model's own code): transformers' own message when
#: the type is unknown, as vLLM's server exits with it (run without --trust-remote-code).
REASONS = {
    False: "has model type `{t}` but Transformers does not recognize this architecture",
    True: "The repository {path} contains custom code which must be executed",
}


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("model_type", sorted(LOADED))
@pytest.mark.parametrize("remote", [False, True])
def test_the_rule_answers_as_each_release_loaded(release: str, model_type: str,
                                                 remote: bool, tmp_path: Path) -> None:
    config = {"model_type": model_type} | (
        {"auto_map": {"AutoConfig": "configuration_x.XConfig"}} if remote else {})
    if release in LOADED[model_type]:
        check_config_loads(config, tmp_path, release)
        return
    with pytest.raises(ModelFolderError) as info:
        check_config_loads(config, tmp_path, release)
    assert info.value.field == "config.json"
    assert f"nor vLLM {release}'s own config registry" in str(info.value)
    assert "ValidationError: 1 validation error for ModelConfig" in str(info.value)
    assert REASONS[remote].format(t=model_type, path=tmp_path) in str(info.value)


def test_a_config_without_a_model_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelFolderError, match="has no model_type"):
        check_config_loads({"architectures": ["LlamaForCausalLM"]}, tmp_path, "0.31.0")


#: Run by a release's interpreter: vLLM's config reader on each minimal folder, the
#: folder's model type -> "loaded" or its error message.
_PROBE = """
import json, sys
from vllm.transformers_utils.config import get_config
answers = {}
for path in sys.argv[1:]:
    model_type = json.load(open(path + "/config.json"))["model_type"]
    try:
        get_config(path, trust_remote_code=False)
        answers[model_type] = "loaded"
    except Exception as exc:
        answers[model_type] = str(exc)
print(json.dumps(answers))
"""


@pytest.mark.parametrize("release", RELEASES)
def test_the_rule_agrees_with_vllms_config_reader(release: str, tmp_path: Path) -> None:
    from vllm_venvs import vllm_command

    python, env = vllm_command(release, test="tests/units/test_config_loads.py")
    folders = []
    for model_type in sorted(LOADED):
        folder = tmp_path / model_type
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"model_type": model_type}), "utf-8")
        folders.append(str(folder))
    done = subprocess.run([str(python), "-c", _PROBE, *folders], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout.splitlines()[-1])
    for model_type, answer in answers.items():
        assert (answer == "loaded") is (release in LOADED[model_type]), (model_type, answer)
        if answer != "loaded":
            assert REASONS[False].format(t=model_type) in answer
