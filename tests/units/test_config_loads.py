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

The same rule refuses RoPE fields a release's config reader fails on for a known type
(the facts' ``ROPE_LOAD_FAILURES``): the beam table is what vLLM 0.29.0's render server
and each release's ``get_config`` answered (:data:`BEAM_STARTS`), and the venv-gated
comparison runs each release's config reader on the same configs for several types.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from prefixkey.render import ModelFolderError
from prefixkey.render._eras import verified_releases
from prefixkey.render._folder import ModelFolder, check_config_loads, rope_variant

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


#: RoPE fields of a config.json, by the variant the rule reads them as
#: (render/_folder.py ``rope_variant``; None: given in full, loaded as given).
_ROPE = {"rope_type": "default", "rope_theta": 10000.0}
ROPE_CONFIGS: dict[str, tuple[dict[str, object], str | None]] = {
    "absent": ({}, "absent"),
    "null": ({"rope_parameters": None}, "null"),
    "layer_none": ({"rope_parameters": {"sliding_attention": _ROPE, "full_attention": None}},
                   "layer_none"),
    "layers": ({"rope_parameters": {"sliding_attention": _ROPE, "full_attention": _ROPE}},
               "layers"),
    "one_layer": ({"rope_parameters": {"sliding_attention": _ROPE}}, None),
    "other_layers": ({"rope_parameters": {"sliding_attention": _ROPE, "linear_attention": None}},
                     None),
    "flat": ({"rope_parameters": _ROPE}, None),
}
_NONE_LAYER = "TypeError: argument of type 'NoneType' is not iterable"
#: release -> RoPE config -> the exception a beam (BeamForCausalLM) config.json's server
#: start-up fails with, or None where it starts. Seen: vLLM 0.29.0's render server on
#: the drift_beam folder's files without rope_parameters (absent) and with
#: ``"rope_parameters": null`` exits 1 with _NONE_LAYER (transformers 5.24's BeamConfig
#: fills {"sliding_attention": {...}, "full_attention": None}, and 0.29's
#: patch_legacy_rope_type iterates the None; 0.30 skips it); one_layer is the drift_beam
#: folder every release whose config reader knows beam answered (real_drift_ vectors);
#: the rest each release's get_config (test_the_rope_rule_agrees_with_vllms_config_reader).
#: vLLM 0.33 loads beam with its own BeamConfig, which flattens a per-layer mapping to
#: its one given layer type. 0.31/0.32 know no beam (LOADED's rule answers).
BEAM_STARTS: dict[str, dict[str, str | None]] = {
    "0.29.0": {"absent": _NONE_LAYER, "null": _NONE_LAYER, "layer_none": _NONE_LAYER,
               "layers": None, "one_layer": None, "flat": None},
    "0.30.0": dict.fromkeys(set(ROPE_CONFIGS) - {"other_layers"}),
    "0.33.0": {"absent": None, "null": "TypeError: 'NoneType' object is not iterable",
               "layer_none": None,
               "layers": "ValueError: Beam expects RoPE parameters for exactly one type.",
               "one_layer": None, "flat": None},
}


@pytest.mark.parametrize("name", sorted(ROPE_CONFIGS))
def test_a_config_s_rope_variant(name: str) -> None:
    config, variant = ROPE_CONFIGS[name]
    assert rope_variant({"model_type": "beam"} | config) == variant


@pytest.mark.parametrize(("release", "name"),
                         [(r, n) for r, table in sorted(BEAM_STARTS.items()) for n in table])
def test_beam_s_rope_fields_start_as_each_release_started(release: str, name: str,
                                                          tmp_path: Path) -> None:
    config = {"model_type": "beam", "architectures": ["BeamForCausalLM"]} | ROPE_CONFIGS[name][0]
    failure = BEAM_STARTS[release][name]
    if failure is None:
        check_config_loads(config, tmp_path, release)
        return
    with pytest.raises(ModelFolderError) as info:
        check_config_loads(config, tmp_path, release)
    assert info.value.field == "config.json"
    assert f"vLLM {release}'s config reader fails on model_type 'beam'" in str(info.value)
    assert str(info.value).endswith(f"so its server does not start ({failure})")


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0"])
def test_a_folder_whose_rope_fields_stop_the_server_is_refused(release: str,
                                                               tmp_path: Path) -> None:
    """The rule is the folder's: ModelFolder.load refuses before reading anything else."""
    name = next(n for n, why in BEAM_STARTS[release].items() if why is not None)
    config = {"model_type": "beam", "architectures": ["BeamForCausalLM"]} | ROPE_CONFIGS[name][0]
    (tmp_path / "config.json").write_text(json.dumps(config), "utf-8")
    with pytest.raises(ModelFolderError, match=r"^config\.json: .*so its server does not start"):
        ModelFolder.load(str(tmp_path), None, None, vllm_version=release)


#: Run by a release's interpreter: vLLM's config reader on each folder, its name ->
#: None (loaded) or the exception as ``Type: message`` (first line).
_ROPE_PROBE = """
import json, sys, logging
logging.disable(logging.CRITICAL)
from vllm.transformers_utils.config import get_config
answers = {}
for path in sys.argv[1:]:
    try:
        get_config(path, trust_remote_code=False)
        answers[path] = None
    except Exception as exc:
        answers[path] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
print(json.dumps(answers))
"""
#: Model types whose config classes treat RoPE fields differently at some release: beam
#: (above), qwen3 and gemma2 (keep a per-layer mapping, so 0.29 fails on a None layer),
#: llama (adds top-level keys: not per-layer any more), gemma3_text (fills its layers).
_ROPE_TYPES = ("beam", "gemma2", "gemma3_text", "llama", "qwen3")


@pytest.mark.parametrize("release", RELEASES)
def test_the_rope_rule_agrees_with_vllms_config_reader(release: str, tmp_path: Path) -> None:
    """For each type x RoPE config, prefixkey refuses exactly where the release's own
    config reader fails, naming its exception (the facts were written from the same
    install: tools/extract_hf_tokenizers.py)."""
    from vllm_venvs import vllm_command

    python, env = vllm_command(release, test="tests/units/test_config_loads.py")
    folders: dict[str, tuple[str, str]] = {}
    for model_type in _ROPE_TYPES:
        for name, (rope, _) in ROPE_CONFIGS.items():
            if name == "other_layers":
                # Not a probed variant: prefixkey does not refuse it, though 0.29's
                # patch_legacy_rope_type fails on its None as on layer_none's (a known miss).
                continue
            folder = tmp_path / f"{model_type}-{name}"
            folder.mkdir()
            (folder / "config.json").write_text(
                json.dumps({"model_type": model_type} | rope), "utf-8")
            folders[str(folder)] = (model_type, name)
    done = subprocess.run([str(python), "-c", _ROPE_PROBE, *folders], cwd=tmp_path,
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout.splitlines()[-1])
    for path, answer in answers.items():
        model_type, name = folders[path]
        config = {"model_type": model_type} | ROPE_CONFIGS[name][0]
        if answer is None:
            check_config_loads(config, Path(path), release)
            continue
        with pytest.raises(ModelFolderError) as info:
            check_config_loads(config, Path(path), release)
        if "does not recognize this architecture" not in answer:
            assert str(info.value).endswith(f"({answer})"), (model_type, name)
        if model_type == "beam" and release in BEAM_STARTS:
            assert answer == BEAM_STARTS[release][name], name
