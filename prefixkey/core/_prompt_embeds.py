"""Prompt embeddings as vLLM's block keys see them: raw row-major bytes.

vLLM keys each block of a prompt-embeds request by the SHA-256 of the bytes of
``prompt_embeds[start:end]`` in the model dtype (``tensor_data``: flatten,
CPU, contiguous, viewed as uint8). Rows past the end of the tensor are simply
absent, so blocks after the prompt digest the empty string.

:class:`PromptEmbeds` holds those bytes. It is built from raw bytes with a
dtype name and shape, from any object with the buffer protocol (a NumPy
array), or from a CPU torch tensor (which has no buffer protocol) by calling
its own methods the way ``tensor_data`` does; neither NumPy nor torch is
imported here.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..errors import InvalidRequestError

__all__ = ["DTYPE_SIZES", "PromptEmbeds", "mixed_prompt_token_ids"]

#: Model dtypes a prompt-embeds tensor can be cast to, with their item size.
DTYPE_SIZES: Final[dict[str, int]] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float64": 8,
}

# memoryview format characters of the dtypes the buffer protocol can name.
_FORMAT_DTYPES: Final = {"f": "float32", "e": "float16", "d": "float64"}

_FIELD = "prompt_embeds"


@dataclass(frozen=True, slots=True)
class PromptEmbeds:
    """A 2-D ``(rows, hidden)`` embedding tensor's raw little-endian bytes."""

    data: bytes
    dtype: str
    shape: tuple[int, int]

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes):
            raise InvalidRequestError(f"{_FIELD}.data", "must be bytes")
        if self.dtype not in DTYPE_SIZES:
            raise InvalidRequestError(
                f"{_FIELD}.dtype",
                f"unknown dtype {self.dtype!r} (one of {', '.join(DTYPE_SIZES)})",
            )
        shape = self.shape
        if (
            not isinstance(shape, tuple)
            or len(shape) != 2
            # Bounded, so that the byte count below stays printable.
            or not all(type(d) is int and 0 <= d < 2**63 for d in shape)
        ):
            raise InvalidRequestError(
                f"{_FIELD}.shape", "must be two non-negative ints below 2**63 (rows, hidden)"
            )
        expected = shape[0] * shape[1] * DTYPE_SIZES[self.dtype]
        if len(self.data) != expected:
            raise InvalidRequestError(
                f"{_FIELD}.data",
                f"holds {len(self.data)} bytes; shape {list(shape)} of {self.dtype} "
                f"needs {expected}",
            )

    @property
    def num_rows(self) -> int:
        return self.shape[0]

    @property
    def row_size(self) -> int:
        """Bytes per row."""
        return self.shape[1] * DTYPE_SIZES[self.dtype]

    def block_bytes(self, start: int, end: int) -> bytes:
        """The raw bytes of rows ``[start, end)`` (rows past the end are absent)."""
        row = self.row_size
        return self.data[start * row : end * row]

    def block_digest(self, start: int, end: int) -> bytes:
        """SHA-256 of rows ``[start, end)``, the key of vLLM 0.17+."""
        return hashlib.sha256(self.block_bytes(start, end)).digest()

    @classmethod
    def from_tensor(cls, tensor: Any, *, dtype: str | None = None) -> PromptEmbeds:
        """Build from a torch tensor, a NumPy array or any 2-D buffer.

        ``dtype`` names the element type when the object cannot (for example
        a bfloat16 buffer); it must agree with the item size.
        """
        if type(tensor).__module__.startswith("torch"):
            return cls._from_torch(tensor, dtype)
        try:
            view = memoryview(tensor)
        except TypeError:
            raise InvalidRequestError(
                _FIELD, f"{type(tensor).__name__} is neither a tensor nor a buffer"
            ) from None
        fmt = view.format.lstrip("@=<")
        if view.format.startswith((">", "!")) and sys.byteorder == "little":
            raise InvalidRequestError(_FIELD, "big-endian data: vLLM hashes native bytes")
        name = dtype or getattr(getattr(tensor, "dtype", None), "name", None)
        name = name or _FORMAT_DTYPES.get(fmt)
        if name is None:
            raise InvalidRequestError(f"{_FIELD}.dtype", f"cannot tell the dtype of {fmt!r}")
        if name in DTYPE_SIZES and view.itemsize != DTYPE_SIZES[name]:
            raise InvalidRequestError(
                f"{_FIELD}.dtype", f"{name} has {DTYPE_SIZES[name]}-byte items, buffer has "
                f"{view.itemsize}",
            )
        return cls(view.tobytes(), name, _shape2(view.shape))

    @classmethod
    def _from_torch(cls, tensor: Any, dtype: str | None) -> PromptEmbeds:
        torch = sys.modules["torch"]
        name = str(tensor.dtype).removeprefix("torch.")
        if dtype is not None and dtype != name:
            raise InvalidRequestError(
                f"{_FIELD}.dtype", f"tensor is {name}, not {dtype}: cast it first"
            )
        raw = tensor.detach().flatten().cpu().contiguous().view(torch.uint8).numpy()
        return cls(raw.tobytes(), name, _shape2(tuple(tensor.shape)))


def _shape2(shape: Sequence[int] | None) -> tuple[int, int]:
    if shape is None or len(shape) != 2:
        raise InvalidRequestError(f"{_FIELD}.shape", f"must be 2-D (rows, hidden), got {shape}")
    return (int(shape[0]), int(shape[1]))


def mixed_prompt_token_ids(
    prompt_token_ids: Sequence[int], prompt_is_token_ids: Sequence[bool]
) -> list[int]:
    """The token ids vLLM (0.29+) hashes for a mixed token/embedding prompt.

    Positions that come from embeddings hold 0; the embeddings tensor covers
    the whole prompt, with zero rows at the token positions.
    """
    if len(prompt_token_ids) != len(prompt_is_token_ids):
        raise InvalidRequestError(
            "prompt_is_token_ids",
            f"has {len(prompt_is_token_ids)} entries for {len(prompt_token_ids)} tokens",
        )
    pairs = zip(prompt_token_ids, prompt_is_token_ids, strict=True)
    return [t if is_token else 0 for t, is_token in pairs]
