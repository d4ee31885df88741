"""The Router's fast paths give what the plain ones do: bulk event ints, remembered candidates."""

from __future__ import annotations

import hashlib

import pytest

from prefixkey import Hasher, InvalidRequestError, block_hash_to_int64
from prefixkey.core._keys import digests_to_int64
from prefixkey.events import BlockStored, EventBatch
from prefixkey.fleet import GroupSpec, PrefixIndex, ReplicaId, ReplicaScheme, Router

H = Hasher(block_size=16, python_hash_seed="0")
TOKENS = list(range(1000, 1000 + 16 * 8 + 5))


@pytest.mark.parametrize("size", [8, 16, 32])
def test_digests_to_int64_is_block_hash_to_int64_of_each(size: int) -> None:
    digests = [hashlib.sha512(bytes([i, 255 - i])).digest()[:size] for i in range(40)]
    assert digests_to_int64(digests, size) == list(map(block_hash_to_int64, digests))
    assert digests_to_int64([], size) == []


@pytest.mark.parametrize(("keys", "size", "position", "length"), [
    # 24 + 8 bytes: the total is 2 x 16, so the words alone would give the wrong keys
    ([b"\x01" * 24, b"\x02" * 8], 16, 0, 24),
    ([b"\x01" * 16, b"\x02" * 8, b"\x03" * 24], 16, 1, 8),
    ([b"\x01\x02", b"\xff" * 9, b"\x00" * 13, b"\x07" * 8], 16, 0, 2),  # 32 bytes, not 64
    ([b"\x01" * 12, b"\x02" * 12, b"\x03" * 4, b"\x04" * 20], 12, 2, 4),  # no 64-bit words
])
def test_digests_to_int64_refuses_a_key_that_is_not_one_digest_naming_it(
        keys: list[bytes], size: int, position: int, length: int) -> None:
    with pytest.raises(InvalidRequestError) as info:
        digests_to_int64(keys, size)
    assert (info.value.field, info.value.position) == ("digests", position)
    assert f"{size} bytes long, got {length} bytes" in str(info.value)


@pytest.mark.parametrize("hasher", [
    H, Hasher(block_size=16, hash_algo="xxhash", python_hash_seed="0"),
    Hasher(block_size=16, hash_algo="sha256", python_hash_seed="0",
           vllm_version="0.10.1.1"),  # int keys
    Hasher(block_size=16, python_hash_seed="0", vllm_version="0.12.0"),  # concatenated groups
])
@pytest.mark.parametrize("publishes", ["int", "bytes"])
def test_group_keys_of_digests_equal_the_keys_published_one_by_one(
        hasher: Hasher, publishes: str) -> None:
    if hasher.era.hash_type == "int" and publishes == "bytes":
        return
    groups = (GroupSpec(16),) if hasher.era.group_keys == "none" else (GroupSpec(16),
                                                                         GroupSpec(32))
    scheme = ReplicaScheme(hasher, publishes, groups)  # type: ignore[arg-type]
    fine = hasher.block_hashes(TOKENS)
    expected = tuple(tuple(map(scheme.publish, hasher.group_block_hashes(fine, g.block_size)))
                     for g in scheme.groups)
    assert scheme.group_keys(fine, digests=True) == scheme.group_keys(fine) == expected


def _index(*names: str) -> PrefixIndex:
    index = PrefixIndex()
    for name in names:
        index.register(name, ReplicaScheme(H))
    return index


def test_the_same_candidates_see_a_registration_made_since() -> None:
    index = _index("a")
    router = Router(index, load=lambda r: 0.0)
    with pytest.raises(InvalidRequestError, match="neither registered nor configured"):
        router.route(TOKENS, ("a", "b"))
    index.register("b", ReplicaScheme(H))
    keys = [block_hash_to_int64(k) for k in H.block_hashes(TOKENS) if isinstance(k, bytes)]
    index.apply("b", EventBatch(0.0, (BlockStored(tuple(keys), None, (), 16),)))
    assert [d.replica.name for d in router.route(TOKENS, ("a", "b"))] == ["b", "a"]
    index.remove_replica("b")
    with pytest.raises(InvalidRequestError, match="neither registered nor configured"):
        router.route(TOKENS, ("a", "b"))


def test_the_same_candidates_see_replicas_configured_since() -> None:
    router = Router(_index("a"), load=lambda r: 0.0)
    with pytest.raises(InvalidRequestError, match="neither registered nor configured"):
        router.route(TOKENS, ["a", "c"])
    router.replicas = (ReplicaId("c"),)
    assert sorted(d.replica.name for d in router.route(TOKENS, ["a", "c"])) == ["a", "c"]


def test_remembered_candidates_rank_as_the_first_call_did() -> None:
    # An iterator of candidates is read once (it ranked nobody: prepare had consumed it).
    index = _index("a", "b", "c")
    router = Router(index, load=lambda r: 0.0)
    first = [(d.replica, d.cost) for d in router.route(TOKENS, iter(["c", "a"]))]
    again = [(d.replica, d.cost) for d in router.route(TOKENS, ["c", "a"])]
    as_ids = [(d.replica, d.cost) for d in router.route(
        TOKENS, (ReplicaId("c"), ("a", 0)))]  # type: ignore[arg-type]  # a pair is accepted
    assert first == again == as_ids and {r.name for r, _ in first} == {"a", "c"}
    with pytest.raises(InvalidRequestError, match="a replica is a ReplicaId or a name"):
        router.route(TOKENS, ["a", ["b"]])  # type: ignore[list-item]


@pytest.mark.parametrize(("first", "change", "expected"), [
    (["a", "b"], lambda c: c.append("c"), {"a", "b", "c"}),  # grown in place
    (["a", "b", "c"], lambda c: c.remove("b"), {"a", "c"}),  # shrunk in place
    (["a", "b"], lambda c: c.__setitem__(1, "c"), {"a", "c"}),  # one replaced
    (["a", "b"], lambda c: None, {"a", "b"}),  # unchanged: the last call's answer
])
def test_a_candidates_list_changed_in_place_ranks_its_new_contents(
        first: list[str], change: object, expected: set[str]) -> None:
    # The Router remembers the last candidates named (a copy of the caller's list).
    router = Router(_index("a", "b", "c"), load=lambda r: 0.0)
    assert {d.replica.name for d in router.route(TOKENS, first)} == set(first)
    change(first)  # type: ignore[operator]
    assert {d.replica.name for d in router.route(TOKENS, first)} == expected
    assert {d.replica.name for d in router.route(TOKENS, tuple(first))} == expected
