"""Traces for ``prefixkey simulate``, read one line at a time (bounded memory).

Three line shapes, told apart per line:

* **Mooncake** (kvcache-ai/Mooncake ``FAST25-release/traces``):
  ``{"timestamp": ms, "input_length": n, "output_length": m, "hash_ids": [...]}``.
  Each hash id stands for one 512-token block of content (``--trace-block``);
  the simulator makes that block's tokens from its id (equal ids, equal
  tokens), so equal leading ids give equal vLLM keys and the prompt is cut
  to ``input_length`` tokens.
* **Plain requests**: ``{"token_ids": [...]}`` (or ``prompt_token_ids``),
  with optional ``timestamp`` (ms; default: the previous line's) and
  ``output_length`` (default 1).
* **``prefixkey audit``'s request logs** (docs/audit.md): request-format
  lines (``token_ids``) with ``arrival_time`` in unix seconds, replayed
  from the first line's ``arrival_time`` (the log's ``replica`` and
  ``cached_tokens``, and the scheme fields, are not used: the simulator
  routes and hashes itself; ``output_length`` defaults to 1 as above).

Arrival times must not go back; a line that is not one of these shapes is a
:class:`~prefixkey.errors.InvalidRequestError` naming its line number, and so
is a trace mixing the two clocks (``timestamp`` ms from the trace's start,
``arrival_time`` unix seconds).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..core._checks import int_refusal
from ..errors import InvalidRequestError

__all__ = ["TraceRequest", "read_trace"]

#: Distinct token ids per trace block id: a block's tokens are
#: ``id * stride + seed_offset + i``, so no two ids share a token.
_STRIDE = 1 << 12


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: when it arrives, its prompt, its output length."""

    line: int
    arrival: float  # seconds
    token_ids: list[int]
    output_length: int


def _int(line: int, row: dict[str, object], name: str, default: int | None = None) -> int:
    value = row.get(name, default)
    refusal = int_refusal(value, least=0)
    if refusal is not None:
        raise InvalidRequestError(name, f"line {line}: {refusal}")
    return value  # type: ignore[return-value]  # int_refusal checked it


def _mooncake_tokens(line: int, row: dict[str, object], block: int, seed: int) -> list[int]:
    ids = row["hash_ids"]
    if not isinstance(ids, list) or not all(type(h) is int and h >= 0 for h in ids):
        raise InvalidRequestError("hash_ids", f"line {line}: must be a list of ints >= 0")
    length = _int(line, row, "input_length")
    if length > len(ids) * block:
        raise InvalidRequestError(
            "input_length", f"line {line}: {length} tokens but {len(ids)} blocks of {block}")
    offset = seed % _STRIDE
    tokens: list[int] = []
    for h in ids[:-(-length // block) if length else 0]:
        start = h * _STRIDE * block + offset
        tokens += range(start, start + block)
    del tokens[length:]
    return tokens


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
        value)


def read_trace(lines: Iterable[str | bytes], *, trace_block: int = 512,
               seed: int = 0, limit: int | None = None) -> Iterator[TraceRequest]:
    """The requests of a trace, in arrival order, one line at a time."""
    last = 0.0
    count = 0
    clock: str | None = None  # "timestamp" or "arrival_time": the first line's
    origin = 0.0  # the first arrival_time: an audit log replays from it
    for number, raw in enumerate(lines, 1):
        if limit is not None and count >= limit:
            return
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError as exc:
            raise InvalidRequestError("trace", f"line {number}: not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise InvalidRequestError("trace", f"line {number}: not a JSON object")
        if "hash_ids" in row:
            tokens = _mooncake_tokens(number, row, trace_block, seed)
        else:
            ids = row.get("token_ids", row.get("prompt_token_ids"))
            if not isinstance(ids, list) or not all(type(t) is int and t >= 0 for t in ids):
                raise InvalidRequestError(
                    "token_ids", f"line {number}: needs hash_ids or token_ids (ints >= 0)")
            tokens = list(ids)
        if not tokens:
            raise InvalidRequestError("token_ids", f"line {number}: an empty prompt")
        name = "arrival_time" if "arrival_time" in row else "timestamp"
        stamp = row.get(name)
        if stamp is not None:
            if clock is None:
                clock = name
                origin = float(stamp) if name == "arrival_time" and _number(stamp) else 0.0
            elif clock != name:
                raise InvalidRequestError(name, f"line {number}: the trace's first time was "
                                          f"a {clock}; one trace keeps one clock")
        if stamp is None:
            arrival = last
        elif not _number(stamp):
            unit = "unix seconds" if name == "arrival_time" else "ms"
            raise InvalidRequestError(name, f"line {number}: must be a number ({unit})")
        elif name == "arrival_time":
            arrival = float(stamp) - origin
        else:
            arrival = float(stamp) / 1000
        if arrival < last:
            unit = "" if name == "arrival_time" else " ms"
            raise InvalidRequestError(
                name, f"line {number}: {stamp}{unit} goes back in time (arrival order)")
        last = arrival
        count += 1
        yield TraceRequest(number, arrival, tokens, _int(number, row, "output_length", 1))
