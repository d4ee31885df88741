"""The audit's request log: JSON Lines lines or typed :class:`LoggedRequest`s, as jobs.

A line is a request in the JSON Lines request format plus the optional
:data:`AUDIT_FIELDS`; a replica's scheme overrides (``--replica``,
:func:`parse_replica_option`) apply to the requests it served. A bad line
becomes a :class:`~prefixkey.analysis.RequestAudit` with its error, never a
dropped line.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..core import HashJob
from ..core._checks import check_int
from ..errors import InvalidRequestError, PrefixKeyError
from ..jsonl import JsonLimits, parse_json_line, parse_request
from ._audit_results import RequestAudit
from ._drift import DriftConfig

__all__ = ["AUDIT_FIELDS", "LoggedRequest", "parse_replica_option"]

#: The request-log fields the audit adds to the request format.
AUDIT_FIELDS: Final = ("replica", "arrival_time", "cached_tokens")


def parse_replica_option(spec: str, *, strict: bool = True) -> tuple[str, DriftConfig]:
    """``NAME=VERSION[:algo=..,seed=..,block_size=..]`` -> (name, scheme overrides).

    ``strict=False`` maps a release newer than any known one to the newest era.
    """
    name, eq, config = spec.partition("=")
    if not eq or not name or not config:
        raise InvalidRequestError("replica", f"{spec!r}: expected NAME=VERSION[:key=value,...]")
    return name, DriftConfig.parse(config, strict=strict)



@dataclass(slots=True)
class _LogEntry:
    line: int
    audit: RequestAudit
    job: HashJob | None
    effective_time: float | None


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request of a log, typed: the job its replica hashed and what it reported.

    The typed form of a request-log line (docs/audit.md): ``replica`` is the
    recording's ``source``, ``arrival_time`` unix seconds, ``cached_tokens``
    the hit the replica reported.
    """

    job: HashJob
    id: Any = None
    replica: str | None = None
    arrival_time: float | None = None
    cached_tokens: int | None = None


def _check_log_fields(replica: Any, arrival: Any, cached: Any) -> None:
    if replica is not None and not isinstance(replica, str):
        raise InvalidRequestError("replica", "must be a string (the recording's source)")
    if arrival is not None and (type(arrival) not in (int, float) or not math.isfinite(arrival)):
        raise InvalidRequestError("arrival_time", "must be a number (unix seconds)")
    check_int("cached_tokens", cached, least=0, optional=True)


def _typed_entry(logged: LoggedRequest, replicas: Mapping[str, DriftConfig],
                 strict: bool) -> LoggedRequest:
    """A typed log entry with its replica's scheme overrides applied."""
    _check_log_fields(logged.replica, logged.arrival_time, logged.cached_tokens)
    config = replicas.get(logged.replica) if logged.replica is not None else None
    if config is None:
        return logged
    hasher = logged.job.hasher.replace(**config.overrides(), strict=strict)
    return dataclasses.replace(logged, job=dataclasses.replace(logged.job, hasher=hasher))


def _json_entry(obj: dict[str, Any], replicas: Mapping[str, DriftConfig],
                strict: bool, limits: JsonLimits) -> LoggedRequest:
    """A request-log line's object as a typed entry (the replica's overrides applied)."""
    replica, arrival, cached = (obj.get(k) for k in AUDIT_FIELDS)
    _check_log_fields(replica, arrival, cached)
    fields = {k: v for k, v in obj.items() if k not in AUDIT_FIELDS}
    if replica is not None and replica in replicas:
        fields.update(replicas[replica].overrides())
    job = parse_request(fields, strict=strict, api_checks=False, limits=limits)
    return LoggedRequest(job, obj.get("id"), replica, arrival, cached)


def _parse_log_line(number: int, raw: bytes | str | LoggedRequest,
                    replicas: Mapping[str, DriftConfig], strict: bool,
                    limits: JsonLimits) -> _LogEntry:
    row = RequestAudit(number, None, None, None)
    try:
        if isinstance(raw, LoggedRequest):
            row.id = raw.id
            logged = _typed_entry(raw, replicas, strict)
        else:
            obj = parse_json_line(raw, limits)
            if not isinstance(obj, dict):
                raise InvalidRequestError("<line>", "must be a JSON object")
            row.id = obj.get("id")
            logged = _json_entry(obj, replicas, strict, limits)
    except PrefixKeyError as exc:
        row.outcome = "error"
        row.error = {"type": type(exc).__name__, "message": str(exc), "field": exc.field}
        return _LogEntry(number, row, None, None)
    row.replica, row.reported_hit_tokens = logged.replica, logged.cached_tokens
    row.arrival_time = None if logged.arrival_time is None else float(logged.arrival_time)
    return _LogEntry(number, row, logged.job, row.arrival_time)
