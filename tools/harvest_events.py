"""Harvest real KV-event wire fixtures: vLLM's own msgspec classes encode them.

Maintainer tool (not part of the installed package)::

    python tools/harvest_events.py                 # every wire era's release
    python tools/harvest_events.py 0.31.0 0.33.0   # some releases

For each release it executes the release's real ``vllm/distributed/kv_events.py``
from the cached wheel sources (``tools/vllm_loader.py`` downloads and extracts a
missing release; every other ``vllm.*`` import and ``zmq`` are inert stubs,
``ExternalBlockHash`` is the release's own definition), builds a reproducible set
of ``KVEventBatch`` values with the release's ``BlockStored``, ``BlockRemoved``
and ``AllBlocksCleared`` (int and bytes hashes, optional fields set and unset)
and encodes them with ``msgspec.msgpack.Encoder()``. Each payload is decoded
back with the release's typed ``msgspec.msgpack.Decoder(KVEventBatch)`` and must
re-encode to the same bytes; the expected form is written from that decoded value, not
from prefixkey's decoder.

Writes ``tests/fixtures/events/<version>.jsonl`` (one line per batch:
``{"version", "name", "payload_hex", "expected"}``), ``<version>.meta.json``
(provenance and the struct facts: field order, required count, array_like,
omit_defaults) and ``examples/events.recording.jsonl`` (from 0.31.0's batches).
"""

from __future__ import annotations

import argparse
import base64
import datetime as _dt
import hashlib
import importlib
import json
import platform
import sys
import types
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import Any

import msgspec
from packaging.version import Version

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_loader import _Inert, _VllmFinder, cache_dir_for, ensure_sources

from prefixkey.events import BlockRemoved, BlockStored

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "events"
EXAMPLE = ROOT / "examples" / "events.recording.jsonl"
#: One release per wire era (and 0.31.0, where extra keys become untagged).
RELEASES = ("0.9.0", "0.9.1", "0.10.2", "0.14.0", "0.17.0", "0.20.0", "0.22.0", "0.24.0",
            "0.26.0", "0.29.0", "0.30.0", "0.31.0", "0.33.0")
MODULE = "vllm.distributed.kv_events"


def load_kv_events(version: str) -> tuple[types.ModuleType, str, str]:
    """The release's real kv_events module, and its wheel's name and sha256."""
    cache = cache_dir_for(version)
    if not (cache / "vllm" / "distributed" / "kv_events.py").exists():
        ensure_sources(version)
    marker = (cache / ".prefixkey-extracted").read_text().split()
    finder = _VllmFinder(cache, real=[MODULE],
                         sliced={"vllm.v1.core.kv_cache_utils": ["ExternalBlockHash"]})
    zmq = types.ModuleType("zmq")
    zmq.__dict__["__getattr__"] = lambda name: type(name, (_Inert,), {})
    saved = {k: v for k, v in sys.modules.items() if k == "zmq" or k.split(".")[0] == "vllm"}
    for k in saved:
        del sys.modules[k]
    sys.modules["zmq"] = zmq
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module(MODULE)
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "zmq" or k.split(".")[0] == "vllm"]:
            del sys.modules[k]
        sys.modules.update(saved)
    assert finder.modes.get(MODULE) == "real", finder.modes
    return module, marker[0], marker[1]


def _digest(label: str) -> bytes:
    return hashlib.sha256(label.encode()).digest()


def _struct_facts(cls: Any) -> dict[str, Any]:
    config = cls.__struct_config__
    return {
        "fields": list(cls.__struct_fields__),
        "required": len(cls.__struct_fields__) - len(cls.__struct_defaults__),
        "array_like": config.array_like,
        "omit_defaults": config.omit_defaults,
        "tag": config.tag,
    }


def _event(cls: Any, values: dict[str, Any]) -> Any:
    """The release's event with the fields it has (required ones always passed)."""
    facts = _struct_facts(cls)
    kwargs = {k: v for k, v in values.items() if k in facts["fields"]}
    for name in facts["fields"][: facts["required"]]:
        kwargs.setdefault(name, None)
    return cls(**kwargs)


def build_batches(module: Any, version: str) -> list[tuple[str, Any]]:
    """The reproducible batches of one release."""
    ver = Version(version)
    stored, removed, cleared = module.BlockStored, module.BlockRemoved, module.AllBlocksCleared
    batch_cls = module.KVEventBatch
    has_rank = "data_parallel_rank" in batch_cls.__struct_fields__
    bytes_hashes = ver >= Version("0.10.2")

    def batch(ts: float, events: list[Any], rank: int | None) -> Any:
        return batch_cls(ts=ts, events=events, data_parallel_rank=rank) if has_rank else (
            batch_cls(ts=ts, events=events))

    mm_a: Any = ("mmhash-a", 3) if ver >= Version("0.19.0") else "mmhash-a"
    mm_a2: Any = ("mmhash-a", -13) if ver >= Version("0.19.0") else "mmhash-a"
    full = {"group_idx": 1, "kv_cache_spec_kind": "sliding_window",
            "kv_cache_spec_sliding_window": 4096, "locality": "LOCAL", "ownership": "tier-0",
            "session_id": "sess-42", "lookahead_token_ids": [[33, 34], [49, 50]]}
    out: list[tuple[str, Any]] = []
    out.append(("int_hashes_minimal", batch(1700000000.25, [
        _event(stored, {"block_hashes": [123456789, 2**64 - 1, -(2**63)],
                        "parent_block_hash": None, "token_ids": list(range(1, 49)),
                        "block_size": 16, "lora_id": None, "medium": "GPU", "lora_name": None,
                        "group_idx": 0}),
        _event(removed, {"block_hashes": [123456789], "medium": "GPU", "group_idx": 0}),
        cleared(),
    ], 0)))
    hashes: list[Any] = ([_digest("b0"), _digest("b1")] if bytes_hashes
                         else [-8811237046218093591, 7])
    parent: Any = _digest("parent") if bytes_hashes else 4242
    out.append(("optional_fields_set", batch(1700000001.5, [
        _event(stored, {"block_hashes": hashes, "parent_block_hash": parent,
                        "token_ids": list(range(100, 132)), "block_size": 16, "lora_id": 3,
                        "medium": "CPU", "lora_name": "sql-adapter",
                        "extra_keys": [("sql-adapter", mm_a, "salt-1"), ("sql-adapter", mm_a2)],
                        **full}),
        _event(removed, {"block_hashes": hashes[:1], "medium": "CPU", "group_idx": 1,
                         "locality": "REMOTE", "ownership": "tier-1"}),
    ], 3)))
    out.append(("empty_batch_rank_unset", batch(0.0, [], None)))
    embeds = _digest("embeds-block-0")
    out.append(("mixed", batch(1700000002.0, [
        cleared(),
        _event(stored, {"block_hashes": [_digest("c0") if bytes_hashes else 1, 2**63],
                        "parent_block_hash": None, "token_ids": [0, 1, 2, 3, 4, 5, 6, 7],
                        "block_size": 4, "lora_id": None, "medium": "GPU", "lora_name": None,
                        "extra_keys": [(mm_a, "salt-2", embeds), None]}),
        _event(stored, {"block_hashes": [2**63 + 5], "parent_block_hash": 2**63,
                        "token_ids": [8, 9, 10, 11], "block_size": 4, "lora_id": None,
                        "medium": "GPU", "lora_name": None, "extra_keys": [None],
                        "group_idx": 2, "session_id": "sess-7"}),
        _event(removed, {"block_hashes": [1, 2, 2**63 + 5], "medium": "GPU"}),
    ], 1)))
    return out


def expected_form(value: Any) -> dict[str, Any]:
    """The decoded struct as fixture JSON (every model field; unpublished ones null)."""

    def plain(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, bytes):
            return {"hex": v.hex()}
        return v

    def hsh(v: Any) -> Any:
        if v is None:
            return None
        return {"hex": v.hex()} if isinstance(v, bytes) else {"int": v}

    events = []
    for ev in value.events:
        tag = type(ev).__name__
        out: dict[str, Any] = {"type": tag}
        model = {"BlockStored": BlockStored, "BlockRemoved": BlockRemoved}.get(tag)
        names = [f.name for f in dc_fields(model)] if model else []
        unknown = set(ev.__struct_fields__) - set(names)
        assert not unknown, f"{tag} fields missing from prefixkey.events: {unknown}"
        for name in names:
            v: Any = getattr(ev, name, None)
            if name == "block_hashes":
                out[name] = [hsh(h) for h in v]
            elif name == "parent_block_hash":
                out[name] = hsh(v)
            else:
                out[name] = plain(v)
        events.append(out)
    return {"ts": value.ts, "data_parallel_rank": getattr(value, "data_parallel_rank", None),
            "events": events}


def harvest(version: str) -> list[dict[str, Any]]:
    module, wheel, wheel_sha = load_kv_events(version)
    encoder = msgspec.msgpack.Encoder()
    decoder = msgspec.msgpack.Decoder(module.KVEventBatch)
    lines = []
    for name, value in build_batches(module, version):
        payload = encoder.encode(value)
        back = decoder.decode(payload)
        # Inner tuples of extra keys come back as lists (typed Any): compare re-encoded.
        assert encoder.encode(back) == payload, (version, name, back, value)
        lines.append({"version": version, "name": name, "payload_hex": payload.hex(),
                      "expected": expected_form(back)})
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{version}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    meta = {
        "version": version, "wheel": wheel, "wheel_sha256": wheel_sha,
        "source": "vllm/distributed/kv_events.py (executed from the wheel)",
        "encoder": "msgspec.msgpack.Encoder()", "msgspec": msgspec.__version__,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).date().isoformat(),
        "batches": len(lines),
        "structs": {cls: _struct_facts(getattr(module, cls)) for cls in
                    ("KVEventBatch", "BlockStored", "BlockRemoved", "AllBlocksCleared")},
    }
    (OUT / f"{version}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return lines


def write_example(lines: list[dict[str, Any]]) -> None:
    """A recording (docs/events.md) of two replicas publishing 0.31.0's batches."""
    records = []
    for seq, line in enumerate(lines):
        for source, topic in (("replica-a", b""), ("tcp://10.0.0.7:5557", b"kv")):
            frames = [topic, seq.to_bytes(8, "big"), bytes.fromhex(line["payload_hex"])]
            records.append({"recv_time": 1700000000.5 + seq, "source": source,
                            "frames_b64": [base64.b64encode(f).decode() for f in frames]})
    EXAMPLE.write_text("".join(json.dumps(r) + "\n" for r in records))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=list(RELEASES))
    args = parser.parse_args(argv)
    for version in args.versions:
        lines = harvest(version)
        print(f"{version}: {len(lines)} batches", file=sys.stderr)
        if version == "0.31.0":
            write_example(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
