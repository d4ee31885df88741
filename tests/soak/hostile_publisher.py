"""A vLLM publisher misbehaving every way issue 13 lists, in a process of its own.

Run by tests/soak/test_soak.py, so that its own send buffers do not count in
the subscriber's memory. It binds a PUB socket and a ROUTER replay socket that
takes requests and never answers, prints ``{"endpoint", "replay_endpoint"}``
as a JSON line, starts misbehaving when stdin gives a line, and stops when
stdin closes, printing ``{"sent": n}``. Each round: a flood of large payloads
(garbage after a valid head), a gap, a seq of 2**62+5, invented
data-parallel ranks and a never-used msgpack byte; and issue 23's kinds: a
valid batch of 100,000 keys (applied under the shared lock, in slices), a
batch of 500 new medium names (up to 20,000 in all), and a flood of small
valid messages as fast as the socket takes them.

``python hostile_publisher.py KIND`` does one kind only (``garbage``, ``huge``,
``media``, ``flood``; default ``all``: all but the flood): benchmarks/bench_subscriber_isolation.py
measures the healthy replica's latency under each.
"""

from __future__ import annotations

import json
import sys
import threading

import zmq

from prefixkey.events import BlockStored, EventBatch, encode_batch

V = "0.31.0"
HUGE = 2 * 1024 * 1024
#: Keys of the valid huge batch (the same each round: refreshed, the index does not grow).
BIG_KEYS = 100_000
#: New medium names per round, and in all.
MEDIA_PER_ROUND, MEDIA_IN_ALL = 500, 20_000
KINDS = ("garbage", "huge", "media", "flood")


def stored(keys: range | list[int], medium: str | None = None) -> BlockStored:
    return BlockStored(tuple(keys), None, (), 16, medium=medium)


def main() -> None:
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.setsockopt(zmq.SNDHWM, 64)
    dead = ctx.socket(zmq.ROUTER)
    dead.setsockopt(zmq.LINGER, 0)
    endpoints = {
        "endpoint": f"tcp://127.0.0.1:{pub.bind_to_random_port('tcp://127.0.0.1')}",
        "replay_endpoint": f"tcp://127.0.0.1:{dead.bind_to_random_port('tcp://127.0.0.1')}",
    }
    print(json.dumps(endpoints), flush=True)
    sys.stdin.readline()
    stop = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    sent = 0

    def send(seq: int, payload: bytes) -> None:
        nonlocal sent
        try:
            pub.send_multipart([b"", seq.to_bytes(8, "big"), payload], zmq.NOBLOCK)
            sent += 1
        except zmq.Again:  # the subscriber is not keeping up: PUB drops
            pass

    # "all" is every kind but the flood, which would drown the others in its own queue.
    kinds = KINDS[:3] if len(sys.argv) < 2 or sys.argv[1] == "all" else (sys.argv[1],)
    seq = 0
    empty = encode_batch(EventBatch(0.0, ()), V)
    huge = empty[:-1] + b"\x00" * HUGE
    big = encode_batch(EventBatch(4.0, (stored(range(1 << 40, (1 << 40) + BIG_KEYS)),)), V)
    small = encode_batch(EventBatch(5.0, (stored([7]),)), V)
    media_sent = 0
    while not stop.is_set():
        if "huge" in kinds:
            seq += 1
            send(seq, big)
        if "garbage" in kinds:
            for _ in range(4):
                seq += 1
                send(seq, huge)
            seq += 3  # a gap: the replay never answers
            send(seq, empty)
            send(2**62 + 5, empty)
            for rank in range(20):
                seq += 1
                send(seq, encode_batch(EventBatch(3.0, (), 1000 + rank + seq), V))
            seq += 1
            send(seq, b"\xc1garbage")
        if "media" in kinds:
            names = range(media_sent % MEDIA_IN_ALL, media_sent % MEDIA_IN_ALL + MEDIA_PER_ROUND)
            media_sent += MEDIA_PER_ROUND
            seq += 1
            send(seq, encode_batch(EventBatch(6.0, tuple(
                stored([(2 << 40) + m], f"tier-{m}") for m in names)), V))
        if "flood" in kinds:
            for _ in range(2000):
                seq += 1
                send(seq, small)
            if kinds == ("flood",):
                continue  # as fast as the socket takes them
        stop.wait(0.02)
    print(json.dumps({"sent": sent}), flush=True)
    pub.close(0)
    dead.close(0)
    ctx.term()


if __name__ == "__main__":
    main()
