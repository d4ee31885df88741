"""The safe JSON Lines reader: hostile lines decoded within bounds, with typed errors.

Every reader of the package (requests, recordings, render bodies, render servers'
answers) takes its lines through here. :class:`JsonLimits` bounds what one line may
cost (its bytes, nesting, integer digits; and, for requests, the group sizes,
multimodal items and lookahead the request format checks); :func:`bounded_lines`
reads a stream so that an overlong line costs at most ``max_line_bytes`` of memory
and the next line is still read; :func:`parse_json_line` decodes one line.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from .errors import JSONLimitError, MalformedJSONError

__all__ = ["JSON_LIMITS", "JsonLimits", "bounded_lines", "dump_line", "parse_json_line"]


@dataclass(frozen=True, slots=True)
class JsonLimits:
    """What one JSON Lines line may cost; each bound refused with a typed error.

    The defaults (:data:`JSON_LIMITS`, docs/request-format.md "Limits") admit
    every request vLLM could serve and a recording of the largest payload the
    event decoder takes; override one with ``dataclasses.replace`` or the
    CLI's ``--max-line-bytes``.
    """

    #: Bytes of one line, its newline not counted (characters, for text lines).
    #: A recording line of a 32 MiB payload (``DecodeLimits``) is ~43 MiB of base64.
    max_line_bytes: int = 64 * 1024 * 1024
    #: Arrays and objects nested in one another (a request needs 3: mm_items).
    max_depth: int = 32
    #: Digits of one integer literal. CPython's own conversion limit (4300,
    #: ``sys.get_int_max_str_digits()``) applies in C at no cost when it is
    #: the tighter one; a lower bound here is checked per integer, which
    #: roughly triples the parse time. Token ids are bounded by this only
    #: (vLLM's engine core hashes ids of 2**64 and past).
    max_int_digits: int = 4300
    #: Entries of ``group_block_sizes`` (each costs a pass over the block keys).
    max_group_block_sizes: int = 64
    #: Entries of ``mm_items``.
    max_mm_items: int = 4096
    #: ``lookahead`` (each block's key carries that many token ids).
    max_lookahead: int = 64


#: The defaults every reader and command uses unless told otherwise.
JSON_LIMITS: Final = JsonLimits()

# Read past an overlong line in pieces of this size, keeping none of them.
_SKIP_CHUNK: Final = 1024 * 1024

# Lines of text or bytes; other items (typed entries beside lines) pass through untouched.
_Line = TypeVar("_Line")


def bounded_lines(lines: Iterable[_Line], limits: JsonLimits = JSON_LIMITS) -> Iterator[_Line]:
    """The lines of ``lines``, each at most ``max_line_bytes`` + 1 long.

    A stream (anything with ``readline``) is read in bounded pieces: of an
    overlong line only its first ``max_line_bytes + 1`` bytes are kept (so
    :func:`parse_json_line` refuses it by its length) and the rest is read up
    to its newline and dropped, so the next line is the next one yielded.
    Other iterables hold their lines already and pass through.
    """
    readline = getattr(lines, "readline", None)
    if readline is None:
        yield from lines
        return
    cap = limits.max_line_bytes + 1
    while line := readline(cap):
        yield line
        if len(line) == cap and line[-1:] not in (b"\n", "\n"):
            while (rest := readline(_SKIP_CHUNK)) and rest[-1:] not in (b"\n", "\n"):
                pass


def parse_json_line(raw: bytes | str, limits: JsonLimits = JSON_LIMITS, *,
                    warnings: list[str] | None = None) -> Any:
    """One JSON Lines line (UTF-8 bytes or text) decoded.

    Raises :class:`MalformedJSONError` if it is not JSON (``NaN`` and
    ``Infinity`` are not, nor a number too large for a double), or
    :class:`JSONLimitError` if it exceeds ``limits`` (``field`` names the
    top-level field where it can be known). A duplicate object key is a
    warning (the last value is used, as everywhere in JSON), appended to
    ``warnings`` when given.
    """
    size = len(raw) - (raw[-1:] in (b"\n", "\n"))
    if size > limits.max_line_bytes:
        raise JSONLimitError("max_line_bytes",
                             f"line longer than {limits.max_line_bytes} bytes")
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise MalformedJSONError(f"not UTF-8: byte {exc.start} is invalid") from None
    duplicates: list[str] = []
    objects = 0

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal objects
        objects += 1
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    duplicates.append(key)
                seen.add(key)
        return obj

    digits = min(limits.max_int_digits, _C_INT_DIGITS)
    try:
        value = json.loads(
            text, object_pairs_hook=pairs_hook, parse_constant=_refuse_constant,
            parse_float=_finite_float,
            # CPython checks its own digit limit in C; a tighter one costs a call per int.
            parse_int=_digits_checker(digits) if digits < _C_INT_DIGITS else None,
        )
    except json.JSONDecodeError as exc:
        raise MalformedJSONError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except _Refused as exc:
        raise _refusal(exc.limit, exc.message, text, digits) from None
    except RecursionError:
        raise JSONLimitError("max_depth",
                             f"nesting deeper than {limits.max_depth} levels") from None
    except ValueError:  # CPython's own digit limit, met in C
        raise _refusal("max_int_digits", _too_many_digits(digits), text, digits) from None
    # Depth cannot exceed the number of containers: the objects counted, and at most one
    # array per "[" (which C counts quickly), so most lines need no walk.
    if (isinstance(value, (list, dict))
            and text.count("[") + objects > limits.max_depth
            and (where := _too_deep(value, limits.max_depth)) is not None):
        raise JSONLimitError("max_depth", f"nesting deeper than {limits.max_depth} levels",
                             field=where[0], position=where[1])
    if warnings is not None:
        warnings.extend(f"duplicate key {k!r}: the last value is used" for k in duplicates)
    return value


# CPython's digit limit for int(str); 0 (none) or absent (before 3.10.7) mean unbounded.
_C_INT_DIGITS: Final = getattr(sys, "get_int_max_str_digits", lambda: 0)() or sys.maxsize


class _Refused(Exception):
    """A number refused inside the C parser; placed on its field once the parser is out."""

    def __init__(self, limit: str | None, message: str) -> None:
        self.limit = limit
        self.message = message


def _refuse_constant(name: str) -> Any:
    raise _Refused(None, f"invalid JSON: {name} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _Refused(None, f"invalid JSON: {literal[:24]} is too large for a double")
    return value


def _too_many_digits(digits: int) -> str:
    return f"an integer of more than {digits} digits"


def _digits_checker(digits: int) -> Callable[[str], int]:
    def parse_int(literal: str) -> int:
        if len(literal) - literal.startswith("-") > digits:
            raise _Refused("max_int_digits", _too_many_digits(digits))
        return int(literal)
    return parse_int


_BAD: Final = object()


def _refusal(limit: str | None, message: str, text: str, digits: int) -> MalformedJSONError:
    """The error for a refused number, on the top-level field (and index) where the first
    one lies.

    Only on the error path: the line is parsed again with every refused number
    read as a marker, then searched for it.
    """
    field = position = None
    try:
        value = json.loads(
            text, parse_constant=lambda _: _BAD,
            parse_float=lambda s: _BAD if not math.isfinite(float(s)) else 0.0,
            parse_int=lambda s: _BAD if len(s) - s.startswith("-") > digits else 0,
        )
    except (ValueError, RecursionError):
        pass
    else:
        field, position = _find(value, lambda node, _: node is _BAD) or (None, None)
    if limit is None:
        return MalformedJSONError(message, field=field, position=position)
    return JSONLimitError(limit, message, field=field, position=position)


def _too_deep(value: Any, max_depth: int) -> tuple[str | None, int | None] | None:
    return _find(value, lambda node, depth: depth > max_depth and type(node) in (list, dict))


def _find(value: Any, hit: Any) -> tuple[str | None, int | None] | None:
    """Where the first container or refused number (in document order) that
    ``hit(node, depth)`` lies: its top-level field (None for an array line) and
    its index in that field's array, if it lies in one; None if there is none."""
    stack: list[tuple[Any, int, str | None, int | None]] = [(value, 1, None, None)]
    while stack:
        node, depth, field, position = stack.pop()
        if hit(node, depth):
            return field, position
        children = node.items() if type(node) is dict else enumerate(node) if type(
            node) is list else ()
        for key, child in reversed([c for c in children if type(c[1]) in (list, dict)
                                    or c[1] is _BAD]):
            if depth == 1:
                stack.append((child, 2, key if type(node) is dict else None, None))
            else:
                stack.append((child, depth + 1, field,
                              key if depth == 2 and type(node) is list else position))
    return None


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _unicode(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_unicode(v) for v in value]
    if isinstance(value, dict):
        return {_unicode(k): _unicode(v) for k, v in value.items()}
    return value


def dump_line(record: dict[str, Any]) -> str:
    """One output record as a JSON line any strict reader takes (ASCII, no newline).

    A string the input echoes may hold a lone surrogate (``"\\ud800"`` is legal in
    Python's JSON, not in strict readers: it is no Unicode). Such a record is written
    with each lone surrogate as U+FFFD, and says so in its ``warnings`` (or, for an
    error record, ``error.warnings``), so a consumer sees why the echo differs.
    """
    text = json.dumps(record)
    if "\\ud" not in text and "\\uD" not in text:
        return text
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
        return text  # only well-formed pairs (astral characters, escaped)
    except UnicodeEncodeError:
        pass
    fixed = _unicode(record)
    note = "a string of this line held a lone surrogate (not Unicode): written as U+FFFD"
    holder = fixed.get("error") if isinstance(fixed.get("error"), dict) else fixed
    warnings = holder.get("warnings")
    holder["warnings"] = [*warnings, note] if isinstance(warnings, list) else [note]
    return json.dumps(fixed)
