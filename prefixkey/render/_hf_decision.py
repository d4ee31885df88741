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
  tiktoken or vocab/merges files (reproduced for TokenizersBackend over a tiktoken or
  tekken file: render/_hf_tiktoken.py; for the generic backend over a SentencePiece
  model and for the rebuilding classes of render/_hf_converted.py's CONVERSIONS over
  theirs or their vocabulary files: render/_hf_converted.py);
- ``python``: a Python tokenizer class (no ``tokenizers`` backend) whose ids are the
  text's bytes or code points, its characters or words through a vocabulary file, or
  its SentencePiece pieces (reproduced for the classes of ``_hf_python.py``);
- ``mistral``: vLLM renders with mistral_common, without a Hugging Face tokenizer;
- a tokenizer mode of render/_encoders.py's table (``deepseek_v32``), switched to from
  ``auto`` for its architectures or given: ``TokenizersBackend.from_pretrained`` (the
  ``as_is`` path, or the generic backend's conversion), the chat rendered by the mode's
  Python encoder (the decision's ``mode``);
- ``refused``: what prefixkey cannot reproduce, with the reason. A Python tokenizer
  registered for a model type, or a rebuild, says which of the type's architectures
  vLLM 0.31's model registry starts for (render/_vllm_startup.py; for some, none: no
  server tokenizes them). Whether the release's server starts for the folder's own
  architectures is checked once for every path, by render/_folder.py.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path as FilePath
from typing import Any, Final, Literal

from . import _hf_facts
from ._encoders import ENCODER_MODES
from ._eras import render_release
from ._errors import RenderUnsupportedError
from ._hf_converted import (
    BACKEND,
    CONVERSIONS,
    GENERIC,
    conversion_releases,
    files_read,
    generic_build,
)
from ._hf_facts_delta import HfFacts, drifted, package_facts
from ._hf_python import PYTHON_CODECS, PYTHON_REFUSED
from ._hf_rebuilds import REBUILDS, REFUSED_BECAUSE
from ._hf_tiktoken import CONVERTERS, ConvertedSource
from ._processor_startup import LOADS_AT_START, PROCESSOR_FILES, rendered_processor_files
from ._vllm_startup import BASE_STARTUP, startup_facts, vllm_startup

__all__ = [
    "REBUILT_RECIPES",
    "TokenizerPath",
    "byte_level_backend",
    "check_release_conversion",
    "class_path",
    "decide_tokenizer",
    "tokenizer_config_class",
]

Path = Literal["as_is", "rebuilt", "converted", "python", "mistral", "refused"]

#: Rebuilding classes whose ``__init__`` prefixkey reproduces (render/_hf_rebuilds.py).
REBUILT_RECIPES: Final = {name: rebuild.name for name, rebuild in REBUILDS.items()}
# Names transformers treats as "the generic backend" in AutoTokenizer's class checks.
_GENERIC_REGISTERED: Final = ("TokenizersBackend", "PythonBackend", "PreTrainedTokenizerFast",
                              "MistralCommonBackend")
_GENERIC_RESOLVED: Final = ("TokenizersBackend", "PythonBackend", "PreTrainedTokenizerFast")
#: Architectures vLLM 0.31 (config/model.py) switches from tokenizer mode ``auto`` to a
#: mode of its own, rendered without a Jinja template: by a Python encoder for the modes
#: of render/_encoders.py's ENCODER_MODES, refused for the others (not verified here).
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
_UNITS: Final = {"bytes": "the text's UTF-8 bytes (MyT5: rewritten by its byte_maps.json)",
                 "code_points": "the text's code points",
                 "vocab_chars": "the text's characters through the folder's vocab.json",
                 "vocab_words": "the text's vocabulary entries, then its words, through "
                                "the folder's vocab.txt",
                 "sentencepiece": "the text's pieces through the folder's SentencePiece model "
                                  "(the sentencepiece extra)",
                 "bpe_words": "the text's words as fastBPE-style BPE pieces (\"@@\" "
                              "continuations) of the folder's vocabulary and merges files",
                 "wordpiece": "the text's words (BERT's Python BasicTokenizer) as WordPiece "
                              "pieces (or characters) of the folder's vocabulary file",
                 "vits_chars": "the text's characters (normalized, blanks between them; "
                               "phonemize off) through the folder's vocab.json",
                 "subword_japanese": "the text's spellings (SubWordJapaneseTokenizer) "
                                     "through the folder's vocab.txt and emoji.json",
                 "clvp_bpe": "the text's words, its numbers and abbreviations spelled out "
                             "(ClvpTokenizer's EnglishNormalizer), as byte-level BPE pieces "
                             "of the folder's vocab.json and merges.txt"}
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
    #: For ``converted``: the tiktoken or tekken file converted (render/_hf_tiktoken.py).
    converted: ConvertedSource | None = None
    #: The vLLM tokenizer mode whose Python encoder renders chat (render/_encoders.py);
    #: None: a Jinja chat template.
    mode: str | None = None

    @property
    def reproduced(self) -> bool:
        return self.path == "as_is" or (self.path in ("rebuilt", "python")
                                         and self.recipe is not None) or (
            self.path == "converted" and (self.converted is not None
                                          or self.recipe is not None))


def _resolve(name: str, facts: HfFacts) -> tuple[str, str] | None:
    """``tokenizer_class_from_name``: (class, kind), or None for a name transformers lacks."""
    found: tuple[str, str] | None = facts.CLASSES.get(name)
    if found is None and name.endswith("Fast"):
        return _resolve(name[:-4], facts)
    return found


def tokenizer_config_class(tc_class: str, facts: HfFacts) -> tuple[str, str]:
    """The class tokenizer_config.json's ``tokenizer_class`` makes AutoTokenizer build (the
    name without, then with, ``Fast``): TokenizersBackend for PythonBackend (the abstract
    Python base, PreTrainedTokenizer's) or a name transformers lacks."""
    stripped = tc_class.removesuffix("Fast")
    found = _resolve(stripped, facts) or _resolve(stripped + "Fast", facts)
    return (BACKEND, "backend") if found is None or found[0] == "PythonBackend" else found


def class_path(resolved: tuple[str, str], *, has_tokenizer_json: bool, why: str,
               converted: ConvertedSource | None = None) -> TokenizerPath:
    """How a resolved class reads the folder: its kind, whether tokenizer.json is there, and
    without it the tiktoken or tekken file transformers converts (``converted``)."""
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
        return TokenizerPath("refused", name, f"{why}: {name} " + PYTHON_REFUSED.get(
            name, "needs a library transformers lacks here"))
    if kind == "mistral_common":
        return TokenizerPath("mistral", name, f"{why}: MistralCommonBackend")
    if not has_tokenizer_json and converted is not None and kind == "backend":
        return TokenizerPath("converted", name, (
            f"{why}: no tokenizer.json, so {name} converts the folder's {converted.file} "
            f"with {CONVERTERS[converted.converter]}"), converted=converted)
    if not has_tokenizer_json:
        return _converted_path(name, kind, why, converted)
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


def _converted_path(name: str, kind: str, why: str,
                    source: ConvertedSource | None) -> TokenizerPath:
    """A class's path without tokenizer.json: convert_to_native_format's conversion of a
    SentencePiece model or vocabulary files (render/_hf_converted.py) for the generic
    backend and the rebuilding classes of CONVERSIONS; a tiktoken or tekken file
    (``source``) for a class of its own, and the other classes, are refused."""
    head = f"{why}: no tokenizer.json, so {name} "
    if source is not None:
        return TokenizerPath("converted", name, head + (
            f"runs its own __init__ around the folder's {source.file} converted with "
            f"{CONVERTERS[source.converter]}, which prefixkey does not reproduce"))
    conversion = GENERIC if kind == "backend" and name == BACKEND else CONVERSIONS.get(name)
    if conversion is not None and generic_build(conversion):
        # TokenizersBackend, or a class without an __init__ of its own.
        return TokenizerPath("converted", name, head + (
            "builds" if name == BACKEND else
            f"has {conversion.init}'s __init__ (none of its own), so transformers builds") + (
            f" the generic backend's tokenizer from the folder's {conversion.vocab_file} (a "
            "SentencePiece model; a tiktoken file is not reproduced)") + (
            "" if conversion.init == BACKEND else
            f", then {conversion.init}'s __init__ adds its named tokens"), "spm")
    record = REBUILDS.get(name if conversion is None else conversion.init or name)
    if conversion is not None and record is not None:
        files = files_read(conversion)
        if conversion.default is not None and record.vocab is not None:
            files = "its own vocabulary (no file is read)"
        elif conversion.default is not None:
            files += (", or without it from its default vocabulary "
                      f"({', '.join(conversion.default)}), which encodes no text")
        return TokenizerPath("converted", name, head + (
            (f"has {conversion.init}'s __init__, which " if conversion.init else "")
            + f"rebuilds the tokenizer from {files}"), record.name)
    return TokenizerPath("converted", name, head + (
        "converts the folder's SentencePiece, tiktoken or vocab/merges files, which "
        "prefixkey does not reproduce for this class")
        + (f"; {REFUSED_BECAUSE[name]}" if name in REFUSED_BECAUSE else ""))


@cache
def _name_pattern(patterns: frozenset[str]) -> re.Pattern[str]:
    # One regex per table, compiled once: the first build would otherwise translate and
    # compile each pattern (fnmatch's own cache starts empty in a new process).
    return re.compile("|".join(fnmatch.translate(os.path.normcase(p))
                               for p in sorted(patterns)) or "(?!)")


def _name_matches(name: str, patterns: Iterable[str]) -> bool:
    """``any(fnmatch.fnmatch(name.lower(), p) for p in patterns)``, as one match."""
    return _name_pattern(frozenset(patterns)).match(os.path.normcase(name.lower())) is not None


def _hf_class(model_type: str, tokenizer_config: Mapping[str, Any],
              config: Mapping[str, Any], name: str,
              facts: HfFacts) -> tuple[tuple[str, str] | None, str]:
    """The class AutoTokenizer.from_pretrained picks (under ``facts``' transformers), and
    the rule that did."""
    backend = (BACKEND, "backend")
    if model_type in facts.VLLM_INCORRECT_HUB_CLASS:
        return backend, f"vLLM loads model_type {model_type!r} with TokenizersBackend"
    raw_map = tokenizer_config.get("auto_map")
    auto_map = raw_map if isinstance(raw_map, (list, tuple)) else (
        raw_map.get("AutoTokenizer") if isinstance(raw_map, Mapping) else None)
    if auto_map is None and _name_matches(name, facts.BACKEND_NAME_PATTERNS):
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
        return tokenizer_config_class(tc_class, facts), f"tokenizer_class {tc_class!r}"
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
                     mistral_auto: bool = False,
                     converted: ConvertedSource | None = None,
                     facts: HfFacts | None = None) -> TokenizerPath:
    """The path of one folder's tokenizer under vLLM 0.31 and transformers 5.17.

    ``model_type``/``config`` are the tokenizer folder's ``config.json``; ``name`` is the
    string vLLM was given (``--tokenizer`` or ``--model``), which transformers matches
    against its name patterns; ``mistral_auto`` says whether vLLM's ``auto`` mode picks
    ``mistral`` (``consolidated*.safetensors`` beside ``tekken.json``/``tokenizer.model.v*``);
    ``converted``: the tiktoken or tekken file transformers converts without tokenizer.json;
    ``facts``: the release's install's (:func:`release_facts`; default 0.31.0's), which the
    same rules apply (a type they differ for is refused unless its answers were replayed:
    :func:`check_release_drift`).
    """
    mode = tokenizer_mode.lower()
    if mode == "mistral" or (mode == "auto" and mistral_auto):
        return TokenizerPath("mistral", "MistralTokenizer", "vLLM's tokenizer mode mistral "
                             "renders with mistral_common")
    switched = [NON_HF_ARCHITECTURES[a] for a in architectures if a in NON_HF_ARCHITECTURES]
    row = ENCODER_MODES.get(switched[0]) if mode == "auto" and switched else None
    if row is not None and not {a for a in architectures if a in NON_HF_ARCHITECTURES} \
            <= row.architectures:
        return TokenizerPath("refused", None, f"architecture {architectures[0]!r}: vLLM "
                             f"switches to its tokenizer mode {row.mode!r}, verified here "
                             f"for {', '.join(sorted(row.architectures))} only")
    if mode in ENCODER_MODES or (mode == "auto" and switched and switched[0] in ENCODER_MODES):
        return _encoder_path(switched[0] if mode == "auto" else mode,
                             f"architecture {architectures[0]!r}" if mode == "auto"
                             else f"tokenizer mode {tokenizer_mode!r}",
                             has_tokenizer_json, converted)
    if mode == "auto" and switched:
        return TokenizerPath("refused", None, f"architecture {architectures[0]!r}: vLLM "
                             f"switches to its tokenizer mode {switched[0]!r}, whose "
                             "rendering prefixkey has not verified")
    if mode not in ("auto", "hf"):
        return TokenizerPath("refused", None, f"tokenizer mode {tokenizer_mode!r} is not "
                             "rendered by a Jinja chat template and a Hugging Face tokenizer")
    found, why = _hf_class(model_type, tokenizer_config, config, name, facts or BASE_FACTS)
    if found is None:
        return TokenizerPath("refused", None, why)
    decision = class_path(found, has_tokenizer_json=has_tokenizer_json, why=why,
                          converted=converted)
    if (found[1] == "python" and why == f"model_type {model_type!r}") or (
            decision.path == "rebuilt"
            or (decision.path == "converted" and found[1] == "rebuilt")):
        return _with_startup(decision, model_type)
    return decision


def _encoder_path(mode: str, cause: str, has_tokenizer_json: bool,
                  converted: ConvertedSource | None) -> TokenizerPath:
    """An encoder mode's tokenizer: ``TokenizersBackend.from_pretrained``, which reads
    tokenizer.json as it is (the hub ``tokenizer_class`` is not consulted, so no rebuild),
    or without it converts as the generic backend does."""
    why = (f"{cause}: vLLM's tokenizer mode {mode!r} renders chat with a Python encoder "
           "(render/_encoders.py) and loads TokenizersBackend" + (
               "" if cause.startswith("tokenizer mode") else " (switched from auto)"))
    found = (BACKEND, "backend")
    return replace(class_path(found, has_tokenizer_json=has_tokenizer_json, why=why,
                              converted=converted), mode=mode)


def _with_startup(decision: TokenizerPath, model_type: str) -> TokenizerPath:
    """A model type's Python tokenizer or rebuild, with which of the type's architectures
    vLLM 0.31's render server starts for, each alone (render/_vllm_startup.py)."""
    _, note = startup_note(model_type, BASE_STARTUP.vllm_version)
    return TokenizerPath(decision.path, decision.tokenizer_class, f"{decision.why}; {note}",
                         decision.recipe)


def startup_note(model_type: str, vllm_version: str) -> tuple[bool | None, str]:
    """Whether the release's render server starts for some of the model type's
    architectures (transformers' auto mappings', each alone; None: no architecture listed,
    or not known), and the sentence saying so."""
    facts = startup_facts(vllm_version)
    archs = facts.ARCHITECTURES.get(model_type, ()) if facts is not None else ()
    answers = {a: vllm_startup((a,), model_type, vllm_version) for a in archs}
    started = sorted(a for a, s in answers.items() if s.starts)
    if not archs:
        return None, (f"transformers' auto mappings list no architecture of it, so whether "
                      f"vLLM {vllm_version} starts depends on the folder's")
    if started:
        # An architecture whose start-up loads its processor starts only with the file
        # (render/_processor_startup.py); a folder with it is rendered for the files
        # RENDERED_WITH_FILE names, refused otherwise.
        loads = LOADS_AT_START.get(vllm_version, frozenset())

        def with_file(arch: str) -> str:
            if arch not in loads:
                return arch
            files = rendered_processor_files((arch,), vllm_version)
            others = [f for f in PROCESSOR_FILES if f not in files]
            return f"{arch} (only with a {' or '.join(PROCESSOR_FILES)}; " + (
                "refused here either way)" if not files else
                f"rendered here with a {' or '.join(sorted(files))}"
                + (f", refused with a {' or '.join(others)})" if others else ")"))

        return True, f"vLLM {vllm_version} starts for " + ", ".join(map(with_file, started))
    if all(s.starts is False for s in answers.values()):
        return False, (f"vLLM {vllm_version} starts for none of its architectures "
                       f"({', '.join(archs)}), only a folder naming another one")
    return None, (f"whether vLLM {vllm_version} starts for its architectures is not known: "
                  + next(s.why for s in answers.values() if s.starts is None))


#: Each facts module's facts, by its name (a delta's over its chain of bases).
_module_facts: Final = package_facts(__name__.rpartition(".")[0])
#: The facts the rules apply: the base install's (vLLM 0.31.0, transformers 5.17).
BASE_FACTS: Final = _module_facts(_hf_facts.__name__.rpartition(".")[2])


@cache
def release_facts(vllm_version: str) -> HfFacts:
    """The facts of a verified release's own install (its module's, deltas applied)."""
    return _module_facts(render_release(vllm_version).hf_facts)


def type_rule_facts(model_type: str, facts: HfFacts) -> tuple[str | None, bool, bool, bool | None]:
    """Every fact about ``model_type`` the rules read (:func:`_hf_class`,
    :func:`byte_level_backend`, render/_folder.py's MistralCommonBackend check): its
    registered class, whether transformers and vLLM ignore its hub class, and with a
    registered class whether transformers' config mapping has it. Two types alike here
    take the same decision for the same folder."""
    registered = facts.REGISTERED_CLASS.get(model_type)
    return (registered, model_type in facts.INCORRECT_HUB_CLASS,
            model_type in facts.VLLM_INCORRECT_HUB_CLASS,
            model_type in facts.CONFIG_MODEL_TYPES if registered else None)


@cache
def release_drift(vllm_version: str) -> tuple[frozenset[str], frozenset[str]]:
    """The model types and name patterns whose facts differ between the release's install
    and the facts the rules apply (0.31.0's), less the types its corpora replayed and
    those the release's facts decide as one of them (:func:`type_rule_facts`), and less
    the patterns its list adds (or drops) where its corpora replayed a name one of those
    matches (``hf_names_replayed``: every pattern takes the one name rule, so its own list
    decides them alike): its own facts decide them (render/_folder.py), as its answers
    confirmed for their like."""
    release = render_release(vllm_version)
    facts = release_facts(vllm_version)
    types, patterns = drifted(BASE_FACTS, facts)
    verified = {type_rule_facts(t, facts) for t in release.hf_replayed}
    undecided: frozenset[str] = frozenset()
    own = frozenset(facts.BACKEND_NAME_PATTERNS)
    for side in (patterns & own, patterns - own):
        if not any(_name_matches(n, side) for n in release.hf_names_replayed):
            undecided |= side
    return frozenset(t for t in types if type_rule_facts(t, facts) not in verified), undecided


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
    not harvested (render/_hf_converted.py ``CONVERTED_RELEASES``; the tiktoken and tekken
    conversions of render/_hf_tiktoken.py are verified at every release)."""
    if (decision.path != "converted" or decision.tokenizer_class is None
            or decision.converted is not None):
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
        # A folder gets here only when the release starts for its own architectures
        # (render/_folder.py checks that first); when the release starts for none of the
        # type's, that is said first, as the type's row says it for 0.31.
        starts, note = startup_note(model_type, vllm_version)
        raise RenderUnsupportedError("config.json", (
            f"model_type {model_type!r}: " + (f"{note}, and " if starts is False else "")
            + f"transformers {release.transformers} (vLLM {vllm_version}'s) registers its "
            "tokenizer otherwise than transformers 5.17, whose rules prefixkey applies; "
            "not verified"))
    if _name_matches(name, patterns):
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
        return TokenizerPath("as_is", BACKEND, (
            f"tokenizer_class {hub!r} with a ByteLevel tokenizer.json: transformers "
            f"{render_release(vllm_version).transformers} loads TokenizersBackend, "
            "which loads tokenizer.json as it is"))
    return decision
