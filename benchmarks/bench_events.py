"""KV events ingested per second: prefixkey's decode + PrefixIndex.apply, vs vLLM's own decoding.

Run from the repository root:

    python benchmarks/bench_events.py            # writes benchmarks/EVENTS.md
    python benchmarks/bench_events.py --quick

Workload: synthetic vLLM 0.31.0 batches (map events, int hashes, as msgspec
writes them), each with ``--stored`` BlockStored events of 4 blocks x 16 tokens
and one BlockRemoved, over a rolling set of keys so the index stays near a
steady size. The same payload bytes are timed:

* ``prefixkey decode``: ``EventDecoder("0.31.0").decode_batch``;
* ``prefixkey decode + apply``: the same plus ``PrefixIndex.apply``;
* ``PrefixIndex.ingest``: decode and apply in one step without the event
  objects (the subscriber's per-batch work, without sockets), and its parts;
* each of them on the msgspec path (the ``events-fast`` extra, required here)
  and on the pure-Python path alone (the same decoder without it);
* ``vLLM msgspec decode``: ``msgspec.msgpack.Decoder(KVEventBatch)`` with the
  release's real classes, loaded from the cached 0.31.0 wheel sources by
  ``tools/harvest_events.py``'s loader when available; otherwise equivalent
  msgspec structs defined here (the output says which).

It also times strict checks of a BlockStored's 64 token ids (exact ints, no
bools) that run in C, on the workload's own ids.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import platform
import random
import statistics
import sys
import time
from array import array
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

import msgpack

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prefixkey import Hasher  # noqa: E402
from prefixkey.events import BlockStored, EventBatch, EventDecoder  # noqa: E402
from prefixkey.fleet import PrefixIndex, ReplicaScheme  # noqa: E402

VERSION = "0.31.0"
BLOCK = 16
K = TypeVar("K")


def make_payloads(n: int, stored: int, seed: int = 0) -> tuple[list[bytes], int]:
    rng = random.Random(seed)
    payloads, events = [], 0
    live: list[int] = []
    for i in range(n):
        evs: list[dict[str, Any]] = []
        for _ in range(stored):
            keys = [rng.getrandbits(64) for _ in range(4)]
            live.extend(keys)
            evs.append({"type": "BlockStored", "block_hashes": keys, "parent_block_hash": None,
                        "token_ids": [rng.randrange(50_000) for _ in range(4 * BLOCK)],
                        "block_size": BLOCK, "lora_id": None, "medium": "GPU",
                        "lora_name": None, "group_idx": 0})
        if len(live) > 20_000:
            gone, live = live[:4 * stored], live[4 * stored:]
            evs.append({"type": "BlockRemoved", "block_hashes": gone, "medium": "GPU",
                        "group_idx": 0})
        events += len(evs)
        payloads.append(bytes(msgpack.packb([1.7e9 + i, evs, 0], use_bin_type=True)))
    return payloads, events


def msgspec_version() -> str:
    import msgspec

    return str(msgspec.__version__)


def vllm_decoder() -> tuple[Callable[[bytes], Any], str]:
    import msgspec

    try:
        sys.path.insert(0, str(ROOT / "tools"))
        from harvest_events import load_kv_events

        module, wheel, _ = load_kv_events(VERSION)
        dec = msgspec.msgpack.Decoder(module.KVEventBatch)
        return dec.decode, f"vLLM {VERSION}'s own KVEventBatch (wheel {wheel})"
    except Exception as exc:  # no cached wheel sources: equivalent structs
        reason = f"{type(exc).__name__}: {exc}"

    class Event(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
        pass

    class BlockStored(Event):
        block_hashes: list[int | bytes]
        parent_block_hash: int | bytes | None
        token_ids: list[int]
        block_size: int
        lora_id: int | None
        medium: str | None
        lora_name: str | None
        extra_keys: list[tuple[Any, ...] | None] | None = None
        group_idx: int | None = None
        kv_cache_spec_kind: str | None = None
        kv_cache_spec_sliding_window: int | None = None
        locality: str | None = None
        ownership: str | None = None
        session_id: str | None = None

    class BlockRemoved(Event):
        block_hashes: list[int | bytes]
        medium: str | None
        group_idx: int | None = None
        locality: str | None = None
        ownership: str | None = None

    class AllBlocksCleared(Event):
        pass

    class KVEventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
        ts: float
        events: list[BlockStored | BlockRemoved | AllBlocksCleared]
        data_parallel_rank: int | None = None

    dec = msgspec.msgpack.Decoder(KVEventBatch)
    return dec.decode, f"equivalent msgspec structs defined in the benchmark ({reason})"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def interleaved(fns: dict[K, Callable[[], None]], rounds: int) -> dict[K, list[float]]:
    """Seconds of each of ``fns`` per round, the paths called in turn within each round."""
    out: dict[K, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            gc.collect()
            start = time.process_time()
            fn()
            out[name].append(time.process_time() - start)
    return out


def event_args(batches: list[EventBatch]) -> list[tuple[float, int | None, list[Any]]]:
    """Each batch's events as (class, field values): what building the objects takes."""
    return [(b.ts, b.data_parallel_rank,
             [(type(e), tuple(getattr(e, f.name) for f in dataclasses.fields(e)))
              for e in b.events]) for b in batches]


def token_checks(batches: list[EventBatch], rounds: int) -> list[tuple[tuple[str, str], float]]:
    """ns per 64 token ids of C-speed checks over the workload's ids (medians of rounds).

    A bool must fail (msgpack true/false decode as Python bools, which are ints).
    """
    rows = [e.token_ids for b in batches for e in b.events if isinstance(e, BlockStored)]
    ids = sum(map(len, rows))
    only_int = frozenset({int})

    def per_event(check: Callable[[tuple[int, ...]], object]) -> Callable[[], None]:
        def run() -> None:
            for row in rows:
                check(row)
        return run

    def batch_wide() -> None:  # what the decoder does: one scan per batch of 8 events
        for i in range(0, len(rows), 8):
            kinds = list(map(type, chain.from_iterable(rows[i:i + 8])))
            _ = kinds.count(int) == len(kinds)

    checks = {
        ("tuple(map(type, ids)).count(int) == len(ids)", "per event (before)"):
            per_event(lambda r: tuple(map(type, r)).count(int) == len(r)),
        ("set(map(type, ids)) <= {int}", "per event"):
            per_event(lambda r: set(map(type, r)) <= only_int),
        ("frozenset({int}).issuperset(map(type, ids))", "per event"):
            per_event(lambda r: only_int.issuperset(map(type, r))),
        ("kinds = list(map(type, chain(*ids of the batch)))", "kinds.count(int), per batch (now)"):
            batch_wide,
        ("type(sum(ids)) is int and min(ids) > 1", "per event (no 0 or 1, so no bool)"):
            per_event(lambda r: type(sum(r)) is int and min(r) > 1),
        ("array('Q', ids)", "per event (accepts bools: not strict alone)"):
            per_event(lambda r: array("Q", r)),
    }
    times = interleaved(checks, rounds)
    return [(label, statistics.median(xs) / ids * 64 * 1e9) for label, xs in times.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--stored", type=int, default=8, help="BlockStored events per batch")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "EVENTS.md"))
    args = parser.parse_args(argv)
    n = 500 if args.quick else 3000
    rounds = 5 if args.quick else 11
    payloads, events = make_payloads(n, args.stored)
    decoder = EventDecoder(VERSION)  # msgspec's C path first when installed (events-fast)
    fast = decoder._fast
    if fast is None:
        raise SystemExit("msgspec is not installed: pip install -e '.[events-fast]'")
    taken = sum(fast.ops(p) is not None for p in payloads)
    pure = EventDecoder(VERSION)  # the pure-Python path alone, as without msgspec
    pure._fast = None
    scheme = ReplicaScheme(Hasher(block_size=BLOCK))
    batches = [pure.decode_batch(p) for p in payloads]
    assert [decoder.decode_batch(p) for p in payloads] == batches
    built = event_args(batches)
    unpack, hooked = msgpack.unpackb, pure._unpack
    structs, encode = fast._decode, fast._encode

    def raw_unpack() -> None:
        for p in payloads:
            unpack(p)

    def bounded_unpack() -> None:
        for p in payloads:
            hooked(p)

    def decoding(dec: EventDecoder) -> Callable[[], None]:
        def run() -> None:
            decode = dec.decode_batch
            for p in payloads:
                decode(p)
        return run

    def msgspec_structs() -> None:  # the C path's decode alone
        for p in payloads:
            structs(p)

    def msgspec_round_trip() -> None:  # and its check: encoded back to the same bytes
        for p in payloads:
            assert encode(structs(p)) == p

    def objects_only() -> None:
        for ts, rank, evs in built:
            EventBatch(ts, tuple([cls(*values) for cls, values in evs]), rank)

    def apply_only() -> None:
        index = PrefixIndex()
        index.register("a", scheme)
        for b in batches:
            index.apply("a", b)

    def decode_apply(dec: EventDecoder) -> Callable[[], None]:
        def run() -> None:
            decode = dec.decode_batch
            index = PrefixIndex()
            index.register("a", scheme)
            for p in payloads:
                index.apply("a", decode(p))
        return run

    def ingest(dec: EventDecoder) -> Callable[[], None]:
        def run() -> None:
            index = PrefixIndex()
            index.register("a", scheme)
            for p in payloads:
                index.ingest("a", dec, p)
        return run

    decoded_ops = [pure.ops(p) for p in payloads]
    assert [decoder.ops(p) for p in payloads] == decoded_ops

    def ops_only(dec: EventDecoder) -> Callable[[], None]:  # ingest's decoding: no objects
        def run() -> None:
            ops = dec.ops
            for p in payloads:
                ops(p)
        return run

    def apply_ops() -> None:  # ingest's index upkeep, on the decoded ops
        index = PrefixIndex()
        index.register("a", scheme)
        for ts, rank, evs, _ in decoded_ops:
            state = index._batch_state("a", rank, ts, len(evs))
            assert state is not None
            index._apply_ops(state, evs)

    vllm_decode, vllm_source = vllm_decoder()

    def vllm_only() -> None:
        for p in payloads:
            vllm_decode(p)

    paths = {"raw": raw_unpack, "bounded": bounded_unpack, "decode": decoding(decoder),
             "pure decode": decoding(pure), "objects": objects_only, "apply": apply_only,
             "decode+apply": decode_apply(decoder), "pure decode+apply": decode_apply(pure),
             "ingest": ingest(decoder), "pure ingest": ingest(pure), "ops": ops_only(decoder),
             "pure ops": ops_only(pure), "structs": msgspec_structs,
             "round trip": msgspec_round_trip, "apply ops": apply_ops, "vllm": vllm_only}
    times = interleaved(paths, rounds)
    med = {name: statistics.median(xs) for name, xs in times.items()}
    # Ratios per round (each path against the raw unpack of the same round), then medians.
    ratio = {name: statistics.median(x / r for x, r in zip(xs, times["raw"], strict=True))
             for name, xs in times.items()}
    per_event = {name: s / events * 1e6 for name, s in med.items()}

    def row(label: str, name: str) -> str:
        return (f"| {label} | {med[name]:.3f} | {per_event[name]:.2f} | "
                f"{events / med[name]:,.0f} | {ratio[name]:.2f} |")

    nbytes = sum(map(len, payloads))
    split = {  # the parts of decode + apply, each as the difference of two measured paths
        "unpack with bounds (counting hooks only past max_containers bytes)": med["bounded"],
        "validation (decode - bounded unpack - objects)":
            med["pure decode"] - med["bounded"] - med["objects"],
        "event objects (EventBatch, BlockStored, BlockRemoved)": med["objects"],
        "PrefixIndex.apply (index upkeep)": med["apply"],
    }
    ingest_split = {  # the same for ingest, on the msgspec path
        "msgspec decode into the era's structs": med["structs"],
        "the check: encoded back to the same bytes (round trip - decode)":
            med["round trip"] - med["structs"],
        "ops from the structs (decoder.ops - round trip)": med["ops"] - med["round trip"],
        "index upkeep (the ops applied)": med["apply ops"],
        "the rest (ingest - decoder.ops - upkeep: the result, the interplay)":
            med["ingest"] - med["ops"] - med["apply ops"],
    }
    pure_split = {  # and on the pure-Python path
        "unpack with bounds": med["bounded"],
        "validation and ops (decoder.ops - bounded unpack)": med["pure ops"] - med["bounded"],
        "index upkeep (the ops applied)": med["apply ops"],
        "the rest (ingest - decoder.ops - upkeep: the result, the interplay)":
            med["pure ingest"] - med["pure ops"] - med["apply ops"],
    }
    checks = token_checks(batches, rounds)
    lines = [
        "# KV-event ingestion benchmark",
        "",
        f"`python benchmarks/bench_events.py{' --quick' if args.quick else ''}` on "
        f"{platform.machine()}, {cpu_model()} ({os.cpu_count()} cores), Python "
        f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}; one process, one thread.",
        "",
        f"Workload: {n} synthetic vLLM {VERSION} batches ({events} events: {args.stored} "
        f"BlockStored of 4 blocks x {BLOCK} tokens per batch, plus a BlockRemoved once the "
        f"index holds 20k keys), {nbytes / n:.0f} bytes per payload on average. {rounds} "
        "rounds; in each round every path runs once over the same bytes, in turn; seconds are "
        "CPU time (`process_time`), medians over the rounds, `x raw` the median over the "
        "rounds of the path's time over the same round's raw unpack (so the machine's load "
        "moves it less).",
        "",
        f"vLLM side: {vllm_source}.",
        "",
        f"The msgspec path (the `events-fast` extra, msgspec {msgspec_version()}) took "
        f"{taken} of the {n} payloads itself; the pure-Python path is the same decoder "
        "without it, as installed without msgspec.",
        "",
        "| path | seconds | us/event | events/s | x raw |",
        "|---|---|---|---|---|",
        row("msgpack.unpackb (raw unpack, the reference)", "raw"),
        row("prefixkey decode (EventDecoder.decode_batch), msgspec path", "decode"),
        row("prefixkey decode, pure-Python path (without msgspec)", "pure decode"),
        row("prefixkey decode + PrefixIndex.apply, msgspec path", "decode+apply"),
        row("prefixkey decode + PrefixIndex.apply, pure-Python path", "pure decode+apply"),
        row("PrefixIndex.ingest (decode + apply, no event objects), msgspec path", "ingest"),
        row("PrefixIndex.ingest, pure-Python path", "pure ingest"),
        row("vLLM msgspec decode (typed structs)", "vllm"),
        "",
        "Where the time of decode + apply goes (medians; validation is what remains of "
        "decode once the bounded unpack and the object construction, timed alone on the same "
        "values, are taken out):",
        "",
        "| part | seconds | us/event | share |",
        "|---|---|---|---|",
        *(f"| {label} | {s:.3f} | {s / events * 1e6:.2f} | {s / sum(split.values()):.0%} |"
          for label, s in split.items()),
        "",
        "Where the time of `PrefixIndex.ingest` goes on the msgspec path (medians; "
        "`decoder.ops` is its decoding, timed alone; the upkeep is its `_apply_ops` over the "
        "same decoded ops):",
        "",
        "| part | seconds | us/event | x raw |",
        "|---|---|---|---|",
        *(f"| {label} | {s:.3f} | {s / events * 1e6:.2f} | {s / med['raw']:.2f} |"
          for label, s in ingest_split.items()),
        "",
        "The same on the pure-Python path:",
        "",
        "| part | seconds | us/event | x raw |",
        "|---|---|---|---|",
        *(f"| {label} | {s:.3f} | {s / events * 1e6:.2f} | {s / med['raw']:.2f} |"
          for label, s in pure_split.items()),
        "",
        "Strict checks of a BlockStored's 64 token ids in C (exact ints; a bool fails), on "
        "the workload's ids, ns per 64 ids (medians):",
        "",
        "| check | ns / 64 ids |",
        "|---|---|",
        *(f"| `{code}`, {how} | {ns:.0f} |" for (code, how), ns in checks),
        "",
        "prefixkey's pure-Python path runs over `msgpack` (bounds checks, typed errors, "
        "unknown-field reporting); its msgspec path decodes into C structs per wire era and "
        "takes a payload only when it encodes back to the same bytes, else the pure-Python "
        "path decodes it. Sockets are not timed here: the subscriber adds one queue hop and "
        "a lock per batch.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
