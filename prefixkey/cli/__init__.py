"""The ``prefixkey`` command line: an edge over the library, reading and writing JSON Lines."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

from .. import __version__
from ..analysis import (
    DriftConfig,
    builtin_corpus,
    drift,
    drift_text,
    fingerprint,
    fingerprint_text,
    read_requests,
)
from ..errors import PrefixKeyError
from ..events import EventDecoder, decode_recording
from ..jsonl import error_record, parse_json_line, parse_request, run_job
from ._audit import add_audit
from ._testing import add_oracle, add_vectors

__all__ = ["main"]


def _hash_lines(lines: Iterable[bytes], out: IO[str], *, strict: bool, api_checks: bool) -> int:
    """Hash every request line; return how many failed."""
    failures = 0
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        request_id: Any = None
        try:
            obj = parse_json_line(raw)
            if isinstance(obj, dict):
                request_id = obj.get("id")
            job = parse_request(obj, strict=strict, api_checks=api_checks)
            record = run_job(job, request_id)
        except PrefixKeyError as exc:
            failures += 1
            record = error_record(exc, request_id, number)
        # ASCII output: any string a request echoes (even a lone surrogate) stays writable.
        out.write(json.dumps(record) + "\n")
    return failures


def _cmd_hash(args: argparse.Namespace) -> int:
    source = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    with source:
        failures = _hash_lines(
            source, sys.stdout, strict=not args.lenient, api_checks=not args.no_api_checks
        )
    if failures:
        print(f"prefixkey: {failures} request(s) could not be hashed", file=sys.stderr)
    return 1 if failures else 0


def _read_lines(name: str) -> list[Any]:
    source = sys.stdin.buffer if name == "-" else open(name, "rb")  # noqa: SIM115
    with source:
        return read_requests(source)


def _cmd_drift(args: argparse.Namespace) -> int:
    try:
        from_config, to_config = DriftConfig.parse(args.source), DriftConfig.parse(args.target)
        requests = builtin_corpus() if args.requests is None else _read_lines(args.requests)
        report = drift(from_config, to_config, requests)
    except PrefixKeyError as exc:
        print(f"prefixkey drift: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    else:
        sys.stdout.write(drift_text(report))
    return 0


def _cmd_fingerprint(args: argparse.Namespace) -> int:
    try:
        events = _read_lines(args.events)
    except PrefixKeyError as exc:
        print(f"prefixkey fingerprint: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    report = fingerprint(events, seeds=args.seed)
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    else:
        sys.stdout.write(fingerprint_text(report))
    return 0


def _add_drift(commands: Any) -> None:
    cmd = commands.add_parser(
        "drift", help="which requests keep their keys between two configurations (docs/drift.md)"
    )
    spec = "VERSION[:key=value,...] with keys algo, seed, block_size, lookahead"
    cmd.add_argument("source", metavar="FROM", help=f"the current configuration: {spec}")
    cmd.add_argument("target", metavar="TO", help=f"the new configuration: {spec}")
    cmd.add_argument("requests", metavar="REQUESTS", nargs="?", default=None,
                     help="JSON Lines requests (- for stdin); default: the built-in corpus")
    cmd.add_argument("--json", action="store_true", help="print the report as one JSON document")
    cmd.set_defaults(run=_cmd_drift)


def _add_fingerprint(commands: Any) -> None:
    cmd = commands.add_parser(
        "fingerprint",
        help="infer release family, algorithm and seed from KV events (docs/fingerprint.md)",
    )
    cmd.add_argument("events", metavar="EVENTS", help="JSON Lines BlockStored events, or -")
    cmd.add_argument("--seed", action="append", default=[], metavar="S",
                     help="a PYTHONHASHSEED value to try besides unset and '0' (repeatable)")
    cmd.add_argument("--json", action="store_true", help="print the report as one JSON document")
    cmd.set_defaults(run=_cmd_fingerprint)


def _cmd_events_decode(args: argparse.Namespace) -> int:
    try:
        decoder = EventDecoder(args.vllm_version, strict=not args.lenient)
    except PrefixKeyError as exc:
        print(f"prefixkey events decode: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    for warning in decoder.version_warnings:
        print(f"prefixkey events decode: warning: {warning}", file=sys.stderr)
    failures = 0
    source = sys.stdin.buffer if args.recording == "-" else open(args.recording, "rb")  # noqa: SIM115
    with source:
        for record in decode_recording(source, decoder, framing=args.framing):
            failures += "error" in record
            sys.stdout.write(json.dumps(record) + "\n")
    if decoder.ignored:
        ignored = ", ".join(f"{key} x{n}" for key, n in sorted(decoder.ignored.items()))
        print(f"prefixkey events decode: ignored unknown fields: {ignored}", file=sys.stderr)
    if failures:
        print(f"prefixkey events decode: {failures} message(s) could not be decoded",
              file=sys.stderr)
    return 1 if failures else 0


def _add_events(commands: Any) -> None:
    events = commands.add_parser("events", help="vLLM KV-event messages (docs/events.md)")
    sub = events.add_subparsers(dest="events_command", required=True)
    cmd = sub.add_parser(
        "decode", help="decode a recording of KV-event messages, one JSON result per message"
    )
    cmd.add_argument("recording", metavar="RECORDING",
                     help="JSON Lines recording (docs/events.md), or - for stdin")
    cmd.add_argument("--vllm-version", required=True, metavar="X",
                     help="the publishing replica's vLLM release (0.9.0+)")
    cmd.add_argument("--framing", choices=("pub", "replay"), default=None,
                     help="framing of the lines whose \"via\" and frame count do not tell: "
                     "PUB messages [topic, seq, payload] (default) or replay replies")
    cmd.add_argument("--lenient", action="store_true",
                     help="decode a release newer than any known one as the newest era")
    cmd.set_defaults(run=_cmd_events_decode)


def _listen_summary(stats: dict[str, Any], elapsed: float) -> dict[str, Any]:
    replicas = {
        name: {"batches": v["batches"], "events": v["events"], "gaps": v["gaps"],
               "errors": v["decode_errors"] + v["framing_errors"], "index_size": v["index_size"],
               "dropped": v["dropped"], "restarts": v["restarts"], "idle": v["idle"]}
        for name, v in stats["replicas"].items()
    }
    return {"elapsed": round(elapsed, 3), "replicas": replicas}


def _listen_text(summary: dict[str, Any]) -> str:
    parts = [
        f"{name}: batches={v['batches']} events={v['events']} gaps={v['gaps']} "
        f"errors={v['errors']} index={v['index_size']}" + (" IDLE" if v["idle"] else "")
        for name, v in summary["replicas"].items()
    ]
    return f"[{summary['elapsed']:6.1f}s] " + " | ".join(parts)


def _cmd_listen(args: argparse.Namespace) -> int:
    import logging
    import time

    try:
        import zmq

        from ..fleet import ReplicaEndpoint, Subscriber
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
    # Entries are counted as published: one scheme that keeps int keys (bytes reduced).
    scheme = ReplicaScheme(Hasher(block_size=16))
    try:
        replicas = [
            ReplicaEndpoint(name, endpoint, args.vllm_version,
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
        with sub:
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
    if args.json:
        sys.stdout.write(json.dumps(final) + "\n")
    else:
        totals = ", ".join(f"{k}={v}" for k, v in stats["totals"].items() if v)
        sys.stdout.write("final " + _listen_text(final) + "\n" + f"totals: {totals}\n")
    return 0


def _add_listen(commands: Any) -> None:
    cmd = commands.add_parser(
        "listen", help="subscribe to replicas' KV-event publishers (docs/subscriber.md)"
    )
    cmd.add_argument("endpoints", metavar="ENDPOINT", nargs="+",
                     help="a replica's KV-event PUB endpoint, e.g. tcp://10.0.0.1:5557")
    cmd.add_argument("--name", action="append", default=[], metavar="NAME",
                     help="replica name, once per endpoint in order (default: the endpoint)")
    cmd.add_argument("--vllm-version", default="0.31.0", metavar="X",
                     help="the replicas' vLLM release (default 0.31.0)")
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
    cmd.add_argument("--lenient", action="store_true",
                     help="decode a release newer than any known one as the newest era")
    cmd.set_defaults(run=_cmd_listen)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="prefixkey", description="vLLM prefix-cache block keys, bit for bit."
    )
    parser.add_argument("--version", action="version", version=f"prefixkey {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    hash_cmd = commands.add_parser(
        "hash", help="hash JSON Lines requests (docs/request-format.md), one result per line"
    )
    hash_cmd.add_argument("file", nargs="?", default="-", help="request file, or - for stdin")
    hash_cmd.add_argument(
        "--lenient", action="store_true",
        help="map a vLLM release newer than any known one to the newest era (with a warning)",
    )
    hash_cmd.add_argument(
        "--no-api-checks", action="store_true",
        help="skip the checks vLLM's API server makes (salt rules, non-empty LoRA path) and "
        "hash what the engine core would hash",
    )
    hash_cmd.set_defaults(run=_cmd_hash)
    _add_drift(commands)
    _add_fingerprint(commands)
    _add_events(commands)
    _add_listen(commands)
    add_audit(commands)
    add_oracle(commands)  # oracle/vectors import Hypothesis only when they run
    add_vectors(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `prefixkey` command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except BrokenPipeError:
        # The reader went away (`prefixkey hash … | head`): stop without a
        # message and with the status of a tool SIGPIPE ended (128 + 13); stdout
        # goes to devnull so that Python's flush at exit does not complain.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        print(f"prefixkey: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
