"""Write which architectures vLLM starts for, per model type probed, as data.

Maintainer tool, run by the interpreter of a scratch vLLM venv (CONTRIBUTING.md, "Render
vectors"). For every model type whose registered tokenizer class is a Python tokenizer
(``_hf_facts.py``: kind ``python``), and the rebuilding classes' types of
:data:`REBUILT_TYPES`, it writes a minimal folder per architecture
transformers lists for that type (every ``*_MAPPING_NAMES`` of
``transformers.models.auto.modeling_auto``): ``config.json`` is the type's default
config (``AutoConfig.for_model``) with that architecture and, where the default leaves
it null, ``vocab_size`` 256 (every real checkpoint has one). It then runs the first
step of vLLM's render server, ``AsyncEngineArgs(model=folder).create_model_config()``
(``vllm/entrypoints/launchers/render/entry.py``): the model registry's inspection, with
its Transformers modeling backend fallback. Recorded per architecture: the class vLLM
resolves it to, ``None`` when vLLM answers "Model architectures [...] are not
supported for now", or ``"error: ..."`` for any other failure (a fact of the probe's
minimal folder as much as of vLLM: read it before relying on it). A type whose default
config transformers cannot build (``rag``: it needs sub-configs) is recorded with no
architectures.

Usage::

    /work/venvs/vllm031/bin/python tools/probe_vllm_startup.py [--check] [--out PATH]
    /work/venvs/vllm031/bin/python tools/probe_vllm_startup.py --only xlm,wav2vec2

About ten minutes on two cores (each supported architecture is inspected in a
subprocess). ``--check`` exits 1 when the committed module differs; another release's
venv with ``--check`` says whether its registry answers the same; ``--only`` checks a
few types' rows (tests/units/test_python_tokenizers.py).

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
import importlib.util
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from extract_hf_tokenizers import RENDER, load_module, module_head

OUT = RENDER / "_hf_startup_facts.py"
#: The model types of rebuilding classes probed too: those whose class prefixkey did not
#: reproduce when their start-up was first asked about (issue 19). A refusal must say
#: whether vLLM starts for the folder at all, and a reproduction under another release
#: needs that release's answer.
REBUILT_TYPES = frozenset({
    "esmc", "esmfold2", "lasr_ctc", "lasr_encoder", "layoutlmv2", "layoutlmv3", "layoutxlm",
    "luke", "markuplm", "mbart", "nllb-moe", "pegasus", "reformer", "rembert", "roformer",
    "seamless_m4t", "seamless_m4t_v2", "splinter", "tipsv2", "udop", "videoprism", "xglm"})


def _probed(facts: Any, model_type: str, only: list[str] | None) -> bool:
    """A type registering a Python tokenizer, or one of :data:`REBUILT_TYPES`."""
    kind = facts.CLASSES.get(facts.REGISTERED_CLASS[model_type] or "", ("", ""))[1]
    return (model_type in facts.CONFIG_MODEL_TYPES and (only is None or model_type in only)
            and (kind == "python" or model_type in REBUILT_TYPES))


def _architectures(model_type: str) -> list[str]:
    modeling_auto = importlib.import_module("transformers.models.auto.modeling_auto")
    found: list[str] = []
    for name in sorted(dir(modeling_auto)):
        table = getattr(modeling_auto, name)
        if (name.endswith("_MAPPING_NAMES") and name != "CONFIG_MAPPING_NAMES"
                and isinstance(table, dict) and model_type in table):
            value = table[model_type]
            for arch in value if isinstance(value, (list, tuple)) else [value]:
                if arch not in found:
                    found.append(arch)
    return sorted(found)


def collect(only: list[str] | None = None) -> dict[str, Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    logging.disable(logging.WARNING)
    # Imported by name: they exist only in the vLLM venv this tool runs in.
    transformers = importlib.import_module("transformers")
    vllm = importlib.import_module("vllm")
    auto_config = transformers.AutoConfig
    engine_args = importlib.import_module("vllm.engine.arg_utils").AsyncEngineArgs

    facts = load_module(RENDER / "_hf_facts.py")
    types = sorted(t for t in facts.REGISTERED_CLASS if _probed(facts, t, only))
    starts: dict[str, dict[str, str | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model_type in types:
            try:
                config = auto_config.for_model(model_type).to_dict()
            except ValueError:
                starts[model_type] = {}
                continue
            if config.get("vocab_size") is None:
                config["vocab_size"] = 256
            found: dict[str, str | None] = {}
            for arch in _architectures(model_type):
                folder = Path(tmp) / f"{model_type}-{arch}"
                folder.mkdir()
                (folder / "config.json").write_text(
                    json.dumps({**config, "architectures": [arch]}, default=str), "utf-8")
                try:
                    found[arch] = str(engine_args(model=str(folder))
                                      .create_model_config().architecture)
                except Exception as exc:  # pydantic's ValidationError wraps vLLM's
                    # "not supported" is vLLM's answer for the architecture; any other
                    # failure is kept as its text (it may be a fact of the probe's folder).
                    text = str(exc).replace(str(folder), "<folder>")
                    found[arch] = (None if "are not supported for now" in text else
                                   "error: " + next((line.strip() for line in
                                                     text.splitlines()[1:] if line.strip()),
                                                    text.strip())[:120])
            starts[model_type] = found
            print(model_type, found, file=sys.stderr)
    return {"vllm": vllm.__version__, "transformers": transformers.__version__,
            "starts": starts}


def render(data: dict[str, Any]) -> str:
    lines = module_head([
        "Which architectures vLLM's render server starts for, per model type probed.",
        "",
        "GENERATED by tools/probe_vllm_startup.py (its docstring says how) from the installed",
        "packages named below; do not edit. prefixkey/render/_hf_decision.py reads it to say",
        "truthfully why a model type's Python tokenizer or rebuild is refused.",
    ], {"VLLM_VERSION": data["vllm"], "TRANSFORMERS_VERSION": data["transformers"]})
    lines += [
        "",
        "#: model type -> {transformers architecture: the class vLLM resolves it to, None:",
        "#: \"Model architectures [...] are not supported for now\", or 'error: ...'}.",
        "STARTS: Final[dict[str, dict[str, str | None]]] = {",
    ]
    for model_type, found in sorted(data["starts"].items()):
        if not found:
            lines.append(f"    {model_type!r}: {{}},")
            continue
        lines.append(f"    {model_type!r}: {{")
        lines.extend(f"        {arch!r}: {cls!r}," for arch, cls in sorted(found.items()))
        lines.append("    },")
    lines += ["}", ""]
    if any(len(line) > 99 for line in lines):  # error texts: long on purpose
        at = lines.index("from __future__ import annotations")
        lines[at:at] = ["# Generated lines are long on purpose.", "# ruff: noqa: E501", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--only", help="comma-separated model types: check just their rows")
    args = parser.parse_args(argv)
    if args.only:
        data = collect(args.only.split(","))
        committed = load_module(args.out)
        differ = [t for t in args.only.split(",")
                  if data["starts"].get(t) != committed.STARTS.get(t)]
        for t in differ:
            print(f"{t}: this install {data['starts'].get(t)}, committed "
                  f"{committed.STARTS.get(t)}", file=sys.stderr)
        # Rows only: a release may name another release's module with the same answers.
        return 1 if differ else 0
    text = render(collect())
    if args.check:
        if args.out.read_text("utf-8") != text:
            print(f"{args.out} differs from this install's answers", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
