"""Folders vLLM's render server does not start for: no file for the processor it loads.

The render server's renderer (``renderers/base.py`` ``BaseRenderer.__init__``) builds
the model's multimodal processor at start-up when the architecture takes multimodal
inputs (``MULTIMODAL_REGISTRY.create_processor``); the processor's constructor asks the
model's ``ProcessingInfo.get_data_parser()``, which for the audio models below reads the
sampling rate from the Hugging Face feature extractor or processor, loaded from the
model folder (``cached_processor_from_config(model_config.model)``). transformers loads
it from ``preprocessor_config.json`` (or a ``processor_config.json`` holding it nested:
:func:`feature_extractor_file`), so a folder with neither does not start ("Can't load
feature extractor for '<folder>'..."); image models' data parsers read only
``config.json`` and start without one.

The architectures are read from each release's model code (every ``get_data_parser``
that loads the feature extractor or processor); ``VERIFIED`` are the releases whose real
render server was started on such a folder both ways (with the file: starts; without:
exits with the reason quoted). With the file, :data:`RENDERED_WITH_FILE`'s architectures
are rendered from their tokenizer files alone (their chats' ids harvested at each release:
tests/render/real_whisper_vectors.jsonl); any other's folder with the file is refused by
render/_folder.py's processor-file rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ._eras import render_release
from ._errors import RenderUnsupportedError

__all__ = ["LOADS_AT_START", "NESTED_FEATURE_EXTRACTOR", "PROCESSOR_FILES",
           "RENDERED_WITH_FILE", "VERIFIED", "check_processor_files", "feature_extractor_file",
           "nested_feature_extractor", "rendered_processor_files", "unrendered_processor"]

#: The files transformers loads a feature extractor or processor from.
PROCESSOR_FILES: Final = ("preprocessor_config.json", "processor_config.json")

_AUDIO_0_29: Final = frozenset({
    "AudioFlamingo3ForConditionalGeneration", "CohereAsrForConditionalGeneration",
    "FireRedASR2ForConditionalGeneration", "FunASRForConditionalGeneration",
    "FunAudioChatForConditionalGeneration", "Gemma3nForConditionalGeneration",
    "Gemma4ForConditionalGeneration", "GlmAsrForConditionalGeneration",
    "GraniteSpeechForConditionalGeneration", "MiDashengLMModel", "MoonshotKimiaForCausalLM",
    "MossAudioModel", "MossTranscribeDiarizeForConditionalGeneration", "Phi4MMForCausalLM",
    "Qwen2AudioForConditionalGeneration", "Qwen2_5OmniForConditionalGeneration",
    "Qwen2_5OmniModel", "Qwen3ASRForConditionalGeneration", "UltravoxModel",
    "VoxtralForConditionalGeneration", "WhisperForConditionalGeneration",
})
_AUDIO_0_31: Final = _AUDIO_0_29 | {"Qwen3OmniMoeForConditionalGeneration"}

#: release -> the architectures whose render-server start-up loads the model's feature
#: extractor or processor (their ``get_data_parser``).
LOADS_AT_START: Final[Mapping[str, frozenset[str]]] = {
    "0.29.0": _AUDIO_0_29, "0.30.0": _AUDIO_0_29, "0.31.0": _AUDIO_0_31,
    "0.32.0": _AUDIO_0_31, "0.33.0": _AUDIO_0_31,
}

#: release -> {architecture: the exception its real render server exited with on a
#: folder without the files (``<folder>``: the folder's path)}.
_WHISPER_EXIT: Final = (
    "OSError: Can't load feature extractor for '<folder>'. If you were trying to load it "
    "from 'https://huggingface.co/models', make sure you don't have a local directory with "
    "the same name. Otherwise, make sure '<folder>' is the correct path to a directory "
    "containing a preprocessor_config.json file")
VERIFIED: Final[Mapping[str, Mapping[str, str]]] = {
    release: {"WhisperForConditionalGeneration": _WHISPER_EXIT}
    for release in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
}
#: release -> {architecture: the processor files a folder may have}: the release's render
#: server started on the folder with them and its text chats' ids are the tokenizer's and
#: template's (harvested and replayed: tests/render/real_whisper_vectors.jsonl). Whisper's
#: processor_config.json: the feature extractor nested in it (no preprocessor_config.json)
#: starts and renders as preprocessor_config.json does; the legacy file without it alone
#: exits as a folder without any file; and its ``chat_template``, which vLLM would prefer
#: for a body without tools, is dropped: WhisperProcessor takes no chat_template (its
#: processor's template is None), so the tokenizer's renders. Elsewhere a
#: processor_config.json was not run, so it stays refused.
RENDERED_WITH_FILE: Final[Mapping[str, Mapping[str, frozenset[str]]]] = {
    release: {"WhisperForConditionalGeneration": frozenset(
        {"preprocessor_config.json", "processor_config.json"})}
    for release in ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
}
#: processor_config.json's keys transformers takes a nested feature extractor from
#: (``FeatureExtractionMixin.get_feature_extractor_dict``), before preprocessor_config.json.
NESTED_FEATURE_EXTRACTOR: Final = ("feature_extractor", "audio_processor")


def nested_feature_extractor(processor: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The feature extractor's settings nested in a processor_config.json, else None."""
    for key in NESTED_FEATURE_EXTRACTOR:
        value = processor.get(key)
        if isinstance(value, dict):
            return value
    return None


def feature_extractor_file(folder: Path) -> str | None:
    """The file transformers loads the folder's feature extractor from, else None: a
    processor_config.json's nested one, else preprocessor_config.json (a processor_config.json
    without one is no feature extractor: the legacy form)."""
    processor = folder / "processor_config.json"
    if processor.is_file():
        try:
            nested = json.loads(processor.read_text("utf-8"))
        except (OSError, ValueError):
            nested = None
        if isinstance(nested, dict) and nested_feature_extractor(nested) is not None:
            return "processor_config.json"
    return "preprocessor_config.json" if (folder / "preprocessor_config.json").is_file() else None


def rendered_processor_files(architectures: Sequence[str], vllm_version: str) -> frozenset[str]:
    """The processor files a folder of ``architectures`` may have at ``vllm_version``
    (:data:`RENDERED_WITH_FILE`): those every listed one may have, since any of them may
    be the one vLLM runs."""
    table = RENDERED_WITH_FILE.get(render_release(vllm_version).release, {})
    found = [table.get(arch, frozenset()) for arch in architectures]
    return frozenset.intersection(*found) if found else frozenset()


def unrendered_processor(architectures: Sequence[str], vllm_version: str) -> str | None:
    """Why a processor file of a folder of ``architectures`` is refused when one of them
    loads it at start-up but its processor is not rendered here, else None."""
    release = render_release(vllm_version).release
    for arch in architectures:
        if arch in LOADS_AT_START.get(release, frozenset()) and \
                arch not in RENDERED_WITH_FILE.get(release, {}):
            return (f"{arch}'s processor, which vLLM {vllm_version} loads from it at start-up "
                    "(its feature extractor, its own chat template), is not run here")
    return None


def check_processor_files(architectures: Sequence[str], folder: Path,
                          vllm_version: str) -> None:
    """Refuse a folder of an architecture whose start-up loads a feature extractor or
    processor when ``folder`` (the ``--model`` folder) has no file to load it from.

    The model registry resolves the first listed architecture (render/_vllm_startup.py);
    each listed one is checked, since any of them may be the one vLLM runs."""
    if feature_extractor_file(folder) is not None:
        return
    release = render_release(vllm_version).release
    for arch in architectures:
        if arch not in LOADS_AT_START.get(release, frozenset()):
            continue
        seen = VERIFIED.get(release, {}).get(arch)
        why = (f"vLLM {vllm_version}'s render server does not start: {seen}"
               .replace("<folder>", str(folder)) if seen is not None else
               f"vLLM {vllm_version}'s render server loads {arch}'s feature extractor or "
               "processor at start-up, which the folder has no file for, so it does not "
               "start (read from its model code; not run at this release)")
        raise RenderUnsupportedError(
            "preprocessor_config.json", f"architecture {arch!r}: {why} (no "
            "preprocessor_config.json, nor a processor_config.json with the feature "
            "extractor nested, in the folder)")
