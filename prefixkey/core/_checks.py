"""The bounded-number rule, once: an int (or a finite number) of at least some bound.

Every option, size and count of the package is checked here, so each refusal reads
the same (``must be an int >= 1, got 0``) and a bool never passes for an int. The
``*_refusal`` functions give the message (None when the value is fine) to callers
whose error type is their own; ``check_*`` raise
:class:`~prefixkey.errors.InvalidRequestError` naming the field.

>>> check_int("block_size", 16)
16
>>> int_refusal(True), int_refusal(None, optional=True), int_refusal(-1, least=0)
('must be an int >= 1, got True', None, 'must be an int >= 0, got -1')
>>> number_refusal(float("nan")), number_refusal(0.0, strict=True)
('must be a finite number >= 0, got nan', 'must be a finite number > 0, got 0.0')
"""

from __future__ import annotations

import math
from typing import Final, Literal, overload

from ..errors import InvalidRequestError

__all__ = ["check_int", "check_number", "int_refusal", "number_refusal", "shown"]


#: How much of a refused value a message shows (hostile input may be megabytes long).
_SHOWN_CHARS: Final = 60


def shown(value: object) -> str:
    """``repr(value)``, bounded: a long value is cut, a huge int named by its bit length
    (CPython refuses to print ints over 4300 digits)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"a {value.bit_length()}-bit int"
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}… ({len(text)} chars)"


def int_refusal(value: object, *, least: int = 1, optional: bool = False) -> str | None:
    """Why ``value`` is not an int >= ``least`` (None, also for None when ``optional``).

    Only ``int`` itself passes: a bool or an int subclass is refused (as keys would be).
    """
    if (type(value) is int and value >= least) or (optional and value is None):
        return None
    return f"must be an int >= {least}{' or None' if optional else ''}, got {shown(value)}"


@overload
def check_int(field: str, value: object, *, least: int = 1,
              optional: Literal[False] = False) -> int: ...
@overload
def check_int(field: str, value: object, *, least: int = 1,
              optional: Literal[True]) -> int | None: ...
def check_int(field: str, value: object, *, least: int = 1,
              optional: bool = False) -> int | None:
    """``value`` if it is an int >= ``least`` (or None, when ``optional``); else
    :class:`~prefixkey.errors.InvalidRequestError` naming ``field``."""
    message = int_refusal(value, least=least, optional=optional)
    if message is not None:
        raise InvalidRequestError(field, message)
    return value  # type: ignore[return-value]  # int_refusal checked it


def number_refusal(value: object, *, least: float = 0, strict: bool = False) -> str | None:
    """Why ``value`` is not a finite int or float >= ``least`` (> with ``strict``), or None."""
    if (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and (value > least if strict else value >= least)):
        return None
    return f"must be a finite number {'>' if strict else '>='} {least:g}, got {shown(value)}"


def check_number(field: str, value: object, *, least: float = 0,
                 strict: bool = False) -> float:
    """``value`` as a float if it is a finite number >= ``least`` (> with ``strict``);
    else :class:`~prefixkey.errors.InvalidRequestError` naming ``field``."""
    message = number_refusal(value, least=least, strict=strict)
    if message is not None:
        raise InvalidRequestError(field, message)
    return float(value)  # type: ignore[arg-type]  # number_refusal checked it
