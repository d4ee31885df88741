"""Soak: a healthy and a hostile replica on loopback, for PREFIXKEY_SOAK_SECONDS.

The scenario is tests/soak/soak_scenario.py. Over both subscribers this checks
what the library controls, whatever the machine's load: the healthy replica
loses nothing (every batch applied, no gap, no drop, its index entries exact),
each replica's queue stays within its bounds (``queue_size`` messages,
``queue_bytes`` bytes) at every sample, and each of the hostile replica's faults
is counted. No assertion is on time or on the process's memory: the resident
set is printed here and reported by benchmarks/bench_soak_memory.py.

Three hostile kinds per subscriber: ``all`` (garbage, seq jumps, invented ranks, huge
valid batches), ``media`` (new medium names) and ``flood`` (small valid messages as
fast as the socket takes them). ``.ci/run`` runs it as its own step (25 s per
subscriber for ``all``, 5 s for the others); a plain ``pytest`` run gives each 2 s
(PREFIXKEY_SOAK_SECONDS unset).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

import soak_scenario  # noqa: E402
from soak_scenario import (  # noqa: E402
    BIG_KEYS,
    BLOCK,
    FLOOD_MESSAGES,
    HOSTILE_FAULTS,
    MEDIA_NAMES,
    QUEUE_BYTES,
    QUEUE_SIZE,
)
from subscribers import AnySubscriber  # noqa: E402

from prefixkey.fleet.feed._driver import SLICE_KEYS  # noqa: E402

pytestmark = pytest.mark.soak

SECONDS = float(os.environ.get("PREFIXKEY_SOAK_SECONDS", "2"))
#: The budget of the one-kind runs (media, flood): what they must show comes in seconds.
ONE_KIND_SECONDS = 5.0


@pytest.mark.parametrize("kind", ["all", "media", "flood"])
def test_a_hostile_replica_costs_the_healthy_one_nothing(
    ctx: Any, make: Callable[..., AnySubscriber], kind: str
) -> None:
    """``all``: garbage, seq jumps, invented ranks and 100,000-key batches at once (its
    medium batches mostly find the queue full of garbage: dropped); ``media`` alone:
    thousands of new medium names; ``flood`` alone: small valid messages as fast as the
    socket takes them. The last two run at most ONE_KIND_SECONDS."""
    seconds = SECONDS if kind == "all" else min(SECONDS, ONE_KIND_SECONDS)
    run = soak_scenario.run(make, ctx, seconds, kind)
    good, bad = run.healthy, run.hostile
    print(f"\nsoak {kind} {seconds:.0f} s: healthy {run.published} batches; hostile sent "
          f"{run.hostile_sent}; largest queues {run.max_queued_bytes} bytes; rss "
          f"+{(run.rss_peak - run.rss_baseline) >> 20} MiB peak (not asserted: "
          f"benchmarks/bench_soak_memory.py); hostile counters {bad}")
    assert run.settled, f"healthy replica applied {good['batches']} of {run.published}: {good}"
    # The healthy replica lost nothing.
    assert good["batches"] == run.published and good["index_size"] == run.published
    for counter in ("dropped", "gaps", "lost_batches", "decode_errors", "restarts"):
        assert good[counter] == 0, (counter, good)
    assert run.probe == ("healthy", BLOCK)
    # The hostile replica's faults were seen and counted ...
    assert run.faults_seen, {c: bad[c] for c in (*HOSTILE_FAULTS, "batches", "dropped")}
    if kind == "flood":  # ... more messages than its queue holds
        assert bad["batches"] + bad["dropped"] >= FLOOD_MESSAGES, bad
    elif kind == "media":  # ... thousands of medium names applied, each counted as a key
        assert run.keys_applied["hostile"] >= MEDIA_NAMES, run.keys_applied
    else:
        # The hostile replica's 100,000-key batches were applied, never more than a slice
        # under one hold of the lock (one step of the loop): the healthy replica's batches
        # go in between, it never waits behind a whole hostile batch.
        assert run.keys_applied["hostile"] >= BIG_KEYS, run.keys_applied
    assert run.largest_hold["hostile"] <= SLICE_KEYS, run.largest_hold
    # ... and no queue ever held more than its bounds.
    for name in ("healthy", "hostile"):
        assert run.max_queued[name] <= QUEUE_SIZE, (name, run.max_queued)
        assert run.max_queued_bytes[name] <= QUEUE_BYTES, (name, run.max_queued_bytes)
