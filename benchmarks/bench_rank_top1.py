"""One ranking before and after a change, in one process, as a ratio to hashing.

Run from the repository root (a short run: 64 replicas, 1k and 8k tokens)::

    python benchmarks/bench_rank_top1.py main          # this tree against main
    python benchmarks/bench_rank_top1.py e5b89e4 --rounds 600
    python benchmarks/bench_rank_top1.py main --fleet routing --replicas 1024 --tokens 8192

``--fleet gateway`` (the default) is bench_gateways.py's fleet: each replica
holding a random-length prefix of the request's keys (only the first
``--holders`` replicas, when given) plus 2,000 random blocks, in a
``PrefixIndex``. ``--fleet routing`` is bench_routing.py's two layouts over
``--blocks`` indexed entries: ``mixed`` (a random-length prefix each) and
``worst`` (every replica holds the whole prompt). Two loads:
``pushed`` (a queued load for every replica, ``set_load``, 0-4x the prompt's
tokens, as bench_routing.py gives) and ``own`` (none: the Router's own queue
estimate, which each decision moves; the LiteLLM plugin's case, candidates
named). ``before`` is ``REV``'s ``fleet/routing/_router.py`` (with the modules it
was split into, ``_candidates.py``, ``_decision.py``, ``_cost_order.py`` and ``_top1.py``,
where ``REV`` has them; the walk's ``walk``, ``members_of`` and ``SlotMembers._list``;
and the in-memory index's methods a ranking's walk runs, :data:`WALK_METHODS`) loaded
beside this tree's, each side over its own copy of the index, built by that side's store methods
(:data:`STORE_METHODS`: how the index keeps its holder sets is part of what a walk
reads); per round, hashing (``Router.prepare``) then each side's top-1
(``rank(prepared, names, limit=1)[0]``) and full ranking read to its head
(``rank(prepared, names)[0]``), each right after a hashing (the walk's index
reads cache-cold, as a gateway's first ranking of a request is), the sides'
order alternated. CPU time; medians, in µs.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleets import fill

from prefixkey import Hasher, Request
from prefixkey.fleet import PrefixIndex, ReplicaId, ReplicaScheme, Router
from prefixkey.fleet.index import _memory, _walk

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


#: The modules ``_router.py`` was split into, in import order: where ``REV`` has them,
#: its ``_router.py`` imports ``REV``'s copies (older revisions kept all in ``_router.py``).
ROUTER_PARTS = ("_candidates", "_decision", "_cost_order", "_top1")


def load_router_at(rev: str, folder: Path) -> ModuleType:
    """``REV``'s ``fleet/routing/_router.py``, imported beside this tree's, its imports of
    :data:`ROUTER_PARTS` given ``REV``'s copies (the rest of the package is this tree's)."""
    package = "prefixkey.fleet.routing"
    saved: dict[str, ModuleType] = {}
    try:
        for part in ROUTER_PARTS:
            path = f"prefixkey/fleet/routing/{part}.py"
            if subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"],
                              capture_output=True).returncode:
                continue  # not split yet at REV: its _router.py holds this part
            module = load_at(rev, path, f"{package}.{part}_before", folder)
            saved[part] = importlib.import_module(f"{package}.{part}")
            sys.modules[f"{package}.{part}"] = module  # what REV's later imports find
        return load_at(rev, "prefixkey/fleet/routing/_router.py", f"{package}._router_before",
                       folder)
    finally:
        for part, module in saved.items():
            sys.modules[f"{package}.{part}"] = module


def fleet(replicas: int, tokens: int, filler: int = 2000, holders: int | None = None
          ) -> tuple[PrefixIndex, Request, list[str], random.Random]:
    """bench_gateways.py's index: a random prefix of the request's keys (on the first
    ``holders`` replicas only, when given), and filler."""
    rng = random.Random(tokens * 7919 + replicas)
    request = Request([rng.randrange(128_000) for _ in range(tokens)])
    keys = [SCHEME.publish(k) for k in HASHER.block_hashes(request)]
    index = PrefixIndex()
    names = fill(index, SCHEME, BLOCK, replicas, keys, filler, rng, holders)
    return index, request, names, rng


def routing_fleet(replicas: int, tokens: int, layout: str, blocks: int
                  ) -> tuple[PrefixIndex, Request, list[str], random.Random]:
    """bench_routing.py's index: each replica's prefix of the request (its layout), then
    random 64-block chains up to ``blocks`` entries in all."""
    import bench_routing

    rng = random.Random(tokens * 7919 + replicas)
    request = Request([rng.randrange(128_000) for _ in range(tokens)])
    keys = [k for k in map(SCHEME.publish, HASHER.block_hashes(request)) if isinstance(k, int)]
    names = [f"replica-{r}" for r in range(replicas)]
    own = {name: keys[:len(keys) if layout == "worst" else rng.randrange(len(keys) + 1)]
           for name in names}
    return bench_routing.fill(replicas, blocks, own), request, names, rng


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rev", help="the git revision to compare with (e.g. main)")
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--fleet", choices=("gateway", "routing"), default="gateway")
    parser.add_argument("--replicas", type=int, default=64)
    parser.add_argument("--tokens", type=lambda v: [int(x) for x in v.split(",")],
                        default=[1024, 8192])
    parser.add_argument("--loads", type=lambda v: v.split(","), default=["pushed", "own"])
    parser.add_argument("--blocks", type=int, default=1_000_000,
                        help="indexed entries of a --fleet routing index")
    parser.add_argument("--holders", type=int, default=None,
                        help="--fleet gateway: only this many replicas hold a prefix of the "
                             "request (default: every replica)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        old = load_router_at(args.rev, Path(folder))
        old_walk = load_at(args.rev, "prefixkey/fleet/index/_walk.py",
                           "prefixkey.fleet.index._walk_before", Path(folder))
        old_memory = load_at(args.rev, "prefixkey/fleet/index/_memory.py",
                             "prefixkey.fleet.index._memory_before", Path(folder))
    old_memory.walk = old_walk.walk  # type: ignore[attr-defined]
    for part in ROUTER_PARTS:  # REV's parts list a walk's members as REV's walk does
        module = sys.modules.get(f"prefixkey.fleet.routing.{part}_before")
        if module is not None and hasattr(module, "members_of"):
            module.members_of = old_walk.members_of  # type: ignore[attr-defined]
    sides: dict[str, Side] = {
        "before": (old_walk.walk, old_walk.SlotMembers._list,
                   {m: getattr(old_memory.PrefixIndex, m) for m in WALK_METHODS + STORE_METHODS}),
        "after": (_walk.walk, _walk.SlotMembers._list,
                  {m: getattr(PrefixIndex, m) for m in WALK_METHODS + STORE_METHODS})}
    print("| load | replicas | tokens | layout | Router.prepare µs | top-1 before µs "
          "| top-1 after µs | top-1 after / before | full before µs | full after µs "
          "| full after / before | top-1 ratio before / after | full ratio before / after |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    layouts = ["gateway"] if args.fleet == "gateway" else ["mixed", "worst"]
    for tokens in args.tokens:
        for layout in layouts:
            made: dict[str, Fleet] = {}
            for side in ("before", "after"):  # the same fleet (seeded), stored as each side does
                use(sides[side])
                if layout == "gateway":
                    made[side] = fleet(args.replicas, tokens, holders=args.holders)
                else:
                    made[side] = routing_fleet(args.replicas, tokens, layout, args.blocks)
            use(sides["after"])
            for mode in args.loads:
                m = row(old.Router, mode, made, args.rounds, sides)
                p = m["prepare"]
                print(f"| {mode} | {args.replicas} | {tokens} | {layout} | {p:.0f} "
                      f"| {m['top1 before']:.0f} | {m['top1 after']:.0f} "
                      f"| {m['top1 after'] / m['top1 before']:.2f} "
                      f"| {m['full before']:.0f} | {m['full after']:.0f} "
                      f"| {m['full after'] / m['full before']:.2f} "
                      f"| {m['top1 before'] / p:.2f} / {m['top1 after'] / p:.2f} "
                      f"| {m['full before'] / p:.2f} / {m['full after'] / p:.2f} |", flush=True)
            del made
            gc.collect()


#: The in-memory index's methods a ranking's walk runs (``REV``'s beside this tree's).
WALK_METHODS = ("leading_runs", "_prefix_walk", "_alive", "_maps")
#: The in-memory index's methods that store and remove holder sets (each side's index is
#: built by its own).
STORE_METHODS = ("_store", "_remove", "_drop")

#: An index, the request, the replicas' names and the random source left after the fill.
Fleet = tuple[PrefixIndex, Request, list[str], random.Random]

Side = tuple[Callable[..., object], Callable[[_walk.SlotMembers], list[ReplicaId]],
             dict[str, Callable[..., object]]]


def use(side: Side) -> None:
    """Make the index walk and list members as ``side``'s revision does."""
    _memory.walk = side[0]  # type: ignore[attr-defined,assignment]
    _walk.SlotMembers._list = side[1]  # type: ignore[method-assign,assignment]
    for name, method in side[2].items():
        setattr(PrefixIndex, name, method)


def row(before: type[Router], mode: str, made: dict[str, Fleet], rounds: int,
        sides: dict[str, Side]) -> dict[str, float]:
    """Median CPU µs of hashing and of each side's top-1 and full ranking (each side over
    its own index)."""
    _, request, names, rng = made["after"]
    tokens = len(request.token_ids)
    loads = [float(rng.randrange(0, 4 * tokens)) for _ in names]
    routers: dict[str, Router] = {}
    for side, cls in (("before", before), ("after", Router)):
        index = made[side][0]
        router = cls(index) if mode == "pushed" else cls(index, replicas=names)
        if mode == "pushed":
            for name, load in zip(names, loads, strict=True):
                router.set_load(name, load)
        routers[side] = router
    prepared = {side: r.prepare(request, names) for side, r in routers.items()}
    fns: dict[str, Callable[[], object]] = {
        "prepare": lambda: routers["after"].prepare(request, names)}
    for side in ("before", "after"):
        fns[f"top1 {side}"] = partial(lambda s: routers[s].rank(
            prepared[s], names, limit=1)[0], side)
        fns[f"full {side}"] = partial(lambda s: routers[s].rank(prepared[s], names)[0], side)
    spent: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(rounds + 20):
        order = ("before", "after") if i % 2 else ("after", "before")
        for k in [f"{what} {side}" for what in ("top1", "full") for side in order]:
            use(sides[k.split()[1]])
            start = time.process_time()
            fns["prepare"]()  # the ranking's keys leave the cache, as a new request's would
            if i >= 20:
                spent["prepare"].append(time.process_time() - start)
            start = time.process_time()
            fns[k]()
            if i >= 20:  # warm-up
                spent[k].append(time.process_time() - start)
    use(sides["after"])
    return {k: statistics.median(v) * 1e6 for k, v in spent.items()}


if __name__ == "__main__":
    main()
