"""The decoder's fast path (compiled layouts) against its reference path, and ingest vs apply.

The layouts are tested without the msgspec path, which takes vLLM's own
payloads first when installed; ``ingest`` is tested on both.

:mod:`prefixkey.events._layouts` decodes an event of a known layout without
the field-by-field reference path, and ``PrefixIndex.ingest`` applies a
payload without building event objects. Both must be unobservable: on the
harvested payloads of every era and on mutations of them (as the fuzz
targets make them), the fast path gives the same batch, warnings, ignored
counts and typed errors (type, field, event index, message) as the reference
path, and ``ingest`` leaves the index in the same state as ``apply`` of the
decoded batch (or, for a payload that fails, raises the same error and
applies nothing).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from fuzzing import decode_outcome, harvested_payloads, mutate_payload, reference_decode

from prefixkey import Hasher
from prefixkey.errors import InvalidRequestError, PrefixKeyError
from prefixkey.events import WIRE_ERAS, EventDecoder
from prefixkey.fleet import Ingested, PrefixIndex, ReplicaScheme

ERAS = [era.since for era in WIRE_ERAS]
PAYLOADS = harvested_payloads()
ALL = [p for payloads in PAYLOADS.values() for p in payloads]
#: Mutated payloads per era, besides the harvested ones.
MUTATIONS = 400


def _pure(version: str) -> EventDecoder:
    """A decoder without the msgspec path (tests/fuzz/test_decode_msgspec.py tests that)."""
    decoder = EventDecoder(version)
    decoder._fast = None
    return decoder


def _inputs(version: str) -> list[bytes]:
    rng = random.Random(f"fast-path/{version}")
    own = PAYLOADS[version]
    mutated = [mutate_payload(rng, rng.choice(own) if rng.random() < 0.8 else rng.choice(ALL),
                              ALL) for _ in range(MUTATIONS)]
    return [*own, *mutated]


@pytest.mark.parametrize("version", ERAS)
def test_the_fast_path_decodes_as_the_reference_path(version: str) -> None:
    # One long-lived pair too, so the layout caches fill up and overflow as in a subscriber.
    fast_long, slow_long = _pure(version), _pure(version)
    fast_seen = 0
    for payload in _inputs(version):
        fast, slow = _pure(version), _pure(version)
        got = decode_outcome(EventDecoder.decode, fast, payload)
        assert got == decode_outcome(reference_decode, slow, payload), payload
        assert (decode_outcome(EventDecoder.decode, fast_long, payload)
                == decode_outcome(reference_decode, slow_long, payload)), payload
        fast_seen += got[0] == "ok"
    assert fast_seen >= len(PAYLOADS[version])  # the harvested payloads all decode
    layouts = fast_long._layouts
    assert layouts._map_layouts or layouts._array_layouts  # the fast path was taken


def _state(index: PrefixIndex) -> tuple[Any, ...]:
    return (index.stats(), {rid: list(index.entries(rid)) for rid in index.replicas()})


@pytest.mark.parametrize("c_path", [False, True], ids=["pure", "msgspec"])
@pytest.mark.parametrize("version", ERAS)
def test_ingest_applies_as_apply_of_the_decoded_batch(version: str, c_path: bool) -> None:
    make = EventDecoder if c_path else _pure
    hasher = Hasher(block_size=16, vllm_version=version, python_hash_seed="0",
                    engine_python="3.12")
    publishes = "int" if hasher.era.hash_type == "int" else "bytes"
    for publish in {"int", publishes}:
        scheme = ReplicaScheme(hasher, publishes=publish)  # type: ignore[arg-type]
        applied, ingested, asked = (PrefixIndex(max_entries=64) for _ in range(3))
        for index in (applied, ingested, asked):
            index.register("r", scheme)
        decoder, other, third = (make(version) for _ in range(3))
        for payload in _inputs(version):
            try:
                batch = decoder.decode(payload)
            except PrefixKeyError as exc:
                for index, dec in ((ingested, other), (asked, third)):
                    with pytest.raises(type(exc)) as info:
                        index.ingest("r", dec, payload, batch=index is asked)
                    assert str(info.value) == str(exc)
            else:
                try:  # a batch the index refuses (a negative group_idx): refused alike
                    applied.apply("r", batch.batch)
                except InvalidRequestError as exc:
                    for index, dec in ((ingested, other), (asked, third)):
                        with pytest.raises(InvalidRequestError) as refused:
                            index.ingest("r", dec, payload, batch=index is asked)
                        assert str(refused.value) == str(exc)
                else:
                    rank, events = batch.batch.data_parallel_rank, len(batch.batch.events)
                    assert ingested.ingest("r", other, payload) == Ingested(
                        batch.warnings, rank, events, None)
                    # Asked for, the batch is the decoded one.
                    assert asked.ingest("r", third, payload, batch=True) == Ingested(
                        batch.warnings, rank, events, batch.batch)
            assert _state(ingested) == _state(applied) == _state(asked)
        assert applied.stats()["batches"] > 0
