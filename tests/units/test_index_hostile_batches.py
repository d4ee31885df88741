"""Hand-built and hostile batches, on every backend alike (issue 23, items 12a and 15).

A bad op is a typed error naming it, and nothing of its batch is applied (the
in-memory index used to apply the ops before it; Redis applied none). Medium
names are bounded (65,536, as Redis' 2-byte ids) in memory too, and compared
with ASCII letters upper-cased only (``"ß"`` is not ``"SS"``). Large batches cut
in slices leave the index as the whole batch does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from index_events import batch, held, stored
from redis_servers import shared_client

from prefixkey import Hasher
from prefixkey.errors import InvalidRequestError
from prefixkey.events import CLEARED, REMOVED, STORED, DecodedOps
from prefixkey.fleet import PrefixIndex, PrefixIndexBackend, RedisPrefixIndex, ReplicaScheme
from prefixkey.fleet.index._ops import MAX_MEDIA, check_ops, medium_name, slices

Factory = Callable[[], PrefixIndexBackend]
SCHEME = ReplicaScheme(Hasher(block_size=16, python_hash_seed="0"))


@pytest.fixture(params=["memory", "redis"])
def make(request: pytest.FixtureRequest) -> Iterator[Factory]:
    if request.param == "memory":
        yield PrefixIndex
        return
    client = shared_client()
    yield lambda: RedisPrefixIndex(client)
    client.flushdb()
    client.close()


BAD_OPS: list[tuple[Any, str]] = [
    ("not a tuple", "ops[1]"),
    ((STORED, (1, 2), None), "ops[1]"),
    ((7, (1,), None, None), "ops[1].kind"),
    ((STORED, (1,), 5, None), "ops[1].medium"),
    ((STORED, (1,), None, "0"), "ops[1].group_idx"),
    ((STORED, (1,), None, -1), "ops[1].group_idx"),
    ((STORED, [1, 2], None, None), "ops[1].block_hashes"),
    ((STORED, (1, "x"), None, None), "ops[1].block_hashes[1]"),
    ((STORED, (1, True), None, None), "ops[1].block_hashes[1]"),
    ((REMOVED, (1.5,), None, None), "ops[1].block_hashes[0]"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_OPS, ids=[f for _, f in BAD_OPS])
def test_a_bad_op_refuses_the_whole_batch(make: Factory, bad: Any, field: str) -> None:
    index = make()
    index.register("a", SCHEME)
    good = (STORED, (11, 12), None, None)
    with pytest.raises(InvalidRequestError) as err:
        index.apply_ops("a", DecodedOps(1.0, None, [good, bad]))
    assert err.value.field == field
    assert len(index) == 0 and held(index) == set()


def test_medium_names_fold_ascii_letters_only(make: Factory) -> None:
    assert medium_name("cpu") == "CPU" and medium_name("ß") == "ß"
    assert medium_name("gpuß") == "GPUß"
    index = make()
    index.register("a", SCHEME)
    index.apply("a", batch(stored(1, medium="ß"), stored(2, medium="SS"), stored(3, medium="cpu")))
    assert {(k, m) for _, k, m in held(index)} == {
        (1, frozenset({"ß"})), (2, frozenset({"SS"})), (3, frozenset({"CPU"}))}


def test_memory_index_bounds_medium_names_as_redis_does() -> None:
    index = PrefixIndex()
    index.register("a", SCHEME)
    names = [f"m{i}" for i in range(MAX_MEDIA - 3)]  # GPU, CPU, STORAGE are preassigned
    for start in range(0, len(names), 4096):
        index.apply_ops("a", DecodedOps(1.0, None, [(STORED, (i,), name, None) for i, name in
                                                    enumerate(names[start:start + 4096], start)]))
    assert len(index.medium_bits()) == MAX_MEDIA
    before = len(index)
    with pytest.raises(InvalidRequestError, match="65,536 medium names") as err:
        index.apply_ops("a", DecodedOps(2.0, None, [(STORED, (10**9,), "GPU", None),
                                                    (STORED, (10**9 + 1,), "one more", None)]))
    assert err.value.field == "medium"
    assert len(index) == before  # nothing of the refused batch
    index.apply_ops("a", DecodedOps(3.0, None, [(STORED, (10**9,), "m5", None)]))  # known: fine
    assert len(index) == before + 1


def _chain(n: int, start: int = 0) -> tuple[int, ...]:
    return tuple(range(start, start + n))


def test_slices_apply_as_the_whole_batch(make: Factory) -> None:
    ops = [(STORED, _chain(50), None, None), (STORED, _chain(7, 100), "CPU", 1),
           (REMOVED, _chain(20, 10), None, None), (CLEARED, (), None, None),
           (STORED, _chain(33, 200), None, None), (REMOVED, _chain(5, 200), None, None)]
    decoded = DecodedOps(1.0, None, ops)
    pieces = slices(decoded, 8)
    assert len(pieces) > 5 and all(sum(len(o[1]) + 1 for o in p.ops) <= 8 for p in pieces)
    whole, cut = make(), PrefixIndex()
    for index in (whole, cut):
        index.register("a", SCHEME)
    whole.apply_ops("a", decoded)
    for piece in pieces:
        cut.apply_ops("a", piece)
    assert list(cut.entries("a")) == list(whole.entries("a"))  # the same order too
    assert slices(decoded, 10_000) == [decoded]


def test_slices_check_the_whole_batch_first() -> None:
    bad: Any = (STORED, ("x",), None, 0)
    decoded = DecodedOps(1.0, None, [(STORED, _chain(50), None, None), bad])
    with pytest.raises(InvalidRequestError):
        slices(decoded, 8)
    assert check_ops(((STORED, (1, b"k"), "GPU", 0),)) == ((STORED, (1, b"k"), "GPU", 0),)
