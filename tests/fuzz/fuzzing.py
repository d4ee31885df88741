"""The fuzz harness (issue 14, item 4): budgets, checks, failure files, the slowest inputs.

Every target feeds bytes to a parser through :meth:`Fuzz.one`. An input may
fail only with a :class:`~prefixkey.errors.PrefixKeyError`; anything else is
a finding, written with its traceback to ``<PREFIXKEY_FUZZ_DIR>/failures/``
so that ``PREFIXKEY_FUZZ_REPLAY=<file>`` can run it again. Each input must
also finish within :data:`TIME_BOUND` seconds and allocate at most
:func:`memory_bound` bytes. Memory is measured with tracemalloc, which slows
decoding about sevenfold, so only a sample is traced: every
:data:`TRACE_EVERY`-th input and every input slower than
:data:`TRACE_SLOWER_THAN` (a payload that allocates a lot also takes time).

Environment:

- ``PREFIXKEY_FUZZ_SECONDS``: seconds per target (default 0.1, the normal
  suite's smoke run; ``.ci/run`` gives more).
- ``PREFIXKEY_FUZZ_SEED``: the base seed (default 0); each target derives
  its own from it and its name, so runs are reproducible.
- ``PREFIXKEY_FUZZ_DIR``: where failures and ``report.json`` go (default
  ``build/prefixkey-fuzz`` in the checkout, which git ignores: a test run
  writes nothing outside its checkout).
- ``PREFIXKEY_FUZZ_REPLAY``: a failure file; only its target runs, on that
  input alone, and the exception propagates with its traceback.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
import traceback
import tracemalloc
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeAlias

import pytest
from hypothesis import HealthCheck, Phase, seed, settings

from prefixkey.errors import PrefixKeyError

#: Seconds one input may take (issue 14: a bad line costs that line, not the process).
TIME_BOUND: Final = 2.0
#: Trace the memory of every this-many-th input, and of every slow one.
TRACE_EVERY: Final = 16
TRACE_SLOWER_THAN: Final = 0.01
#: Examples per Hypothesis run: what a target may overrun its budget by.
HYPOTHESIS_RUN: Final = 10


def memory_bound(size: int) -> int:
    """Bytes one input may allocate at peak: 64 MiB, plus 64 bytes per input byte.

    The event decoder may take ~40 bytes per payload byte (DecodeLimits); the
    fuzz inputs are small, so the constant term dominates.
    """
    return 64 * 1024 * 1024 + 64 * size


def seconds() -> float:
    return float(os.environ.get("PREFIXKEY_FUZZ_SECONDS", "0.1"))


#: The default of PREFIXKEY_FUZZ_DIR: under the checkout's ignored build folder.
DEFAULT_DIR: Final = Path(__file__).resolve().parents[2] / "build" / "prefixkey-fuzz"


def out_dir() -> Path:
    path = Path(os.environ.get("PREFIXKEY_FUZZ_DIR") or DEFAULT_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _file_name(target: str) -> str:
    return target.replace("/", "_")


class NotJSON(Exception):
    """A parser's output is not strict JSON (NaN, Infinity): a consumer cannot read it."""


def strict_json(value: object) -> str:
    """``json.dumps`` without NaN or Infinity, or :class:`NotJSON`."""
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError as exc:
        raise NotJSON(str(exc)) from None


@dataclass
class Report:
    """One target's run, as the terminal summary shows it."""

    target: str
    seed: int
    inputs: int = 0
    typed_errors: int = 0
    failures: int = 0
    traced: int = 0
    peak_bytes: int = 0
    slowest: float = 0.0
    slowest_input: bytes = b""
    elapsed: float = 0.0
    findings: list[str] = field(default_factory=list)


#: Every target's report of this session, in run order.
REPORTS: list[Report] = []


class Fuzz:
    """One target's budget, seed and checks."""

    def __init__(self, target: str, check: Callable[[bytes], object]) -> None:
        self.target = target
        self.check = check
        base = int(os.environ.get("PREFIXKEY_FUZZ_SEED", "0"))
        self.seed = zlib.crc32(f"{base}:{target}".encode())
        self.rng = random.Random(self.seed)
        self.report = Report(target, self.seed)
        self._start = time.monotonic()
        self._end = self._start + seconds()
        replay = os.environ.get("PREFIXKEY_FUZZ_REPLAY")
        self.replay = Path(replay) if replay else None

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self._end

    def one(self, data: bytes) -> None:
        """Run the check on one input and judge the outcome."""
        report = self.report
        report.inputs += 1
        trace = report.inputs % TRACE_EVERY == 0
        outcome, elapsed = self._timed(data, trace)
        if not trace and elapsed > TRACE_SLOWER_THAN:
            self._timed(data, True)
        if elapsed > report.slowest:
            report.slowest, report.slowest_input = elapsed, data
        if isinstance(outcome, PrefixKeyError):
            report.typed_errors += 1
        elif isinstance(outcome, BaseException):
            self._finding(data, "".join(traceback.format_exception(outcome)))
        if elapsed > TIME_BOUND:
            self._finding(data, f"took {elapsed:.2f} s (bound {TIME_BOUND} s)")

    def _timed(self, data: bytes, trace: bool) -> tuple[BaseException | None, float]:
        if trace:
            tracemalloc.start()
        start = time.perf_counter()
        outcome: BaseException | None = None
        try:
            self.check(data)
        except Exception as exc:  # judged by one(): typed, or a finding
            outcome = exc
        finally:
            elapsed = time.perf_counter() - start
            if trace:
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                self.report.traced += 1
                self.report.peak_bytes = max(self.report.peak_bytes, peak)
                if peak > memory_bound(len(data)):
                    self._finding(data, f"allocated {peak} bytes at peak "
                                  f"(bound {memory_bound(len(data))})")
        return outcome, elapsed

    def _finding(self, data: bytes, what: str) -> None:
        report = self.report
        report.failures += 1
        digest = hashlib.sha256(data).hexdigest()[:12]
        path = out_dir() / "failures" / f"{_file_name(self.target)}-{digest}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        path.with_suffix(".txt").write_text(f"{self.target}\n{what}\n", encoding="utf-8")
        if len(report.findings) < 5:
            report.findings.append(f"{path}: {what.strip().splitlines()[-1]}")

    def run(self, inputs: Iterable[bytes]) -> None:
        """Feed inputs until the budget is spent (or, replaying, the one input)."""
        for data in inputs:
            if self.expired:
                break
            self.one(data)

    def replaying(self) -> bool:
        """True when a replay file is set and is this target's: it is run here, alone.

        Any exception propagates, traceback and all. Other targets skip.
        """
        if self.replay is None:
            return False
        if not self.replay.name.startswith(_file_name(self.target) + "-"):
            pytest.skip(f"replaying {self.replay.name}, not a {self.target} input")
        self.report.inputs += 1
        self.check(self.replay.read_bytes())
        return True

    def hypothesis(self, test: Callable[[], None]) -> None:
        """Run a ``@given`` test in runs of :data:`HYPOTHESIS_RUN` examples until expired.

        Hypothesis counts examples, not seconds; each run has its own seed,
        derived from this target's. ``test`` should return at once when the
        budget is spent (the rest of a run is then only generation).
        """
        run = settings(max_examples=HYPOTHESIS_RUN, database=None, deadline=None,
                       phases=[Phase.generate], suppress_health_check=list(HealthCheck))(test)
        number = 0
        while not self.expired:
            seed(self.seed + number)(run)()
            number += 1

    def finish(self) -> Report:
        """Record the report; fail the test if anything was found."""
        report = self.report
        report.elapsed = time.monotonic() - self._start
        REPORTS.append(report)
        assert not report.failures, (
            f"{self.target}: {report.failures} finding(s) in {report.inputs} inputs "
            f"(seed {self.seed}; replay with PREFIXKEY_FUZZ_REPLAY=<file>):\n"
            + "\n".join(report.findings))
        return report


def summary(terminal: pytest.TerminalReporter) -> None:
    """The slowest input per target, on the terminal and in ``report.json``."""
    if not REPORTS:
        return
    write = terminal.write_line
    terminal.section(f"fuzz: {len(REPORTS)} targets, {seconds():g} s each")
    write(f"{'target':<28} {'inputs':>7} {'typed':>7} {'found':>5} "
          f"{'peak MiB':>8} {'slowest s':>9}  slowest input")
    for r in REPORTS:
        shown = repr(r.slowest_input[:32]) + ("…" if len(r.slowest_input) > 32 else "")
        write(f"{r.target:<28} {r.inputs:>7} {r.typed_errors:>7} {r.failures:>5} "
              f"{r.peak_bytes / 2**20:>8.1f} {r.slowest:>9.4f}  {len(r.slowest_input)} B "
              f"{shown}")
    path = out_dir() / "report.json"
    path.write_text(json.dumps([
        {"target": r.target, "seed": r.seed, "inputs": r.inputs, "typed_errors": r.typed_errors,
         "failures": r.failures, "traced": r.traced,
         "peak_bytes": r.peak_bytes, "slowest_seconds": r.slowest,
         "slowest_input_hex": r.slowest_input.hex(), "elapsed": r.elapsed,
         "findings": r.findings}
        for r in REPORTS], indent=1) + "\n", encoding="utf-8")
    write(f"report: {path}")


# ----------------------------------------------------------------------------- seeds

FIXTURES: Final = Path(__file__).parent.parent / "fixtures" / "events"


def harvested_payloads() -> dict[str, list[bytes]]:
    """The payloads harvested from real vLLM wheels (tests/fixtures/events), by release."""
    by_version: dict[str, list[bytes]] = {}
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            by_version.setdefault(record["version"], []).append(
                bytes.fromhex(record["payload_hex"]))
    return by_version


# ----------------------------------------------------------------------------- mutations

#: Byte values that change meaning in msgpack (type heads) or JSON (structure).
_INTERESTING: Final = (
    0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC7, 0xCA,
    0xCB, 0xCF, 0xD3, 0xD4, 0xD9, 0xDC, 0xDD, 0xDE, 0xDF, 0xFF,
    *b'{}[]",:0-9eE.\\ ntf',
)
#: Heads announcing the largest lengths msgpack can express (array, map, str, bin, ext).
HUGE_HEADS: Final = (b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff",
                     b"\xc6\xff\xff\xff\xff", b"\xc9\xff\xff\xff\xff\x01",
                     b"\xdc\xff\xff", b"\xde\xff\xff")


def mutate_bytes(rng: random.Random, data: bytes, corpus: list[bytes]) -> bytes:
    """One to four byte-level mutations: flips, interesting bytes, cuts, repeats, splices."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        n = len(out)
        at = rng.randrange(n + 1)
        if op == 0 and n:
            out[min(at, n - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and n:
            out[min(at, n - 1)] = rng.choice(_INTERESTING)
        elif op == 2:
            out[at:at] = rng.randbytes(rng.randint(1, 8))
        elif op == 3:
            del out[at:at + rng.randint(1, 16)]
        elif op == 4:
            del out[at:]
        elif op == 5 and n:
            start = rng.randrange(n)
            chunk = out[start:start + rng.randint(1, 32)]
            out[at:at] = chunk * rng.randint(2, 64)
        elif op == 6:
            other = rng.choice(corpus)
            out = out[:at] + other[rng.randrange(len(other) + 1):]
        elif op == 7:
            out[at:at] = rng.choice(HUGE_HEADS)
        elif n:
            out[min(at, n - 1)] = rng.randrange(256)
    return bytes(out)


#: A decoded JSON or msgpack value: nested lists and dicts of scalars.
Tree: TypeAlias = Any


def pick_path(rng: random.Random, tree: Tree) -> list[Any]:
    """A random path (keys and indexes) to a node of a tree."""
    path: list[Any] = []
    node = tree
    while isinstance(node, (list, dict)) and node and rng.random() < 0.75:
        key = rng.randrange(len(node)) if isinstance(node, list) else rng.choice(list(node))
        path.append(key)
        node = node[key]
    return path


def node_at(tree: Tree, path: list[Any]) -> Tree:
    for key in path:
        tree = tree[key]
    return tree


def replace_at(tree: Tree, path: list[Any], value: Tree) -> Tree:
    """``tree`` with the node at ``path`` replaced (in place below the root)."""
    if not path:
        return value
    node_at(tree, path[:-1])[path[-1]] = value
    return tree


def delete_at(tree: Tree, path: list[Any]) -> Tree:
    """``tree`` without the node at ``path`` (the root stays)."""
    if path:
        del node_at(tree, path[:-1])[path[-1]]
    return tree


def batches(rng: random.Random, make: Callable[[random.Random], bytes]) -> Iterator[bytes]:
    """An endless stream of ``make(rng)``."""
    while True:
        yield make(rng)


# ----------------------------------------------------------------------------- msgpack

#: Stands for raw bytes spliced into a re-packed tree (packed, then replaced).
_SENTINEL: Final = "\x00fuzz-sentinel\x00"


def _msgpack_values(rng: random.Random) -> Tree:
    """A value of a type or size no field expects."""
    return rng.choice([
        None, True, False, 0, -1, 2**63 - 1, -(2**63), 2**64 - 1, 1.5, float("nan"),
        float("inf"), -0.0, "", "GPU", "x" * rng.randint(1, 300), "\u00fc\U0001f600", b"",
        b"\x00" * rng.choice((1, 16, 32, 1000)), [], {}, [None], [[1, 2], [3]], {"type": 1},
        {1: 2}, {"type": "BlockStored"}, {"type": "BlockRemoved", "block_hashes": []},
        ["BlockStored"], ["AllBlocksCleared"], list(range(rng.randint(0, 5000))),
        [{}] * rng.randint(1, 2000), [[]] * rng.randint(1, 2000),
    ])


def _raw(rng: random.Random) -> bytes:
    """Raw msgpack that packb will not write: deep nesting, huge or odd heads, ext types."""
    return rng.choice([
        b"\x91" * rng.randint(10, 5000) + b"\xc0",
        b"\x81\xa1k" * rng.randint(10, 3000) + b"\xc0",
        rng.choice(HUGE_HEADS),
        b"\xd4\x01\x00", b"\xc7\x00\x05", b"\xc1",
        b"\x82\xa4type\xabBlockStored\xa4type\xacBlockRemoved",  # a duplicate key
        b"\x81\x01\x02", b"\x81\xc4\x01k\x02",  # non-str keys
        b"\xa3\xff\xfe\xfd",  # a str that is not UTF-8
    ])


def mutate_tree(rng: random.Random, tree: Tree) -> tuple[Tree, bytes | None]:
    """One structural mutation of a decoded value; raw bytes to splice in, if any."""
    path = pick_path(rng, tree)
    op = rng.randrange(6)
    raw = None
    if op == 0:
        tree = replace_at(tree, path, _msgpack_values(rng))
    elif op == 1:
        tree = delete_at(tree, path)
    elif op == 2:
        node = node_at(tree, path)
        if isinstance(node, list) and node:
            node.extend(node[: rng.randint(1, len(node))] * rng.randint(1, 50))
        elif isinstance(node, dict):
            node[rng.choice(["type", "medium", "extra_keys", "zzz", "token_ids"])] = node.copy()
    elif op == 3:
        node = node_at(tree, path)
        swapped: Tree = (list(node.values()) if isinstance(node, dict)
                           else {str(i): v for i, v in enumerate(node)}
                           if isinstance(node, list) else [node])
        tree = replace_at(tree, path, swapped)
    else:
        raw = _raw(rng)
        tree = replace_at(tree, path, _SENTINEL)
    return tree, raw


def mutate_payload(rng: random.Random, payload: bytes, corpus: list[bytes]) -> bytes:
    """A msgpack payload mutated in its structure (re-packed) or its bytes."""
    import msgpack

    if rng.random() < 0.4:
        return mutate_bytes(rng, payload, corpus)
    try:
        tree = msgpack.unpackb(payload, raw=False, strict_map_key=False, use_list=True)
    except ValueError:  # not one msgpack value (an empty frame): bytes only
        return mutate_bytes(rng, payload, corpus)
    raw: bytes | None = None
    for _ in range(rng.randint(1, 3)):
        tree, spliced = mutate_tree(rng, tree)
        raw = spliced or raw
    packed: bytes = msgpack.packb(tree, use_bin_type=True)
    sentinel: bytes = msgpack.packb(_SENTINEL)
    if raw is not None:
        packed = packed.replace(sentinel, raw)
    return packed.replace(sentinel, b"\xc0")


# ----------------------------------------------------------------------------- JSON


def _json_values(rng: random.Random) -> Tree:
    """A JSON value of a type or size no field expects (within what jsonl.py bounds today)."""
    return rng.choice([
        None, True, False, 0, -1, 1, 2**63, 2**64, -(2**64), 10**300, 1.5, 1e308, -0.0,
        "", "0.31.0", "sha256", "x" * rng.randint(1, 3000), "\u00fc\ud800", [], {}, [None],
        [[1]], {"": 1}, list(range(rng.randint(0, 3000))), [1.5, True, "1"],
        [{"identifier": "a", "offset": 0, "length": 1}] * rng.randint(1, 300),
        {"name": "a", "path": "/p", "int_id": rng.choice([1, True, -1, 2**70, "1"])},
        {"dtype": rng.choice(["float16", "bfloat16", "x", ""]), "shape": [2, 2], "hex": "00"},
        {"dtype": "float32", "shape": [2**40, 2**40], "hex": ""},
        {"dtype": "float32", "shape": [1], "b64": "!!"},
        [rng.randint(0, 64) * 16 for _ in range(rng.randint(1, 50))],
    ])


#: Literal text past the JSON Lines limits (deep nesting, long ints, non-finite numbers).
HOSTILE_TEXT: Final = (b"[" * 100_000, b"1" * 5000, b"NaN", b"-Infinity")


def mutate_json(rng: random.Random, obj: Tree, corpus: list[bytes], *,
                hostile_rate: float = 0.02) -> bytes:
    """A JSON document mutated in its structure (re-dumped) or its bytes, as one line."""
    obj = json.loads(json.dumps(obj))  # a private copy
    for _ in range(rng.randint(1, 3)):
        path = pick_path(rng, obj)
        op = rng.randrange(4)
        if op == 0:
            obj = replace_at(obj, path, _json_values(rng))
        elif op == 1:
            obj = delete_at(obj, path)
        elif op == 2 and isinstance(obj, dict):
            obj[rng.choice(["id", "cache_slat", "group_block_sizes", "lookahead", "via",
                            "hash_calls", "num_prompt_tokens", "\u00fc"])] = _json_values(rng)
        else:  # one level deeper
            obj = replace_at(obj, path, [node_at(obj, path)])
    text = json.dumps(obj).encode()
    roll = rng.random()
    if roll < hostile_rate:
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(HOSTILE_TEXT) + text[at:]
    if roll < 0.3:
        return mutate_bytes(rng, text, corpus)
    if roll < 0.35 and isinstance(obj, dict) and obj:  # a duplicate key, as text
        key = json.dumps(rng.choice(list(obj)))
        return text[:-1] + f", {key}: {json.dumps(_json_values(rng))}}}".encode()
    return text


def reference_decode(decoder: Any, payload: bytes) -> Any:
    """A payload decoded by the decoder's reference path: every event field by field
    (``EventDecoder._event``), as the fast paths must be unobservable against."""
    from prefixkey.events import DecodedBatch, EventBatch

    warnings: list[str] = []
    ts, events, rank = decoder._batch(payload, warnings)
    decoded = tuple(decoder._event(i, raw, warnings) for i, raw in enumerate(events))
    return DecodedBatch(EventBatch(ts, decoded, rank), tuple(warnings))


def decode_outcome(decode: Callable[[Any, bytes], Any], decoder: Any,
                   payload: bytes) -> tuple[Any, ...]:
    """What ``decode(decoder, payload)`` gives, comparable across paths: the result, or the
    error's type, field, event index and message; and the ignored-field counts."""
    try:
        result = decode(decoder, payload)
    except PrefixKeyError as exc:
        return ("error", type(exc), getattr(exc, "field", None),
                getattr(exc, "event_index", None), str(exc), dict(decoder.ignored))
    return ("ok", result, dict(decoder.ignored))
