"""Fuzz the event decoder of every wire era (issue 14, item 4).

Seeds are the payloads harvested from real vLLM wheels (tests/fixtures/events),
mutated in their bytes and in their msgpack structure, and typed batches from
:func:`prefixkey.testing.strategies.event_batches` encoded as each era
publishes them, then mutated the same way. Every payload must decode, or fail
with a PrefixKeyError, within the time and memory bounds of ``fuzzing``, and
a decoded batch must have a JSON form (``events decode`` writes it).
"""

from __future__ import annotations

import random

import pytest
from fuzzing import Fuzz, batches, harvested_payloads, mutate_payload, strict_json
from hypothesis import given
from hypothesis import strategies as st

from prefixkey.events import WIRE_ERAS, EventBatch, EventDecoder, batch_to_json, encode_batch
from prefixkey.testing.strategies import event_batches

pytestmark = pytest.mark.fuzz

ERAS = [era.since for era in WIRE_ERAS]
PAYLOADS = harvested_payloads()
ALL = [p for payloads in PAYLOADS.values() for p in payloads]


def test_every_era_has_harvested_seeds() -> None:
    assert sorted(PAYLOADS) == sorted(ERAS)


def _decode(decoder: EventDecoder, data: bytes) -> None:
    strict_json(batch_to_json(decoder.decode(data).batch))


@pytest.mark.parametrize("version", ERAS)
def test_mutated_harvested_payloads(version: str) -> None:
    decoder = EventDecoder(version)
    fuzz = Fuzz(f"events/{version}/mutated", lambda data: _decode(decoder, data))
    if not fuzz.replaying():
        own = PAYLOADS[version]
        # Mostly this era's payloads; the others' are valid msgpack of a neighbour's shape.
        fuzz.run(batches(fuzz.rng, lambda rng: mutate_payload(
            rng, rng.choice(own) if rng.random() < 0.8 else rng.choice(ALL), ALL)))
    fuzz.finish()


@pytest.mark.parametrize("version", ERAS)
def test_structured_payloads(version: str) -> None:
    """Hypothesis batches of the era, encoded, each decoded as is and mutated."""
    decoder = EventDecoder(version)
    fuzz = Fuzz(f"events/{version}/structured", lambda data: _decode(decoder, data))
    if not fuzz.replaying():

        # The mutation's seed is drawn whole: a Random drawing as it is used would
        # draw less when the budget runs out, which Hypothesis takes for flakiness.
        @given(event_batches(vllm_version=version, max_events=6), st.integers(0, 2**32))
        def feed(batch: EventBatch, mutation: int) -> None:
            if fuzz.expired:
                return
            payload = encode_batch(batch, vllm_version=version)
            fuzz.one(payload)
            fuzz.one(mutate_payload(random.Random(mutation), payload, ALL))

        fuzz.hypothesis(feed)
    fuzz.finish()
