"""Write which architectures vLLM's model registry starts for, per release, as data.

Maintainer tool, run by the interpreter of a release's vision-capable scratch vLLM venv
(vLLM requires torchvision; ``/work/venvs/vllm031v``, CONTRIBUTING.md "Render vectors";
0.33.0 by its overlay: ``PYTHONPATH=/work/venvs/vllm033-overlay VLLM_TARGET_DEVICE=cpu``
over ``vllm032v``). vLLM's render server starts only if its model registry resolves the
config's ``architectures`` (``ModelRegistry.inspect_model_cls``, at
``create_model_config``): an architecture it lists, or else, for the first one, the
transformers class of that name when its Transformers modeling backend takes it
(``_try_resolve_transformers``). Recorded from the installed release, as data, in
``prefixkey/render/_hf_startup_facts.py`` (vLLM 0.31.0's, in full) or a release's delta
(``_hf_startup_facts_0_29_0.py``, …) over a base module's facts, chained as the
tokenizer-class facts' (prefixkey/render/_hf_facts_delta.py; ``--base`` as
tools/extract_hf_tokenizers.py's, and ``--rebase``; today 0.32.0 over the full module,
0.33.0 and 0.30.0 over 0.32.0's, 0.29.0 over 0.30.0's):

- ``REGISTERED``: every architecture the registry lists (``ModelRegistry.models``);
  which of their classes cannot be imported is ``prefixkey/render/_runner_facts.py``'s
  ``error`` (tools/extract_runner_facts.py, the same venvs): not probed again here;
- ``BACKEND``: every architecture transformers' auto mappings name (every
  ``*_MAPPING_NAMES`` of ``modeling_auto``, all model types): whether vLLM's own
  ``_try_resolve_transformers``, run on it in this process (a config without
  ``auto_map``, ``model_impl`` auto), gives its Transformers modeling backend's class
  (False: None, or a failure);
- ``MULTIMODAL_TYPES``: the model types whose default config (``AutoConfig.for_model``)
  has a text sub-config (``get_text_config()``, which vLLM's ``get_hf_text_config``
  takes), so that the backend class is the multimodal one, which loads the model's
  processor at start-up;
- ``ARCHITECTURES``: each model type's architectures in those mappings.

That is what the registry decides from names alone, in seconds. What it leaves to a
folder is not probed here but by a real start-up: ``--startup TYPES`` runs vLLM's
``AsyncEngineArgs(model=folder).create_model_config()`` (the render server's first step,
``vllm/entrypoints/launchers/render/entry.py``) on a minimal folder per architecture of
each type (``config.json``: the type's default config with that architecture, and
``vocab_size`` 256 where the default leaves it null) and prints, as JSON, the class vLLM
resolves each to, ``null`` for "are not supported for now" and "error: ..." otherwise;
tests/units/test_vllm_startup.py compares it with prefixkey's rule
(render/_vllm_startup.py). Those runs first settled that the rule holds: every
architecture of the Python-tokenizer and rebuilt types probed that way at 0.29.0-0.31.0
(about 300) started exactly when the rule says, except that a minimal folder of a
multimodal type (``dia``, ``tipsv2``, ``videoprism``) fails on its missing processor
("Can't load feature extractor / image processor / video processor").

Usage::

    /work/venvs/vllm031v/bin/python tools/probe_vllm_startup.py [--check]
    /work/venvs/vllm029v/bin/python tools/probe_vllm_startup.py \\
        --out prefixkey/render/_hf_startup_facts_0_29_0.py [--base MODULE] [--check]
    /work/venvs/vllm031v/bin/python tools/probe_vllm_startup.py --startup canine,mbart

About half a minute per release (every class transformers' mappings name is imported).
``--check`` exits 1 when the committed module differs from this install's answers.
The in-process step was confirmed by real render server start-ups (vLLM 0.31.0,
``python -m vllm.entrypoints.launchers.render.entry`` on minimal folders): a folder of
``XLMWithLMHeadModel`` and one of ``CanineModel`` exit with "Model architectures [...]
are not supported for now"; one of ``Wav2Vec2ForCTC`` with a ``vocab.json`` starts and
its ``/v1/completions/render`` encodes ``"ABC|CAB"`` with Wav2Vec2CTCTokenizer, one id
per character; one of ``LayoutLMv3Model`` exits "not supported for now", and one of
``MarkupLMForQuestionAnswering`` (with a tags_dict), of ``UdopForConditionalGeneration``
and of ``LasrForCTC`` start (tests/render/real_layout_vectors.jsonl has their answers).
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from extract_hf_tokenizers import (
    DELTA_DOC,
    RENDER,
    committed_facts,
    delta_base,
    load_module,
    module_head,
    write_or_check,
)

OUT = RENDER / "_hf_startup_facts.py"


def _architectures() -> dict[str, list[str]]:
    """model type -> its architectures in transformers' auto model mappings."""
    modeling_auto = importlib.import_module("transformers.models.auto.modeling_auto")
    found: dict[str, list[str]] = {}
    for name in sorted(dir(modeling_auto)):
        table = getattr(modeling_auto, name)
        if (name.endswith("_MAPPING_NAMES") and name != "CONFIG_MAPPING_NAMES"
                and isinstance(table, dict)):
            for model_type, value in table.items():
                for arch in value if isinstance(value, (list, tuple)) else [value]:
                    if arch not in found.setdefault(model_type, []):
                        found[model_type].append(arch)
    return {t: sorted(archs) for t, archs in found.items()}


def _multimodal(model_type: str) -> bool:
    """Whether vLLM reads the type's default config as nested: ``get_hf_text_config``
    takes ``get_text_config()``, and a sub-config there makes the backend class the
    multimodal one (``ModelConfig._get_transformers_backend_cls``). A type transformers
    builds no default config for (its sub-configs have none, e.g. ``rag``) is not."""
    auto_config = importlib.import_module("transformers").AutoConfig
    try:
        config = auto_config.for_model(model_type)
        return bool(config.get_text_config() is not config)
    except Exception:  # no default config: never started bare
        return False


def collect() -> dict[str, Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    logging.disable(logging.CRITICAL)
    # Imported by name: they exist only in the vLLM venv this tool runs in.
    transformers = importlib.import_module("transformers")
    vllm = importlib.import_module("vllm")
    registry = importlib.import_module("vllm.model_executor.models.registry").ModelRegistry
    # What _try_resolve_transformers reads of a ModelConfig, for a folder without auto_map.
    config = types.SimpleNamespace(hf_config=types.SimpleNamespace(), model_impl="auto",
                                   _get_transformers_backend_cls=lambda: "backend")
    by_type = _architectures()
    backend: dict[str, bool] = {}
    for arch in sorted({a for archs in by_type.values() for a in archs}):
        try:
            backend[arch] = registry._try_resolve_transformers(arch, config) is not None
        except Exception:  # an import failure or vLLM's own assertion: start-up fails
            backend[arch] = False
    multimodal = {t for t in by_type if _multimodal(t)}
    return {"vllm": vllm.__version__, "transformers": transformers.__version__,
            "tables": {"REGISTERED": frozenset(registry.models),
                       "BACKEND": backend,
                       "MULTIMODAL_TYPES": frozenset(multimodal),
                       "ARCHITECTURES": {t: tuple(a) for t, a in by_type.items()}}}


def _lines(name: str, value: Any) -> list[str]:
    if isinstance(value, dict):
        kind = "bool" if name.startswith("BACKEND") else "tuple[str, ...]"
        if not value:
            return [f"{name}: Final[dict[str, {kind}]] = {{}}"]
        return [f"{name}: Final[dict[str, {kind}]] = {{",
                *(f"    {k!r}: {v if isinstance(v, bool) else tuple(v)!r},"
                  for k, v in sorted(value.items())), "}"]
    if not value:
        return [f"{name}: Final[frozenset[str]] = frozenset()"]
    return [f"{name}: Final = frozenset({{", *(f"    {k!r}," for k in sorted(value)), "})"]


_DOC = ["GENERATED by tools/probe_vllm_startup.py (its docstring says how) from the installed",
        "packages named below; do not edit. prefixkey/render/_vllm_startup.py applies them:",
        "whether vLLM's render server starts for a folder's architectures."]


def _joined(lines: list[str]) -> str:
    if any(len(line) > 99 for line in lines):  # a type's architectures: one line each
        at = lines.index("from __future__ import annotations")
        lines[at:at] = ["# Generated lines are long on purpose.", "# ruff: noqa: E501", ""]
    return "\n".join([*lines, ""])


def render(data: dict[str, Any]) -> str:
    lines = module_head(["Which architectures vLLM's model registry starts for: facts, as data.",
                         "", *_DOC], {"VLLM_VERSION": data["vllm"],
                                      "TRANSFORMERS_VERSION": data["transformers"]})
    for name, value in data["tables"].items():
        lines += ["", *_lines(name, value)]
    return _joined(lines)


def render_delta(data: dict[str, Any], out: Path, base: str | None) -> str:
    """A release's start-up facts as their differences from a base module's facts."""
    shapes = load_module(RENDER / "_hf_facts_delta.py").STARTUP_TABLES
    base, changes, base_facts = delta_base(out, base, OUT, data["tables"], shapes)
    lines = module_head([
        f"vLLM {data['vllm']}'s start-up facts, as differences from vLLM "
        f"{base_facts.vllm_version}'s.", "", *_DOC, *DELTA_DOC,
    ], {"VLLM_VERSION": data["vllm"], "TRANSFORMERS_VERSION": data["transformers"],
        "BASE_MODULE": base})
    for name, value in changes.items():
        lines += ["", *_lines(name, value)]
    return _joined(lines)


def startup(model_types: list[str]) -> dict[str, dict[str, str | None]]:
    """vLLM's own start-up step on a minimal folder per architecture of each type."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    logging.disable(logging.WARNING)
    auto_config = importlib.import_module("transformers").AutoConfig
    engine_args = importlib.import_module("vllm.engine.arg_utils").AsyncEngineArgs
    by_type = _architectures()
    found: dict[str, dict[str, str | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model_type in model_types:
            config = auto_config.for_model(model_type).to_dict()
            if config.get("vocab_size") is None:
                config["vocab_size"] = 256
            row: dict[str, str | None] = {}
            for arch in by_type.get(model_type, []):
                folder = Path(tmp) / f"{model_type}-{arch}"
                folder.mkdir()
                (folder / "config.json").write_text(
                    json.dumps({**config, "architectures": [arch]}, default=str), "utf-8")
                try:
                    row[arch] = str(engine_args(model=str(folder))
                                    .create_model_config().architecture)
                except Exception as exc:  # pydantic's ValidationError wraps vLLM's
                    text = str(exc).replace(str(folder), "<folder>")
                    row[arch] = (None if "are not supported for now" in text else
                                 "error: " + next((line.strip() for line in
                                                   text.splitlines()[1:] if line.strip()),
                                                  text.strip())[:120])
            found[model_type] = row
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--base", help="the module a release's delta is written over "
                        "(default: the one the committed module names, else the full one)")
    parser.add_argument("--rebase", action="store_true", help="write the committed delta "
                        "module over --base as it is, without an install (its facts kept)")
    parser.add_argument("--startup", help="comma-separated model types: print vLLM's real "
                        "start-up answer per architecture as JSON")
    args = parser.parse_args(argv)
    if args.startup:
        print(json.dumps(startup(args.startup.split(","))))
        return 0
    out: Path = args.out
    if args.rebase:
        held = committed_facts(out, load_module(RENDER / "_hf_facts_delta.py").STARTUP_TABLES)
        data = {"vllm": held.vllm_version, "transformers": held.transformers_version,
                "tables": dict(held.tables)}
    else:
        data = collect()
    text = render(data) if out.resolve() == OUT.resolve() else render_delta(
        data, out, args.base)
    return write_or_check(out, text, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
