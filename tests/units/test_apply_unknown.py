"""A batch given up after a write timed out is not an error count (issue 23, item 15).

After a 40 s SIGSTOP of Redis, a batch counted in ``apply_errors`` had in fact been
applied: its script ran when the server resumed, after the client had timed out
and the subscriber had given up. A timeout once sent is an unknown outcome:
counted in ``apply_unknown`` (the replica's next batch re-syncs it either way); a
refused connection, or a timeout while connecting, is a batch not applied.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_feed import feed, message

from prefixkey.errors import PrefixKeyError
from prefixkey.fleet import IndexUnavailableError, PrefixIndex
from prefixkey.fleet.feed._driver import FeedDriver
from prefixkey.fleet.feed._fair_lock import FairLock


class _Down(PrefixIndex):
    """An index whose applies fail as a Redis one does while paused or refused."""

    def __init__(self, maybe_applied: bool) -> None:
        super().__init__()
        self.maybe_applied = maybe_applied

    def apply_ops(self, replica: Any, decoded: Any) -> None:
        err = IndexUnavailableError("did not answer")
        err.maybe_applied = self.maybe_applied
        raise err


@pytest.mark.parametrize(("maybe_applied", "counter"),
                         [(True, "apply_unknown"), (False, "apply_errors")])
def test_a_timed_out_apply_given_up_is_unknown(maybe_applied: bool, counter: str) -> None:
    f = feed()
    driver = FeedDriver(_Down(maybe_applied), FairLock(), None, retry_seconds=0.0,
                        backoff=lambda delay: False)
    accepted = f.accept(message(0), 0.0)
    assert accepted is not None and not driver.apply(f, accepted)
    other = "apply_errors" if counter == "apply_unknown" else "apply_unknown"
    assert (f.counters[counter], f.counters[other]) == (1, 0)


@pytest.mark.parametrize(("message", "maybe_applied"), [
    ("Timeout reading from socket", True),
    ("Timeout connecting to server", False),
])
def test_redis_timeouts_say_whether_the_write_may_have_run(message: str,
                                                           maybe_applied: bool) -> None:
    redis = pytest.importorskip("redis", reason="needs redis-py: pip install 'prefixkey[test]'")
    from prefixkey.fleet.index._redis import RedisPrefixIndex

    index = RedisPrefixIndex.__new__(RedisPrefixIndex)  # _call needs only the namespace
    index.namespace = "t"

    def fail() -> None:
        raise redis.exceptions.TimeoutError(message)

    with pytest.raises(IndexUnavailableError) as err:
        index._call(fail)
    assert err.value.maybe_applied is maybe_applied

    def refused() -> None:
        raise redis.exceptions.ConnectionError("Connection refused")

    with pytest.raises(PrefixKeyError) as err2:
        index._call(refused)
    assert isinstance(err2.value, IndexUnavailableError) and not err2.value.maybe_applied
