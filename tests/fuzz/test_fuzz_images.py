"""Fuzz the image path: MMHasher.image over mutated fixture bytes, in each identifier era.

Seeds are the image fixtures of tests/multimodal/images (every format and mode
vLLM's loader meets), their bytes mutated. An input must give an identifier or
a PrefixKeyError (an undecodable image, an unreproducible identifier) within
the harness's time and memory bounds.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fuzzing import Fuzz, batches, mutate_bytes

from prefixkey.multimodal import IDENTIFIER_ERAS, MMHasher

pytestmark = pytest.mark.fuzz

IMAGES = Path(__file__).parent.parent / "multimodal" / "images"
CORPUS = [p.read_bytes() for p in sorted(IMAGES.iterdir())]
HASHERS = [MMHasher(model="m", vllm_version=era.since) for era in IDENTIFIER_ERAS]


def identify(data: bytes) -> None:
    """The first byte picks the era; the rest is the image."""
    if not data:
        return
    HASHERS[data[0] % len(HASHERS)].image(data[1:])


def test_mutated_images() -> None:
    fuzz = Fuzz("images/mutated", identify)
    if not fuzz.replaying():
        def make(rng: random.Random) -> bytes:
            return bytes([rng.randrange(256)]) + mutate_bytes(rng, rng.choice(CORPUS), CORPUS)

        fuzz.run(batches(fuzz.rng, make))
    fuzz.finish()
