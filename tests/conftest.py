"""Shared pytest configuration: Hypothesis profiles, the ``bounded``, ``ctx``, ``make`` fixtures.

``ci`` (selected when the ``CI`` environment variable is set) runs more
examples, never derandomized; ``dev`` is the quicker default.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from bounded import run_bounded
from hypothesis import HealthCheck, settings
from subscribers import KINDS, AnySubscriber, make_subscriber

# The replay table's helpers assert for the modules that use it: let pytest explain them.
pytest.register_assert_rewrite("render_cases")

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=False,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def bounded() -> Callable[..., dict[str, Any]]:
    """Runs Python code in a fresh interpreter whose address space is limited.

    ``bounded(code, address_space=…, stdin="")`` returns the JSON object the
    code prints last; the code may call ``peak_rss()``. A child that would
    allocate past the limit gets a MemoryError there instead of exhausting
    the machine; one that hangs fails the test after ``timeout`` seconds.
    """
    return run_bounded


@pytest.fixture
def ctx() -> Iterator[Any]:
    """A ZMQ context for loopback publishers and subscribers (skips without pyzmq)."""
    zmq = pytest.importorskip(
        "zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")
    context = zmq.Context()
    yield context
    context.destroy(linger=0)  # never hangs on a socket a failed test left open


@pytest.fixture(params=KINDS)
def make(request: pytest.FixtureRequest) -> Callable[..., AnySubscriber]:
    """The threaded Subscriber, or the AsyncSubscriber (on a loop in a thread): a
    constructor with Subscriber's signature (tests/subscribers.py)."""
    pytest.importorskip(
        "zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")
    return make_subscriber(request.param)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The fuzz suite's table (tests/fuzz/fuzzing.py), when fuzz targets ran."""
    fuzzing = sys.modules.get("fuzzing")
    if fuzzing is not None:
        fuzzing.summary(terminalreporter)
