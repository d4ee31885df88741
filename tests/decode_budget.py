"""The event decoder's costliest payloads, built and decoded in a bounded child.

:data:`DECODE_CHILD` is code for :func:`bounded.run_bounded`: it reads
``[shape, size, max_payload, reference]`` on stdin, builds a payload of one of
:data:`SHAPES` of about ``size`` bytes itself (the parent never holds it),
decodes it with ``EventDecoder("0.31.0")`` (or, with ``reference``, with
``msgpack.unpackb`` alone) and prints what happened, its CPU seconds and its
peak RSS as one JSON line. tests/units/test_decode_budget.py checks the
outcomes and the memory bound; benchmarks/bench_decode_budget.py times them
against msgpack's unpack of a vLLM-shaped payload of the same size.
"""

from __future__ import annotations

SHAPES = ("empty maps", "one-entry maps", "one-element arrays",
          "negative fixints in open arrays", "vLLM-shaped events", "long token_ids",
          "long block_hashes", "long extra keys")

DECODE_CHILD = r"""
import json, struct, time
import msgpack
from prefixkey.events import DecodeLimits, EventDecoder

shape, size, max_payload, reference = json.load(sys.stdin)
head = b"\x92\xcb" + struct.pack(">d", 1.0)           # [ts, events]

def flood(unit, closed):
    # Arrays of `unit`, as long as max_array_len allows, up to `size` bytes.
    per, left, chunks = 4 * 1024**2 - 1, size - len(head) - 5, []
    while left > 5 + len(unit):
        n = min(per, (left - 5) // len(unit))
        # An open array announces one element more than it has: none completes.
        chunks.append(b"\xdd" + struct.pack(">I", n + (not closed)) + unit * n)
        left -= len(chunks[-1])
    if not closed:
        return head + b"".join(chunks)
    return head + b"\xdd" + struct.pack(">I", len(chunks)) + b"".join(chunks)

def long_field(name):
    # BlockStored events whose `name` holds 4 Mi 1-byte ints (in one array per
    # block for extra_keys): the validation's cost, not msgpack's.
    event = {"type": "BlockStored", "block_hashes": [1], "parent_block_hash": None,
             "token_ids": [1] * 16, "block_size": 16, "lora_id": None, "medium": "GPU",
             "lora_name": None}
    event.pop(name, None)
    head_ = msgpack.packb(event)
    ints = b"\xdd" + struct.pack(">I", 4 * 1024**2 - 1) + b"\x01" * (4 * 1024**2 - 1)
    value = b"\x91" + ints if name == "extra_keys" else ints
    one = bytes([head_[0] + 1]) + head_[1:] + msgpack.packb(name) + value
    count = (size - 32) // len(one)
    return head + b"\xdd" + struct.pack(">I", count) + one * count

def vllm_shaped():
    # BlockStored events as vLLM 0.31 publishes them, 16 blocks of 16 tokens each.
    event = {"type": "BlockStored", "block_hashes": [2**63 + i for i in range(16)],
             "parent_block_hash": None, "token_ids": [1000 + i for i in range(256)],
             "block_size": 16, "lora_id": None, "medium": "GPU", "lora_name": None,
             "group_idx": 0}
    one = len(msgpack.packb(event))
    return msgpack.packb([1.0, [event] * ((size - 16) // one), 0])

payload = {
    "empty maps": lambda: flood(b"\x80", True),
    "one-entry maps": lambda: flood(b"\x81\xa0\xc0", True),
    "one-element arrays": lambda: flood(b"\x91\xc0", True),
    "negative fixints in open arrays": lambda: flood(b"\xe0", False),
    "vLLM-shaped events": vllm_shaped,
    "long token_ids": lambda: long_field("token_ids"),
    "long block_hashes": lambda: long_field("block_hashes"),
    "long extra keys": lambda: long_field("extra_keys"),
}[shape]()
decoder = EventDecoder("0.31.0", limits=DecodeLimits(max_payload_bytes=max_payload))
start = time.process_time()
try:
    if reference:  # msgpack's own unpack of the same bytes, no limits
        outcome = {"events": len(msgpack.unpackb(payload)[1])}
    else:
        outcome = {"events": len(decoder.decode_batch(payload).events)}
except Exception as exc:
    outcome = {"error": type(exc).__name__, "message": str(exc)}
outcome["cpu_s"] = time.process_time() - start
outcome["size"] = len(payload)
outcome["peak_rss"] = peak_rss()
print(json.dumps(outcome))
"""

