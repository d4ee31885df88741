"""Block-key throughput: vLLM 0.31.0's own hasher vs prefixkey vs the bare digest.

Run from the repository root::

    python benchmarks/bench_block_keys.py            # full run (1k, 8k, 32k, 128k tokens)
    python benchmarks/bench_block_keys.py --quick    # 1k and 8k only
    python benchmarks/bench_block_keys.py --out benchmarks/RESULTS.md --profile

Every row is measured in one process on one input:

(a) **vLLM**: the real ``get_request_block_hasher(block_size, hash_fn)`` of vLLM
    0.31.0 (loaded from the cached wheel by ``tools/vllm_loader.py``), called on a
    fresh fake request per repetition. Requests are built outside the timed region
    with no block hasher attached, so their ``block_hashes`` start empty and the
    timed call hashes every full block.
(b) **prefixkey**: ``Hasher(...)`` built once, then
    ``hasher.block_hashes(Request(token_ids, ...))`` per repetition (building the
    ``Request`` is inside the timed region), on three inputs (the ``input`` column):
    ``list``, a plain list of ints (checked on every call); ``TokenIds``, the same
    ids checked once by ``check_token_ids`` outside the timed region (what the JSON
    reader and a router that keeps a prompt hand the hasher); and, for 8k-token
    prompts, ``JSON line``: the per-line work of ``prefixkey hash`` on the request's
    JSON Lines line (``parse_json_line``, ``parse_request``, ``run_job`` and
    ``json.dumps`` of the result), while vLLM is still given the decoded ids free.
(c) **floor**: the bare digest (``hashlib.sha256(b).digest()`` or
    ``xxhash.xxh3_128_digest(b)``) over the per-block bytes that vLLM serializes,
    prepared once outside the timed region with ``pickle.dumps(obj, 5)`` /
    ``cbor2.dumps(obj, canonical=True)`` of the exact tuples vLLM hashes.

Before a row is timed, (a) and (b) must produce identical keys and the floor
digests must reproduce them too; otherwise the script aborts.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import json
import math
import os
import pickle
import platform
import pstats
import random
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

VLLM_VERSION = "0.31.0"
SEED = "0"  # python_hash_seed for every algorithm, so xxhash NONE_HASH is reproducible
TOKEN_SEED = 20240531
VOCAB = 128_000
ALGOS = ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")
BLOCK_SIZES = (16, 64)
FULL_LENGTHS = (1024, 8192, 32768, 131072)
JSON_LENGTHS = (8192,)  # prompts also measured as a `prefixkey hash` line
QUICK_LENGTHS = (1024, 8192)
REPEAT = 5  # best of REPEAT interleaved rounds
TARGET_S = 0.2  # seconds per run
TARGET_S_LONG = 0.1  # seconds per run for 128k-token rows

ANATOMY_TOKENS = 8192
ANATOMY_TARGET_S = 0.05  # seconds per part and round
ANATOMY_NOTES = """\
Reading it: prefixkey's `rest` is small and its serializer does the same C work as
vLLM's (the C pickler itself for pickle; a bulk CBOR encoder that beats `cbor2`), so the
speed-up is vLLM's Python overhead traded for prefixkey's token check. vLLM never checks
token ids (msgspec typed them before the engine core saw them); prefixkey must, because a
bool, a float or an int subclass would otherwise pickle to a key vLLM never makes. The
cheapest exact check pure Python has is one `marshal.dumps` over the ids (`type(t) is int`
per id costs about twice as much), a fixed cost per token. vLLM's Python overhead is a
cost per block, so it shrinks per token as blocks grow: at block size 16 it is several
times the token check, at 64 it is about the same size, which is why the pickle `list`
rows at block size 64 sit near 1x. Ids checked once (`TokenIds`: what the JSON reader
hands the hasher, or a prompt a router keeps) skip the check's whole cost, so
`prefixkey (TokenIds)` is about `encode + chain` plus the small rest; the pickle
`TokenIds` rows at block size 64 show what that leaves: the same C work as vLLM, less
vLLM's per-block Python."""

LORA_NAME, LORA_PATH, LORA_ID = "sql-adapter", "/adapters/sql", 1
CACHE_SALT = "tenant-7f3a"
# Two multimodal items early in the prompt (they fit inside the 1k prompt).
MM_ITEMS = (
    (hashlib.sha256(b"image-0").hexdigest(), 100, 256),
    (hashlib.sha256(b"image-1").hexdigest(), 600, 300),
)


def _label(n: int) -> str:
    return f"{n // 1024}k"


# --------------------------------------------------------------------------- timing


@dataclass
class Contender:
    """One way of hashing a row's input: ``prepare(number)`` builds a run's inputs
    outside the timed region, ``run(state)`` makes ``number`` calls."""

    prepare: Callable[[int], Any]
    run: Callable[[Any], None]
    single_s: float  # one untimed-warm call, to size ``number``


def best_per_call(contenders: Sequence[Contender], target: float) -> list[float]:
    """timeit-style, interleaved: each round runs every contender once (``number``
    calls, about ``target`` s); returns each one's best seconds per call over
    REPEAT rounds. Interleaving gives every contender the same machine weather."""
    numbers = [max(1, math.ceil(target / max(c.single_s, 1e-9))) for c in contenders]
    best = [math.inf] * len(contenders)
    for _ in range(REPEAT):
        for i, (c, number) in enumerate(zip(contenders, numbers, strict=True)):
            state = c.prepare(number)
            gc.collect()
            gc.disable()
            try:
                t0 = time.perf_counter()
                c.run(state)
                elapsed = time.perf_counter() - t0
            finally:
                gc.enable()
            del state
            best[i] = min(best[i], elapsed / number)
    return best


def time_once(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.disable()
    try:
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out
    finally:
        gc.enable()


# --------------------------------------------------------------------------- rows


@dataclass
class Row:
    tokens: int
    block_size: int
    algo: str
    extras: bool
    input: str  # "list", "TokenIds" or "JSON line"
    blocks: int
    vllm_us: float
    prefixkey_us: float
    floor_us: float

    @property
    def speedup(self) -> float:
        return self.vllm_us / self.prefixkey_us

    @property
    def floor_ratio(self) -> float:
        return self.prefixkey_us / self.floor_us

    @property
    def blocks_per_s(self) -> float:
        return self.blocks / (self.prefixkey_us * 1e-6)

    @property
    def flagged(self) -> bool:
        """Below the expected speed-up: < 2x (pickle) or < 3x (CBOR)."""
        return self.speedup < (3.0 if self.algo.endswith("_cbor") else 2.0)


class Bench:
    def __init__(self) -> None:
        import cbor2
        import xxhash

        import prefixkey

        sys.path.insert(0, str(REPO / "tools"))  # the tools import each other by basename
        from vllm_loader import load_vllm

        self.pk = prefixkey
        self.vh = load_vllm(VLLM_VERSION)
        self.cbor_dumps = cbor2.dumps
        self.xxh = xxhash.xxh3_128_digest
        rng = random.Random(TOKEN_SEED)
        self.all_tokens = [rng.randrange(VOCAB) for _ in range(max(FULL_LENGTHS))]

    # -- inputs

    def vllm_kwargs(self, extras: bool) -> dict[str, Any]:
        if not extras:
            return {}
        return {
            "lora": (LORA_NAME, LORA_ID, LORA_PATH),
            "cache_salt": CACHE_SALT,
            "mm_items": MM_ITEMS,
        }

    def pk_kwargs(self, extras: bool) -> dict[str, Any]:
        if not extras:
            return {}
        pk = self.pk
        return {
            "lora": pk.LoRA(LORA_NAME, LORA_PATH, LORA_ID),
            "cache_salt": CACHE_SALT,
            "mm_items": tuple(pk.MMItem(i, o, n) for i, o, n in MM_ITEMS),
        }

    def floor_digest(self, algo: str) -> Callable[[bytes], bytes]:
        if algo.startswith("sha256"):
            sha = hashlib.sha256
            return lambda b: sha(b).digest()
        return self.xxh

    def serialize(self, algo: str, obj: Any) -> bytes:
        if algo.endswith("_cbor"):
            return bytes(self.cbor_dumps(obj, canonical=True))
        return pickle.dumps(obj, 5)

    # -- one row

    def json_line(self, tokens: list[int], bs: int, algo: str, extras: bool) -> bytes:
        """The row's request as one line of ``prefixkey hash`` input."""
        obj: dict[str, Any] = {
            "vllm_version": VLLM_VERSION, "hash_algo": algo, "python_hash_seed": SEED,
            "block_size": bs, "token_ids": tokens,
        }
        if extras:
            obj["lora"] = {"name": LORA_NAME, "path": LORA_PATH, "int_id": LORA_ID}
            obj["cache_salt"] = CACHE_SALT
            obj["mm_items"] = [{"identifier": i, "offset": o, "length": k} for i, o, k in MM_ITEMS]
        return json.dumps(obj).encode()

    def rows(self, n: int, bs: int, algo: str, extras: bool) -> list[Row]:
        """One row per input kind, all timed in the same interleaved rounds."""
        from prefixkey.core import check_token_ids
        from prefixkey.jsonl import parse_json_line, parse_request, run_job

        vh, pk = self.vh, self.pk
        tokens = self.all_tokens[:n]
        validated = check_token_ids(tokens)
        target = TARGET_S_LONG if n > 32768 else TARGET_S
        none_hash = vh.init_none_hash(algo, SEED)
        vllm_hasher = vh.request_block_hasher(bs, algo)
        vkw = self.vllm_kwargs(extras)
        pkw = self.pk_kwargs(extras)
        hasher = pk.Hasher(
            block_size=bs, hash_algo=algo, python_hash_seed=SEED, vllm_version=VLLM_VERSION
        )
        Request = pk.Request
        hasher_block_hashes = hasher.block_hashes
        line = self.json_line(tokens, bs, algo, extras) if n in JSON_LENGTHS else None
        dumps = json.dumps

        def hash_line() -> str:
            return dumps(run_job(parse_request(parse_json_line(line))))  # type: ignore[arg-type]

        def new_vllm_request() -> Any:
            req = vh.make_request(tokens, block_hasher=None, **vkw)
            if req.block_hashes:
                raise AssertionError("fake request must start with no block hashes")
            return req

        # ---- correctness gate (abort loudly on any mismatch)
        if hasher.none_hash.value != none_hash:
            raise SystemExit(f"NONE_HASH mismatch for {algo}: prefixkey != vLLM")
        req = new_vllm_request()
        with vh.capture_hash_block_calls() as calls:
            vllm_keys = [bytes(k) for k in vllm_hasher(req)]
        blocks = n // bs
        outputs = {
            "list": hasher_block_hashes(Request(tokens, **pkw)),
            "TokenIds": hasher_block_hashes(Request(validated, **pkw)),
        }
        if line is not None:
            result = json.loads(hash_line())
            outputs["JSON line"] = [bytes.fromhex(k) for k in result["block_hashes"]]
        for kind, pk_keys in outputs.items():
            if len(vllm_keys) != blocks or pk_keys != vllm_keys:
                first = next(
                    (i for i, (a, b) in enumerate(zip(vllm_keys, pk_keys, strict=False))
                     if a != b),
                    min(len(vllm_keys), len(pk_keys)),
                )
                raise SystemExit(
                    f"KEY MISMATCH: tokens={n} bs={bs} algo={algo} extras={extras} "
                    f"input={kind}: vLLM {len(vllm_keys)} keys, prefixkey {len(pk_keys)} keys, "
                    f"first difference at block {first}"
                )
        # The floor's inputs: the exact tuples vLLM hashed, serialized once.
        blobs: list[bytes] = []
        for call in calls:
            parent = call.parent if call.parent else none_hash
            blobs.append(self.serialize(algo, (parent, call.tokens, call.extra_keys)))
        digest = self.floor_digest(algo)
        if [digest(b) for b in blobs] != vllm_keys:
            raise SystemExit(f"floor bytes do not reproduce vLLM's keys ({algo}, bs={bs})")
        del req, calls, outputs

        # ---- (a) vLLM: fresh requests built outside the timed region
        def vllm_prepare(number: int) -> list[Any]:
            return [new_vllm_request() for _ in range(number)]

        def vllm_run(reqs: list[Any]) -> None:
            for r in reqs:
                vllm_hasher(r)

        probe = new_vllm_request()
        t_v, _ = time_once(lambda: vllm_hasher(probe))

        # ---- (b) prefixkey, one contender per input kind
        def repeated(fn: Callable[[], Any]) -> Contender:
            def run(number: int) -> None:
                for _ in range(number):
                    fn()

            return Contender(lambda k: k, run, time_once(lambda: run(1))[0])

        inputs: dict[str, Callable[[], Any]] = {
            "list": lambda: hasher_block_hashes(Request(tokens, **pkw)),
            "TokenIds": lambda: hasher_block_hashes(Request(validated, **pkw)),
        }
        if line is not None:
            inputs["JSON line"] = hash_line

        # ---- (c) floor
        if algo.startswith("sha256"):
            sha = hashlib.sha256

            def floor_run(number: int) -> None:
                for _ in range(number):
                    for b in blobs:
                        sha(b).digest()
        else:
            xxh = self.xxh

            def floor_run(number: int) -> None:
                for _ in range(number):
                    for b in blobs:
                        xxh(b)

        t_f, _ = time_once(lambda: floor_run(1))
        vllm_s, floor_s, *pk_s = best_per_call(
            [
                Contender(vllm_prepare, vllm_run, t_v),
                Contender(lambda k: k, floor_run, t_f),
                *(repeated(fn) for fn in inputs.values()),
            ],
            target,
        )
        return [
            Row(n, bs, algo, extras, kind, blocks, vllm_s * 1e6, s * 1e6, floor_s * 1e6)
            for kind, s in zip(inputs, pk_s, strict=True)
        ]

    def anatomy(self, n: int, bs: int, algo: str) -> dict[str, float]:
        """Where a request's time goes, in ns per token (no extras; best of REPEAT
        interleaved rounds).

        ``vLLM`` and ``prefixkey`` are whole requests as in the rows. ``C work``
        is what vLLM cannot avoid: serializing the exact block tuples it hashes
        (``pickle.dumps`` / ``cbor2.dumps``) and digesting them; the rest of
        vLLM's time is Python around those calls. prefixkey's time on a list
        splits into ``token check`` (validating the ids, ``checked_token_ids``),
        its own ``encode + chain`` (with the real digest) and the rest;
        ``prefixkey (TokenIds)`` is a whole request on ids checked beforehand.
        """
        from prefixkey.core import check_token_ids
        from prefixkey.core._request import checked_token_ids
        from prefixkey.jsonl import parse_json_line, parse_request, run_job

        vh, pk = self.vh, self.pk
        tokens = self.all_tokens[:n]
        hasher = pk.Hasher(
            block_size=bs, hash_algo=algo, python_hash_seed=SEED, vllm_version=VLLM_VERSION
        )
        vllm_hasher = vh.request_block_hasher(bs, algo)
        none_hash = vh.init_none_hash(algo, SEED)
        with vh.capture_hash_block_calls() as calls:
            vllm_hasher(vh.make_request(tokens, block_hasher=None))
        tuples = [(c.parent if c.parent else none_hash, c.tokens, c.extra_keys) for c in calls]
        cbor_dumps = self.cbor_dumps

        def cbor_block(obj: Any) -> bytes:
            return cbor_dumps(obj, canonical=True)

        def pickle_block(obj: Any) -> bytes:
            return pickle.dumps(obj, 5)

        serialize = cbor_block if algo.endswith("_cbor") else pickle_block
        digest = self.floor_digest(algo)
        blobs = [serialize(t) for t in tuples]
        serializer = hasher.algorithm.serializer
        starts = range(0, n - bs + 1, bs)
        words = checked_token_ids(tokens)[1]
        validated = check_token_ids(tokens)
        line = self.json_line(tokens, bs, algo, False)
        tails = [serializer.encode_extra_keys_tail(None)] * len(starts)

        def encode_and_chain() -> None:
            encoded = serializer.encode_tokens(tokens, words, bs)
            serializer.chain(none_hash, encoded, starts, bs, tails, hasher.algorithm.digest)

        parts: dict[str, Callable[[], Any]] = {
            "vLLM": lambda: vllm_hasher(vh.make_request(tokens, block_hasher=None)),
            "vLLM's fake request": lambda: vh.make_request(tokens, block_hasher=None),
            "C work (vLLM's serializer + digest)": lambda: [digest(serialize(t)) for t in tuples],
            "digest alone (floor)": lambda: [digest(b) for b in blobs],
            "prefixkey": lambda: hasher.block_hashes(pk.Request(tokens)),
            "token check": lambda: checked_token_ids(tokens),
            "encode + chain": encode_and_chain,
            "prefixkey (TokenIds)": lambda: hasher.block_hashes(pk.Request(validated)),
            "JSON line": lambda: json.dumps(run_job(parse_request(parse_json_line(line)))),
            "JSON decode": lambda: parse_json_line(line),
        }

        def contender(fn: Callable[[], Any]) -> Contender:
            def run(number: int) -> None:
                for _ in range(number):
                    fn()

            return Contender(lambda k: k, run, time_once(fn)[0])

        seconds = best_per_call([contender(fn) for fn in parts.values()], ANATOMY_TARGET_S)
        out = {name: s * 1e9 / n for name, s in zip(parts, seconds, strict=True)}
        out["vLLM"] -= out.pop("vLLM's fake request")  # built untimed in the rows
        return out

    def profile(self, row: Row, top: int = 12) -> str:
        """cProfile of prefixkey alone on one row (tottime-sorted summary)."""
        tokens = self.all_tokens[: row.tokens]
        hasher = self.pk.Hasher(
            block_size=row.block_size,
            hash_algo=row.algo,
            python_hash_seed=SEED,
            vllm_version=VLLM_VERSION,
        )
        pkw = self.pk_kwargs(row.extras)
        Request = self.pk.Request
        ids = self.pk.core.check_token_ids(tokens) if row.input == "TokenIds" else tokens
        reps = max(1, min(200, math.ceil(0.3 / (row.prefixkey_us * 1e-6))))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(reps):
            hasher.block_hashes(Request(ids, **pkw))
        prof.disable()
        buf = io.StringIO()
        stats = pstats.Stats(prof, stream=buf)
        stats.strip_dirs().sort_stats("tottime").print_stats(top)
        return buf.getvalue()


# --------------------------------------------------------------------------- report

HEADER = (
    "tokens",
    "block",
    "algo",
    "extras",
    "input",
    "blocks",
    "vLLM µs/req",
    "prefixkey µs/req",
    "floor µs/req",
    "speed-up",
    "pk/floor",
    "pk blocks/s",
)


def cells(r: Row) -> list[str]:
    mark = " *" if r.flagged else ""
    return [
        _label(r.tokens),
        str(r.block_size),
        r.algo,
        "with" if r.extras else "none",
        r.input,
        str(r.blocks),
        f"{r.vllm_us:,.1f}",
        f"{r.prefixkey_us:,.1f}",
        f"{r.floor_us:,.1f}",
        f"{r.speedup:.2f}x{mark}",
        f"{r.floor_ratio:.2f}",
        f"{r.blocks_per_s / 1e6:.2f} M",
    ]


def text_table(rows: Sequence[Row]) -> str:
    data = [list(HEADER)] + [cells(r) for r in rows]
    widths = [max(len(line[i]) for line in data) for i in range(len(HEADER))]
    out = []
    for k, line in enumerate(data):
        out.append("  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)))
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def md_table(rows: Sequence[Row]) -> str:
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(cells(r)) + " |" for r in rows]
    return "\n".join(out)


def machine_info() -> dict[str, str]:
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass

    def ver(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    src = sorted((REPO / "prefixkey").rglob("*.py"))
    digest = hashlib.sha256()
    for f in src:
        name = f.relative_to(REPO / "prefixkey").as_posix()
        digest.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
    newest = max(src, key=lambda f: f.stat().st_mtime)
    mtime = datetime.fromtimestamp(newest.stat().st_mtime, timezone.utc)
    return {
        "CPU": cpu,
        "cores (os.cpu_count)": str(os.cpu_count()),
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "xxhash": ver("xxhash"),
        "cbor2": ver("cbor2"),
        "prefixkey": ver("prefixkey"),
        "prefixkey sources (sha256 of prefixkey/**/*.py)": (
            f"{digest.hexdigest()[:16]} (newest file {newest.relative_to(REPO).as_posix()}, "
            f"modified {mtime:%Y-%m-%d %H:%M:%S} UTC)"
        ),
        "vLLM (hashing code loaded from wheel)": VLLM_VERSION,
    }


def write_markdown(
    path: Path,
    rows: Sequence[Row],
    command: str,
    started: datetime,
    wall: float,
    profiles: dict[str, str],
    info: dict[str, str],
    anatomy: dict[tuple[int, str], dict[str, float]],
) -> None:
    flagged = [r for r in rows if r.flagged]
    lines = [
        "# Block-key throughput: vLLM 0.31.0 vs prefixkey",
        "",
        f"- Date: {started.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"- Command: `{command}`",
        f"- Wall time: {wall:.0f} s",
        *(f"- {k}: {v}" for k, v in info.items()),
        "",
        "Each row: one prompt of random token ids in [0, 128000) (fixed seed), hashed by "
        "(a) vLLM 0.31.0's real `get_request_block_hasher` on a fresh fake request, "
        "(b) `prefixkey.Hasher.block_hashes(Request(...))`, and (c) the bare digest over "
        "pre-serialized per-block bytes (the floor). Times are µs per request, best of "
        f"{REPEAT} interleaved rounds (each round times (a), every input of (b) and (c) in turn, "
        f"timeit-style, ~{TARGET_S} s each, ~{TARGET_S_LONG} s for 128k), GC disabled "
        "while timing. `python_hash_seed` "
        f'is "{SEED}" for every algorithm. Keys of (a) and (b) were asserted identical '
        "before each row was timed.",
        "",
        "`extras = with`: LoRA `sql-adapter` (`/adapters/sql`), a cache salt, and two "
        "multimodal items at offsets 100 (length 256) and 600 (length 300).",
        "",
        "`input` is what prefixkey is given: `list`, a plain list of ints, checked on every "
        "call; `TokenIds`, the same ids checked once beforehand by `check_token_ids` (what "
        "the JSON reader produces, and what a router can keep), which the hasher takes "
        "without a second check; `JSON line` (8k-token prompts), the per-line work of "
        "`prefixkey hash` on the request's JSON Lines line: `parse_json_line`, "
        "`parse_request`, `run_job` and `json.dumps` of the result, against vLLM's hasher "
        "alone (vLLM is handed the decoded ids for free). The rows of one prompt share "
        "the vLLM and floor times.",
        "",
        "`speed-up` = vLLM / prefixkey (higher is better); `pk/floor` = prefixkey / floor "
        "(1.0 would mean prefixkey costs no more than the digest alone). A `*` marks rows "
        "below the expected speed-up (< 2x for pickle algorithms, < 3x for CBOR).",
        "",
        md_table(rows),
        "",
    ]
    slower = [r for r in rows if r.speedup < 1.0]
    lines += [
        f"Rows slower than vLLM: {len(slower)} of {len(rows)}"
        + (": " + "; ".join(
            f"{_label(r.tokens)}/{r.block_size}/{r.algo}/{'with' if r.extras else 'none'}"
            f"/{r.input} {r.speedup:.2f}x" for r in slower) if slower else "."),
        f"Rows below the aim (2x pickle, 3x CBOR): {len(flagged)} of {len(rows)}.",
        "",
    ]
    if anatomy:
        lines += [
            "## Where the time goes",
            "",
            f"ns per token for one {_label(ANATOMY_TOKENS)}-token request without extras, "
            f"each part timed on its own (best of {REPEAT} interleaved rounds, as the rows; "
            "parts are timed separately, so they need not add up exactly). "
            "`C work` is what vLLM cannot avoid: "
            "`pickle.dumps` / `cbor2.dumps` of the exact block tuples it hashes, and the "
            "digest; `vLLM Python` is the rest of vLLM's time. prefixkey's time is its "
            "`token check` (every id an exact int >= 0: `marshal` records, see "
            "`checked_token_ids` in `prefixkey/core/_request.py`), its `encode + chain` "
            "(serializer and digest) and the rest (request objects, extra keys). "
            "`prefixkey (TokenIds)` is a whole request on ids checked beforehand: no token "
            "check.",
            "",
            "| block | algo | vLLM | C work | vLLM Python | prefixkey | token check "
            "| encode + chain | rest | prefixkey (TokenIds) | digest (floor) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for (bs, algo), a in anatomy.items():
            vllm, cwork, pk = a["vLLM"], a["C work (vLLM's serializer + digest)"], a["prefixkey"]
            check, chain = a["token check"], a["encode + chain"]
            lines.append(
                f"| {bs} | {algo} | {vllm:.1f} | {cwork:.1f} | {vllm - cwork:.1f} | {pk:.1f} "
                f"| {check:.1f} | {chain:.1f} | {pk - check - chain:.1f} "
                f"| {a['prefixkey (TokenIds)']:.1f} | {a['digest alone (floor)']:.1f} |"
            )
        lines += [
            "",
            "The `JSON line` rows, in the same ns per token: `prefixkey hash`'s work on one "
            "line, of which decoding the JSON (`parse_json_line`, the standard library's "
            "`json.loads`) is the largest part; the rest is `parse_request` (one token check, "
            "into TokenIds), `run_job` and `json.dumps` of the result.",
            "",
            "| block | algo | JSON line | JSON decode | the rest | vLLM (hasher alone) |",
            "|---|---|---|---|---|---|",
        ]
        for (bs, algo), a in anatomy.items():
            whole, decode = a["JSON line"], a["JSON decode"]
            lines.append(
                f"| {bs} | {algo} | {whole:.1f} | {decode:.1f} | {whole - decode:.1f} "
                f"| {a['vLLM']:.1f} |"
            )
        lines += ["", ANATOMY_NOTES, ""]
    if profiles:
        lines += ["## cProfile of prefixkey on flagged rows", ""]
        for title, text in profiles.items():
            lines += [f"### {title}", "", "```", text.strip(), "```", ""]
    path.write_text("\n".join(lines))


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only 1k and 8k token prompts")
    parser.add_argument(
        "--out",
        type=Path,
        default=REPO / "benchmarks" / "RESULTS.md",
        help="markdown report to write (default: benchmarks/RESULTS.md)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="cProfile prefixkey on rows below the expected speed-up and add it to the report",
    )
    parser.add_argument(
        "--only",
        metavar="TOKENS:BLOCK",
        action="append",
        help="measure only these rows, e.g. --only 8192:64 (repeatable)",
    )
    args = parser.parse_args(argv)
    command = shlex.join(["python", *sys.argv]) if argv is None else shlex.join(argv)

    started = datetime.now(timezone.utc).astimezone()
    info = machine_info()  # taken before importing prefixkey: the sources it measures
    t_start = time.perf_counter()
    bench = Bench()
    lengths = QUICK_LENGTHS if args.quick else FULL_LENGTHS
    shapes = [(n, bs) for n in lengths for bs in BLOCK_SIZES]
    if args.only:
        shapes = [(int(n), int(bs)) for n, bs in (spec.split(":") for spec in args.only)]
    rows: list[Row] = []
    total = sum(2 + (n in JSON_LENGTHS) for n, _ in shapes) * len(ALGOS) * 2
    for n, bs in shapes:
        for algo in ALGOS:
            for extras in (False, True):
                for r in bench.rows(n, bs, algo, extras):
                    rows.append(r)
                    print(
                        f"[{len(rows):3d}/{total}] {_label(n):>4} bs={bs:<2} {algo:<11} "
                        f"extras={'with' if extras else 'none'} {r.input:<9}: "
                        f"vLLM {r.vllm_us:,.1f} µs, prefixkey {r.prefixkey_us:,.1f} µs, "
                        f"floor {r.floor_us:,.1f} µs -> {r.speedup:.2f}x",
                        file=sys.stderr,
                        flush=True,
                    )
    print(text_table(rows))

    anatomy = {
        (bs, algo): bench.anatomy(ANATOMY_TOKENS, bs, algo)
        for bs in BLOCK_SIZES for algo in ALGOS
    } if not args.only else {}
    profiles: dict[str, str] = {}
    flagged = [r for r in rows if r.flagged]
    if flagged:
        print("\nRows below the expected speed-up (< 2x pickle, < 3x CBOR):")
        for r in flagged:
            print(f"  {' '.join(cells(r)[:5])}: {r.speedup:.2f}x")
    if args.profile:
        for r in flagged:
            if r.input == "JSON line":
                continue  # the JSON rows' own parts are not profiled
            title = (
                f"{_label(r.tokens)} tokens, block {r.block_size}, {r.algo}, extras "
                f"{'with' if r.extras else 'none'}, {r.input} ({r.speedup:.2f}x)"
            )
            profiles[title] = bench.profile(r)
            print(f"\n== cProfile: {title}\n{profiles[title]}")

    wall = time.perf_counter() - t_start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    key = "prefixkey sources (sha256 of prefixkey/**/*.py)"
    if machine_info()[key] != info[key]:
        info["WARNING"] = "prefixkey/**/*.py changed while this benchmark ran"
        print(f"WARNING: {info['WARNING']}", file=sys.stderr)
    write_markdown(args.out, rows, command, started, wall, profiles, info, anatomy)
    print(f"\nwrote {args.out} ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
