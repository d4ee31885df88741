"""Keep one release's harvested render answers, compactly, beside the 0.31.0 corpus.

Maintainer tool. ``tools/harvest_render.py --vllm-python /work/venvs/vllmXYZ/bin/python``
writes vLLM's full answers for a corpus (``--out`` under a scratch directory); this
keeps of each answer what the replay checks (tests/render/test_release_vectors.py) and
writes ``tests/render/releases/<release>/<corpus>vectors.jsonl``, one line per body::

    {"id": ..., "status": 200, "token_ids": [...] | [[...], ...] | null,
     "cache_salt": [...] | null, "error": {...} | null}

and ``tests/render/releases/<release>/meta.json`` (the harvest's versions and local date,
per corpus its record count and statuses). It prints how the release's answers differ
from the 0.31.0 vectors of the same corpus (ids, statuses), which decides its render era.

Usage::

    python tools/release_vectors.py RELEASE HARVEST_DIR [CORPUS ...]

where ``HARVEST_DIR`` holds ``<corpus>vectors.jsonl`` and its ``.meta.json`` from the
harvester, and each ``CORPUS`` is a prefix (``main`` for ``bodies.jsonl``, ``real_hf_``,
``real_mistral_``, ``real_harmony_``, ``real_l31_``, ``real_wu_``, ``real_wu2_``, ``real_pool_``,
``real_spm_``).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

RENDER_DIR = Path(__file__).resolve().parent.parent / "tests" / "render"
CORPORA = ("main", "real_hf_", "real_mistral_", "real_harmony_", "real_l31_", "real_wu_",
           "real_wu2_", "real_pool_", "real_spm_")


def _prefix(corpus: str) -> str:
    return "" if corpus == "main" else corpus


#: The keys of a compact record (what :func:`compact` keeps; ``startup`` only for a
#: server that did not start).
COMPACT_KEYS = frozenset({"id", "status", "token_ids", "cache_salt", "error", "startup"})


def compact(record: dict[str, Any]) -> dict[str, Any]:
    """What the replay checks of one harvested answer. A record that is already compact
    is kept as it is: a partial harvest (``harvest_render.py --only``) into a directory
    seeded with a kept release's file writes the other servers' records back unchanged."""
    if "response" not in record:
        if "cache_salt" not in record or set(record) - COMPACT_KEYS:
            raise ValueError(f"record {record.get('id')!r} is neither a harvested answer (it "
                             f"has no 'response') nor a compact one (keys {sorted(record)})")
        return dict(record)
    response = record["response"]
    salts = None
    if record["status"] == 200:
        answers = response if isinstance(response, list) else [response]
        salts = [a.get("cache_salt") for a in answers]
    kept = {"id": record["id"], "status": record["status"], "token_ids": record["token_ids"],
            "cache_salt": salts, "error": record["error"]}
    if "startup" in record:  # a server that did not start (harvest_render.py)
        kept["startup"] = record["startup"]
    return kept


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


def differences(corpus: str, records: list[dict[str, Any]]) -> list[str]:
    """How a release's answers differ from 0.31.0's for the same bodies."""
    base = {r["id"]: r for r in _read(RENDER_DIR / f"{_prefix(corpus)}vectors.jsonl")}
    out = []
    for record in records:
        old = base.get(record["id"])
        if old is None:
            out.append(f"{record['id']}: no 0.31.0 answer")
        elif old["status"] != record["status"]:
            out.append(f"{record['id']}: status {old['status']} -> {record['status']} "
                       f"({(record['error'] or {}).get('message', '')[:160]})")
        elif old["token_ids"] != record["token_ids"]:
            out.append(f"{record['id']}: token ids differ")
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    release, harvest = argv[0], Path(argv[1])
    corpora = argv[2:] or list(CORPORA)
    out_dir = RENDER_DIR / "releases" / release
    out_dir.mkdir(parents=True, exist_ok=True)
    meta_path = out_dir / "meta.json"
    meta: dict[str, Any] = (json.loads(meta_path.read_text("utf-8")) if meta_path.exists()
                            else {"release": release, "corpora": {}})
    for corpus in corpora:
        name = f"{_prefix(corpus)}vectors.jsonl"
        records = _read(harvest / name)
        harvest_meta = json.loads((harvest / name.replace(".jsonl", ".meta.json")).read_text(
            "utf-8"))
        with (out_dir / name).open("w", encoding="utf-8") as f:
            for record in records:
                f.write(json.dumps(compact(record), ensure_ascii=False) + "\n")
        diffs = differences(corpus, records)
        meta["corpora"][corpus] = {
            "records": len(records),
            "statuses": dict(sorted(Counter(str(r["status"]) for r in records).items())),
            "differ_from_0.31.0": len(diffs),
            "versions": harvest_meta["versions"],
            "server": harvest_meta["server"],
            "bodies_sha256": harvest_meta["bodies_sha256"],
            "local_date": harvest_meta["local_date"],
            "date": harvest_meta["date"],
        }
        print(f"{release} {corpus}: {len(records)} records, {len(diffs)} differ from 0.31.0")
        for line in diffs:
            print("  " + line)
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
