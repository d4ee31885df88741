"""Harvest golden prefix-cache vectors from a real vLLM release.

Maintainer tool. It loads the release's *own* hashing functions from the PyPI wheel
(see ``tools/vllm_loader.py``), runs a reproducible corpus of requests through them and
writes what vLLM computed. Nothing of vLLM is copied into the repo; the output files
are facts (inputs and the hashes vLLM produced).

Usage::

    python tools/harvest_vectors.py --vllm-version 0.31.0 [--out tests/vectors] \
        [--corpus-seed N]
    python tools/harvest_vectors.py --check-public /work/shared/vectors-public/0.31.0.jsonl

The first form writes ``<out>/<version>.jsonl`` (one record per request and hash
algorithm, schema of ``vectors-public/README.md``) and ``<out>/<version>.meta.json``
(provenance: wheel name + sha256, library versions, corpus seed, counts, dropped ids).
The same command always produces an identical ``.jsonl`` (only the meta date changes).

Records with >= 4 blocks (about 40 of them) also carry
``result.group_block_hashes`` (``{"2": [...], "3": [...]}``, every entry of the real
``BlockHashListWithBlockSize(block_hashes, B, k*B)``) and
``result.block_hashes_with_group_id`` (``{"1": [...]}``, real
``make_block_hash_with_group_id(h, 1)``).

``--check-public PATH`` replays the ``case`` of every record of a vectors file through
the real functions and reports how many reproduce the recorded ``result``.

Requires torch (prompt embeds), cbor2, msgspec, xxhash.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import importlib.metadata
import itertools
import json
import platform
import random
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_loader import VllmHashing, engine_str, load_vllm

ALGOS: tuple[str, ...] = ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")
NONDETERMINISTIC_WITHOUT_SEED = frozenset({"xxhash", "xxhash_cbor"})
DEFAULT_CORPUS_SEED = 20250601
GROUP_RECORD_LIMIT = 40
GROUP_MIN_BLOCKS = 4
GROUP_SCALES = (2, 3)
VOCAB = 152064

# Every pickle / CBOR integer-width boundary (and past the int64/uint64 ranges).
INT_BOUNDARIES: tuple[int, ...] = (
    0,
    23,
    24,
    255,
    256,
    65535,
    65536,
    2**31 - 1,
    2**31,
    2**32 - 1,
    2**32,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    2**70,
)
SEEDS: tuple[str | None, ...] = (None, "0", "", "12345", "sëed-☃")
DTYPE_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2}


# --------------------------------------------------------------------------- corpus


@dataclass
class BaseCase:
    """One request shape; expanded into one record per hash algorithm."""

    shape: list[str]
    block_size: int
    token_ids: list[int]
    python_hash_seed: str | None = "0"
    hash_calls: list[int] | None = None
    lora: dict[str, Any] | None = None
    cache_salt: str | None = None
    mm_items: list[dict[str, Any]] = field(default_factory=list)
    prompt_embeds: dict[str, Any] | None = None
    num_prompt_tokens: int | None = None
    tags: list[str] = field(default_factory=list)

    def to_case(self, algo: str) -> dict[str, Any]:
        n_prompt = (
            len(self.token_ids) if self.num_prompt_tokens is None else self.num_prompt_tokens
        )
        return {
            "block_size": self.block_size,
            "hash_algo": algo,
            "python_hash_seed": self.python_hash_seed,
            "token_ids": list(self.token_ids),
            "hash_calls": list(self.hash_calls or [len(self.token_ids)]),
            "lookahead": 0,
            "lora": self.lora,
            "cache_salt": self.cache_salt,
            "mm_items": list(self.mm_items),
            "prompt_embeds": self.prompt_embeds,
            "num_prompt_tokens": n_prompt,
        }


def _lora(name: str, int_id: int, path: str | None) -> dict[str, Any]:
    return {"name": name, "int_id": int_id, "path": path}


def _mm(identifier: str, offset: int, length: int) -> dict[str, Any]:
    return {"identifier": identifier, "offset": offset, "length": length}


def _embeds(
    rng: random.Random, dtype: str, rows: int, hidden: int, zero_rows: Iterable[int] = ()
) -> dict[str, Any]:
    row_bytes = hidden * DTYPE_SIZES[dtype]
    zero = set(zero_rows)
    raw = b"".join(
        bytes(row_bytes) if r in zero else rng.randbytes(row_bytes) for r in range(rows)
    )
    return {"dtype": dtype, "shape": [rows, hidden], "hex": raw.hex()}


def _tokens(rng: random.Random, n: int, *, big: bool = False) -> list[int]:
    if not big:
        return [rng.randrange(VOCAB) for _ in range(n)]
    out = []
    for _ in range(n):
        b = rng.choice(INT_BOUNDARIES)
        out.append(max(0, b + rng.choice((-1, 0, 0, 1))))
    return out


def _hex_id(rng: random.Random) -> str:
    return rng.randbytes(32).hex()


def _decode_calls(prompt: int, total: int, step: int = 1) -> list[int]:
    calls = [prompt]
    while calls[-1] < total:
        calls.append(min(total, calls[-1] + step))
    return calls


def hand_cases(rng: random.Random) -> list[BaseCase]:
    """Hand-written edge cases (deterministic given ``rng``)."""
    cases: list[BaseCase] = []
    add = cases.append

    # -- text only: lengths, block sizes, block tuple lengths 1/2/3/>=4
    add(BaseCase(["text", "length_edge"], 16, []))
    add(BaseCase(["text", "length_edge"], 1, [0]))
    add(BaseCase(["text", "length_edge"], 2, [5, 6, 7]))
    add(BaseCase(["text", "length_edge"], 3, _tokens(rng, 9)))
    for bs in (1, 7, 16, 64):
        add(BaseCase(["text", "block_size"], bs, _tokens(rng, 2 * bs + bs // 2 + 1)))
    add(BaseCase(["text", "length_edge"], 16, _tokens(rng, 15)))
    add(BaseCase(["text", "length_edge"], 64, _tokens(rng, 64 * 4)))

    # -- integer width boundaries, in blocks of length 1, 2, 3, 7, 16
    bounds = list(INT_BOUNDARIES)
    neighbours = sorted({max(0, b + d) for b in bounds for d in (-1, 1)} - set(bounds))
    add(BaseCase(["text", "int_boundaries"], 1, bounds))
    add(BaseCase(["text", "int_boundaries"], 2, bounds))
    add(BaseCase(["text", "int_boundaries"], 3, bounds + bounds[:2]))
    add(BaseCase(["text", "int_boundaries"], 7, neighbours[:28]))
    add(BaseCase(["text", "int_boundaries"], 16, bounds + bounds[::-1]))
    for b in bounds:  # each boundary as a whole block of its own, block size 4
        add(BaseCase(["text", "int_boundaries", "uniform_block"], 4, [b] * 8))
    add(BaseCase(["text", "int_boundaries"], 16, _tokens(rng, 64, big=True)))

    # -- python hash seeds (null = unset: xxhash records get dropped)
    text = _tokens(rng, 20)
    for seed in SEEDS:
        add(BaseCase(["text", "seed"], 7, text, python_hash_seed=seed))
    add(BaseCase(["text", "seed"], 16, _tokens(rng, 33), python_hash_seed="4294967295"))

    # -- large blocks: one tuple pickles to > 64 KiB (frame splitting)
    big32 = [rng.randrange(2**31, 2**32) for _ in range(2 * 16384)]
    add(BaseCase(["text", "large_block"], 16384, big32))
    big64 = [rng.randrange(2**63, 2**64) for _ in range(8192 + 5)]
    add(BaseCase(["text", "large_block"], 8192, big64))

    # -- LoRA
    add(BaseCase(["lora"], 4, _tokens(rng, 12), lora=_lora("adapter-x", 1, "/loras/x")))
    add(
        BaseCase(
            ["lora", "unicode"], 4, _tokens(rng, 9), lora=_lora("ädäptér-☃", 2, "/lörä/日本/☃")
        )
    )
    add(BaseCase(["lora", "same_string"], 4, _tokens(rng, 8), lora=_lora("a", 3, "a")))
    add(
        BaseCase(["lora", "same_string"], 7, _tokens(rng, 14), lora=_lora("adapter", 4, "adapter"))
    )
    add(
        BaseCase(
            ["lora", "salt", "same_string"],
            4,
            _tokens(rng, 8),
            lora=_lora("s", 5, "/s"),
            cache_salt="s",
        )
    )
    add(BaseCase(["lora", "tag_string"], 4, _tokens(rng, 8), lora=_lora("lora", 6, "lora")))
    add(BaseCase(["lora", "length_edge"], 1, _tokens(rng, 3), lora=_lora("x", 7, "y")))
    add(BaseCase(["lora", "error"], 4, _tokens(rng, 8), lora=_lora("no-path", 8, "")))
    add(BaseCase(["lora", "error"], 4, _tokens(rng, 8), lora=_lora("bad-id", 0, "/p")))
    add(
        BaseCase(
            ["lora", "decode"],
            4,
            _tokens(rng, 13),
            lora=_lora("dec", 9, "/d"),
            hash_calls=_decode_calls(5, 13),
        )
    )

    # -- cache salt
    for salt in ("", "s", "sält-☃-日本", "cache_salt"):
        add(BaseCase(["salt"], 4, _tokens(rng, 9), cache_salt=salt))
    long300 = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(300))
    add(BaseCase(["salt", "salt_edge"], 16, _tokens(rng, 33), cache_salt=long300))
    huge = "".join(rng.choice("0123456789abcdef") for _ in range(70001 // 3)) + "☃" * 16000
    add(BaseCase(["salt", "salt_edge"], 16, _tokens(rng, 17), cache_salt=huge))
    add(BaseCase(["salt", "length_edge"], 4, _tokens(rng, 3), cache_salt="no-full-block"))
    add(
        BaseCase(
            ["salt", "decode"], 4, _tokens(rng, 10), cache_salt="dec", hash_calls=[0, 3, 4, 9, 10]
        )
    )

    # -- multimodal layouts (block size 16 unless stated)
    t = _tokens(rng, 64)
    add(BaseCase(["mm", "mm_edge"], 16, t[:32], mm_items=[_mm("img-inside", 3, 5)]))
    add(BaseCase(["mm", "mm_edge"], 16, t, mm_items=[_mm("img-span", 5, 40)]))
    add(
        BaseCase(
            ["mm", "mm_edge"],
            16,
            t[:32],
            mm_items=[_mm("img-a", 0, 8), _mm("img-b", 8, 8), _mm("img-c", 16, 4)],
        )
    )
    add(
        BaseCase(
            ["mm", "mm_edge"],
            16,
            t[:32],
            mm_items=[_mm("p", 1, 2), _mm("q", 4, 3), _mm("r", 9, 5)],
        )
    )
    add(
        BaseCase(
            ["mm", "mm_edge", "same_string"], 16, t[:32], mm_items=[_mm("x", 2, 3), _mm("x", 7, 4)]
        )
    )
    add(
        BaseCase(
            ["mm", "mm_edge", "same_string"],
            4,
            t[:16],
            mm_items=[_mm("x", 0, 2), _mm("x", 2, 2), _mm("x", 5, 6)],
        )
    )
    add(BaseCase(["mm", "mm_edge"], 16, t[:48], mm_items=[_mm("img-end", 8, 8)]))
    add(BaseCase(["mm", "mm_edge"], 16, t[:48], mm_items=[_mm("img-end2", 8, 24)]))
    add(BaseCase(["mm", "mm_edge"], 16, t[:32], mm_items=[_mm("img-zero", 0, 16)]))
    add(
        BaseCase(
            ["mm", "mm_edge"],
            7,
            t[:35],
            mm_items=[_mm(_hex_id(rng), 0, 9), _mm(_hex_id(rng), 12, 10)],
        )
    )
    add(BaseCase(["mm", "tag_string"], 4, t[:12], mm_items=[_mm("mm", 1, 2), _mm("m", 5, 1)]))
    add(BaseCase(["mm", "unicode"], 4, t[:12], mm_items=[_mm("bild-☃-日本", 2, 5)]))
    add(BaseCase(["mm", "length_edge"], 16, t[:20], mm_items=[_mm("img-tail", 17, 3)]))
    add(BaseCase(["mm", "block_size"], 1, t[:8], mm_items=[_mm("one", 2, 3), _mm("two", 6, 1)]))
    add(
        BaseCase(
            ["mm", "block_size"], 64, t + t, mm_items=[_mm("a64", 10, 60), _mm("b64", 70, 58)]
        )
    )

    # -- decode / incremental hashing with mm items (0.31+ window search)
    mm4 = [_mm("dm-a", 1, 5), _mm("dm-b", 7, 2), _mm("dm-c", 9, 8), _mm("x", 18, 1)]
    add(BaseCase(["decode_mm"], 4, t[:24], mm_items=mm4, hash_calls=_decode_calls(1, 24)))
    add(BaseCase(["decode_mm"], 4, t[:24], mm_items=mm4, hash_calls=[8, 13, 20, 24]))
    add(BaseCase(["decode_mm"], 4, t[:24], mm_items=mm4, hash_calls=[3, 4, 16, 17, 24]))
    add(
        BaseCase(
            ["decode_mm"],
            7,
            t[:40],
            mm_items=[_mm("dm-span", 2, 30)],
            hash_calls=_decode_calls(10, 40, 3),
        )
    )
    add(
        BaseCase(
            ["decode_mm"], 16, t[:48], mm_items=[_mm("dm-e", 12, 20)], hash_calls=[16, 32, 48]
        )
    )
    add(BaseCase(["decode"], 1, t[:12], hash_calls=_decode_calls(0, 12)))
    add(BaseCase(["decode"], 7, t[:30], hash_calls=_decode_calls(6, 30)))
    add(BaseCase(["decode"], 16, t[:50], hash_calls=[16, 20, 31, 32, 50]))

    # -- prompt embeds
    for dtype in ("float32", "float16", "bfloat16"):
        add(BaseCase(["embeds"], 4, [0] * 12, prompt_embeds=_embeds(rng, dtype, 12, 4)))
    add(
        BaseCase(
            ["embeds", "embeds_edge"], 7, [0] * 10, prompt_embeds=_embeds(rng, "float32", 10, 3)
        )
    )
    add(
        BaseCase(
            ["embeds", "embeds_edge"], 1, [0] * 3, prompt_embeds=_embeds(rng, "bfloat16", 3, 1)
        )
    )
    mixed_pos = {1, 2, 5, 9}
    mixed = [rng.randrange(1, VOCAB) if i in mixed_pos else 0 for i in range(12)]
    for dtype in ("float32", "bfloat16"):
        add(
            BaseCase(
                ["embeds", "embeds_edge", "mixed_prompt"],
                4,
                mixed,
                prompt_embeds=_embeds(rng, dtype, 12, 4, zero_rows=mixed_pos),
            )
        )
    for dtype in ("float32", "float16", "bfloat16"):
        dec = [0] * 10 + _tokens(rng, 14)
        add(
            BaseCase(
                ["embeds", "decode"],
                4,
                dec,
                prompt_embeds=_embeds(rng, dtype, 10, 2),
                hash_calls=[10, 11, 12, 16, 17, 24],
                num_prompt_tokens=10,
            )
        )
    add(
        BaseCase(
            ["embeds", "lora", "salt", "mm", "combo"],
            4,
            [0] * 16,
            prompt_embeds=_embeds(rng, "float16", 16, 2),
            lora=_lora("emb", 11, "/e"),
            cache_salt="emb-salt",
            mm_items=[_mm("emb-img", 3, 6)],
        )
    )

    # -- combinations, incl. seeds and decode
    for seed in SEEDS:
        add(
            BaseCase(
                ["combo"],
                4,
                _tokens(rng, 20),
                python_hash_seed=seed,
                lora=_lora("combo-☃", 12, "/c"),
                cache_salt="combo-salt",
                mm_items=[_mm("c-a", 1, 5), _mm("c-b", 9, 3)],
                hash_calls=[8, 9, 12, 16, 20],
            )
        )
    add(
        BaseCase(
            ["combo", "same_string"],
            4,
            _tokens(rng, 8),
            lora=_lora("s", 13, "s"),
            cache_salt="s",
            mm_items=[_mm("s", 0, 1), _mm("s", 1, 1)],
        )
    )
    add(
        BaseCase(
            ["combo", "same_string"],
            4,
            _tokens(rng, 8),
            lora=_lora("", 14, "/empty-name"),
            cache_salt="",
            mm_items=[_mm("", 0, 2)],
        )
    )
    add(
        BaseCase(
            ["combo", "int_boundaries"],
            3,
            bounds + bounds[:2],
            lora=_lora("big", 15, "/b"),
            cache_salt="big",
            mm_items=[_mm("big-img", 4, 7)],
            hash_calls=[6, 7, 12, 18],
        )
    )
    return cases


def random_cases(rng: random.Random, count: int) -> list[BaseCase]:
    """Random combinations (reproducible given ``rng``)."""
    cases: list[BaseCase] = []
    for _ in range(count):
        bs = rng.choice((1, 2, 3, 4, 7, 16, 64))
        n_blocks = rng.randint(0, 6 if bs < 64 else 3)
        n = n_blocks * bs + rng.randrange(bs)
        use_embeds = rng.random() < 0.2
        tokens = [0] * n if use_embeds else _tokens(rng, n, big=rng.random() < 0.3)
        shape = ["random"]
        case = BaseCase(shape, bs, tokens, python_hash_seed=rng.choice(SEEDS[1:]))
        if rng.random() < 0.4:
            name = rng.choice(("r", "rand-lora", "lörä-☃", "same"))
            path = rng.choice((name, "/r/" + name, "p"))
            case.lora = _lora(name, rng.randint(1, 1000), path)
        if rng.random() < 0.4:
            case.cache_salt = rng.choice(("", "s", "r", "rand-salt-☃", "x" * rng.randint(2, 300)))
        if n and rng.random() < 0.5:
            pos = 0
            while True:
                pos += rng.randrange(0, max(1, bs))
                length = rng.randint(1, max(1, 2 * bs))
                if pos + length > n or len(case.mm_items) >= 5:
                    break
                ident = rng.choice(("x", "y", _hex_id(rng), f"rimg-{pos}"))
                case.mm_items.append(_mm(ident, pos, length))
                pos += length
        prompt = n
        if n and rng.random() < 0.35:
            prompt = rng.randrange(n)
            case.hash_calls = _decode_calls(prompt, n, rng.randint(1, max(1, bs)))
            case.num_prompt_tokens = prompt
        if use_embeds and prompt:
            dtype = rng.choice(tuple(DTYPE_SIZES))
            case.prompt_embeds = _embeds(rng, dtype, prompt, rng.randint(1, 4))
        cases.append(case)
    return cases


def build_corpus(seed: int) -> list[BaseCase]:
    rng = random.Random(seed)
    return hand_cases(rng) + random_cases(rng, 40)


# --------------------------------------------------------------------------- running


def to_json(value: Any) -> Any:
    """Extra-keys JSON form: tuples/lists -> arrays, bytes -> {"hex": ...}."""
    if isinstance(value, (bytes, bytearray)):
        return {"hex": bytes(value).hex()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise TypeError(f"cannot serialise {type(value).__name__}")


@dataclass
class RunOutput:
    result: dict[str, Any]
    hashes: list[bytes]


def run_case(vh: VllmHashing, case: dict[str, Any], *, validate_lora: bool = True) -> RunOutput:
    """Run one ``case`` through the real vLLM functions."""
    algo = case["hash_algo"]
    tokens = case["token_ids"]
    calls_at = case["hash_calls"]
    if case.get("lookahead", 0):
        return RunOutput({"error": "NotApplicable: lookahead hashing not in this release"}, [])
    try:
        none_hash = vh.init_none_hash(algo, case["python_hash_seed"])
        hasher = vh.request_block_hasher(case["block_size"], algo)
        with vh.capture_hash_block_calls() as calls:
            req = vh.make_request(
                tokens[: calls_at[0]],
                lora=case["lora"],
                cache_salt=case["cache_salt"],
                mm_items=case["mm_items"],
                prompt_embeds=case["prompt_embeds"],
                block_hasher=hasher,
                validate_lora=validate_lora,
            )
            for prev, upto in itertools.pairwise(calls_at):
                new = tokens[prev:upto]
                req.append(new[0] if len(new) == 1 else new)
    except Exception as exc:  # vLLM raised for this input
        return RunOutput({"error": f"{type(exc).__name__}: {exc}"}, [])
    hashes = list(req.block_hashes)
    assert [c.result for c in calls] == hashes, "captured calls out of sync"
    extra = [c.extra_keys for c in calls]
    result = {
        "hash_type": "bytes" if hashes else None,
        "block_hashes": [h.hex() for h in hashes],
        "new_hashes_per_call": list(req.new_hashes_per_call),
        "none_hash": none_hash.hex(),
        "extra_keys": to_json(extra),
        "event_extra_keys": to_json(vh.to_event_extra_keys(extra)),
        "block_hashes_int64": [vh.maybe_convert_block_hash(h) for h in hashes],
        "python": platform.python_version(),
    }
    return RunOutput(result, hashes)


def add_group_fields(
    vh: VllmHashing, result: dict[str, Any], hashes: list[bytes], block_size: int
) -> None:
    result["group_block_hashes"] = {
        str(k): [
            h.hex() for h in vh.BlockHashListWithBlockSize(hashes, block_size, k * block_size)
        ]
        for k in GROUP_SCALES
    }
    result["block_hashes_with_group_id"] = {
        "1": [vh.make_block_hash_with_group_id(h, 1).hex() for h in hashes]
    }


def features_of(base: BaseCase, case: dict[str, Any]) -> list[str]:
    feats = {f"algo:{case['hash_algo']}", f"block_size:{case['block_size']}"}
    if case["lora"]:
        feats.add("lora")
    if case["cache_salt"] is not None:
        feats.add("cache_salt")
    if case["mm_items"]:
        feats.add("mm")
    if case["prompt_embeds"]:
        feats.add("prompt_embeds")
        feats.add(f"embeds:{case['prompt_embeds']['dtype']}")
    if len(case["hash_calls"]) > 1:
        feats.add("incremental")
    if any(t >= 2**31 for t in case["token_ids"]):
        feats.add("big_token_ids")
    if case["python_hash_seed"] is None:
        feats.add("seed_unset")
    if not (case["lora"] or case["cache_salt"] or case["mm_items"] or case["prompt_embeds"]):
        feats.add("text_only")
    feats.update(
        t
        for t in base.shape
        if t
        in {
            "int_boundaries",
            "large_block",
            "same_string",
            "tag_string",
            "unicode",
            "salt_edge",
            "mixed_prompt",
            "error",
        }
    )
    return sorted(feats)


def harvest(version: str, out_dir: Path, corpus_seed: int) -> dict[str, Any]:
    vh = load_vllm(version)
    corpus = build_corpus(corpus_seed)
    records: list[dict[str, Any]] = []
    group_candidates: list[tuple[int, list[tuple[dict[str, Any], list[bytes]]]]] = []
    dropped: list[str] = []
    errors: list[str] = []
    for idx, base in enumerate(corpus):
        per_base: list[tuple[dict[str, Any], list[bytes]]] = []
        for algo in ALGOS:
            rid = f"prefixkey-{idx:05d}/{algo}"
            case = base.to_case(algo)
            if algo in NONDETERMINISTIC_WITHOUT_SEED and case["python_hash_seed"] is None:
                dropped.append(rid)
                continue
            out = run_case(vh, case)
            if "error" in out.result:
                errors.append(rid)
            rec = {
                "id": rid,
                "version": version,
                "corpus": "prefixkey",
                "features": features_of(base, case),
                "shape": list(base.shape),
                "case": case,
                "result": out.result,
            }
            records.append(rec)
            per_base.append((rec, out.hashes))
        if per_base and len(per_base[0][1]) >= GROUP_MIN_BLOCKS:
            group_candidates.append((idx, per_base))
    # Spread the group-id extras evenly over the eligible cases (~40 records).
    n_bases = max(1, GROUP_RECORD_LIMIT // len(ALGOS))
    step = max(1, len(group_candidates) / n_bases)
    chosen = {int(i * step) for i in range(n_bases)} if group_candidates else set()
    n_group = 0
    for pos, (_, per_base) in enumerate(group_candidates):
        if pos in chosen:
            for rec, hashes in per_base:
                add_group_fields(vh, rec["result"], hashes, rec["case"]["block_size"])
                n_group += 1

    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl = out_dir / f"{version}.jsonl"
    with jsonl.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    feature_counts = Counter(f for rec in records for f in rec["features"])
    meta = {
        "version": version,
        "corpus": "prefixkey",
        "file": jsonl.name,
        "file_sha256": hashlib.sha256(jsonl.read_bytes()).hexdigest(),
        "corpus_seed": corpus_seed,
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "generator": "tools/harvest_vectors.py",
        "wheel": {"filename": vh.wheel_path.name, "sha256": vh.wheel_sha256},
        "module_modes": vh.module_modes,
        "interpreter": {
            "python": platform.python_version(),
            **{pkg: _pkg_version(pkg) for pkg in ("cbor2", "xxhash", "msgspec", "torch", "numpy")},
        },
        "string_identity": string_identity_facts(),
        "counts": {
            "base_cases": len(corpus),
            "written": len(records),
            "errors": len(errors),
            "nondeterministic_dropped": len(dropped),
            "with_group_fields": n_group,
        },
        "nondeterministic_ids": dropped,
        "error_ids": errors,
        "feature_counts": dict(sorted(feature_counts.items())),
    }
    meta_path = out_dir / f"{version}.meta.json"
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def _pkg_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def string_identity_facts() -> dict[str, bool]:
    """What msgspec decoding does to string identity (pickle memo depends on it)."""

    def same(s: str) -> bool:
        return engine_str(s) is engine_str(s)

    return {
        "ascii_1char_shared": same("x"),
        "latin1_1char_shared": all(same(chr(c)) for c in range(256)),
        "non_latin1_1char_shared": same("☃"),
        "empty_shared": same(""),
        "multichar_shared": same("ab"),
    }


# --------------------------------------------------------------------------- check


def check_public(path: Path, version: str | None) -> int:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    versions = {r["version"] for r in records}
    ver = version or (versions.pop() if len(versions) == 1 else None)
    if ver is None:
        raise SystemExit(f"{path}: several versions {sorted(versions)}; pass --vllm-version")
    vh = load_vllm(ver)
    stats: Counter[str] = Counter()
    mismatches: list[str] = []
    for rec in records:
        expected = dict(rec["result"])
        out = run_case(vh, rec["case"])
        got = out.result
        if "group_block_hashes" in expected and "error" not in got:
            add_group_fields(vh, got, out.hashes, rec["case"]["block_size"])
        if _same(got, expected):
            stats["match"] += 1
            continue
        if "error" in got and "error" not in expected:
            lenient = run_case(vh, rec["case"], validate_lora=False).result
            if _same(lenient, expected):
                stats["match_lenient_lora"] += 1
                continue
        stats["mismatch"] += 1
        keys = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
        mismatches.append(f"{rec['id']}: {keys}")
    total = len(records)
    print(f"{path}: {total} records, vLLM {ver}")
    print(f"  match (strict)                         : {stats['match']}")
    print(f"  match only with LoRA checks skipped    : {stats['match_lenient_lora']}")
    print(f"  mismatch                               : {stats['mismatch']}")
    for line in mismatches[:20]:
        print("   ", line)
    return 0 if not stats["mismatch"] else 1


def _same(got: dict[str, Any], expected: dict[str, Any]) -> bool:
    keys = (set(got) | set(expected)) - {"python"}
    return all(got.get(k) == expected.get(k) for k in keys)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-version", help="vLLM release, e.g. 0.31.0")
    parser.add_argument("--out", type=Path, default=Path("tests/vectors"))
    parser.add_argument("--corpus-seed", type=int, default=DEFAULT_CORPUS_SEED)
    parser.add_argument(
        "--check-public",
        type=Path,
        metavar="PATH",
        help="replay a vectors file instead of harvesting",
    )
    args = parser.parse_args(argv)
    if args.check_public:
        return check_public(args.check_public, args.vllm_version)
    if not args.vllm_version:
        parser.error("--vllm-version is required")
    meta = harvest(args.vllm_version, args.out, args.corpus_seed)
    print(json.dumps(meta["counts"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
