"""Write transformers' and vLLM's tokenizer-class facts into ``prefixkey/render/_hf_facts.py``.

Maintainer tool, run by the interpreter of a scratch vLLM venv (CONTRIBUTING.md, "Render
vectors"): it imports the real ``transformers`` and ``vllm`` and records, as data, what
``AutoTokenizer.from_pretrained`` and vLLM's ``get_tokenizer`` consult to pick the class
that loads a folder's tokenizer:

- ``TOKENIZER_MAPPING_NAMES`` (model type → registered class, after transformers adds
  the ``MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS`` types as ``TokenizersBackend``),
  that list, ``MODEL_IDS_TO_TOKENIZERS_BACKEND`` and the model types with a config class;
- vLLM's own config registry (``_CONFIG_REGISTRY``): with transformers' config mapping,
  the model types whose ``config.json`` vLLM's config reader loads;
- vLLM's ``_MODEL_TYPES_WITH_INCORRECT_TOKENIZER_CLASS``;
- ``MODEL_MAPPING_NAMES`` (model type → base model class), which vLLM's config reader
  takes as the architectures of a config.json without them;
- the RoPE fields of a config.json vLLM's config reader fails on for a model type
  (``ROPE_LOAD_FAILURES``): its ``get_config`` run on a minimal config.json per
  :data:`ROPE_VARIANTS`, a failure kept where the same type with a complete flat
  ``rope_parameters`` loads (so the RoPE fields, through the config class's defaults and
  vLLM's ``patch_rope_parameters``, are what fails);
- the model types whose config class is an encoder-decoder's by default
  (``is_encoder_decoder``, which vLLM's render server answers with no token ids) and
  with a decoder start token id (``DECODER_START_TYPES``);
- ``PROCESSOR_MAPPING_NAMES``' model types (``PROCESSOR_TYPES``): those ``AutoProcessor``
  builds a processor for (which may read ``chat_template.json``) without a processor file;
- for every class name a config may give (each registered class, every ``*Tokenizer`` /
  ``*TokenizerFast`` / ``*Backend`` name of the ``transformers`` namespace), what
  ``tokenizer_class_from_name`` resolves it to and how that class reads ``tokenizer.json``:
  ``backend`` (TokenizersBackend itself), ``as_is`` (a subclass without its own
  ``__init__``: the file is loaded as it is), ``rebuilt`` (its ``__init__`` builds the
  model, normalizer and pre-tokenizer from the file's vocabulary), ``python`` (a
  Python tokenizer, no ``tokenizers`` backend), ``mistral_common``, ``unavailable``
  (a missing optional dependency's placeholder).

Usage::

    /work/venvs/vllm031/bin/python tools/extract_hf_tokenizers.py [--check] [--out PATH]

Another release's facts go to their own module, named in its render era
(prefixkey/render/_eras.py), as their differences from a base module's facts: the full
``_hf_facts.py`` (vLLM 0.31.0's install) or another release's delta, so deltas chain
(prefixkey/render/_hf_facts_delta.py writes and reads them; the module records its base
as ``BASE_MODULE``): ``/work/venvs/vllm032/bin/python tools/extract_hf_tokenizers.py
--out prefixkey/render/_hf_facts_0_32_0.py [--base _hf_facts]``. Without ``--base`` the
base is the one the committed module names (else the full module); the tool prints how
many entries the delta would hold over each other module, to choose the smallest, and
refuses a base whose chain holds the module itself. ``--rebase`` writes a committed
delta over another base without an install (its facts as they are; the start-up facts'
tool takes it too). Regenerate a base before the deltas over it (today: ``_hf_facts``, then 0.32.0 over it, 0.33.0 and 0.29.0 over 0.32.0's, 0.30.0
over 0.29.0's).

The output is deterministic; ``--check`` exits 1 when the committed file differs.
"""

# Generated lines are long on purpose.
# ruff: noqa: E501

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

RENDER = Path(__file__).resolve().parent.parent / "prefixkey" / "render"
OUT = RENDER / "_hf_facts.py"


def load_module(path: Path) -> ModuleType:
    """A module of prefixkey/render by its path (prefixkey is not installed in a vLLM venv)."""
    spec = importlib.util.spec_from_file_location(f"_extract_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _kind(cls: Any, backend: Any, python: Any) -> str:
    name = cls.__name__
    if type(cls).__name__ == "DummyObject":
        return "unavailable"
    if name == "MistralCommonBackend":
        return "mistral_common"
    if cls is backend:
        return "backend"
    if isinstance(cls, type) and issubclass(cls, backend):
        return "rebuilt" if "__init__" in cls.__dict__ else "as_is"
    if isinstance(cls, type) and issubclass(cls, python):
        return "python"
    return "python"


def collect() -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Imported by name: they exist only in the scratch vLLM venv, not the dev one.
    from importlib import import_module

    transformers = import_module("transformers")
    vllm = import_module("vllm")
    ca = import_module("transformers.models.auto.configuration_auto")
    ma = import_module("transformers.models.auto.modeling_auto")
    ta = import_module("transformers.models.auto.tokenization_auto")
    pa = import_module("transformers.models.auto.processing_auto")
    registry = import_module("vllm.tokenizers.registry")
    vllm_config = import_module("vllm.transformers_utils.config")
    TokenizersBackend, PythonBackend = transformers.TokenizersBackend, transformers.PythonBackend

    mapping = {k: v for k, v in ta.TOKENIZER_MAPPING_NAMES.items()}
    names = {v for v in mapping.values() if v}
    names |= {n for n in dir(transformers)
              if n.endswith(("Tokenizer", "TokenizerFast", "Backend")) and n[0].isupper()}
    names |= {n + "Fast" for n in list(names) if not n.endswith("Fast")}
    names -= {"AutoTokenizer", "AutoTokenizerFast"}
    names |= {"BloomTokenizer", "BloomTokenizerFast", "PreTrainedTokenizer",
              "PreTrainedTokenizerFast"}
    classes: dict[str, tuple[str, str]] = {}
    for name in sorted(names):
        try:
            cls = ta.tokenizer_class_from_name(name)
        except Exception:  # a module that fails to import: no class
            cls = None
        if cls is None:
            continue
        classes[name] = (cls.__name__, _kind(cls, TokenizersBackend, PythonBackend))
    # transformers 5.24 on: a hub tokenizer_class whose tokenizer.json is ByteLevel loads
    # with TokenizersBackend (AutoTokenizer.from_pretrained's _tokenizer_json_has_byte_level
    # guard, which names the class it applies to).
    source = inspect.getsource(ta.AutoTokenizer.from_pretrained)
    byte_level = sorted(set(re.findall(
        r'_hub_declared_class\.removesuffix\("Fast"\) == "(\w+)"', source))
        if "_tokenizer_json_has_byte_level" in source else set())
    encoder_decoder, decoder_start = _config_defaults(ca)
    config_types = sorted(set(ca.CONFIG_MAPPING_NAMES) | set(vllm_config._CONFIG_REGISTRY))
    return {
        "rope_failures": _rope_load_failures(vllm_config.get_config, config_types),
        "encoder_decoder": encoder_decoder,
        "decoder_start": decoder_start,
        "processor_types": sorted(pa.PROCESSOR_MAPPING_NAMES),
        "byte_level": byte_level,
        "transformers": transformers.__version__,
        "vllm": vllm.__version__,
        "mapping": mapping,
        "base_models": dict(ma.MODEL_MAPPING_NAMES),
        "config_types": sorted(ca.CONFIG_MAPPING_NAMES),
        "vllm_config_types": sorted(vllm_config._CONFIG_REGISTRY),
        "incorrect": sorted(ta.MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS),
        "patterns": list(ta.MODEL_IDS_TO_TOKENIZERS_BACKEND),
        "vllm_incorrect": sorted(registry._MODEL_TYPES_WITH_INCORRECT_TOKENIZER_CLASS),
        "classes": classes,
    }


def _config_defaults(ca: Any) -> tuple[list[str], list[str]]:
    """What a model type's config, as transformers builds it when config.json does not
    say, has by default: the types that are an encoder-decoder's (vLLM's
    ``is_encoder_decoder``: the config's or its text config's flag), and those with a
    ``decoder_start_token_id`` (vLLM's ``get_dec_start_token_id`` reads the config's
    before the tokenizer's bos). The composite types (``encoder-decoder``, …) set theirs
    as class defaults and cannot be built without their parts."""
    encoder_decoder, decoder_start = [], []
    for model_type in sorted(ca.CONFIG_MAPPING_NAMES):
        try:
            cls = ca.CONFIG_MAPPING[model_type]
        except Exception:  # a module that fails to import: no config
            continue
        flag = getattr(cls, "is_encoder_decoder", False) is True
        start = getattr(cls, "decoder_start_token_id", None)
        try:
            config = cls()
            flag = flag or bool(getattr(config, "is_encoder_decoder", False)) or bool(
                getattr(config.get_text_config(), "is_encoder_decoder", False))
            start = getattr(config, "decoder_start_token_id", None)
        except Exception:  # a config that needs its parts or an optional dependency
            pass
        if flag:
            encoder_decoder.append(model_type)
        if start is not None:
            decoder_start.append(model_type)
    return encoder_decoder, decoder_start


#: The RoPE fields of the minimal config.json each model type is loaded with (a
#: ``<model_type>:<variant>`` key of ``ROPE_LOAD_FAILURES``; render/_folder.py
#: ``rope_variant`` names a folder's): none given (the config class fills its default),
#: ``null``, a per-layer-type mapping with a layer type left without RoPE (``null``, as
#: transformers saves a config whose layers of one type run without positional encoding),
#: and one giving each of two layer types its own.
ROPE_VARIANTS: dict[str, dict[str, Any]] = {
    "absent": {},
    "null": {"rope_parameters": None},
    "layer_none": {"rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": None}},
    "layers": {"rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "default", "rope_theta": 10000.0}}},
}
#: A complete flat ``rope_parameters``: the control a variant's failure is compared with.
_ROPE_COMPLETE: dict[str, Any] = {
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}


def _rope_load_failures(get_config: Any, model_types: list[str]) -> dict[str, str]:
    """``<model_type>:<variant>`` -> the exception (``Type: message``, first line) vLLM's
    config reader raises on a minimal config.json of that type with the variant's RoPE
    fields, kept only where the control (:data:`_ROPE_COMPLETE`) loads."""
    import json
    import logging
    import tempfile
    import warnings

    logging.disable(logging.CRITICAL)
    warnings.filterwarnings("ignore")

    def load(folder: Path, config: dict[str, Any]) -> str | None:
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config), "utf-8")
        try:
            get_config(str(folder), trust_remote_code=False)
        except Exception as exc:  # what the server's start-up would raise
            return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return None

    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, model_type in enumerate(model_types):
            found = {variant: load(Path(tmp) / f"{n}-{variant}", {"model_type": model_type} | extra)
                     for variant, extra in ROPE_VARIANTS.items()}
            if not any(found.values()):
                continue
            if load(Path(tmp) / f"{n}-complete", {"model_type": model_type} | _ROPE_COMPLETE):
                continue  # the type fails whatever its RoPE fields: not theirs to answer
            failures |= {f"{model_type}:{v}": why for v, why in found.items() if why}
    logging.disable(logging.NOTSET)
    return failures


def module_head(doc: list[str], constants: dict[str, str]) -> list[str]:
    """A generated module's first lines: its docstring (``doc``, the lines between the
    quotes), its imports and ``NAME: Final = 'value'`` for each constant."""
    return [f'"""{doc[0]}', *doc[1:], '"""', "", "from __future__ import annotations", "",
            "from typing import Final", "",
            *(f"{name}: Final = {value!r}" for name, value in constants.items())]


#: The generated tables, in the module's order: each one's name, its facts' key, its
#: annotation (empty: ``Final`` alone), its opening (``{``: a mapping, by key) and the
#: comment lines above it.
TABLES: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("REGISTERED_CLASS", "mapping", "[dict[str, str | None]]", "{",
     ("models/auto/tokenization_auto.py TOKENIZER_MAPPING_NAMES: model type -> registered class.",)),
    ("BASE_MODELS", "base_models", "[dict[str, str | tuple[str, ...]]]", "{",
     ("models/auto/modeling_auto.py MODEL_MAPPING_NAMES: model type -> base model class,",
      "which vLLM's config reader takes as the architectures a config.json lacks.")),
    ("CONFIG_MODEL_TYPES", "config_types", "", "frozenset({",
     ("configuration_auto.py CONFIG_MAPPING_NAMES: the model types transformers knows.",)),
    ("VLLM_CONFIG_TYPES", "vllm_config_types", "[frozenset[str]]", "frozenset({",
     ("vLLM transformers_utils/config.py _CONFIG_REGISTRY: the model types vLLM's own config",
      "classes load (registered with AutoConfig before it reads config.json).")),
    ("ROPE_LOAD_FAILURES", "rope_failures", "[dict[str, str]]", "{",
     ("vLLM transformers_utils/config.py get_config on a minimal config.json per RoPE variant",
      "(tools/extract_hf_tokenizers.py ROPE_VARIANTS): '<model_type>:<variant>' -> the",
      "exception its server's start-up fails with, where a complete rope_parameters loads.")),
    ("INCORRECT_HUB_CLASS", "incorrect", "", "frozenset({",
     ("MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS: the hub class is ignored for these.",)),
    ("BACKEND_NAME_PATTERNS", "patterns", "", "(",
     ("MODEL_IDS_TO_TOKENIZERS_BACKEND: fnmatch patterns of config._name_or_path (lowercased).",)),
    ("VLLM_INCORRECT_HUB_CLASS", "vllm_incorrect", "", "frozenset({",
     ("vLLM tokenizers/registry.py _MODEL_TYPES_WITH_INCORRECT_TOKENIZER_CLASS: loaded",
      "with TokenizersBackend directly, AutoTokenizer bypassed.")),
    ("BYTE_LEVEL_BACKEND_HUB", "byte_level", "[frozenset[str]]", "frozenset({",
     ("AutoTokenizer.from_pretrained: hub tokenizer classes loaded with TokenizersBackend",
      "when tokenizer.json is ByteLevel (transformers 5.24 on).")),
    ("ENCODER_DECODER_TYPES", "encoder_decoder", "[frozenset[str]]", "frozenset({",
     ("The model types whose config class is an encoder-decoder's by default",
      "(is_encoder_decoder): vLLM's render server renders them no token ids.")),
    ("DECODER_START_TYPES", "decoder_start", "[frozenset[str]]", "frozenset({",
     ("The model types whose config class has a decoder_start_token_id by default",
      "(vLLM's decoder start token: the config's, else the tokenizer's bos).")),
    ("PROCESSOR_TYPES", "processor_types", "[frozenset[str]]", "frozenset({",
     ("models/auto/processing_auto.py PROCESSOR_MAPPING_NAMES: the model types AutoProcessor",
      "builds a processor class for (it reads chat_template.json), processor files or not.")),
    ("CLASSES", "classes", "[dict[str, tuple[str, str]]]", "{",
     ("tokenizer_class_from_name(name) -> (the class's name, how it reads tokenizer.json):",
      "backend | as_is | rebuilt | python | mistral_common | unavailable.")),
)


def tables(facts: dict[str, Any]) -> dict[str, Any]:
    """Each table's value (a mapping's values as tuples where they are sequences)."""
    return {name: {k: tuple(v) if isinstance(v, list) else v for k, v in facts[key].items()}
            if opening == "{" else facts[key] for name, key, _, opening, _ in TABLES}


def write_or_check(out: Path, text: str, *, check: bool) -> int:
    """Write a generated module, or with ``check`` say whether ``out`` holds ``text``
    (the exit status: 1 when it does not)."""
    if check:
        same = out.is_file() and out.read_text("utf-8") == text
        print("up to date" if same else f"{out} differs from this install's answers: rerun",
              file=sys.stderr)
        return 0 if same else 1
    out.write_text(text, "utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


def render(facts: dict[str, Any]) -> str:
    lines = module_head([
        "What transformers and vLLM consult to pick a folder's tokenizer class: facts, as data.",
        "",
        "GENERATED by tools/extract_hf_tokenizers.py from the installed packages named below;",
        "do not edit. prefixkey/render/_hf_decision.py applies them.",
    ], {"TRANSFORMERS_VERSION": facts["transformers"], "VLLM_VERSION": facts["vllm"]})
    values = tables(facts)
    closings = {"{": "}", "frozenset({": "})", "(": ")"}
    for name, _, annotation, opening, comment in TABLES:
        value = values[name]
        rows = ([f"    {k!r}: {v!r}," for k, v in sorted(value.items())] if opening == "{"
                else [f"    {t!r}," for t in value])
        lines += ["", *(f"#: {c}" for c in comment), f"{name}: Final{annotation} = {opening}",
                  *rows, closings[opening]]
    lines.append("")
    return "\n".join(lines)


def render_module(name: str) -> ModuleType:
    """A facts module of prefixkey/render by its name (what ``BASE_MODULE`` names)."""
    return load_module(RENDER / f"{name}.py")


#: How a delta module says what it applies to (after the versions it was read from).
DELTA_DOC = ["prefixkey/render/_hf_facts_delta.py applies them over the facts of BASE_MODULE",
             "(a full module, or a delta over its own base): per table, the entries this",
             "install adds or changes (_SET: a mapping's, _ADD: a set's) and those it drops."]


def delta_base(out: Path, base: str | None, full: Path, values: dict[str, Any],
               shapes: Any) -> tuple[str, dict[str, Any], Any]:
    """The base a release's delta module ``out`` is written over, the delta (``values``,
    every table in full, as differences from the base's facts) and the base's facts.

    The base is ``base``, else the one the committed ``out`` names, else the full module
    ``full``; one whose chain holds ``out`` itself is refused (a cycle). How many entries
    the delta would hold over each other module of ``full``'s kind is printed, to choose
    the smallest."""
    delta = load_module(RENDER / "_hf_facts_delta.py")

    def chain(name: str) -> list[str]:
        return [n for n, _ in delta.chain_of(name, render_module)]

    if base is None:
        committed = render_module(out.stem) if out.is_file() else None
        base = getattr(committed, "BASE_MODULE", full.stem)
    if out.stem in chain(base):
        raise SystemExit(f"--base {base}: its chain ({' -> '.join(chain(base))}) holds "
                         f"{out.stem} itself")
    sizes = []
    for path in sorted(RENDER.glob(f"{full.stem}*.py")):
        if path.stem not in (out.stem, "_hf_facts_delta") and out.stem not in chain(path.stem):
            changes = delta.delta_of(delta.load_facts(path.stem, render_module, shapes),
                                     values, shapes)
            sizes.append(f"{path.stem} {sum(map(len, changes.values()))}")
    print(f"{out.stem}: delta entries over each base: {', '.join(sizes)}", file=sys.stderr)
    facts = delta.load_facts(base, render_module, shapes)
    return base, delta.delta_of(facts, values, shapes), facts


def committed_facts(out: Path, shapes: Any) -> Any:
    """``--rebase``: the facts the committed delta module ``out`` holds (its chain
    applied), to write them over another base without the install they were read from
    (the facts stay what that install gave)."""
    if not out.is_file() or not hasattr(render_module(out.stem), "BASE_MODULE"):
        raise SystemExit(f"--rebase: {out} is not a release's delta module")
    return load_module(RENDER / "_hf_facts_delta.py").load_facts(out.stem, render_module,
                                                                shapes)


def render_delta(values: dict[str, Any], transformers: str, vllm: str, out: Path,
                 base: str | None) -> str:
    """A release's facts (every table in full) as their differences from a base module's."""
    shapes = load_module(RENDER / "_hf_facts_delta.py").TABLES
    assert set(values) == set(shapes)
    base, changes, base_facts = delta_base(out, base, OUT, values, shapes)
    lines = module_head([
        f"vLLM {vllm}'s tokenizer-class facts, as differences from vLLM "
        f"{base_facts.vllm_version}'s.",
        "",
        "GENERATED by tools/extract_hf_tokenizers.py from the installed packages named below;",
        "do not edit.", *DELTA_DOC,
    ], {"TRANSFORMERS_VERSION": transformers, "VLLM_VERSION": vllm, "BASE_MODULE": base})
    for name, value in changes.items():
        lines.append("")
        if isinstance(value, dict):
            kind = ("tuple[str, str]" if name.startswith("CLASSES") else
                    "str | tuple[str, ...]" if name.startswith("BASE_MODELS") else "str | None")
            lines.append(f"{name}: Final[dict[str, {kind}]] = {{" if value
                         else f"{name}: Final[dict[str, {kind}]] = {{}}")
            if value:
                lines += [f"    {k!r}: {v!r}," for k, v
                          in value.items()]
                lines.append("}")
        elif value:
            lines.append(f"{name}: Final = frozenset({{")
            lines += [f"    {k!r}," for k in value]
            lines.append("})")
        else:
            lines.append(f"{name}: Final[frozenset[str]] = frozenset()")
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--base", help="the module a release's delta is written over "
                        "(default: the one the committed module names, else _hf_facts)")
    parser.add_argument("--rebase", action="store_true", help="write the committed delta "
                        "module over --base as it is, without an install (its facts kept)")
    args = parser.parse_args(argv)
    out: Path = args.out
    if args.rebase:
        held = committed_facts(out, load_module(RENDER / "_hf_facts_delta.py").TABLES)
        return write_or_check(out, render_delta(dict(held.tables), held.transformers_version,
                                                held.vllm_version, out, args.base),
                              check=args.check)
    facts = collect()
    base = OUT.resolve()
    if args.check and out.resolve() != base and out.is_file():
        # A release may name another release's delta module when its install's facts are
        # the same (render/_eras.py): the tables and transformers version must match, the
        # module keeps the vLLM version it was written from.
        named = load_module(out).VLLM_VERSION
        if named != facts["vllm"]:
            print(f"vLLM {facts['vllm']}'s install, checked against {out.name} "
                  f"(written from vLLM {named}'s)", file=sys.stderr)
            facts = dict(facts, vllm=named)
    text = (render(facts) if out.resolve() == base else
            render_delta(tables(facts), facts["transformers"], facts["vllm"], out, args.base))
    return write_or_check(out, text, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
