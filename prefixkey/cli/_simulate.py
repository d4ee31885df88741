"""``prefixkey simulate``: replay a trace against simulated vLLM replicas and compare routing.

See docs/routing.md ("Simulating a fleet") and :mod:`prefixkey.analysis`'s
:func:`~prefixkey.analysis.simulate`.
"""

from __future__ import annotations

import argparse
import sys

from ..analysis import (
    SIMULATION_POLICIES,
    SimulationConfig,
    TimeModel,
    read_trace,
    simulate,
    simulation_html,
    simulation_text,
)
from ..core._checks import number_refusal
from ..errors import PrefixKeyError
from ._common import Commands, add_json_option, fail, positive_int, write_report

__all__ = ["register"]


def _finite_float(text: str, *, strict: bool) -> float:
    value = float(text)
    refusal = number_refusal(value, strict=strict)
    if refusal is not None:
        raise argparse.ArgumentTypeError(refusal)
    return value


def _positive_float(text: str) -> float:
    return _finite_float(text, strict=True)


def _non_negative_float(text: str) -> float:
    return _finite_float(text, strict=False)


def _policies(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
    unknown = [n for n in names if n not in SIMULATION_POLICIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown policy {', '.join(unknown) or '(none)'}: one or more of "
            f"{', '.join(SIMULATION_POLICIES)}, comma-separated")
    return names


def _run(args: argparse.Namespace) -> int:
    config = SimulationConfig(
        replicas=args.replicas, blocks_per_replica=args.blocks, block_size=args.block_size,
        vllm_version=args.vllm_version, hash_algo=args.hash_algo, policies=args.policy,
        pooled=not args.no_pooled, seed=args.seed,
        time=TimeModel(prefill_tokens_per_s=args.prefill_rate,
                       max_concurrency=args.max_concurrency,
                       decode_s_per_token=args.decode_s_per_token,
                       event_lag_s=args.event_lag_ms / 1000))
    if args.blocks < 2:
        return fail("simulate", "--blocks must be >= 2 (one block is vLLM's null block)")
    try:
        if args.trace == "-":
            report = simulate(read_trace(sys.stdin, trace_block=args.trace_block,
                                         seed=args.seed, limit=args.limit), config)
        else:
            with open(args.trace, encoding="utf-8") as source:
                report = simulate(read_trace(source, trace_block=args.trace_block,
                                             seed=args.seed, limit=args.limit), config)
    except PrefixKeyError as exc:
        return fail("simulate", exc)
    write_report(args, report.to_dict, lambda: simulation_text(report),
                 lambda: simulation_html(report))
    return 0


def register(commands: Commands) -> None:
    """Add ``prefixkey simulate``."""
    cmd = commands.add_parser(
        "simulate",
        help="replay a trace against simulated vLLM replicas and compare routing policies "
        "(docs/routing.md)",
    )
    cmd.add_argument("trace", metavar="TRACE",
                     help="JSON Lines: Mooncake trace lines (hash_ids), plain requests "
                     "(token_ids) or prefixkey audit's request logs (arrival_time); "
                     "- for stdin")
    cmd.add_argument("--policy", type=_policies, default=("ours",), metavar="P[,P...]",
                     help=f"policies to compare: {', '.join(SIMULATION_POLICIES)} "
                     "(default ours)")
    cmd.add_argument("--no-pooled", action="store_true",
                     help="leave out the pooled-cache bound (one replica with the fleet's "
                     "total blocks, concurrency and prefill rate)")
    cmd.add_argument("--replicas", type=positive_int, default=8, metavar="N",
                     help="simulated vLLM replicas (default 8)")
    cmd.add_argument("--blocks", type=positive_int, default=10_000, metavar="N",
                     help="KV-cache blocks per replica, vLLM's num_gpu_blocks (default 10000)")
    cmd.add_argument("--block-size", type=positive_int, default=16, metavar="N",
                     help="tokens per KV-cache block (default 16)")
    cmd.add_argument("--vllm-version", default="0.31.0", metavar="X",
                     help="the release whose keys and KV events the replicas use "
                     "(default 0.31.0)")
    cmd.add_argument("--hash-algo", default="sha256", metavar="ALGO",
                     help="prefix_caching_hash_algo (default sha256)")
    cmd.add_argument("--prefill-rate", type=_positive_float, default=10_000.0,
                     metavar="TOKENS_PER_S", help="prefill tokens per second per replica "
                     "(default 10000)")
    cmd.add_argument("--max-concurrency", type=positive_int, default=64, metavar="N",
                     help="requests running at once per replica, vLLM's max_num_seqs "
                     "(default 64)")
    cmd.add_argument("--decode-s-per-token", type=_non_negative_float, default=0.02,
                     metavar="S", help="seconds per output token after the first "
                     "(default 0.02)")
    cmd.add_argument("--event-lag-ms", type=_non_negative_float, default=50.0, metavar="MS",
                     help="KV events reach the index this late (default 50)")
    cmd.add_argument("--trace-block", type=positive_int, default=512, metavar="N",
                     help="tokens per Mooncake hash id (default 512)")
    cmd.add_argument("--limit", type=positive_int, default=None, metavar="N",
                     help="replay only the trace's first N requests")
    cmd.add_argument("--seed", type=int, default=0,
                     help="the seed of the trace's token content and of random tie-breaks "
                     "(the same seed, the same report)")
    add_json_option(cmd)
    cmd.add_argument("--html", metavar="FILE", default=None,
                     help="also write an HTML report with plots to FILE")
    cmd.set_defaults(run=_run)
