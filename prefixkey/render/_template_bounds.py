"""Bounds on a request's own chat template: render time and the sizes it builds.

With ``--trust-request-chat-template`` vLLM renders the template a request
carries, with Jinja's sandbox and nothing else: ``range(100000)`` nested runs
for minutes, ``'a' * 10**10`` allocates 10 GB (issue 23). The operator trusted
the template's author, not every request's size, so prefixkey renders a
request's template (never the model's or the server's) within two bounds,
**a deliberate divergence from vLLM** (which would hang or run out of memory
there, and answer nothing):

* **time**: :data:`REQUEST_TEMPLATE_SECONDS` of rendering. Jinja has no clock; a
  timer raises an exception in the rendering thread at the deadline (CPython's
  ``PyThreadState_SetAsyncExc``), which the template's Python code meets at its
  next bytecode, whatever loop it is in.
* **size**: :data:`REQUEST_TEMPLATE_MAX_CHARS` for the output and for any
  string, list or tuple the template builds with an operator (``*``, ``+``,
  ``~``, ``%``, ``**`` on ints by digits), a filter or a method call. The
  operands and int arguments are checked *before* the operation (a single C
  call such as ``'a' * 10**10`` never yields to the timer), a filter's or
  method's result after it (each one grows what it is given by a bounded
  factor, ``replace`` checked before).

Either bound is a :class:`TemplateLimitError`, which the renderer answers as
a typed ``RenderRequestError`` on ``chat_template``.
"""

from __future__ import annotations

import ctypes
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

import jinja2.compiler
import jinja2.filters
import jinja2.nodes
import jinja2.runtime
import jinja2.sandbox

__all__ = [
    "REQUEST_TEMPLATE_MAX_CHARS",
    "REQUEST_TEMPLATE_SECONDS",
    "BoundedCodeGenerator",
    "BoundedSandbox",
    "TemplateLimitError",
    "bound_filters",
    "bounded_join",
    "check_binop",
    "check_call",
    "render_bounded",
]

#: Seconds a request's template may render.
REQUEST_TEMPLATE_SECONDS: Final = 5.0
#: Characters (items, for lists) of the output and of anything a request's template builds.
REQUEST_TEMPLATE_MAX_CHARS: Final = 16 * 1024 * 1024
#: Bits of an int a request's template computes with ``**``: about Python's 4,300 digits,
#: past which the int could not be written anyway. (The bounded environment folds no
#: intercepted operator at compile time, so ``{{ 10 ** 5000 }}``, a compile error of the
#: plain one, is this bound's error instead; folding ``'a' * 10**10`` would take 10 GB.)
_MAX_INT_BITS: Final = 14_000
#: A width or precision of a format spec with this many digits would build past the bound.
_HUGE_WIDTH: Final = re.compile(r"\d{9,}")

_T = TypeVar("_T")


class TemplateLimitError(Exception):
    """A request's template went past one of its bounds (the message says which)."""


class _Deadline(BaseException):
    """Raised asynchronously in the rendering thread (a BaseException: no ``except
    Exception`` of the template's callees swallows it)."""


#: Every bound's message ends so: it is ours, not vLLM's.
_OURS: Final = "(prefixkey's bound on a request's template: vLLM has none)"


def _too_big(n: int, what: str) -> TemplateLimitError:
    return TemplateLimitError(f"the template would build {what} of {n:,} items, over "
                              f"{REQUEST_TEMPLATE_MAX_CHARS:,} {_OURS}")


def _sized(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def check_binop(operator: str, left: Any, right: Any) -> None:
    """Refuse ``left <operator> right`` before it runs if it would build past the bound."""
    if operator == "*":
        for seq, n in ((left, right), (right, left)):
            size = _sized(seq)
            if size is not None and isinstance(n, int) and size * n > REQUEST_TEMPLATE_MAX_CHARS:
                raise _too_big(size * n, f"a {type(seq).__name__}")
    elif operator == "+":
        a, b = _sized(left), _sized(right)
        if a is not None and b is not None and a + b > REQUEST_TEMPLATE_MAX_CHARS:
            raise _too_big(a + b, f"a {type(left).__name__}")
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1 \
                and right * abs(left).bit_length() > _MAX_INT_BITS:
            raise TemplateLimitError(
                f"the template would compute an int of about {right * left.bit_length():,} "
                f"bits, over {_MAX_INT_BITS:,} {_OURS}")
    elif operator == "%" and isinstance(left, str):
        _check_format(left)
        args = right if isinstance(right, tuple) else (right,)
        _check_ints(args)


def _check_format(spec: str) -> None:
    if _HUGE_WIDTH.search(spec):
        raise TemplateLimitError("the template formats with a width or precision of 9 digits "
                                 f"or more, past {REQUEST_TEMPLATE_MAX_CHARS:,} characters "
                                 f"{_OURS}")


def _check_ints(args: Iterable[Any]) -> None:
    for arg in args:
        if isinstance(arg, int) and arg > REQUEST_TEMPLATE_MAX_CHARS:
            raise _too_big(arg, "a width or count")


def _checked_result(value: _T) -> _T:
    size = _sized(value)
    if size is not None and size > REQUEST_TEMPLATE_MAX_CHARS:
        raise _too_big(size, f"a {type(value).__name__}")
    return value


def check_call(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse a call from the template before it runs if its arguments build past the bound."""
    _check_ints(args)
    _check_ints(kwargs.values())
    target = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format
    owner = getattr(target, "__self__", None)
    name = getattr(target, "__name__", "")
    if isinstance(owner, str):
        if name in ("format", "format_map"):
            _check_format(owner)
        elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) \
                and isinstance(args[1], str):
            grows = owner.count(args[0]) * (len(args[1]) - len(args[0])) if args[0] else \
                (len(owner) + 1) * len(args[1])
            if len(owner) + grows > REQUEST_TEMPLATE_MAX_CHARS:
                raise _too_big(len(owner) + grows, "a str")
        elif name == "join" and args and isinstance(args[0], list | tuple):
            total = sum(len(x) for x in args[0] if isinstance(x, str)) + \
                len(owner) * max(len(args[0]) - 1, 0)
            if total > REQUEST_TEMPLATE_MAX_CHARS:
                raise _too_big(total, "a str")


def bound_filters(filters: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Every filter wrapped: int arguments checked before, the result after."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        def bounded(*args: Any, **kwargs: Any) -> Any:
            # The value filtered may be big (the bound holds it): check the other arguments.
            _check_ints(a for a in args[1:] if not isinstance(a, jinja2.runtime.Context))
            _check_ints(kwargs.values())
            if fn is _REPLACE and len(args) >= 4:  # (eval_ctx, s, old, new)
                check_call(str(args[1]).replace, (str(args[2]), str(args[3])), {})
            return _checked_result(fn(*args, **kwargs))
        for marker in ("jinja_pass_arg",):
            if hasattr(fn, marker):
                setattr(bounded, marker, getattr(fn, marker))
        return bounded

    return {name: wrap(fn) for name, fn in filters.items()}


_REPLACE: Final = jinja2.filters.do_replace


class BoundedCodeGenerator(jinja2.compiler.CodeGenerator):
    """Jinja's code generator, with ``~`` checked like ``+`` (Jinja joins in C otherwise)."""

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: jinja2.compiler.Frame) -> None:
        self.write("environment.bounded_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


def bounded_join(parts: tuple[Any, ...]) -> str:
    """``str_join`` (what ``~`` compiles to), refused past the bound before joining."""
    strs = [p if isinstance(p, str) else str(p) for p in parts]
    total = sum(map(len, strs))
    if total > REQUEST_TEMPLATE_MAX_CHARS:
        raise _too_big(total, "a str")
    return "".join(strs)


def render_bounded(chunks: Callable[[], Iterable[str]]) -> str:
    """The chunks ``chunks()`` generates, joined, within the time and output bounds."""
    thread = threading.get_ident()
    lock = threading.Lock()
    state = {"armed": True, "fired": False}

    def fire() -> None:
        with lock:
            if state["armed"]:
                state["fired"] = True
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread),
                                                           ctypes.py_object(_Deadline))

    timer = threading.Timer(REQUEST_TEMPLATE_SECONDS, fire)
    timer.daemon = True
    try:
        try:
            timer.start()
            out: list[str] = []
            size = 0
            for chunk in chunks():
                size += len(chunk)
                if size > REQUEST_TEMPLATE_MAX_CHARS:
                    raise TemplateLimitError(f"the template's output passed "
                                             f"{REQUEST_TEMPLATE_MAX_CHARS:,} characters {_OURS}")
                out.append(chunk)
            return "".join(out)
        finally:
            timer.cancel()
            with lock:
                state["armed"] = False
                if state["fired"]:  # not delivered yet: take it back
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), None)
    except _Deadline:
        raise TemplateLimitError(f"the template rendered for more than "
                                 f"{REQUEST_TEMPLATE_SECONDS:g} s {_OURS}") from None


class BoundedSandbox(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """The bounds above on a sandbox (mixed into the chat-template environment)."""

    code_generator_class = BoundedCodeGenerator
    intercepted_binops = frozenset({"*", "+", "**", "%"})

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any,
                   right: Any) -> Any:
        check_binop(operator, left, right)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any,
             *args: Any, **kwargs: Any) -> Any:
        check_call(__obj, args, kwargs)
        return _checked_result(super().call(__context, __obj, *args, **kwargs))

    bounded_join = staticmethod(bounded_join)
