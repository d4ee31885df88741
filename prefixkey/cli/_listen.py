"""``prefixkey listen``: subscribe to replicas' KV-event publishers, print live summaries."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import PrefixKeyError
from ._common import Commands, add_lenient_option

if TYPE_CHECKING:
    from ..fleet import SubscriberStats

__all__ = ["register"]


def _listen_summary(stats: SubscriberStats, elapsed: float) -> dict[str, Any]:
    replicas = {
        name: {"batches": v["batches"], "events": v["events"], "gaps": v["gaps"],
               "errors": v["decode_errors"] + v["framing_errors"], "index_size": v["index_size"],
               "dropped": v["dropped"], "restarts": v["restarts"], "idle": v["idle"],
               "vllm_version": v["vllm_releases"], "scheme": v["scheme"]}
        for name, v in stats["replicas"].items()
    }
    return {"elapsed": round(elapsed, 3), "replicas": replicas}


def _learning_text(v: dict[str, Any]) -> str:
    """What was inferred, when something is (``--vllm-version auto``, ``--learn-scheme``).

    ``vllm=`` is the release, or the range of releases the events fit ("0.31.0-0.33.0");
    "?" until a payload with events arrived.
    """
    if v["scheme"] == "configured":
        return ""
    return f" vllm={v['vllm_version'] or '?'} scheme={v['scheme']}"


def _listen_text(summary: dict[str, Any]) -> str:
    parts = [
        f"{name}: batches={v['batches']} events={v['events']} gaps={v['gaps']} "
        f"errors={v['errors']} index={v['index_size']}" + _learning_text(v)
        + (" IDLE" if v["idle"] else "")
        for name, v in summary["replicas"].items()
    ]
    return f"[{summary['elapsed']:6.1f}s] " + " | ".join(parts)


@contextlib.contextmanager
def _logged_once(category: type[Warning]) -> Iterator[None]:
    """Silence ``category``'s Python warnings: the subscriber also logs each (on stderr).

    A library caller gets both; the command prints each warning once, as a log line.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        yield


def _run(args: argparse.Namespace) -> int:
    import logging
    import time

    try:
        import zmq

        from ..fleet import FleetWarning, ReplicaEndpoint, Subscriber
    except ImportError as exc:  # pragma: no cover - pyzmq missing
        print(f"prefixkey listen: needs pyzmq (pip install 'prefixkey[zmq]'): {exc}",
              file=sys.stderr)
        return 2
    from ..core import Hasher
    from ..fleet import PrefixIndex, ReplicaScheme

    endpoints: list[str] = args.endpoints
    names: list[str] = args.name or endpoints
    replays: list[str] = args.replay or []
    if len(names) != len(endpoints) or (replays and len(replays) != len(endpoints)):
        print("prefixkey listen: give one --name (and one --replay, '-' for none) per endpoint",
              file=sys.stderr)
        return 2
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                            format="prefixkey listen: %(levelname)s %(message)s")
    auto = args.vllm_version == "auto"
    version = None if auto else args.vllm_version
    # Entries are counted as published: one scheme that keeps int keys (bytes reduced),
    # unless the replicas' schemes are learned from their events.
    scheme = None if auto or args.learn_scheme else ReplicaScheme(Hasher(block_size=16))
    try:
        replicas = [
            ReplicaEndpoint(name, endpoint, version,
                            replay_endpoint=None if not replays or replays[i] == "-"
                            else replays[i],
                            topic=args.topic, scheme=scheme, strict=not args.lenient)
            for i, (name, endpoint) in enumerate(zip(names, endpoints, strict=True))
        ]
        index = PrefixIndex()
        record = open(args.record, "w", encoding="utf-8") if args.record else None  # noqa: SIM115
        sub = Subscriber(replicas, index=index, record=record, idle_timeout=args.idle_timeout)
    except PrefixKeyError as exc:
        print(f"prefixkey listen: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    start = time.monotonic()
    try:
        with _logged_once(FleetWarning), sub:
            next_tick = start + 1.0
            while args.duration is None or time.monotonic() - start < args.duration:
                now = time.monotonic()
                end = next_tick if args.duration is None else min(next_tick,
                                                                  start + args.duration)
                if end > now:
                    time.sleep(end - now)
                if time.monotonic() >= next_tick:
                    next_tick += 1.0
                    summary = _listen_summary(sub.stats(), time.monotonic() - start)
                    line = json.dumps(summary) if args.json else _listen_text(summary)
                    sys.stdout.write(line + "\n")
                    sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    except zmq.ZMQError as exc:  # a malformed endpoint, an address in use
        print(f"prefixkey listen: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        if record is not None:
            record.close()
    stats = sub.stats()
    final = {**_listen_summary(stats, time.monotonic() - start), "final": True,
             "totals": stats["totals"]}
    if scheme is None:  # what was learned, per replica and rank
        final["schemes"] = {str(rid): repr(s.hasher) for rid, s in index.replicas().items()}
    if args.json:
        sys.stdout.write(json.dumps(final) + "\n")
    else:
        totals = ", ".join(f"{k}={v}" for k, v in stats["totals"].items() if v)
        sys.stdout.write("final " + _listen_text(final) + "\n" + f"totals: {totals}\n")
        for rid, learned in final.get("schemes", {}).items():
            sys.stdout.write(f"learned {rid}: {learned}\n")
    return 0


def register(commands: Commands) -> None:
    """Add ``prefixkey listen``."""
    cmd = commands.add_parser(
        "listen", help="subscribe to replicas' KV-event publishers (docs/subscriber.md)"
    )
    cmd.add_argument("endpoints", metavar="ENDPOINT", nargs="+",
                     help="a replica's KV-event PUB endpoint, e.g. tcp://10.0.0.1:5557")
    cmd.add_argument("--name", action="append", default=[], metavar="NAME",
                     help="replica name, once per endpoint in order (default: the endpoint)")
    cmd.add_argument("--vllm-version", default="0.31.0", metavar="X",
                     help="the replicas' vLLM release (default 0.31.0); 'auto' infers the "
                     "wire era from the payloads and learns each replica's scheme")
    cmd.add_argument("--learn-scheme", action="store_true",
                     help="learn each replica's scheme (algorithm, seed, block size) from its "
                     "first BlockStored events (implied by --vllm-version auto)")
    cmd.add_argument("--replay", action="append", default=[], metavar="ENDPOINT",
                     help="replay ROUTER endpoint, once per endpoint in order ('-' for none)")
    cmd.add_argument("--topic", default="", help="topic prefix to subscribe to (default all)")
    cmd.add_argument("--record", metavar="FILE",
                     help="write every raw PUB message and replay reply to FILE (recording "
                     "format, docs/events.md)")
    cmd.add_argument("--duration", type=float, metavar="SECONDS",
                     help="stop after SECONDS (default: until Ctrl-C)")
    cmd.add_argument("--idle-timeout", type=float, default=30.0, metavar="SECONDS",
                     help="silence after which a replica is reported idle (default 30)")
    cmd.add_argument("--json", action="store_true", help="print the summaries as JSON lines")
    add_lenient_option(cmd)
    cmd.set_defaults(run=_run)
