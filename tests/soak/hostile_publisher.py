"""A vLLM publisher misbehaving every way issue 13 lists, in a process of its own.

Run by tests/soak/test_soak.py, so that its own send buffers do not count in
the subscriber's memory. It binds a PUB socket and a ROUTER replay socket that
takes requests and never answers, prints ``{"endpoint", "replay_endpoint"}``
as a JSON line, starts misbehaving when stdin gives a line, and stops when
stdin closes, printing ``{"sent": n}``. Each round: a flood of large payloads
(garbage after a valid head), a gap, a seq of 2**62+5, invented
data-parallel ranks and a never-used msgpack byte.
"""

from __future__ import annotations

import json
import sys
import threading

import zmq

from prefixkey.events import EventBatch, encode_batch

V = "0.31.0"
HUGE = 2 * 1024 * 1024


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

    seq = 0
    empty = encode_batch(EventBatch(0.0, ()), V)
    huge = empty[:-1] + b"\x00" * HUGE
    while not stop.is_set():
        for _ in range(4):
            send(seq, huge)
            seq += 1
        seq += 3  # a gap: the replay never answers
        send(seq, empty)
        send(2**62 + 5, empty)
        for rank in range(20):
            seq += 1
            send(seq, encode_batch(EventBatch(3.0, (), 1000 + rank + seq), V))
        seq += 1
        send(seq, b"\xc1garbage")
        stop.wait(0.02)
    print(json.dumps({"sent": sent}), flush=True)
    pub.close(0)
    dead.close(0)
    ctx.term()


if __name__ == "__main__":
    main()
