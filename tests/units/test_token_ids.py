"""Token ids checked once: TokenIds, NumPy arrays and scalars, and the immutable Hasher.

Expected keys come from the plain-list path (which the golden vectors pin to
vLLM's own code): every other way in must give the same keys as the list of
the same exact ints, or a typed error naming the field and position.
"""

from __future__ import annotations

import copy
import pickle
import struct
from typing import Any, Literal

import numpy as np
import pytest

from prefixkey import FrozenError, Hasher, InvalidRequestError, PrefixKeyError, Request
from prefixkey.core import ERAS, TokenIds, check_token_ids
from prefixkey.core import _request as request_module
from prefixkey.jsonl import parse_request, run_job

ALGOS = ("sha256", "sha256_cbor", "xxhash", "xxhash_cbor")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def hasher(algo: str = "sha256_cbor", block_size: int = 4) -> Hasher:
    return Hasher(block_size=block_size, hash_algo=algo, python_hash_seed="0")


def ids_for(dtype: str, n: int = 23) -> list[int]:
    """n ids spread over the dtype's non-negative range, its largest value included."""
    top = int(np.iinfo(dtype).max)
    return [(top // (n - 1)) * i for i in range(n - 1)] + [top]


# ----------------------------------------------------------------- NumPy arrays


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("order", ["<", ">"])
def test_integer_arrays_key_as_their_values(
    algo: str, dtype: str, order: Literal["<", ">"]
) -> None:
    values = ids_for(dtype)
    array = np.array(values, dtype=np.dtype(dtype).newbyteorder(order))
    h = hasher(algo)
    assert h.block_hashes(array) == h.block_hashes(values)
    assert list(check_token_ids(array)) == values


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize(
    "view", [slice(None, None, 2), slice(None, None, -1), slice(3, 40, 3)], ids=str
)
def test_strided_arrays_read_their_own_elements(algo: str, view: slice) -> None:
    base = np.arange(1000, 1050, dtype=np.int64)
    array = base[view]
    assert not array.flags.c_contiguous
    h = hasher(algo)
    assert h.block_hashes(array) == h.block_hashes(base.tolist()[view])


def test_uint64_beyond_int64_keys_as_the_int() -> None:
    # msgspec (vLLM's engine-core decoding) takes ints up to 2**64 - 1; so does a list here.
    values = [2**63, 2**64 - 1, 5, 2**63 + 7]
    for algo in ALGOS:
        h = hasher(algo, block_size=2)
        assert h.block_hashes(np.array(values, dtype=np.uint64)) == h.block_hashes(values)


@pytest.mark.parametrize(
    ("array", "words"),
    [
        (np.array([1.0, 2.0]), "floats (dtype <f8"),
        (np.array([1, 2], dtype=np.float16), "floats (dtype <f2"),
        (np.array([True, False]), "bools (dtype |b1"),
        (np.array([1 + 2j]), "complex numbers"),
        (np.array([1, "a"], dtype=object), "objects"),
        (np.array(["1", "2"]), "non-integers"),
        (np.array(["2024-01-01"], dtype="datetime64[D]"), "non-integers"),
        (np.array([[1, 2], [3, 4]]), "one-dimensional, got an array of shape (2, 2)"),
        (np.array(5), "one-dimensional, got an array of shape ()"),
    ],
)
def test_other_arrays_are_typed_errors(array: Any, words: str) -> None:
    for call in (hasher().block_hashes, Request, check_token_ids):
        with pytest.raises(InvalidRequestError) as info:
            call(array)
        assert info.value.field == "token_ids"
        assert words in str(info.value)


class InterfaceOnly:
    """An array interface with no buffer behind it (not NumPy)."""

    def __init__(self, typestr: object) -> None:
        self.typestr = typestr

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return {"typestr": self.typestr, "shape": (2,), "version": 3}


@pytest.mark.parametrize(
    ("typestr", "words"),
    [("<i8", "no buffer to read"), (None, "typestr=None"), ("i", "typestr='i'"),
     ("<i3", "dtype <i3")],
)
def test_foreign_array_interfaces_are_typed_errors(typestr: object, words: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        Request(InterfaceOnly(typestr))
    assert info.value.field == "token_ids"
    assert words in str(info.value)


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_negative_array_values_key_as_their_values(dtype: str) -> None:
    # vLLM's engine core hashes a negative id; its API server refuses it (0.28+).
    h = hasher()
    values = [3, 4, 5, -1, 7, -128, 0, 1]
    assert h.block_hashes(np.array(values, dtype=dtype)) == h.block_hashes(values)


def test_a_request_snapshots_its_array() -> None:
    array = np.arange(100, 116)
    request = Request(array)
    h = hasher()
    expected = h.block_hashes(list(range(100, 116)))
    array[:] = 0  # the caller reuses its buffer
    assert h.block_hashes(request) == expected
    assert type(request.token_ids) is TokenIds


# ----------------------------------------------------------------- NumPy scalars


def test_integer_scalars_key_as_their_values() -> None:
    values = [7, 2**31, 2**63 + 1, 0, 65536, 255, 1, 2]
    scalars: list[Any] = [np.uint64(v) for v in values]
    scalars[0], scalars[4] = np.int8(7), np.int32(65536)
    for algo in ALGOS:
        h = hasher(algo)
        assert h.block_hashes(scalars) == h.block_hashes(values)
        state = h.start(Request(values[:3]))
        for s in scalars[3:]:
            state.append(s)
        assert state.block_hashes == h.block_hashes(values)


@pytest.mark.parametrize(
    ("bad", "name"), [(np.True_, "bool"), (np.float64(1.0), "float64"), (np.float32(2), "float32")]
)
def test_other_scalars_are_typed_errors(bad: Any, name: str) -> None:
    h = hasher()
    with pytest.raises(InvalidRequestError) as info:
        h.block_hashes([1, 2, bad, 4])
    assert (info.value.position, name in str(info.value)) == (2, True)
    state = h.start(Request([1, 2, 3]))
    with pytest.raises(InvalidRequestError) as info:
        state.append(bad)
    assert info.value.position == 3
    assert state.num_tokens == 3


def test_negative_scalar_keys_as_its_value() -> None:
    h = hasher()
    assert h.block_hashes([1, np.int64(-3), 2, 4]) == h.block_hashes([1, -3, 2, 4])


def test_appended_arrays_key_as_their_values() -> None:
    h = hasher("xxhash")
    values = list(range(300, 330))
    state = h.start(Request(values[:5]))
    state.append(np.array(values[5:17], dtype=np.uint16))
    state.append(np.array(values[17:], dtype=">i4"))
    assert state.block_hashes == h.block_hashes(values)
    state.append(np.array([1, -1]))  # the engine core hashes negative ids too
    assert state.block_hashes == h.block_hashes([*values, 1, -1])


# ----------------------------------------------------------------- TokenIds


def test_token_ids_are_only_built_by_the_check() -> None:
    with pytest.raises(InvalidRequestError, match="check_token_ids"):
        TokenIds((True,), None)
    with pytest.raises(InvalidRequestError, match="check_token_ids"):
        TokenIds((True,), None, object())


def test_token_ids_are_immutable_and_snapshot_their_input() -> None:
    source = [1, 2, 3, 4]
    ids = check_token_ids(source)
    source[0] = True
    assert list(ids) == [1, 2, 3, 4]
    for name in ("_ids", "_words", "anything"):
        with pytest.raises(FrozenError):
            setattr(ids, name, (True,))
        with pytest.raises(FrozenError):
            delattr(ids, name)
    assert list(ids) == [1, 2, 3, 4]


def test_unpickled_token_ids_are_checked_again() -> None:
    ids = check_token_ids([5, 2**40, 7])
    assert pickle.loads(pickle.dumps(ids)) == ids
    # Protocol 2 has no frames to resize: 7 (BININT1) becomes 7.0 (BINFLOAT).
    forged = pickle.dumps(ids, 2).replace(b"K\x07", b"G" + struct.pack(">d", 7.0))
    assert forged != pickle.dumps(ids, 2)
    with pytest.raises(InvalidRequestError):
        pickle.loads(forged)


def test_check_token_ids_keeps_every_check() -> None:
    class MyInt(int):
        pass

    cases: list[tuple[list[Any], int]] = [
        ([1, True], 1), ([1.0], 0), ([MyInt(1)], 0), ([0, -1, None], 2), (["1"], 0),
        ([2**64, -(2**64), 1.5], 2),
    ]
    for bad, position in cases:
        with pytest.raises(InvalidRequestError) as info:
            check_token_ids(bad, start=10)
        assert (info.value.field, info.value.position) == ("token_ids", 10 + position)
    assert check_token_ids([0, 2**64 + 3]) == check_token_ids((0, 2**64 + 3))


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("top", [2**31 - 1, 2**31, 2**70], ids=["int32", "int64", "bignum"])
def test_token_ids_and_their_slices_key_as_lists(algo: str, top: int) -> None:
    values = [top, *range(40), top - 1, *range(100, 130)]
    ids = check_token_ids(values)
    h = hasher(algo, block_size=8)
    assert h.block_hashes(ids) == h.block_hashes(values)
    for view in (slice(3, 60), slice(None, None, 2), slice(50, 5, -3), slice(200, 300)):
        part = ids[view]
        assert type(part) is TokenIds
        assert h.block_hashes(part) == h.block_hashes(values[view])
    state = h.start(Request(ids[:9]))
    state.append(ids[9:30])
    state.append(ids[30:])
    assert state.block_hashes == h.block_hashes(values)


def test_token_ids_reach_the_hasher_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    values = list(range(64))
    ids = check_token_ids(values)
    h = hasher("sha256_cbor")
    expected = h.block_hashes(values)

    class NoMarshal:
        @staticmethod
        def dumps(*_: object) -> bytes:
            raise AssertionError("checked TokenIds were checked again")

    monkeypatch.setattr(request_module, "marshal", NoMarshal)
    assert h.block_hashes(ids) == expected
    state = h.start(Request(ids[:10]))
    state.append(ids[10:])
    assert state.block_hashes == expected
    with pytest.raises(AssertionError):  # the patch bites: a plain list is checked
        h.block_hashes(values)


# ----------------------------------------------------------------- the JSON reader


def test_the_json_reader_checks_token_ids_once_into_token_ids() -> None:
    job = parse_request({"block_size": 4, "token_ids": [1, 2, 3, 4, 5, 6, 7, 8, 9],
                         "num_prompt_tokens": 5, "hash_algo": "sha256_cbor",
                         "python_hash_seed": "0"})
    assert type(job.token_ids) is TokenIds
    assert type(job.request.token_ids) is TokenIds
    result = run_job(job)
    h = hasher("sha256_cbor")
    assert result["block_hashes"] == [k.hex() for k in h.block_hashes(list(range(1, 9)))]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tokens", "position", "words"),
    [([1, True], 1, "bool"), ([1, 2.0], 1, "float"), ([1, 2, "3"], 2, "str"),
     ([None], 0, "NoneType"), ([2**64, 1.5], 1, "float")],
)
def test_the_json_reader_reports_bad_token_ids_with_position(
    tokens: list[Any], position: int, words: str
) -> None:
    with pytest.raises(InvalidRequestError) as info:
        parse_request({"block_size": 4, "token_ids": tokens})
    assert (info.value.field, info.value.position) == ("token_ids", position)
    assert words in str(info.value)


# ----------------------------------------------------------------- the immutable Hasher


def test_a_hasher_is_immutable() -> None:
    h = hasher()
    before = h.block_hashes(list(range(16)))
    for name in (*Hasher.__slots__, "new_attribute"):
        with pytest.raises(FrozenError) as info:
            setattr(h, name, None)
        assert isinstance(info.value, PrefixKeyError)
        assert info.value.field == name
        with pytest.raises(FrozenError):
            delattr(h, name)
    assert h.block_hashes(list(range(16))) == before
    assert copy.copy(h) is h and copy.deepcopy(h) is h


def test_with_era_rules_leaves_the_hasher_alone() -> None:
    h = Hasher(block_size=4, vllm_version="0.31.0")
    other = next(e for e in ERAS if e is not h.era)
    twin = h.with_era_rules(other)
    assert twin.era is other and h.era is not other
    assert all(getattr(twin, name) is getattr(h, name) for name in Hasher.__slots__
               if name != "era")
    with pytest.raises(FrozenError):
        twin.era = h.era


@pytest.mark.parametrize(
    ("version", "algo", "lookahead"),
    [("0.9.2", "sha256", 0), ("0.10.1.1", "sha256_cbor_64bit", 0), ("0.10.0", "sha256", 0),
     ("0.31.0", "xxhash_cbor", 0), ("0.33.0", "sha256", 2)],
)
def test_every_era_keys_checked_ids_as_lists(version: str, algo: str, lookahead: int) -> None:
    h = Hasher(block_size=4, hash_algo=algo, python_hash_seed="0", vllm_version=version,
               lookahead=lookahead)
    values = [9, 2**31 + 5, *range(200, 230)]
    expected = h.block_hashes(values)
    assert len(expected) > 4
    assert h.block_hashes(np.array(values, dtype=np.uint64)) == expected
    assert h.block_hashes(check_token_ids(values)) == expected
    state = h.start(Request(np.array(values[:6])))
    state.append(check_token_ids(values)[6:17])
    state.append(np.array(values[17:], dtype=">i8"))
    assert state.block_hashes == expected


def test_router_takes_numpy_scalars_in_a_list() -> None:
    # A prompt too short for a block key is routed by a digest of its ids: NumPy
    # scalars must count as their values there too.
    from prefixkey.fleet import PrefixIndex, ReplicaScheme, Router

    index = PrefixIndex()
    for name in "abcd":
        index.register(name, ReplicaScheme(Hasher(block_size=16)))
    router = Router(index, load=lambda r: 0.0)  # equally idle: no count of its own sends
    ids = [1, 2, 3]
    scalars = [np.int64(1), np.uint16(2), np.int32(3)]
    ranked = router.route(scalars)  # type: ignore[arg-type]
    assert [d.replica for d in ranked] == [d.replica for d in router.route(ids)]
    prepared = router.prepare(scalars)  # type: ignore[arg-type]
    assert prepared.request is not None and list(prepared.request.token_ids) == ids
