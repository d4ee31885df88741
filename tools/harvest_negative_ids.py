"""Harvest vLLM's own keys for prompts holding negative token ids.

Maintainer tool. vLLM's engine core hashes a negative id like any other int;
its API server refuses one from 0.28.0 on (``InputProcessor``). The records
(schema of ``tests/vectors``) let ``tests/units/test_api_rules.py`` check that
prefixkey's core keys them as the engine core does, on both sides of 0.28.0::

    python tools/harvest_negative_ids.py 0.27.1 0.28.0 0.31.0 \
        > tests/fixtures/negative_token_ids.jsonl

It runs each release's functions through :func:`harvest_vectors.run_case`
(the wheel's code, loaded by ``tools/vllm_loader.py``; torch is imported).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from harvest_vectors import run_case

ALGOS = ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")
CASES: tuple[tuple[str, list[int], int], ...] = (
    ("neg-plain", [5, -1, 7, 8, -(2**31), 2**31, -3, 9], 4),
    ("neg-big", [1, -(2**63), 2, -(2**40), 3, 4, 5, 6], 2),
)


def records(version: str) -> list[dict[str, Any]]:
    """One record per case and algorithm, as ``version``'s own functions hash it."""
    out = []
    for name, ids, block_size in CASES:
        for algo in ALGOS:
            case = {"block_size": block_size, "hash_algo": algo, "python_hash_seed": "0",
                    "token_ids": ids, "hash_calls": [len(ids)], "lookahead": 0, "lora": None,
                    "cache_salt": None, "mm_items": [], "prompt_embeds": None,
                    "num_prompt_tokens": len(ids)}
            result = run_case(version, case).result
            out.append({"id": f"{name}/{algo}", "version": version, "case": case,
                        "result": result})
    return out


def main(versions: list[str]) -> int:
    for version in versions:
        for record in records(version):
            print(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
