"""PrefillBacklog: a gateway's queued prefill, less the work done on each replica's oldest."""

from __future__ import annotations

import math

import pytest

from prefixkey.errors import InvalidRequestError
from prefixkey.fleet import PrefillBacklog, ReplicaId

# Steps: ("sent", replica, tokens, at) -> ticket n (1, 2, ... in order);
# ("first", n, at); ("failed", n); then (replica, at, queued expected).
_CASES = [
    pytest.param([], [("a", 0.0, 0.0)], id="never sent to"),
    pytest.param([("sent", "a", 100.0, 0.0), ("sent", "a", 50.0, 0.0)],
                 [("a", 5.0, 150.0), ("b", 5.0, 0.0)],
                 id="no rate measured yet: counted whole"),
    # 1,000 tokens first-tokened 0.1 s after their send: 10,000 tokens/s
    pytest.param([("sent", "a", 1000.0, 0.0), ("first", 1, 0.1), ("sent", "a", 2000.0, 1.0)],
                 [("a", 1.0, 2000.0), ("a", 1.05, 1500.0), ("a", 1.5, 0.0), ("a", 0.5, 2000.0)],
                 id="the oldest's progress at the measured rate, never below 0"),
    pytest.param([("sent", "a", 1000.0, 0.0), ("first", 1, 0.1), ("sent", "a", 2000.0, 1.0),
                  ("sent", "a", 3000.0, 1.0)],
                 [("a", 1.1, 4000.0), ("a", 9.0, 3000.0)],
                 id="only the oldest progresses: the next ones wait whole"),
    # the second waits for the first: its prefill starts at the first's first token
    pytest.param([("sent", "a", 1000.0, 0.0), ("sent", "a", 1000.0, 0.0), ("first", 1, 0.1)],
                 [("a", 0.1, 1000.0), ("a", 0.15, 500.0)],
                 id="the next starts at the previous first token"),
    pytest.param([("sent", "a", 1000.0, 0.0), ("sent", "a", 1000.0, 0.0), ("first", 1, 0.1),
                  ("first", 2, 0.3), ("sent", "a", 4000.0, 1.0)],
                 # 2,000 tokens over 0.1 + 0.2 s: 6,667 tokens/s
                 [("a", 1.3, 2000.0)],
                 id="the rate is a ratio of sums"),
    pytest.param([("sent", "a", 1000.0, 0.0), ("failed", 1), ("sent", "a", 500.0, 1.0)],
                 [("a", 2.0, 500.0)],
                 id="a failure is not timed"),
    pytest.param([("sent", "a", 1000.0, 0.0), ("sent", "a", 700.0, 0.0), ("first", 2, 0.1),
                  ("sent", "a", 10.0, 0.2)],
                 [("a", 5.0, 1010.0)],
                 id="a first token out of order is not timed"),
    pytest.param([("sent", "a", 1000.0, 0.0), ("first", 1, 0.1), ("sent", "b", 800.0, 1.0),
                  ("sent", "a", 800.0, 1.0)],
                 [("b", 1.05, 800.0), ("a", 1.05, 300.0)],
                 id="each replica its own rate"),
]


@pytest.mark.parametrize(("steps", "reads"), _CASES)
def test_queued(steps: list[tuple[object, ...]],
                reads: list[tuple[str, float, float]]) -> None:
    backlog = PrefillBacklog()
    tickets: list[int] = []
    for step in steps:
        if step[0] == "sent":
            _, replica, tokens, at = step
            tickets.append(backlog.sent(str(replica), float(str(tokens)), float(str(at))))
        elif step[0] == "first":
            backlog.first_token(tickets[int(str(step[1])) - 1], float(str(step[2])))
        else:
            backlog.failed(tickets[int(str(step[1])) - 1])
    for replica, at, expected in reads:
        assert backlog.queued(replica, at) == pytest.approx(expected, abs=1e-9), (replica, at)
        # the one-pass read of the replicas with sends in flight agrees
        n, queued = backlog.busy(at).get(ReplicaId(replica), (0, 0.0))
        assert n == backlog.requests(replica)
        assert queued == pytest.approx(expected, abs=1e-9)


def test_the_rate_is_measured_per_replica() -> None:
    backlog = PrefillBacklog()
    assert backlog.rate("a") is None
    backlog.first_token(backlog.sent("a", 500.0, 2.0), 2.25)
    assert backlog.rate("a") == pytest.approx(2000.0)
    assert backlog.rate("b") is None
    backlog.first_token(12345, 3.0)  # a ticket never issued: nothing happens
    assert backlog.queued("a", 3.0) == 0.0


@pytest.mark.parametrize(("tokens", "at", "field"), [
    (-1.0, 0.0, "prefill_tokens"),
    (math.nan, 0.0, "prefill_tokens"),
    (True, 0.0, "prefill_tokens"),
    (10.0, math.inf, "now"),
    (10.0, "1", "now"),
])
def test_bad_values_are_typed_errors(tokens: object, at: object, field: str) -> None:
    with pytest.raises(InvalidRequestError, match=field):
        PrefillBacklog().sent("a", tokens, at)  # type: ignore[arg-type]
