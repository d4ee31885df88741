"""One top-1 ranking before and after a change, in one process, as a ratio to hashing.

Run from the repository root (a short run: 64 replicas, 1k and 8k tokens)::

    python benchmarks/bench_rank_top1.py main          # this tree against main
    python benchmarks/bench_rank_top1.py e5b89e4 --rounds 600

The fleet is bench_gateways.py's: 64 replicas, each holding a random-length
prefix of the request's keys plus 2,000 random blocks, in a ``PrefixIndex``.
Two loads: ``pushed`` (a queued load for every replica, ``set_load``, as
bench_routing.py gives) and ``own`` (none: the Router's own queue estimate,
which each decision moves; the LiteLLM plugin's case, candidates named).
``before`` is ``REV``'s ``fleet/routing/_router.py`` (and the walk's
``SlotMembers._list``) loaded beside this tree's, over the same index; the
two rankings and the hashing (``Router.prepare`` and ``Hasher.block_hashes``)
are timed in turn, CPU time, each ranking right after the hashing every
other round (the walk's index reads are cache-cold then). Medians, in µs.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleets import fill

from prefixkey import Hasher, Request
from prefixkey.fleet import PrefixIndex, ReplicaId, ReplicaScheme, Router
from prefixkey.fleet.index import _walk

BLOCK = 16
HASHER = Hasher(block_size=BLOCK, python_hash_seed="0", vllm_version="0.31.0")
SCHEME = ReplicaScheme(HASHER)


def load_at(rev: str, path: str, name: str, folder: Path) -> ModuleType:
    """``path`` as of git revision ``rev``, imported as module ``name`` (its package's)."""
    source = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True,
                            check=True).stdout
    file = folder / (name.rpartition(".")[2] + ".py")
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fleet(replicas: int, tokens: int, filler: int = 2000
          ) -> tuple[PrefixIndex, Request, list[str], random.Random]:
    """bench_gateways.py's index: a random prefix of the request's keys, and filler."""
    rng = random.Random(tokens * 7919 + replicas)
    request = Request([rng.randrange(128_000) for _ in range(tokens)])
    keys = [SCHEME.publish(k) for k in HASHER.block_hashes(request)]
    index = PrefixIndex()
    names = fill(index, SCHEME, BLOCK, replicas, keys, filler, rng)
    return index, request, names, rng


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rev", help="the git revision to compare with (e.g. main)")
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        old = load_at(args.rev, "prefixkey/fleet/routing/_router.py",
                      "prefixkey.fleet.routing._router_before", Path(folder))
        old_walk = load_at(args.rev, "prefixkey/fleet/index/_walk.py",
                           "prefixkey.fleet.index._walk_before", Path(folder))
    lists: dict[str, Callable[[_walk.SlotMembers], list[ReplicaId]]] = {
        "before": old_walk.SlotMembers._list, "after": _walk.SlotMembers._list}
    print("| load | replicas | tokens | Router.prepare µs | block_hashes µs | top-1 before µs "
          "| top-1 after µs | after / before | after / prepare | after / block_hashes |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in ("pushed", "own"):
        for tokens in (1024, 8192):
            m = row(old.Router, mode, tokens, args.rounds, lists)
            print(f"| {mode} | 64 | {tokens} | {m['prepare']:.0f} | {m['hash']:.0f} "
                  f"| {m['before']:.0f} | {m['after']:.0f} | {m['after'] / m['before']:.2f} "
                  f"| {m['after'] / m['prepare']:.2f} | {m['after'] / m['hash']:.2f} |",
                  flush=True)


def row(before: type[Router], mode: str, tokens: int, rounds: int,
        lists: dict[str, Callable[[_walk.SlotMembers], list[ReplicaId]]]) -> dict[str, float]:
    """Median CPU µs of hashing and of each side's top-1 ranking at 64 replicas."""
    index, request, names, rng = fleet(64, tokens)
    loads = [float(rng.randrange(0, 4 * tokens)) for _ in names]
    routers: dict[str, Router] = {}
    for side, cls in (("before", before), ("after", Router)):
        router = cls(index) if mode == "pushed" else cls(index, replicas=names)
        if mode == "pushed":
            for name, load in zip(names, loads, strict=True):
                router.set_load(name, load)
        routers[side] = router
    prepared = {side: r.prepare(request, names) for side, r in routers.items()}
    fns: dict[str, Callable[[], object]] = {
        "prepare": lambda: routers["after"].prepare(request, names),
        "hash": lambda: HASHER.block_hashes(request),
        "before": lambda: routers["before"].rank(prepared["before"], names, limit=1)[0],
        "after": lambda: routers["after"].rank(prepared["after"], names, limit=1)[0],
    }
    spent: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(rounds + 20):
        for k in ("prepare", "hash", *(("before", "after") if i % 2 else ("after", "before"))):
            if k in lists:
                _walk.SlotMembers._list = lists[k]  # type: ignore[method-assign,assignment]
            start = time.process_time()
            fns[k]()
            if i >= 20:  # warm-up
                spent[k].append(time.process_time() - start)
    _walk.SlotMembers._list = lists["after"]  # type: ignore[method-assign,assignment]
    return {k: statistics.median(v) * 1e6 for k, v in spent.items()}

if __name__ == "__main__":
    main()
