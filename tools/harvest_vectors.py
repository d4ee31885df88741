"""Harvest golden prefix-cache vectors from real vLLM releases (0.7.0-0.33.0).

Maintainer tool. It loads each release's *own* hashing functions from the PyPI wheel
(see ``tools/vllm_loader.py``), runs a reproducible corpus of requests through them and
writes what vLLM computed. Nothing of vLLM is copied into the repo; the output files
are facts (inputs and the hashes vLLM produced).

Usage::

    python tools/harvest_vectors.py --vllm-version 0.31.0 [--compact] [--out tests/vectors] \
        [--corpus-seed N]
    python tools/harvest_vectors.py --all [--out tests/vectors]
    python tools/harvest_vectors.py --check-public /work/shared/vectors-public/0.7.0.jsonl

The first form writes ``<out>/<version>.jsonl`` (one record per request and hash
algorithm the release offers, schema of ``vectors-public/README.md``) and
``<out>/<version>.meta.json`` (provenance: wheel name + sha256, the detected
``harness_info``, interpreters, corpus seed, counts, dropped/skipped ids). The same
command always produces an identical ``.jsonl`` (only the meta date changes).

Corpora: the *full* corpus (``build_corpus``; outside 0.31.0 without blocks over 256
tokens and strings over 1000 characters, plus ``lookahead_cases`` where the release
has lookahead hashing) and the *compact* one (``COMPACT_INDICES``, ~28 cases). Record
ids ``prefixkey-NNNNN/<algo>`` use the same base-case index in every release.
``--all`` writes the full corpus for the first release of each scheme era
(``FULL_RELEASES``) and the compact one for every other release; an existing
0.31.0 file is kept as it is.

Hash calls: ``case.hash_calls[0]`` tokens are the prompt, later entries append tokens.
``VllmHashing.run_request`` drives the release's own code the way its engine does:
``hash_request_tokens`` + ``KVCacheManager._cache_full_blocks`` (0.7.x) or
``BlockPool.cache_full_blocks`` (0.8.0-0.10.0) for blocks completed by appends
(start mm index -1), and the request's block hasher (0.10.1+).

Builtin ``hash()`` (0.7.0-0.10.1.1): those cases run in a separate CPython 3.12
process (``$PREFIXKEY_BUILTIN_PYTHON`` or ``python3.12``; needs msgspec, cbor2, xxhash,
numpy) with ``PYTHONHASHSEED`` set in its environment, twice; cases whose results
differ between the two processes (a str hashed with the seed unset, a random
NONE_HASH) are dropped and listed in ``nondeterministic_ids``. Seeds CPython refuses at
start-up are listed in ``skipped_ids``. For the other algorithms a case is dropped
when NONE_HASH comes out different on a second derivation (fresh import or second
``init_none_hash``), e.g. sha256 with the seed set on 0.8.3-0.8.4. Where vLLM raises,
the record's result is ``{"error": ...}``.

Records with >= 4 blocks (about 40 of them) also carry, where the release has the
functions, ``result.group_block_hashes`` (``{"2": [...], "3": [...]}``, every entry of
the real ``BlockHashListWithBlockSize(block_hashes, B, k*B)``) and
``result.block_hashes_with_group_id`` (``{"1": [...]}``, real
``make_block_hash_with_group_id(h, 1)``).

``--check-public PATH`` replays the ``case`` of every record of a vectors file through
the real functions of its release and reports how many reproduce the recorded
``result`` (strictly, or only with the LoRA constructor checks skipped, which the
public harness bypassed).

Requires torch (prompt embeds), cbor2, msgspec, xxhash.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import hashlib
import importlib.metadata
import json
import os
import platform
import random
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_loader import engine_str, hash_value, load_vllm, load_vllm_fresh

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
    lookahead: int = 0

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
            "lookahead": self.lookahead,
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
    """The full corpus (0.31.0 file: exactly this, unfiltered)."""
    rng = random.Random(seed)
    return hand_cases(rng) + random_cases(rng, 40)


def lookahead_cases(seed: int) -> list[BaseCase]:
    """0.33.0 lookahead hashing (num_hash_lookahead_tokens 1 and 2); own rng stream."""
    rng = random.Random(seed + 33)
    cases: list[BaseCase] = []
    t = _tokens(rng, 48)
    for la in (1, 2):
        add = cases.append
        add(BaseCase(["lookahead", "text"], 4, t[:13], lookahead=la))
        add(BaseCase(["lookahead", "text", "length_edge"], 4, t[:8], lookahead=la))
        add(BaseCase(["lookahead", "block_size"], 1, t[:6], lookahead=la))
        add(BaseCase(["lookahead", "block_size"], 16, t[:35], lookahead=la))
        add(
            BaseCase(
                ["lookahead", "salt", "mm"],
                16,
                t[:34],
                cache_salt="s",
                mm_items=[_mm("X", 30, 3)],
                lookahead=la,
            )
        )
        add(
            BaseCase(
                ["lookahead", "mm"],
                4,
                t[:20],
                mm_items=[_mm("la-a", 3, 2), _mm("la-b", 8, 1), _mm("la-c", 12, 6)],
                lookahead=la,
            )
        )
        add(BaseCase(["lookahead", "lora"], 4, t[:12], lora=_lora("la", 3, "/la"), lookahead=la))
        add(
            BaseCase(
                ["lookahead", "decode"], 4, t[:24], hash_calls=_decode_calls(5, 24), lookahead=la
            )
        )
        add(
            BaseCase(
                ["lookahead", "decode_mm"],
                4,
                t[:24],
                mm_items=[_mm("la-d", 2, 9), _mm("la-e", 16, 3)],
                hash_calls=[7, 8, 9, 12, 16, 20, 24],
                lookahead=la,
            )
        )
        add(
            BaseCase(
                ["lookahead", "embeds"],
                4,
                [0] * 12,
                prompt_embeds=_embeds(rng, "float32", 12, 2),
                lookahead=la,
            )
        )
        add(
            BaseCase(
                ["lookahead", "embeds", "decode"],
                4,
                [0] * 8 + _tokens(rng, 8),
                prompt_embeds=_embeds(rng, "bfloat16", 8, 2),
                hash_calls=[8, 9, 12, 16],
                num_prompt_tokens=8,
                lookahead=la,
            )
        )
        add(BaseCase(["lookahead", "seed"], 4, t[:10], python_hash_seed=None, lookahead=la))
    return cases


# Base-case indices of build_corpus() used for the compact per-release files: plain
# tokens, block sizes 1/16, big ids, seeds unset/"0"/other, LoRA (incl. an error and
# decode), salt (incl. decode), mm layouts incl. decode appends with spanning items,
# prompt embeds (incl. decode) and a combined case.
COMPACT_INDICES: tuple[int, ...] = (
    1,
    4,
    6,
    14,
    31,
    32,
    33,
    37,
    40,
    41,
    44,
    47,
    49,
    51,
    57,
    59,
    60,
    65,
    73,
    76,
    77,
    78,
    81,
    83,
    88,
    91,
    92,
    93,
)
MAX_BLOCK_SIZE = 256
MAX_STRING = 1000


def select_corpus(
    version: str, seed: int, *, compact: bool, lookahead: bool
) -> list[tuple[int, BaseCase]]:
    """(index, case) pairs for one release's file; indices are stable across releases."""
    corpus = list(enumerate(build_corpus(seed)))
    if version == "0.31.0" and not compact:
        return corpus  # the 0.31.0 file predates the size limits; kept as it is

    def small(case: BaseCase) -> bool:
        strings = [case.cache_salt or ""]
        if case.lora:
            strings += [case.lora["name"] or "", case.lora["path"] or ""]
        return case.block_size <= MAX_BLOCK_SIZE and all(len(x) <= MAX_STRING for x in strings)

    chosen = [(i, c) for i, c in corpus if small(c)]
    if compact:
        wanted = set(COMPACT_INDICES)
        chosen = [(i, c) for i, c in chosen if i in wanted]
    if lookahead:
        extra = lookahead_cases(seed)
        if compact:
            extra = [c for c in extra if c.shape[1] in ("text", "decode_mm", "embeds")][:6]
        chosen += [(len(corpus) + k, c) for k, c in enumerate(extra)]
    return chosen


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


def hash_hex(value: Any) -> str | None:
    """Recorded form of a hash: ``bytes.hex()``; ints ``format(v, 'x')`` (``-`` if < 0)."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    return format(int(value), "x")


@dataclass
class RunOutput:
    result: dict[str, Any]
    hashes: list[Any]  # raw vLLM objects (BlockHashType / int / bytes)


def run_case(
    version: str, case: dict[str, Any], *, validate_lora: bool = True, fresh: bool = False
) -> RunOutput:
    """Run one ``case`` through the real functions of ``version`` (this interpreter)."""
    algo = case["hash_algo"]
    seed = case["python_hash_seed"]
    try:
        vh = load_vllm_fresh(version, seed) if fresh else load_vllm(version, seed)
        none_hash = vh.init_none_hash(algo, seed)
        with vh.capture_hash_block_calls() as calls:
            req = vh.run_request(
                case["token_ids"],
                case["hash_calls"],
                block_size=case["block_size"],
                algo_name=algo,
                lookahead=case.get("lookahead", 0),
                validate_lora=validate_lora,
                lora=case["lora"],
                cache_salt=case["cache_salt"],
                mm_items=case["mm_items"],
                prompt_embeds=case["prompt_embeds"],
            )
    except Exception as exc:  # vLLM raised for this input
        return RunOutput({"error": f"{type(exc).__name__}: {exc}"}, [])
    raw = list(req.block_hashes)
    values = [hash_value(h) for h in raw]
    assert [hash_value(c.result) for c in calls] == values, "captured calls out of sync"
    extra = [c.extra_keys for c in calls]
    event_extra = None
    if vh.to_event_extra_keys is not None:
        # With lookahead the hashed key is (E, *tokens); BlockPool publishes E.
        firsts = [e[0] if case.get("lookahead", 0) and e is not None else e for e in extra]
        event_extra = to_json(vh.to_event_extra_keys(firsts))
    int64 = None
    if vh.maybe_convert_block_hash is not None:
        int64 = [vh.maybe_convert_block_hash(h) for h in values]
    hash_type = None
    if values:
        hash_type = "bytes" if isinstance(values[0], (bytes, bytearray)) else "int"
    result = {
        "hash_type": hash_type,
        "block_hashes": [hash_hex(v) for v in values],
        "new_hashes_per_call": list(req.new_hashes_per_call),
        "none_hash": hash_hex(none_hash),
        "extra_keys": to_json(extra),
        "event_extra_keys": event_extra,
        "block_hashes_int64": int64,
        "python": platform.python_version(),
    }
    return RunOutput(result, values)


def add_group_fields(
    version: str, result: dict[str, Any], hashes: list[Any], block_size: int
) -> bool:
    """Group-key extras where the release has them (``BlockHashListWithBlockSize`` etc.)."""
    vh = load_vllm(version)
    if vh.BlockHashListWithBlockSize is None or vh.make_block_hash_with_group_id is None:
        return False
    result["group_block_hashes"] = {
        str(k): [
            h.hex() for h in vh.BlockHashListWithBlockSize(hashes, block_size, k * block_size)
        ]
        for k in GROUP_SCALES
    }
    result["block_hashes_with_group_id"] = {
        "1": [vh.make_block_hash_with_group_id(h, 1).hex() for h in hashes]
    }
    return True


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
    if case.get("lookahead", 0):
        feats.add("lookahead")
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


# ---- builtin hash(): separate CPython >= 3.12 process with PYTHONHASHSEED in its env


def builtin_python() -> str:
    """Interpreter for ``builtin`` cases (``$PREFIXKEY_BUILTIN_PYTHON`` or python3.12)."""
    env = os.environ.get("PREFIXKEY_BUILTIN_PYTHON")
    if env:
        return env
    for cand in ("python3.12", "/root/.pyenv/versions/3.12.1/bin/python3.12"):
        path = shutil.which(cand) if "/" not in cand else (cand if Path(cand).exists() else None)
        if path:
            probe = subprocess.run(
                [path, "-c", "import sys;print(sys.version_info[:2])"],
                capture_output=True,
                text=True,
            )
            if probe.returncode == 0 and probe.stdout.strip() == "(3, 12)":
                return path
    raise RuntimeError(
        "no CPython 3.12 found for builtin-hash cases; set PREFIXKEY_BUILTIN_PYTHON"
    )


def run_builtin_worker(
    version: str, seed: str | None, cases: list[dict[str, Any]], validate_lora: bool = True
) -> list[dict[str, Any]]:
    """Run ``cases`` (all with ``python_hash_seed == seed``) in a fresh 3.12 process."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    cmd = [builtin_python(), str(Path(__file__).resolve()), "--worker", version]
    if not validate_lora:
        cmd.append("--worker-lenient-lora")
    proc = subprocess.run(
        cmd, input=json.dumps(cases), capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"builtin worker failed for {version}: {proc.stderr[-2000:]}")
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


def worker_main(version: str, validate_lora: bool) -> int:
    cases = json.loads(sys.stdin.read())
    out = [run_case(version, c, validate_lora=validate_lora).result for c in cases]
    sys.stdout.write(json.dumps(out))
    return 0


def cpython_accepts_seed(seed: str | None) -> bool:
    """Would CPython start with this ``PYTHONHASHSEED`` ("" counts as unset)?"""
    if seed is None or seed in ("", "random"):
        return True
    return seed.isascii() and seed.isdigit() and int(seed) <= 4294967295


@dataclass
class CaseRuns:
    outputs: list[RunOutput | None]  # None: dropped or skipped
    dropped: list[int]  # positions whose key depends on a per-process random value
    skipped: dict[int, str]  # positions that cannot run at all, with the reason


def run_cases(
    version: str, cases: list[dict[str, Any]], *, validate_lora: bool = True
) -> CaseRuns:
    """Run cases; builtin ones in a CPython 3.12 subprocess, the others in-process.

    A case is dropped when its key depends on a per-process random value: builtin
    cases are run in two fresh 3.12 processes (same environment) and compared;
    for the other algorithms NONE_HASH is derived twice (fresh import / second
    ``init_none_hash``) and compared. Builtin cases whose seed CPython rejects at
    start-up (e.g. ``"sëed-☃"``) are skipped: no engine process can run them.
    """
    runs = CaseRuns([None] * len(cases), [], {})
    groups: dict[str | None, list[int]] = {}
    for pos, case in enumerate(cases):
        if case["hash_algo"] == "builtin":
            if cpython_accepts_seed(case["python_hash_seed"]):
                groups.setdefault(case["python_hash_seed"], []).append(pos)
            else:
                runs.skipped[pos] = "CPython refuses to start with this PYTHONHASHSEED"
    for seed, positions in groups.items():
        batch = [cases[p] for p in positions]
        first = run_builtin_worker(version, seed, batch, validate_lora)
        second = run_builtin_worker(version, seed, batch, validate_lora)
        for p, a, b in zip(positions, first, second, strict=True):
            if a != b:
                runs.dropped.append(p)
            else:
                runs.outputs[p] = RunOutput(a, [])
    random_none: dict[tuple[str, str | None], bool] = {}
    for pos, case in enumerate(cases):
        if case["hash_algo"] == "builtin":
            continue
        key = (case["hash_algo"], case["python_hash_seed"])
        if key not in random_none:
            random_none[key] = none_hash_is_random(version, *key)
        if random_none[key]:
            runs.dropped.append(pos)
            continue
        runs.outputs[pos] = run_case(version, case, validate_lora=validate_lora)
    runs.dropped.sort()
    return runs


def none_hash_is_random(version: str, algo: str, seed: str | None) -> bool:
    """Does this release derive NONE_HASH from a per-process random value here?"""
    try:
        a = load_vllm_fresh(version, seed).init_none_hash(algo, seed)
        b = load_vllm_fresh(version, seed).init_none_hash(algo, seed)
    except Exception:
        return False  # run_case will record the error
    return bool(a != b)


SEED_UNSET_VARIANT_OFFSET = 10000


def seed_unset_variants(
    version: str, algos: Sequence[str], selected: list[tuple[int, BaseCase]]
) -> list[tuple[int, BaseCase]]:
    """Copies with ``PYTHONHASHSEED`` unset, for releases where only that is reproducible.

    0.8.3-0.8.4 derive a random NONE_HASH when the seed is *set*, so every seeded case
    is dropped; the copies (index + 10000, shape ``seed_unset_variant``) keep the
    release covered.
    """
    if not any(
        none_hash_is_random(version, a, "0") and not none_hash_is_random(version, a, None)
        for a in algos
        if a != "builtin"
    ):
        return []
    out = []
    for idx, base in selected:
        if base.python_hash_seed is not None and idx < SEED_UNSET_VARIANT_OFFSET:
            variant = dataclasses.replace(
                base, python_hash_seed=None, shape=[*base.shape, "seed_unset_variant"]
            )
            out.append((SEED_UNSET_VARIANT_OFFSET + idx, variant))
    return out


def harvest(
    version: str, out_dir: Path, corpus_seed: int, *, compact: bool = False
) -> dict[str, Any]:
    vh = load_vllm(version)
    profile = vh.profile
    selected = select_corpus(
        version, corpus_seed, compact=compact, lookahead=profile.supports_lookahead
    )
    selected += seed_unset_variants(version, profile.algos, selected)
    planned: list[tuple[int, BaseCase, str, dict[str, Any]]] = []
    for idx, base in selected:
        for algo in profile.algos:
            planned.append((idx, base, algo, base.to_case(algo)))
    runs = run_cases(version, [p[3] for p in planned])
    outs = runs.outputs
    records: list[dict[str, Any]] = []
    errors: list[str] = []

    def rid_of(pos: int) -> str:
        return f"prefixkey-{planned[pos][0]:05d}/{planned[pos][2]}"

    dropped = [rid_of(p) for p in runs.dropped]
    skipped = {rid_of(p): why for p, why in sorted(runs.skipped.items())}
    by_base: dict[int, list[tuple[dict[str, Any], list[Any]]]] = {}
    for (idx, base, algo, case), out in zip(planned, outs, strict=True):
        if out is None:
            continue
        rid = f"prefixkey-{idx:05d}/{algo}"
        if "error" in out.result:
            errors.append(rid)
        rec: dict[str, Any] = {
            "id": rid,
            "version": version,
            "corpus": "prefixkey",
            "features": features_of(base, case),
            "shape": list(base.shape),
            "case": case,
            "result": out.result,
        }
        records.append(rec)
        by_base.setdefault(idx, []).append((rec, out.hashes))
    # Spread the group-id extras evenly over the eligible cases (~40 records).
    group_candidates = [
        per
        for per in by_base.values()
        if len(per) == len(profile.algos)
        and len(per[0][1]) >= GROUP_MIN_BLOCKS
        and not per[0][0]["case"].get("lookahead")
    ]
    n_bases = max(1, GROUP_RECORD_LIMIT // len(profile.algos))
    step = max(1, len(group_candidates) / n_bases)
    chosen = {int(i * step) for i in range(n_bases)} if group_candidates else set()
    n_group = 0
    for pos, per_base in enumerate(group_candidates):
        if pos in chosen:
            for rec, hashes in per_base:
                if add_group_fields(version, rec["result"], hashes, rec["case"]["block_size"]):
                    n_group += 1

    out_dir.mkdir(parents=True, exist_ok=True)
    jsonl = out_dir / f"{version}.jsonl"
    with jsonl.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    feature_counts = Counter(f for rec in records for f in rec["features"])
    builtin_info = None
    if "builtin" in profile.algos:
        probe = subprocess.run(
            [builtin_python(), "-c", _PROBE], capture_output=True, text=True, check=True
        )
        builtin_info = json.loads(probe.stdout)
    meta = {
        "version": version,
        "corpus": "prefixkey",
        "corpus_kind": "compact" if compact else "full",
        "file": jsonl.name,
        "file_sha256": hashlib.sha256(jsonl.read_bytes()).hexdigest(),
        "corpus_seed": corpus_seed,
        "generated_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "generator": "tools/harvest_vectors.py",
        "wheel": {"filename": vh.wheel_path.name, "sha256": vh.wheel_sha256},
        "harness_info": profile.as_dict(),
        "module_modes": vh.module_modes,
        "interpreter": {
            "python": platform.python_version(),
            **{pkg: _pkg_version(pkg) for pkg in ("cbor2", "xxhash", "msgspec", "torch", "numpy")},
        },
        "builtin_hash_interpreter": builtin_info,
        "string_identity": string_identity_facts(),
        "counts": {
            "base_cases": len(selected),
            "written": len(records),
            "errors": len(errors),
            "nondeterministic_dropped": len(dropped),
            "skipped": len(skipped),
            "with_group_fields": n_group,
        },
        "nondeterministic_ids": dropped,
        "skipped_ids": skipped,
        "error_ids": errors,
        "feature_counts": dict(sorted(feature_counts.items())),
    }
    meta_path = out_dir / f"{version}.meta.json"
    meta_path.write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


_PROBE = (
    "import json,platform,importlib.metadata as m\n"
    "def v(p):\n"
    "    try: return m.version(p)\n"
    "    except Exception: return None\n"
    "print(json.dumps({'python': platform.python_version(),"
    " **{p: v(p) for p in ('cbor2','xxhash','msgspec','numpy')}}))"
)


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
    """Replay every record's ``case`` through the real functions; count matches."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    versions = {r["version"] for r in records}
    ver = version or (versions.pop() if len(versions) == 1 else None)
    if ver is None:
        raise SystemExit(f"{path}: several versions {sorted(versions)}; pass --vllm-version")
    cases = [rec["case"] for rec in records]
    runs = run_cases(ver, cases)
    outs = runs.outputs
    stats: Counter[str] = Counter()
    mismatches: list[str] = []
    lenient_needed: list[int] = []
    for pos, (rec, out) in enumerate(zip(records, outs, strict=True)):
        if pos in runs.skipped:
            stats["skipped"] += 1
            mismatches.append(f"{rec['id']}: skipped: {runs.skipped[pos]}")
            continue
        if out is None:
            stats["nondeterministic_here"] += 1
            mismatches.append(f"{rec['id']}: nondeterministic in this harness")
            continue
        expected = dict(rec["result"])
        got = out.result
        if "group_block_hashes" in expected and "error" not in got:
            add_group_fields(ver, got, out.hashes, rec["case"]["block_size"])
        if _same(got, expected):
            stats["match"] += 1
        elif "error" in got and "error" not in expected:
            lenient_needed.append(pos)
        else:
            stats["mismatch"] += 1
            mismatches.append(f"{rec['id']}: {_diff_keys(got, expected)}")
    if lenient_needed:
        lenient = run_cases(ver, [cases[p] for p in lenient_needed], validate_lora=False).outputs
        for pos, out in zip(lenient_needed, lenient, strict=True):
            rec = records[pos]
            if out is not None and _same(out.result, rec["result"]):
                stats["match_lenient_lora"] += 1
            else:
                stats["mismatch"] += 1
                got = out.result if out is not None else {}
                mismatches.append(f"{rec['id']}: {_diff_keys(got, rec['result'])}")
    total = len(records)
    print(f"{path}: {total} records, vLLM {ver}")
    print(f"  match (strict)                         : {stats['match']}")
    print(f"  match only with LoRA checks skipped    : {stats['match_lenient_lora']}")
    print(f"  nondeterministic in this harness       : {stats['nondeterministic_here']}")
    print(f"  skipped (cannot run)                   : {stats['skipped']}")
    print(f"  mismatch                               : {stats['mismatch']}")
    for line in mismatches[:20]:
        print("   ", line)
    bad = stats["mismatch"] + stats["nondeterministic_here"] + stats["skipped"]
    return 0 if not bad else 1


def _diff_keys(got: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    keys = (set(got) | set(expected)) - {"python"}
    return sorted(k for k in keys if got.get(k) != expected.get(k))


def _same(got: dict[str, Any], expected: dict[str, Any]) -> bool:
    return not _diff_keys(got, expected)


RELEASES: tuple[str, ...] = tuple(
    [
        "0.7.0",
        "0.7.1",
        "0.7.2",
        "0.7.3",
        "0.8.0",
        "0.8.1",
        "0.8.2",
        "0.8.3",
        "0.8.4",
        "0.8.5",
        "0.8.5.post1",
        "0.9.0",
        "0.9.0.1",
        "0.9.1",
        "0.9.2",
        "0.10.0",
        "0.10.1",
        "0.10.1.1",
        "0.10.2",
        "0.11.0",
        "0.11.1",
        "0.11.2",
        "0.12.0",
        "0.13.0",
        "0.14.0",
        "0.14.1",
        "0.15.0",
        "0.15.1",
        "0.16.0",
        "0.17.0",
        "0.17.1",
        "0.18.0",
        "0.18.1",
        "0.19.0",
        "0.19.1",
        "0.20.0",
        "0.20.1",
        "0.20.2",
        "0.21.0",
        "0.22.0",
        "0.22.1",
        "0.23.0",
        "0.24.0",
        "0.25.0",
        "0.25.1",
        "0.26.0",
        "0.27.0",
        "0.27.1",
        "0.28.0",
        "0.29.0",
        "0.30.0",
        "0.31.0",
        "0.32.0",
        "0.33.0",
    ]
)
# First release of each scheme era (full corpus); every other release gets the compact one.
FULL_RELEASES: frozenset[str] = frozenset(
    [
        "0.7.0",
        "0.7.1",
        "0.7.2",
        "0.7.3",
        "0.8.3",
        "0.8.5",
        "0.9.0",
        "0.10.0",
        "0.10.1",
        "0.10.2",
        "0.11.1",
        "0.17.0",
        "0.19.0",
        "0.29.0",
        "0.31.0",
        "0.33.0",
    ]
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm-version", help="vLLM release, e.g. 0.31.0")
    parser.add_argument("--out", type=Path, default=Path("tests/vectors"))
    parser.add_argument("--corpus-seed", type=int, default=DEFAULT_CORPUS_SEED)
    parser.add_argument("--compact", action="store_true", help="compact corpus (~28 cases)")
    parser.add_argument(
        "--all",
        action="store_true",
        help="every release (full corpus for era-first releases, compact otherwise); "
        "an existing 0.31.0 file is kept (use --vllm-version 0.31.0 to rewrite it)",
    )
    parser.add_argument(
        "--check-public",
        type=Path,
        metavar="PATH",
        help="replay a vectors file instead of harvesting",
    )
    parser.add_argument("--worker", metavar="VERSION", help=argparse.SUPPRESS)
    parser.add_argument("--worker-lenient-lora", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args.worker, not args.worker_lenient_lora)
    if args.check_public:
        return check_public(args.check_public, args.vllm_version)
    if args.all:
        for version in RELEASES:
            if version == "0.31.0" and (args.out / "0.31.0.jsonl").exists():
                print("0.31.0: kept existing file", file=sys.stderr)
                continue
            compact = version not in FULL_RELEASES
            meta = harvest(version, args.out, args.corpus_seed, compact=compact)
            print(version, meta["corpus_kind"], json.dumps(meta["counts"]), file=sys.stderr)
        return 0
    if not args.vllm_version:
        parser.error("--vllm-version is required")
    meta = harvest(args.vllm_version, args.out, args.corpus_seed, compact=args.compact)
    print(json.dumps(meta["counts"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
