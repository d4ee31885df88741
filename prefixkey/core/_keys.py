"""Other forms of a block hash: KV-event integers, group-id keys, group views."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from typing import Final, TypeVar

from ..errors import InvalidRequestError
from ._checks import check_int

__all__ = ["block_hash_to_int64", "block_hash_with_group_id", "group_block_hashes"]

_UINT64_MASK: Final = (1 << 64) - 1
_Key = TypeVar("_Key")


def block_hash_to_int64(block_hash: bytes) -> int:
    """The integer vLLM publishes in KV events: the low 64 bits, big-endian, unsigned.

    This is ``maybe_convert_block_hash`` with ``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1``
    (the default); values reach 2**64 - 1, beyond int64.
    """
    return int.from_bytes(block_hash, "big") & _UINT64_MASK


#: 64-bit words in C (``array``): the low word of each digest, byte-swapped to big-endian.
_WORDS: Final = "Q" if array("Q").itemsize == 8 else ""
_SWAP: Final = sys.byteorder == "little"


def digests_to_int64(digests: Sequence[bytes], size: int) -> list[int]:
    """:func:`block_hash_to_int64` of each of a hasher's digests, all ``size`` bytes long.

    About 4x faster than one call per key (a router converts every key of
    every request): the digests are joined, read as 64-bit words and the
    last word of each is kept, all in C. A key of another length raises
    :class:`InvalidRequestError` naming its position: read as words, keys
    of mixed lengths whose total happens to be ``size`` each would give
    other keys' bytes, silently.
    """
    lengths = list(map(len, digests))  # in C: about 1% of hashing the keys
    if lengths.count(size) != len(lengths):
        position = next(i for i, length in enumerate(lengths) if length != size)
        raise InvalidRequestError(
            "digests", f"must each be one digest, {size} bytes long, "
            f"got {lengths[position]} bytes", position=position)
    if not _WORDS or size <= 0 or size % 8:
        return [int.from_bytes(k, "big") & _UINT64_MASK for k in digests]
    words = array(_WORDS, b"".join(digests))
    if _SWAP:
        words.byteswap()
    step = size // 8
    return words[step - 1 :: step].tolist()


def block_hash_with_group_id(block_hash: bytes, group_id: int) -> bytes:
    """The engine's internal cache key: the hash followed by the group id (4 bytes, BE)."""
    if type(group_id) is not int or not 0 <= group_id <= 0xFFFFFFFF:
        raise InvalidRequestError("group_id", f"must be an int in [0, 2**32), got {group_id!r}")
    return block_hash + group_id.to_bytes(4, "big")


def group_block_hashes(
    block_hashes: Sequence[_Key],
    hash_block_size: int,
    group_block_size: int,
    *,
    concatenate: bool = False,
) -> list[_Key]:
    """The keys of a KV-cache group whose blocks are ``k`` hash blocks long.

    Block ``j`` of the group takes fine key ``(j + 1)·k - 1``: that key already
    chains the whole prefix (vLLM 0.24+, ``BlockHashListWithBlockSize``). With
    ``concatenate`` (0.12-0.23) it is the k fine keys of the block joined.
    """
    check_int("hash_block_size", hash_block_size)
    if (
        type(group_block_size) is not int
        or group_block_size < hash_block_size
        or group_block_size % hash_block_size
    ):
        raise InvalidRequestError(
            "group_block_size",
            f"must be a multiple of the hash block size {hash_block_size}, "
            f"got {group_block_size!r}",
        )
    k = group_block_size // hash_block_size
    if concatenate:  # bytes keys only: the releases that concatenated had no int keys
        starts = range(0, len(block_hashes) - k + 1, k)
        return [b"".join(block_hashes[j : j + k]) for j in starts]  # type: ignore[arg-type,misc]
    return list(block_hashes[k - 1 :: k])
