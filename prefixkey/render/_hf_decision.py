"""Which tokenizer vLLM 0.31 gets for a folder, decided as its code decides it, from data.

vLLM's ``get_tokenizer`` picks a tokenizer mode (``config/model.py`` switches some
architectures to their own modes; ``auto`` becomes ``mistral`` only for a folder with
``consolidated*.safetensors`` and Mistral tokenizer files), bypasses ``AutoTokenizer``
for the model types of its own incorrect-hub-class list, and otherwise calls
transformers' ``AutoTokenizer.from_pretrained``, which resolves a class from the
config's ``model_type``, the hub ``tokenizer_class`` and the folder's name. The facts
consulted (transformers' mapping and lists, each class's way of reading
``tokenizer.json``) are generated data (``_hf_facts.py``); this module applies the
rules, in transformers' order, and says for a folder which path it takes:

- ``as_is``: ``tokenizer.json`` is loaded as it is;
- ``rebuilt``: the class rebuilds the model, normalizer and pre-tokenizer from the
  file's vocabulary (reproduced for the recipes in :data:`REBUILT_RECIPES`);
- ``converted``: no ``tokenizer.json``, so transformers converts SentencePiece,
  tiktoken or vocab/merges files (not reproduced);
- ``python``: a Python tokenizer class (no ``tokenizers`` backend) whose ids are the
  text's bytes or code points, its characters or words through a vocabulary file, or
  its SentencePiece pieces (reproduced for the classes of ``_hf_python.py``);
- ``mistral``: vLLM renders with mistral_common, without a Hugging Face tokenizer;
- ``refused``: what prefixkey cannot reproduce, with the reason. A Python tokenizer
  registered for a model type, or a rebuild of a model type probed, says from
  ``_hf_startup_facts.py`` which of the type's architectures vLLM's model registry accepts
  at the render server's start-up (for some, none: no server tokenizes them).
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path as FilePath
from typing import Any, Final, Literal

from . import _hf_facts, _hf_startup_facts
from ._eras import render_release
from ._errors import RenderUnsupportedError
from ._hf_converted import CONVERSIONS, GENERIC, conversion_releases, files_read
from ._hf_facts_delta import HfFacts, apply_delta, drifted, facts_of
from ._hf_python import PYTHON_CODECS, PYTHON_REFUSED
from ._hf_rebuilds import REBUILDS, REFUSED_BECAUSE

__all__ = ["REBUILT_RECIPES", "TokenizerPath", "byte_level_backend", "check_release_conversion",
           "check_release_startup",
           "class_path",
           "decide_tokenizer"]

Path = Literal["as_is", "rebuilt", "converted", "python", "mistral", "refused"]

#: Rebuilding classes whose ``__init__`` prefixkey reproduces (render/_hf_rebuilds.py).
REBUILT_RECIPES: Final = {name: rebuild.name for name, rebuild in REBUILDS.items()}
# Names transformers treats as "the generic backend" in AutoTokenizer's class checks.
_GENERIC_REGISTERED: Final = ("TokenizersBackend", "PythonBackend", "PreTrainedTokenizerFast",
                              "MistralCommonBackend")
_GENERIC_RESOLVED: Final = ("TokenizersBackend", "PythonBackend", "PreTrainedTokenizerFast")
_BACKEND: Final = "TokenizersBackend"
#: Architectures vLLM 0.31 (config/model.py) switches from tokenizer mode ``auto`` to a
#: mode of its own, rendered without a Jinja template or not yet verified here.
NON_HF_ARCHITECTURES: Final = {
    "MoonshotKimiaForCausalLM": "kimi_audio",
    "KimiK3ForConditionalGeneration": "kimi_k3",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "DeepseekV4ForCausalLM": "deepseek_v4",
    "DeepseekV4ForConditionalGeneration": "deepseek_v4",
    "DeepseekV41ForCausalLM": "deepseek_v41",
    "InklingForCausalLM": "inkling",
    "InklingForConditionalGeneration": "inkling",
}
#: What each kind of reproduced Python tokenizer encodes (render/_hf_python.py).
_UNITS: Final = {"bytes": "the text's UTF-8 bytes", "code_points": "the text's code points",
                 "vocab_chars": "the text's characters through the folder's vocab.json",
                 "vocab_words": "the text's vocabulary entries, then its words, through "
                                "the folder's vocab.txt",
                 "sentencepiece": "the text's pieces through the folder's SentencePiece model "
                                  "(the sentencepiece extra)",
                 "bpe_words": "the text's words as fastBPE-style BPE pieces (\"@@\" "
                              "continuations) of the folder's vocabulary and merges files",
                 "wordpiece": "the text's words (BERT's Python BasicTokenizer) as WordPiece "
                              "pieces (or characters) of the folder's vocab.txt"}
#: Model types whose chat vLLM 0.31's OpenAI serving renders with Harmony
#: (``openai_harmony``, render/_harmony.py); their tokenizer (completions) is decided here.
HARMONY_MODEL_TYPES: Final = frozenset({"gpt_oss"})


@dataclass(frozen=True, slots=True)
class TokenizerPath:
    """The path a folder's tokenizer takes, the transformers class, and why."""

    path: Path
    #: The transformers class that loads it (None outside the Hugging Face paths).
    tokenizer_class: str | None
    why: str
    #: For ``rebuilt``: the recipe render/_tokenizer.py applies; for ``python``: the
    #: codec of render/_hf_python.py (None: not reproduced).
    recipe: str | None = None

    @property
    def reproduced(self) -> bool:
        return self.path == "as_is" or (self.path in ("rebuilt", "python", "converted")
                                         and self.recipe is not None)


def _resolve(name: str, facts: HfFacts) -> tuple[str, str] | None:
    """``tokenizer_class_from_name``: (class, kind), or None for a name transformers lacks."""
    found: tuple[str, str] | None = facts.CLASSES.get(name)
    if found is None and name.endswith("Fast"):
        return _resolve(name[:-4], facts)
    return found


def class_path(resolved: tuple[str, str], *, has_tokenizer_json: bool, why: str
               ) -> TokenizerPath:
    """How a resolved class reads the folder: its kind, and whether tokenizer.json is there."""
    name, kind = resolved
    if kind == "python":
        codec = PYTHON_CODECS.get(name)
        if codec is not None:
            return TokenizerPath("python", name, f"{why}: {name} is a Python tokenizer "
                                 f"encoding {_UNITS[codec.unit]}", codec.name)
        return TokenizerPath("refused", name, f"{why}: {name} " + PYTHON_REFUSED.get(
            name, "is a Python tokenizer (no tokenizers backend), which prefixkey does "
            "not reproduce"))
    if kind == "unavailable":
        return TokenizerPath("refused", name, f"{why}: {name} needs a library transformers "
                             "lacks here")
    if kind == "mistral_common":
        return TokenizerPath("mistral", name, f"{why}: MistralCommonBackend")
    if not has_tokenizer_json:
        return _converted_path(name, kind, why)
    if kind in ("backend", "as_is"):
        return TokenizerPath("as_is", name, f"{why}: {name} loads tokenizer.json as it is")
    recipe = REBUILT_RECIPES.get(name)
    refusing = REBUILDS[name].call_error if recipe else None
    source = ("its own vocabulary (tokenizer.json's added tokens kept)"
              if recipe and REBUILDS[name].vocab else "tokenizer.json's vocabulary")
    return TokenizerPath("rebuilt", name, f"{why}: {name} rebuilds the tokenizer from "
                         + source + ("" if recipe else
                                                          ", which prefixkey does not reproduce")
                         + (f"; {REFUSED_BECAUSE[name]}" if name in REFUSED_BECAUSE else "")
                         + (f"; its call refuses every text (\"{refusing}\"), which vLLM "
                            "answers with a 400" if refusing else ""),
                         recipe)


def _converted_path(name: str, kind: str, why: str) -> TokenizerPath:
    """A class's path without tokenizer.json: convert_to_native_format's conversion of a
    SentencePiece model (render/_hf_converted.py) for the generic backend and the
    rebuilding classes of CONVERSIONS; the other files it converts are refused."""
    head = f"{why}: no tokenizer.json, so {name} "
    if kind == "backend" and name == _BACKEND:
        return TokenizerPath("converted", name, head + (
            f"builds the tokenizer from the folder's {GENERIC.vocab_file} (a SentencePiece "
            "model; a tiktoken file is not reproduced)"), "spm")
    conversion = CONVERSIONS.get(name)
    if conversion is not None and name in REBUILDS:
        return TokenizerPath("converted", name, head + (
            f"rebuilds the tokenizer from {files_read(conversion)}"), REBUILDS[name].name)
    return TokenizerPath("converted", name, head + (
        "converts the folder's SentencePiece, tiktoken or vocab/merges files, which "
        "prefixkey does not reproduce for this class"))


def _hf_class(model_type: str, tokenizer_config: Mapping[str, Any],
              config: Mapping[str, Any], name: str,
              facts: HfFacts) -> tuple[tuple[str, str] | None, str]:
    """The class AutoTokenizer.from_pretrained picks (transformers 5.17), and the rule that did."""
    backend = (_BACKEND, "backend")
    if model_type in facts.VLLM_INCORRECT_HUB_CLASS:
        return backend, f"vLLM loads model_type {model_type!r} with TokenizersBackend"
    raw_map = tokenizer_config.get("auto_map")
    auto_map = raw_map if isinstance(raw_map, (list, tuple)) else (
        raw_map.get("AutoTokenizer") if isinstance(raw_map, Mapping) else None)
    if auto_map is None and any(fnmatch.fnmatch(name.lower(), p)
                                for p in facts.BACKEND_NAME_PATTERNS):
        return backend, f"the name {name!r} matches transformers' TokenizersBackend patterns"
    tc_class = tokenizer_config.get("tokenizer_class")
    hub = tc_class or config.get("tokenizer_class")
    registered = facts.REGISTERED_CLASS.get(model_type) if model_type else None
    if (auto_map is None and isinstance(hub, str) and registered is not None
            and registered.removesuffix("Fast") != hub.removesuffix("Fast")):
        base = registered.removesuffix("Fast")
        if base not in _GENERIC_REGISTERED:
            ignored = (model_type in facts.INCORRECT_HUB_CLASS
                       or config.get("model_name") in facts.INCORRECT_HUB_CLASS)
            chosen = base if ignored else hub
            found = _resolve(chosen, facts)
            if found is not None and found[0] not in _GENERIC_RESOLVED:
                rule = (f"model_type {model_type!r} ignores the hub class {hub!r}" if ignored
                        else f"tokenizer_class {hub!r}")
                return found, rule
        return backend, (f"model_type {model_type!r} registers {registered}, the hub class "
                         f"{hub!r} differs")
    if auto_map is not None and model_type not in facts.INCORRECT_HUB_CLASS:
        # transformers drops auto_map only for the incorrect-hub-class types; otherwise a
        # server with --trust-remote-code runs the model's own tokenizer code (without it,
        # transformers' own class when it has one), and a folder does not say which.
        return None, ("tokenizer_config.json's auto_map names the model's own tokenizer "
                      "code, which vLLM runs with --trust-remote-code and prefixkey cannot")
    if isinstance(tc_class, str):
        stripped = tc_class.removesuffix("Fast")
        found = _resolve(stripped, facts) or _resolve(stripped + "Fast", facts)
        if found is not None and found[0] == "PythonBackend":
            found = backend
        return found or backend, f"tokenizer_class {tc_class!r}"
    config_class = config.get("tokenizer_class")
    if isinstance(config_class, str) and config_class:
        if "PreTrainedTokenizerFast" not in config_class:
            config_class = config_class.removesuffix("Fast")
        found = _resolve(config_class, facts)
        if found is None:
            return None, (f"config.json's tokenizer_class {config_class!r} is no transformers "
                          "class: transformers fails to load it")
        return found, f"config.json's tokenizer_class {config_class!r}"
    if registered is not None and model_type in facts.CONFIG_MODEL_TYPES:
        found = _resolve(registered, facts)
        if found is not None and found[1] == "mistral_common":
            # vLLM's hf mode passes mistral_format=False: the generic backend.
            return backend, f"model_type {model_type!r} (MistralCommonBackend off in hf mode)"
        return found or backend, f"model_type {model_type!r}"
    return backend, f"model_type {model_type!r} registers no tokenizer class"


def decide_tokenizer(*, model_type: str, architectures: list[str], tokenizer_mode: str,
                     tokenizer_config: Mapping[str, Any], config: Mapping[str, Any],
                     name: str, has_tokenizer_json: bool,
                     mistral_auto: bool = False) -> TokenizerPath:
    """The path of one folder's tokenizer under vLLM 0.31 and transformers 5.17.

    ``model_type``/``config`` are the tokenizer folder's ``config.json``; ``name`` is the
    string vLLM was given (``--tokenizer`` or ``--model``), which transformers matches
    against its name patterns; ``mistral_auto`` says whether vLLM's ``auto`` mode picks
    ``mistral`` (``consolidated*.safetensors`` beside ``tekken.json``/``tokenizer.model.v*``).
    """
    mode = tokenizer_mode.lower()
    if mode == "mistral" or (mode == "auto" and mistral_auto):
        return TokenizerPath("mistral", "MistralTokenizer", "vLLM's tokenizer mode mistral "
                             "renders with mistral_common")
    switched = [NON_HF_ARCHITECTURES[a] for a in architectures if a in NON_HF_ARCHITECTURES]
    if mode == "auto" and switched:
        return TokenizerPath("refused", None, f"architecture {architectures[0]!r}: vLLM "
                             f"switches to its tokenizer mode {switched[0]!r}, whose "
                             "rendering prefixkey has not verified")
    if mode not in ("auto", "hf"):
        return TokenizerPath("refused", None, f"tokenizer mode {tokenizer_mode!r} is not "
                             "rendered by a Jinja chat template and a Hugging Face tokenizer")
    found, why = _hf_class(model_type, tokenizer_config, config, name, BASE_FACTS)
    if found is None:
        return TokenizerPath("refused", None, why)
    decision = class_path(found, has_tokenizer_json=has_tokenizer_json, why=why)
    if (found[1] == "python" and why == f"model_type {model_type!r}") or (
            decision.path == "rebuilt"
            or (decision.path == "converted" and found[1] == "rebuilt")):
        # A rebuild of a probed model type holds only when vLLM starts for the folder.
        return _with_startup(decision, model_type, architectures)
    return decision


def _not_started(architectures: list[str], model_type: str, version: str) -> str:
    return (f"architecture {architectures[0]!r} (model_type {model_type!r}): vLLM {version} "
            "does not start for it (\"not supported for now\"), so no vLLM server "
            "tokenizes this folder")


def _with_startup(decision: TokenizerPath, model_type: str,
                  architectures: list[str]) -> TokenizerPath:
    """A model type's Python tokenizer or rebuild, with what vLLM's render server
    does for the type's architectures (``_hf_startup_facts.STARTS``, probed by starting it)."""
    starts = _hf_startup_facts.STARTS.get(model_type)
    if starts is None:
        return decision
    version = _hf_startup_facts.VLLM_VERSION
    refused = sorted(a for a, cls in starts.items() if cls is None)
    if architectures and all(a in starts and starts[a] is None for a in architectures):
        # vLLM's registry tries each architecture the folder names: none starts.
        return TokenizerPath("refused", decision.tokenizer_class, (
            _not_started(architectures, model_type, version)))
    errors = sorted(cls for cls in starts.values() if cls and cls.startswith("error: "))
    if not starts:
        note = (f"vLLM {version}'s start-up was not probed for it (transformers builds "
                "no default config for it or lists no architecture of it)")
    elif len(refused) == len(starts):
        note = (f"vLLM {version}'s model registry accepts none of its architectures "
                f"({', '.join(refused)}: \"not supported for now\", the server does not "
                "start), only a folder naming another one")
    elif len(errors) + len(refused) == len(starts):
        note = (f"vLLM {version}'s start-up on a minimal folder of each of its architectures "
                f"failed ({errors[0].removeprefix('error: ')[:60]}…)")
    else:
        note = f"vLLM {version}'s model registry accepts " + ", ".join(sorted(
            f"{a} as {cls}" for a, cls in starts.items()
            if cls is not None and not cls.startswith("error: ")))
    return TokenizerPath(decision.path, decision.tokenizer_class, f"{decision.why}; {note}",
                         decision.recipe)


#: The facts the rules apply: the base install's (vLLM 0.31.0, transformers 5.17).
BASE_FACTS: Final = facts_of(_hf_facts)


@cache
def release_facts(vllm_version: str) -> HfFacts:
    """The facts of a verified release's own install: the base, or its delta applied."""
    module = render_release(vllm_version).hf_facts
    if module == _hf_facts.__name__.rpartition(".")[2]:
        return BASE_FACTS
    return apply_delta(BASE_FACTS, importlib.import_module(f"{__package__}.{module}"))


@cache
def release_drift(vllm_version: str) -> tuple[frozenset[str], frozenset[str]]:
    """The model types and name patterns whose facts differ between the release's install
    and the facts the rules apply (0.31.0's), less the types its corpus replayed."""
    types, patterns = drifted(BASE_FACTS, release_facts(vllm_version))
    return frozenset(types - render_release(vllm_version).hf_replayed), patterns


@cache
def release_starts(vllm_version: str) -> dict[str, dict[str, str | None]] | None:
    """The start-up facts probed under a release (the module its verified release names),
    or None when they were not probed."""
    module = render_release(vllm_version).startup_facts
    if module is None:
        return None
    facts: dict[str, dict[str, str | None]] = importlib.import_module(
        f"{__package__}.{module}").STARTS
    return facts


def check_release_startup(vllm_version: str, decision: TokenizerPath, model_type: str,
                          architectures: list[str]) -> None:
    """Refuse a reproduced Python tokenizer's or rebuild's folder of a probed model type
    the release's vLLM does not start for, or whose start-up was not probed under that
    release (its registry may differ: vLLM 0.29's does not accept Wav2Vec2ForCTC, 0.31's
    does)."""
    if (decision.path not in ("python", "rebuilt", "converted")
            or model_type not in _hf_startup_facts.STARTS):
        return
    starts = release_starts(vllm_version)
    if starts is None or model_type not in starts:
        raise RenderUnsupportedError("config.json", (
            f"model_type {model_type!r}: which of its architectures vLLM {vllm_version} "
            "starts for was not probed (tools/probe_vllm_startup.py); not verified"))
    known = starts[model_type]
    if architectures and all(a in known and known[a] is None for a in architectures):
        raise RenderUnsupportedError("config.json",
                                     _not_started(architectures, model_type, vllm_version))


def check_release_codec(vllm_version: str, decision: TokenizerPath) -> None:
    """Refuse a reproduced Python class under a release its corpus was not harvested from
    (render/_hf_python.py ``PythonCodec.releases``)."""
    codec = PYTHON_CODECS.get(decision.tokenizer_class or "")
    if decision.path != "python" or codec is None or codec.releases is None:
        return
    if render_release(vllm_version).release not in codec.releases:
        raise RenderUnsupportedError("config.json", (
            f"{decision.tokenizer_class}: its encoding was checked against vLLM "
            f"{', '.join(sorted(codec.releases))}'s answers only, not vLLM {vllm_version}'s; "
            "not verified"))


def check_release_conversion(vllm_version: str, decision: TokenizerPath) -> None:
    """Refuse a converted folder under a release whose answers for its conversion were
    not harvested (render/_hf_converted.py ``CONVERTED_RELEASES``)."""
    if decision.path != "converted" or decision.tokenizer_class is None:
        return
    release = render_release(vllm_version)
    releases = conversion_releases(decision.tokenizer_class)
    if release.release not in releases:
        raise RenderUnsupportedError("tokenizer.json", (
            f"converted: {decision.tokenizer_class}'s conversion of a folder without "
            f"tokenizer.json was checked against vLLM {', '.join(sorted(releases))}'s "
            f"answers only, not vLLM {vllm_version}'s (transformers "
            f"{release.transformers}); not verified"))


def check_release_drift(vllm_version: str, model_type: str, name: str) -> None:
    """Refuse a folder whose tokenizer class the release's transformers may pick otherwise."""
    types, patterns = release_drift(vllm_version)
    release = render_release(vllm_version)
    if model_type in types:
        raise RenderUnsupportedError("config.json", (
            f"model_type {model_type!r}: transformers {release.transformers} (vLLM "
            f"{vllm_version}'s) registers its tokenizer otherwise than transformers 5.17, "
            "whose rules prefixkey applies; not verified"))
    if any(fnmatch.fnmatch(name.lower(), p) for p in patterns):
        raise RenderUnsupportedError("--tokenizer", (
            f"the name {name!r} matches a TokenizersBackend name pattern of only one of "
            f"transformers {release.transformers} (vLLM {vllm_version}'s) and 5.17; "
            "not verified"))


def byte_level_backend(vllm_version: str, decision: TokenizerPath, *, model_type: str,
                       tokenizer_config: Mapping[str, Any], config: Mapping[str, Any],
                       tokenizer_json: FilePath) -> TokenizerPath:
    """The decision under a release whose transformers (5.24 on) loads a hub class of
    ``BYTE_LEVEL_BACKEND_HUB`` with TokenizersBackend when tokenizer.json is ByteLevel
    (AutoTokenizer.from_pretrained's guard for Llama 3 style files declaring
    LlamaTokenizer), where transformers 5.17 would rebuild it."""
    facts = release_facts(vllm_version)
    if decision.path != "rebuilt" or not facts.BYTE_LEVEL_BACKEND_HUB:
        return decision
    hub = tokenizer_config.get("tokenizer_class") or config.get("tokenizer_class")
    registered = facts.REGISTERED_CLASS.get(model_type) or ""
    if (tokenizer_config.get("auto_map") is None and isinstance(hub, str)
            and hub.removesuffix("Fast") in facts.BYTE_LEVEL_BACKEND_HUB
            and registered.removesuffix("Fast") != "MistralCommonBackend"
            and model_type not in facts.INCORRECT_HUB_CLASS
            and config.get("model_name") not in facts.INCORRECT_HUB_CLASS
            and '"ByteLevel"' in tokenizer_json.read_text("utf-8", errors="replace")):
        return TokenizerPath("as_is", _BACKEND, (
            f"tokenizer_class {hub!r} with a ByteLevel tokenizer.json: transformers "
            f"{render_release(vllm_version).transformers} loads TokenizersBackend, "
            "which loads tokenizer.json as it is"))
    return decision
