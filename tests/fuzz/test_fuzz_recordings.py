"""Fuzz recordings of KV-event messages: parse_recording_line, split_recorded, decode_recording.

Each line records one message of a harvested payload (tests/fixtures/events)
or of a Hypothesis batch, as the publisher or the replay socket of its era
frames it, then is mutated: its JSON, its frames (count, topic, seq) or the
payload inside. Reading a line must give a message or a PrefixKeyError, and
``decode_recording`` (what ``events decode`` writes) a strict JSON record.
"""

from __future__ import annotations

import base64
import json
import random

import pytest
from fuzzing import (
    Fuzz,
    batches,
    harvested_payloads,
    mutate_bytes,
    mutate_json,
    mutate_payload,
    strict_json,
)
from hypothesis import given
from hypothesis import strategies as st

from prefixkey.events import (
    END_SEQ,
    WIRE_ERAS,
    EventBatch,
    EventDecoder,
    ReplayEnd,
    Via,
    decode_recording,
    encode_batch,
    parse_recording_line,
    recording_line,
    split_recorded,
)
from prefixkey.testing.strategies import event_batches

pytestmark = pytest.mark.fuzz

ERAS = [era.since for era in WIRE_ERAS]
PAYLOADS = harvested_payloads()
ALL = [p for payloads in PAYLOADS.values() for p in payloads]
DECODERS = {version: EventDecoder(version) for version in ERAS}
FRAMINGS: tuple[Via | None, ...] = (None, "pub", "replay")


def _frames(rng: random.Random, decoder: EventDecoder, payload: bytes) -> list[bytes]:
    """The frames of a message carrying ``payload``, as one of the era's sockets sends them."""
    seq = rng.choice([0, 1, 2**63, 2**64 - 1]).to_bytes(8, "big")
    if rng.random() < 0.1:
        seq, payload = END_SEQ, b""
    topic = rng.choice([b"", b"kv-events", b"\xff\xfe"])
    shape = rng.randrange(3)
    if shape == 0:
        return [topic, seq, payload]
    reply = [topic, seq, payload] if decoder.era.replay_carries_topic else [seq, payload]
    return [b"", *reply] if shape == 1 else reply


def recorded_line(rng: random.Random, version: str, payload: bytes) -> bytes:
    """A recording line of a message carrying ``payload``, often mutated."""
    frames = _frames(rng, DECODERS[version], payload)
    roll = rng.random()
    if roll < 0.3:  # a frame mutated, or one more or fewer
        i = rng.randrange(len(frames))
        frames[i] = (mutate_payload(rng, frames[i], ALL) if i == len(frames) - 1
                     else mutate_bytes(rng, frames[i], ALL))
    elif roll < 0.4:
        frames = frames[:-1] if rng.random() < 0.5 else [*frames, b""]
    via = rng.choice(FRAMINGS)
    line = recording_line(frames, recv_time=rng.choice([None, 1.7e9, 0]),
                          source=rng.choice([None, "replica-a"]), via=via).encode()
    if rng.random() < 0.5:
        obj = json.loads(line)
        return mutate_json(rng, obj, [base64.b64encode(p) for p in ALL])
    return line


def read_line(data: bytes) -> None:
    """One line read each way: by the parts (typed errors raise) and by decode_recording."""
    version = ERAS[data[-1] % len(ERAS)] if data else ERAS[-1]
    decoder = DECODERS[version]
    framing = FRAMINGS[len(data) % 3]
    for record in decode_recording([data], decoder, framing=framing):
        strict_json(record)
    split = split_recorded(parse_recording_line(data), decoder, framing=framing)
    if not isinstance(split, ReplayEnd):
        decoder.decode(split.payload)


def test_mutated_recordings() -> None:
    fuzz = Fuzz("recordings/mutated", read_line)
    if not fuzz.replaying():

        def make(rng: random.Random) -> bytes:
            version = rng.choice(ERAS)
            return recorded_line(rng, version, rng.choice(PAYLOADS[version]))

        fuzz.run(batches(fuzz.rng, make))
    fuzz.finish()


def test_structured_recordings() -> None:
    """Hypothesis batches of every era, recorded, then mutated."""
    fuzz = Fuzz("recordings/structured", read_line)
    if not fuzz.replaying():

        @given(st.sampled_from(ERAS).flatmap(
            lambda v: st.tuples(st.just(v), event_batches(vllm_version=v))),
            st.integers(0, 2**32))
        def feed(drawn: tuple[str, EventBatch], mutation: int) -> None:
            if not fuzz.expired:
                version, batch = drawn
                fuzz.one(recorded_line(random.Random(mutation), version,
                               encode_batch(batch, vllm_version=version)))

        fuzz.hypothesis(feed)
    fuzz.finish()
