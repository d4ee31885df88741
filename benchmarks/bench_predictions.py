"""Routing without events: the cost of predicted entries, as ratios in one process.

Run from the repository root:

    python benchmarks/bench_predictions.py            # 16, 64 and 256 replicas
    python benchmarks/bench_predictions.py --quick    # 16 and 64 replicas

For 8k- and 32k-token prompts (block size 16, sha256, vLLM 0.31.0) and each
replica count, every replica holds a random-length prefix of the prompt,
either as events (a ``PrefixIndex`` filled with ``BlockStored``) or as
predictions (a ``PredictedIndex`` over an empty ``PrefixIndex``, filled with
``Predictions.record``), plus ``--filler`` other entries per replica. Timed
interleaved in one process on the same prepared request:

* hashing: ``Router.prepare`` (one scheme: one hash per request);
* ``rank`` over the events index (the floor: what predictions add to);
* ``rank`` over the predicted index;
* ``sent``: recording the request's keys for the chosen replica again (its keys are
  already predicted there: the steady state of a conversation, all refreshes);
* ``sent new``: recording the keys of another request each time (64 prompts of the
  same length in turn) for a replica bounded by ``max_entries_per_replica`` =
  ``--filler``: every key is new and each evicts one (issue 22's item 3).

Ratios are medians over the hashing median, so they do not move with the
machine's load as much as the times do. Memory per predicted entry is
tracemalloc's traced growth over recording ``--memory-entries`` entries.
Results go to stdout and to ``--out`` (default benchmarks/PREDICTIONS.md).
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_routing import interleaved, traced_growth

from prefixkey import Hasher, Request
from prefixkey.events import BlockStored, EventBatch, EventHash
from prefixkey.fleet import (
    PredictedIndex,
    Predictions,
    PrefixIndex,
    PreparedRequest,
    ReplicaId,
    ReplicaScheme,
    Router,
)

BLOCK = 16
HASHER = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.31.0")
SCHEME = ReplicaScheme(HASHER)


def chains(rng: random.Random, total: int) -> list[tuple[EventHash, ...]]:
    """``total`` random keys in 64-block chains, like long prompts."""
    return [tuple(rng.getrandbits(64) for _ in range(min(64, total - start)))
            for start in range(0, total, 64)]


def build(replicas: int, prefix: list[EventHash], filler: int, rng: random.Random
          ) -> tuple[PrefixIndex, PredictedIndex]:
    events = PrefixIndex(max_entries=10_000_000)
    predicted = PredictedIndex(PrefixIndex(), Predictions(max_entries=10_000_000))
    for r in range(replicas):
        name = f"replica-{r}"
        events.register(name, SCHEME)
        predicted.register(name, SCHEME)
        own = [tuple(prefix[:rng.randrange(len(prefix) + 1)])]
        for keys in [*chains(rng, filler), *own]:  # the prompt's prefix recorded last
            events.apply(name, EventBatch(0.0, (BlockStored(keys, None, (), BLOCK),)))
            predicted.predictions.record(name, [keys])
    return events, predicted


def memory_per_entry(entries: int) -> float:
    rng = random.Random(3)

    def build() -> Predictions:
        store = Predictions(max_entries=entries)
        for r in range(16):
            for keys in chains(rng, entries // 16):
                store.record(ReplicaId(f"replica-{r}"), [keys])
        return store

    store, used = traced_growth(build)
    assert len(store) == entries, len(store)
    return used / entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="16 and 64 replicas")
    parser.add_argument("--filler", type=int, default=2_000, help="other entries per replica")
    parser.add_argument("--memory-entries", type=int, default=1_000_000)
    parser.add_argument("--out", default="benchmarks/PREDICTIONS.md")
    args = parser.parse_args()
    seconds = 0.5 if args.quick else 1.5
    rng = random.Random(7)
    prompts = {n: Request([rng.randrange(128_000) for _ in range(n)]) for n in (8192, 32768)}
    lines: list[str] = []

    def report(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    report("| replicas | prompt tokens | hashing ms | rank, events ms | rank, predicted ms "
           "| sent ms | predicted / events | rank, predicted / hashing | sent / hashing "
           "| sent new ms | sent new / hashing |")
    report("|---|---|---|---|---|---|---|---|---|---|---|")
    for replicas in ((16, 64) if args.quick else (16, 64, 256)):
        for n, request in prompts.items():
            prefix = list(map(SCHEME.publish, HASHER.block_hashes(request)))
            events, predicted = build(replicas, prefix, args.filler, rng)
            on_events = Router(events)
            on_predicted = Router(predicted)
            prepared = on_events.prepare(request)
            chosen = on_predicted.rank(prepared)[0]
            assert chosen.replica == on_events.rank(prepared)[0].replica  # same entries, same pick
            bounded = PredictedIndex(PrefixIndex(), Predictions(
                max_entries_per_replica=args.filler))
            bounded.register("r0", SCHEME)
            others = [on_events.prepare(Request([rng.randrange(128_000) for _ in range(n)]))
                      for _ in range(64)]
            turn = iter(range(1 << 62))

            def sent_new(bounded: PredictedIndex = bounded,
                         others: list[PreparedRequest] = others, turn: Iterator[int] = turn
                         ) -> None:
                bounded.sent(others[next(turn) % len(others)], "r0")

            for other in others:  # the bound reached: from here on every key evicts one
                bounded.sent(other, "r0")
            (hash_ms, _), (events_ms, _), (predicted_ms, _), (sent_ms, _), (new_ms, _) = (
                interleaved([
                    partial(on_events.prepare, request), partial(on_events.rank, prepared),
                    partial(on_predicted.rank, prepared),
                    partial(predicted.sent, prepared, chosen), sent_new,
                ], seconds))
            report(f"| {replicas} | {n:,} | {hash_ms:.2f} | {events_ms:.2f} | {predicted_ms:.2f} "
                   f"| {sent_ms:.2f} | {predicted_ms / events_ms:.2f} "
                   f"| {predicted_ms / hash_ms:.2f} | {sent_ms / hash_ms:.2f} "
                   f"| {new_ms:.2f} | {new_ms / hash_ms:.2f} |")
            del events, predicted, on_events, on_predicted, prepared
            gc.collect()
    report("")
    per_entry = memory_per_entry(args.memory_entries)
    report(f"Memory per predicted entry, {args.memory_entries:,} entries over 16 replicas "
           f"(tracemalloc): {per_entry:.0f} bytes")
    header = [
        "# Predictions benchmark",
        "",
        f"`python benchmarks/bench_predictions.py{' --quick' if args.quick else ''}` on "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}. Block size 16, sha256, vLLM 0.31.0 scheme, int keys; "
        f"{args.filler:,} other entries per replica. See the script's docstring for the rows.",
        "",
    ]
    Path(args.out).write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
