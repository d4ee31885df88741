"""PromptEmbeds from raw bytes, NumPy arrays and (duck-typed) torch tensors.

torch is deliberately never imported: the tensor path is exercised with a
fake tensor class whose module is ``torch…`` and a fake ``torch`` module
holding ``uint8``, which is all ``from_tensor`` reads from torch.
"""

from __future__ import annotations

import hashlib
import sys
import types
from typing import Any

import numpy as np
import pytest

from prefixkey import Hasher, InvalidRequestError, PromptEmbeds, Request, mixed_prompt_token_ids
from prefixkey.core import DTYPE_SIZES

EMPTY_DIGEST = hashlib.sha256(b"").digest()


# --------------------------------------------------------------------------
# Raw bytes.


@pytest.mark.parametrize(("dtype", "size"), sorted(DTYPE_SIZES.items()))
@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (1, 1), (3, 4), (17, 2)])
def test_raw_bytes(dtype: str, size: int, shape: tuple[int, int]) -> None:
    data = bytes(i % 256 for i in range(shape[0] * shape[1] * size))
    embeds = PromptEmbeds(data, dtype, shape)
    assert embeds.num_rows == shape[0]
    assert embeds.row_size == shape[1] * size
    row = embeds.row_size
    for start, end in [(0, 1), (0, shape[0]), (1, 3), (2, 2)]:
        expected = hashlib.sha256(data[start * row : end * row]).digest()
        assert embeds.block_digest(start, end) == expected


def test_expected_dtype_sizes() -> None:
    assert DTYPE_SIZES == {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


@pytest.mark.parametrize(("start", "end"), [(3, 5), (4, 8), (100, 116), (3, 3)])
def test_block_digest_past_the_end_is_sha256_of_nothing(start: int, end: int) -> None:
    embeds = PromptEmbeds(bytes(range(12)), "float32", (3, 1))
    assert embeds.block_digest(start, end) == EMPTY_DIGEST
    assert EMPTY_DIGEST.hex().startswith("e3b0c442") and EMPTY_DIGEST.hex().endswith("b855")


def test_block_digest_straddling_the_end_hashes_existing_rows() -> None:
    embeds = PromptEmbeds(bytes(range(12)), "float32", (3, 1))
    assert embeds.block_digest(2, 6) == hashlib.sha256(bytes(range(8, 12))).digest()


# --------------------------------------------------------------------------
# NumPy arrays (the buffer protocol).


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_from_numpy(dtype: str) -> None:
    array = np.arange(24, dtype=dtype).reshape(6, 4) / 7
    array = array.astype(dtype)
    embeds = PromptEmbeds.from_tensor(array)
    assert embeds.dtype == dtype
    assert embeds.shape == (6, 4)
    assert embeds.data == array.tobytes()
    assert embeds.block_digest(2, 4) == hashlib.sha256(array[2:4].tobytes()).digest()


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[:, ::2],      # strided columns
        lambda a: a[::2],         # strided rows
        lambda a: a.T,            # Fortran order
        lambda a: a[1:4, 1:3],    # sub-block
    ],
    ids=["cols", "rows", "transpose", "sub-block"],
)
def test_from_numpy_non_contiguous_is_row_major(dtype: str, view: Any) -> None:
    base = np.arange(48, dtype=dtype).reshape(8, 6)
    array = view(base)
    assert not array.flags["C_CONTIGUOUS"]
    embeds = PromptEmbeds.from_tensor(array)
    assert embeds.shape == array.shape
    assert embeds.data == np.ascontiguousarray(array).tobytes()


def test_from_numpy_big_endian_rejected() -> None:
    array = np.arange(8, dtype=">f4").reshape(2, 4)
    with pytest.raises(InvalidRequestError) as info:
        PromptEmbeds.from_tensor(array)
    assert info.value.field == "prompt_embeds"
    assert "big-endian" in str(info.value)


def test_from_numpy_explicit_little_endian_accepted() -> None:
    array = np.arange(8, dtype="<f4").reshape(2, 4)
    assert PromptEmbeds.from_tensor(array).data == array.tobytes()


@pytest.mark.parametrize("shape", [(8,), (2, 2, 2), (1, 1, 1, 8)])
def test_from_numpy_needs_two_dimensions(shape: tuple[int, ...]) -> None:
    with pytest.raises(InvalidRequestError) as info:
        PromptEmbeds.from_tensor(np.zeros(shape, dtype="float32"))
    assert info.value.field == "prompt_embeds.shape"


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint16", "complex64"])
def test_from_numpy_non_float_rejected(dtype: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        PromptEmbeds.from_tensor(np.zeros((2, 2), dtype=dtype))
    assert info.value.field == "prompt_embeds.dtype"


def test_from_numpy_bfloat16_bits_with_explicit_dtype() -> None:
    raw = np.arange(6, dtype=np.uint16).reshape(2, 3)
    embeds = PromptEmbeds.from_tensor(raw.view(np.float16), dtype="bfloat16")
    assert embeds.dtype == "bfloat16"
    assert embeds.data == raw.tobytes()


def test_from_buffer_dtype_size_mismatch() -> None:
    with pytest.raises(InvalidRequestError) as info:
        PromptEmbeds.from_tensor(np.zeros((2, 2), dtype="float32"), dtype="float16")
    assert info.value.field == "prompt_embeds.dtype"


@pytest.mark.parametrize("value", [[[1.0, 2.0]], "abc", 3.5, None])
def test_from_tensor_rejects_non_buffers(value: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        PromptEmbeds.from_tensor(value)
    assert info.value.field == "prompt_embeds"


# --------------------------------------------------------------------------
# A duck-typed torch tensor (torch is never imported).


class _FakeDtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class FakeTensor:
    """The methods ``tensor_data`` calls, backed by a NumPy array."""

    def __init__(self, array: np.ndarray, dtype_name: str | None = None) -> None:
        self._array = array
        self.dtype = _FakeDtype(dtype_name or array.dtype.name)
        self.shape = array.shape
        self.calls: list[str] = []

    def detach(self) -> FakeTensor:
        self.calls.append("detach")
        return self

    def flatten(self) -> FakeTensor:
        self.calls.append("flatten")
        out = FakeTensor(np.ascontiguousarray(self._array).reshape(-1), self.dtype.name)
        out.calls = self.calls
        return out

    def cpu(self) -> FakeTensor:
        self.calls.append("cpu")
        return self

    def contiguous(self) -> FakeTensor:
        self.calls.append("contiguous")
        return self

    def view(self, dtype: object) -> FakeTensor:
        assert dtype is _FAKE_TORCH.uint8
        self.calls.append("view")
        out = FakeTensor(self._array.view(np.uint8), "uint8")
        out.calls = self.calls
        return out

    def numpy(self) -> np.ndarray:
        self.calls.append("numpy")
        return self._array


FakeTensor.__module__ = "torch.fake"
_FAKE_TORCH = types.ModuleType("torch")
_FAKE_TORCH.uint8 = object()  # type: ignore[attr-defined]


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    monkeypatch.setitem(sys.modules, "torch", _FAKE_TORCH)
    return _FAKE_TORCH


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
def test_from_fake_torch_tensor(fake_torch: types.ModuleType, dtype: str) -> None:
    array = (np.arange(12, dtype=dtype).reshape(3, 4) * 1.5).astype(dtype)
    tensor = FakeTensor(array)
    embeds = PromptEmbeds.from_tensor(tensor)
    assert embeds.dtype == dtype
    assert embeds.shape == (3, 4)
    assert embeds.data == array.tobytes()
    assert tensor.calls[:2] == ["detach", "flatten"]
    assert tensor.calls[-1] == "numpy"
    assert "view" in tensor.calls and "cpu" in tensor.calls


def test_from_fake_torch_bfloat16(fake_torch: types.ModuleType) -> None:
    bits = np.arange(8, dtype=np.uint16).reshape(2, 4)
    embeds = PromptEmbeds.from_tensor(FakeTensor(bits, "bfloat16"))
    assert embeds.dtype == "bfloat16"
    assert embeds.data == bits.tobytes()


def test_from_fake_torch_non_contiguous(fake_torch: types.ModuleType) -> None:
    array = np.arange(24, dtype="float32").reshape(4, 6)[:, ::3]
    embeds = PromptEmbeds.from_tensor(FakeTensor(array))
    assert embeds.data == np.ascontiguousarray(array).tobytes()
    assert embeds.shape == (4, 2)


def test_from_fake_torch_dtype_mismatch(fake_torch: types.ModuleType) -> None:
    with pytest.raises(InvalidRequestError) as info:
        PromptEmbeds.from_tensor(FakeTensor(np.zeros((2, 2), "float32")), dtype="float16")
    assert info.value.field == "prompt_embeds.dtype"


def test_from_fake_torch_1d_rejected(fake_torch: types.ModuleType) -> None:
    with pytest.raises(InvalidRequestError) as info:
        PromptEmbeds.from_tensor(FakeTensor(np.zeros(4, "float32")))
    assert info.value.field == "prompt_embeds.shape"


# --------------------------------------------------------------------------
# Mixed prompts and hashing with embeddings.


@pytest.mark.parametrize(
    ("tokens", "mask", "expected"),
    [
        ([], [], []),
        ([5, 6, 7], [True, True, True], [5, 6, 7]),
        ([5, 6, 7], [False, False, False], [0, 0, 0]),
        ([5, 6, 7, 8], [True, False, False, True], [5, 0, 0, 8]),
        ([151643, 9, 9], [False, True, False], [0, 9, 0]),
    ],
)
def test_mixed_prompt_token_ids(tokens: list[int], mask: list[bool], expected: list[int]) -> None:
    assert mixed_prompt_token_ids(tokens, mask) == expected


@pytest.mark.parametrize(
    ("tokens", "mask"), [([1, 2], [True]), ([1], [True, False]), ([], [True])]
)
def test_mixed_prompt_length_mismatch(tokens: list[int], mask: list[bool]) -> None:
    with pytest.raises(InvalidRequestError) as info:
        mixed_prompt_token_ids(tokens, mask)
    assert info.value.field == "prompt_is_token_ids"


def test_mixed_prompt_hashes_zeros_and_rows() -> None:
    tokens = [11, 12, 13, 14]
    mask = [True, False, False, True]
    rows = np.zeros((4, 2), dtype="float16")
    rows[1:3] = [[1, 2], [3, 4]]
    embeds = PromptEmbeds.from_tensor(rows)
    hasher = Hasher(block_size=2)
    state = hasher.start(Request(mixed_prompt_token_ids(tokens, mask), prompt_embeds=embeds))
    assert state.extra_keys == [
        (("prompt_embeds", hashlib.sha256(rows[0:2].tobytes()).digest()),),
        (("prompt_embeds", hashlib.sha256(rows[2:4].tobytes()).digest()),),
    ]
    other = hasher.start(Request(tokens, prompt_embeds=embeds))
    assert other.block_hashes != state.block_hashes


def test_embeds_only_request_and_decode_blocks() -> None:
    rows = np.arange(10, dtype="float32").reshape(5, 2)
    embeds = PromptEmbeds.from_tensor(rows)
    hasher = Hasher(block_size=2)
    state = hasher.start(Request([0] * 5, prompt_embeds=embeds))
    state.append([42, 43, 44])
    digests = [k[0][1] for k in state.extra_keys if k is not None]
    assert digests == [
        hashlib.sha256(rows[0:2].tobytes()).digest(),
        hashlib.sha256(rows[2:4].tobytes()).digest(),
        hashlib.sha256(rows[4:5].tobytes()).digest(),  # straddles the prompt end
        EMPTY_DIGEST,
    ]
