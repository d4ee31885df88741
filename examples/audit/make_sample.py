"""Build the audit sample (recording.jsonl, requests.jsonl) with prefixkey itself.

Two vLLM 0.31.0 replicas (sha256, block size 16, PYTHONHASHSEED unset) publish
KV events with 64-bit int hashes in the 0.31 wire layout; the request log
covers a full hit, a partial hit, an eviction, a cleared cache, a prefix never
stored, one stored on the other replica, a salt difference, a short prompt and
the last-block cap. Run from the repository root::

    python examples/audit/make_sample.py
    prefixkey audit examples/audit/recording.jsonl examples/audit/requests.jsonl
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefixkey import Hasher, Request, block_hash_to_int64, event_extra_keys
from prefixkey.events import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    encode_batch,
    recording_line,
    seq_frame,
)

VERSION, BS, T0 = "0.31.0", 16, 1_700_000_000.0
HERE = Path(__file__).parent
hasher = Hasher(block_size=BS, vllm_version=VERSION)


def tokens(start: int, n: int) -> list[int]:
    return list(range(start, start + n))


P1 = tokens(1000, 64)    # system prompt A, replica-a
P2 = tokens(2000, 48)    # evicted from replica-a
P4 = tokens(4000, 32)    # salted "tenant-1" on replica-b
P5 = tokens(5000, 32)    # replica-b, cleared later
NEVER = tokens(9000, 40)


def stored(toks: list[int], salt: str | None = None, first: int = 0
           ) -> tuple[BlockStored, list[int]]:
    """The BlockStored of a prompt's full blocks from block ``first`` on."""
    state = hasher.start(Request(toks, cache_salt=salt))
    keys = [block_hash_to_int64(k) for k in state.block_hashes]  # type: ignore[arg-type]
    extra = tuple(event_extra_keys(k, hasher.era) for k in state.extra_keys[first:])
    parent = keys[first - 1] if first else None
    return BlockStored(tuple(keys[first:]), parent, tuple(toks[first * BS : len(keys) * BS]),
                       BS, medium="GPU", extra_keys=extra, group_idx=0), keys


msgs: list[tuple[float, str, Any]] = []  # (time, replica, events)
ev1, _ = stored(P1)
ev2, keys2 = stored(P2)
ev4, _ = stored(P4, salt="tenant-1")
ev5, keys5 = stored(P5)
msgs += [(T0 + 1, "replica-a", [ev1]), (T0 + 2, "replica-a", [ev2]),
         (T0 + 3, "replica-b", [ev4]), (T0 + 4, "replica-b", [ev5]),
         (T0 + 40, "replica-a", [BlockRemoved(tuple(keys2[1:]), medium="GPU", group_idx=0)]),
         (T0 + 70, "replica-b", [AllBlocksCleared()])]

# (id, replica, arrival offset, tokens, salt, cached_tokens vLLM reported)
REQUESTS: list[tuple[str, str, float, list[int], str | None, int]] = [
    ("full-a-1", "replica-a", 10, P1 + tokens(1, 8), None, 64),
    ("full-b-1", "replica-b", 12, P5 + tokens(1, 10), None, 32),
    ("partial-a", "replica-a", 20, P1[:32] + tokens(7000, 40), None, 32),
    ("full-a-2", "replica-a", 25, P1 + tokens(50, 13), None, 64),
    ("cap-b", "replica-b", 30, P5, None, 16),
    ("full-b-2", "replica-b", 35, P5 + tokens(60, 3), None, 32),
    ("short-a", "replica-a", 38, tokens(1, 10), None, 0),
    ("evicted-a", "replica-a", 50, P2 + tokens(3, 5), None, 16),
    ("salt-b", "replica-b", 55, P4 + tokens(9, 9), "tenant-2", 0),
    ("never-b", "replica-b", 60, NEVER, None, 0),
    ("full-a-3", "replica-a", 65, P1 + tokens(80, 12), None, 64),
    ("cleared-b", "replica-b", 80, P5 + tokens(1, 10), None, 0),
    ("elsewhere-b", "replica-b", 90, P1 + tokens(11, 4), None, 0),
    ("full-a-4", "replica-a", 95, P1 + tokens(90, 12), None, 64),
]


def serve_requests() -> None:
    """After each request, its replica stores the blocks it did not hit (as vLLM does)."""
    for _, replica, dt, toks, salt, cached in REQUESTS:
        full = len(toks) // BS
        if cached // BS < full:
            event, _ = stored(toks, salt, first=cached // BS)
            msgs.append((T0 + dt + 0.5, replica, [event]))


def main() -> None:
    serve_requests()
    seq: dict[str, int] = {}
    with open(HERE / "recording.jsonl", "w") as out:
        for t, replica, events in sorted(msgs, key=lambda m: m[0]):
            n = seq[replica] = seq.get(replica, -1) + 1
            payload = encode_batch(EventBatch(t, tuple(events), 0), VERSION)
            out.write(recording_line([b"kv-events", seq_frame(n), payload],
                                     recv_time=t + 0.05, source=replica) + "\n")
    with open(HERE / "requests.jsonl", "w") as out:
        for rid, replica, dt, toks, salt, cached in REQUESTS:
            line: dict[str, Any] = {"id": rid, "vllm_version": VERSION, "block_size": BS,
                                    "token_ids": toks}
            if salt is not None:
                line["cache_salt"] = salt
            line.update(replica=replica, arrival_time=T0 + dt, cached_tokens=cached)
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
