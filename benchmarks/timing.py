"""The timing loop and test image the multimodal benchmarks share (bench_mm_chat.py,
bench_vision.py): best-of-rounds per call, interleaved because the machine is shared."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["best", "interleaved", "png"]


def png(w: int, h: int) -> bytes:
    """A w x h RGB PNG of gradients (the same bytes on every run)."""
    from PIL import Image

    grad = Image.linear_gradient("L").resize((w, h))
    buf = io.BytesIO()
    Image.merge("RGB", (grad, grad.transpose(Image.Transpose.FLIP_LEFT_RIGHT), grad)).save(
        buf, "PNG")
    return buf.getvalue()


def best(fn: Callable[[], Any], rounds: int, n: int) -> float:
    """The best, over ``rounds``, of the mean seconds per call of ``n`` calls."""
    fastest = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        fastest = min(fastest, (time.perf_counter() - start) / n)
    return fastest


def interleaved(fns: Mapping[str, Callable[[], Any]], rounds: int, n: int,
                passes: int = 2) -> dict[str, float]:
    """:func:`best` of each function, the functions taken in turn ``passes`` times (a
    shared machine's load then weighs on each alike); the best per function."""
    times = dict.fromkeys(fns, float("inf"))
    for _ in range(passes):
        for name, fn in fns.items():
            times[name] = min(times[name], best(fn, rounds, n))
    return times
