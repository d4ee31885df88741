"""Folders vLLM's render server does not start for: no file for the processor it loads.

render/_processor_startup.py refuses a folder of an architecture whose start-up loads a
feature extractor or processor (its ``get_data_parser``) when the folder has no
``preprocessor_config.json`` or ``processor_config.json`` with the feature extractor
nested. The verified reasons are the
real render servers' exits (vLLM 0.29.0 to 0.33.0, ``python -m
vllm.entrypoints.launchers.render.entry`` on a Whisper folder: Whisper's default config,
conv_whisper's vocabulary files; with WhisperFeatureExtractor's preprocessor_config.json
each started: tests/render/test_real_whisper_vectors.py replays their answers).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from vllm_venvs import vllm_command

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions
from prefixkey.render._eras import verified_releases
from prefixkey.render._processor_startup import (
    LOADS_AT_START,
    RENDERED_WITH_FILE,
    VERIFIED,
    check_processor_files,
    rendered_processor_files,
)

WHISPER = "WhisperForConditionalGeneration"

#: (architecture, release, files in the folder) -> the refused field and a fragment of the
#: reason (None: this rule lets the folder through).
CASES: list[tuple[str, str, tuple[str, ...], tuple[str, str] | None]] = [
    (WHISPER, "0.29.0", (), ("preprocessor_config.json",
                             "0.29.0's render server does not start: OSError: Can't load "
                             "feature extractor for '<folder>'")),
    (WHISPER, "0.31.0", (), ("preprocessor_config.json",
                             "0.31.0's render server does not start: OSError: Can't load "
                             "feature extractor for '<folder>'")),
    (WHISPER, "0.33.0", (), ("preprocessor_config.json",
                             "0.33.0's render server does not start: OSError: Can't load "
                             "feature extractor for '<folder>'")),
    ("Qwen2AudioForConditionalGeneration", "0.31.0", (),
     ("preprocessor_config.json", "loads Qwen2AudioForConditionalGeneration's feature "
      "extractor or processor at start-up")),
    ("Qwen3OmniMoeForConditionalGeneration", "0.31.0", (),
     ("preprocessor_config.json", "not run at this release")),
    # 0.29's Qwen 3 Omni has no data parser of its own loading one.
    ("Qwen3OmniMoeForConditionalGeneration", "0.29.0", (), None),
    (WHISPER, "0.31.0", ("preprocessor_config.json",), None),
    # A processor_config.json without the feature extractor nested (the legacy form):
    # the real server exits as without any file (tests/render/real/whisper_pc_legacy).
    (WHISPER, "0.31.0", ("processor_config.json",),
     ("preprocessor_config.json", "0.31.0's render server does not start: OSError: Can't "
      "load feature extractor for '<folder>'")),
    # Image models' data parsers read config.json only; a text model loads none.
    ("Qwen2VLForConditionalGeneration", "0.31.0", (), None),
    ("GPT2LMHeadModel", "0.31.0", (), None),
]


@pytest.mark.parametrize(("arch", "release", "files", "refused"), CASES)
def test_processor_files(tmp_path: Path, arch: str, release: str, files: tuple[str, ...],
                         refused: tuple[str, str] | None) -> None:
    for name in files:
        (tmp_path / name).write_text("{}")
    if refused is None:
        check_processor_files([arch], tmp_path, release)
        return
    with pytest.raises(RenderUnsupportedError) as caught:
        check_processor_files([arch], tmp_path, release)
    field, fragment = refused
    assert caught.value.field == field
    assert fragment.replace("<folder>", str(tmp_path)) in str(caught.value)


def test_a_nested_feature_extractor_starts(tmp_path: Path) -> None:
    """transformers takes the feature extractor nested in processor_config.json first
    (tests/render/real/whisper_pc_nested: the real servers started on it)."""
    (tmp_path / "processor_config.json").write_text(json.dumps({"feature_extractor": {}}))
    check_processor_files([WHISPER], tmp_path, "0.31.0")
    (tmp_path / "processor_config.json").write_text(json.dumps({"audio_processor": 1}))
    with pytest.raises(RenderUnsupportedError):
        check_processor_files([WHISPER], tmp_path, "0.31.0")


@pytest.mark.parametrize(("archs", "files", "fragment", "releases"), [
    ((WHISPER,), (), "does not start: OSError: Can't load feature extractor", tuple(VERIFIED)),
    # Another listed architecture may be the one vLLM runs: its rule still holds.
    ((WHISPER, "Qwen2AudioForConditionalGeneration"), ("preprocessor_config.json",),
     "Qwen2AudioForConditionalGeneration's processor, which vLLM", tuple(VERIFIED)),
])
def test_whisper_folder_refusals(tmp_path: Path, archs: tuple[str, ...],
                                 files: tuple[str, ...], fragment: str,
                                 releases: tuple[str, ...]) -> None:
    """A Renderer over a Whisper folder: without the file vLLM does not start; with a
    file not verified the processor-file rule refuses."""
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "whisper", "architectures": list(archs), "vocab_size": 51865,
         "max_source_positions": 1500, "max_target_positions": 448}))
    for name in files:
        (tmp_path / name).write_text("{}")
    assert releases
    for release in releases:
        with pytest.raises(RenderUnsupportedError) as caught:
            Renderer(ServerOptions(model=str(tmp_path), vllm_version=release))
        assert fragment in str(caught.value)


#: (architectures, release) -> the processor files a folder of them may have.
RENDERED: list[tuple[tuple[str, ...], str, frozenset[str]]] = [
    ((WHISPER,), "0.29.0", frozenset({"preprocessor_config.json", "processor_config.json"})),
    ((WHISPER,), "0.33.0", frozenset({"preprocessor_config.json", "processor_config.json"})),
    ((WHISPER, "Qwen2AudioForConditionalGeneration"), "0.31.0", frozenset()),
    (("Qwen2AudioForConditionalGeneration",), "0.31.0", frozenset()),
    ((), "0.31.0", frozenset()),
]


@pytest.mark.parametrize(("archs", "release", "files"), RENDERED)
def test_rendered_processor_files(archs: tuple[str, ...], release: str,
                                  files: frozenset[str]) -> None:
    assert rendered_processor_files(archs, release) == files


def test_every_release_has_a_row() -> None:
    assert set(LOADS_AT_START) == set(verified_releases())
    assert all(set(archs) <= LOADS_AT_START[r] for r, archs in VERIFIED.items())
    assert all(set(archs) <= set(VERIFIED[r]) for r, archs in RENDERED_WITH_FILE.items())


_PARSER = re.compile(r"def get_data_parser\(self[^)]*\)[^:]*:\n((?:\s{8}.*\n|\s*\n)+)")
_LOADS = re.compile(r"get_feature_extractor|get_hf_processor|feature_extractor")
_ENTRY = re.compile(r'"(\w+)":\s*\(\s*"(\w+)",\s*"(\w+)"')


def _vllm_package(release: str) -> Path:
    """Where the release's scratch install has its vLLM package (found, not imported)."""
    python, env = vllm_command(release, test="tests/units/test_processor_startup.py")
    found = subprocess.run(
        [str(python), "-c", "import importlib.util as u; "
         "print(u.find_spec('vllm').submodule_search_locations[0])"],
        env=env, capture_output=True, text=True, check=True)
    return Path(found.stdout.strip())


@pytest.mark.parametrize("release", verified_releases())
def test_table_is_the_releases_code(release: str) -> None:
    """The table is what the release's model code says: the registry's architectures
    whose module's ``get_data_parser`` loads the feature extractor or processor."""
    root = _vllm_package(release)
    loading = {path.stem for path in (root / "model_executor" / "models").glob("*.py")
               if any(_LOADS.search(m.group(1))
                      for m in _PARSER.finditer(path.read_text("utf-8")))}
    registry = (root / "model_executor" / "models" / "registry.py").read_text("utf-8")
    found = {arch for arch, module, _ in _ENTRY.findall(registry) if module in loading}
    assert found == LOADS_AT_START[release]
