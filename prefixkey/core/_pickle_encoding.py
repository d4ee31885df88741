"""``pickle.dumps(obj, protocol=5)`` of the hashed block tuple, as the engine core pickles it.

vLLM's ``sha256`` and ``xxhash`` algorithms digest the pickle of
``(parent_hash, tuple(block_tokens), extra_keys)``, written by CPython's C
pickler; so is ours. What needs care is the **memo**: pickle writes a
back-reference instead of a second copy when the *same object* appears twice
in one dump, so the bytes depend on object identity, not only on values. The
extra keys are built with the engine core's identity (``extra_keys``), and the
parent and token tuple are fresh objects per block, as in vLLM.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import Any

__all__ = ["chain", "dumps", "encode_extra_keys_tail", "encode_tokens", "extend_tokens"]


def dumps(obj: Any) -> bytes:
    """``pickle.dumps(obj, protocol=5)``, vLLM's ``pickle.HIGHEST_PROTOCOL`` (3.8+)."""
    return pickle.dumps(obj, protocol=5)


def encode_extra_keys_tail(extra_keys: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    """The pickle serializer pickles the extra keys themselves.

    They already have the engine core's object identity (see ``extra_keys``).
    """
    return extra_keys


def encode_tokens(
    token_ids: Sequence[int], words: bytes | None = None, block_size: int = 1
) -> Sequence[int]:
    """The pickle serializer works on the token ids themselves (the hasher snapshots them)."""
    return token_ids


def extend_tokens(
    tokens: Sequence[int], token_ids: Sequence[int], words: bytes | None
) -> list[int]:
    """``tokens`` with checked token ids appended (a list of its own from the first append on)."""
    if type(tokens) is not list:
        tokens = list(tokens)
    tokens.extend(token_ids)
    return tokens


def chain(
    parent: bytes | int,
    tokens: Sequence[int],
    starts: range,
    size: int,
    tails: Iterable[tuple[Any, ...] | None],
    digest: Callable[[bytes], Any],
) -> list[Any]:
    """Keys of the blocks starting at ``starts``, with extra keys ``tails`` (one each).

    Each key is the digest of ``pickle.dumps((parent, tuple(block), tail), 5)``
    and the parent of the next.
    """
    if not starts:
        return []
    # Each block's tuple, built straight from the ids: zip over one iterator
    # taken ``size`` times groups them (the run's partial block is left out).
    ids = iter(tokens) if not starts.start else iter(tokens[starts.start : starts[-1] + size])
    blocks = islice(zip(*[ids] * size, strict=False), len(starts))
    dumps_ = pickle.dumps
    return [
        parent := digest(dumps_((parent, block, tail), 5))
        for block, tail in zip(blocks, tails, strict=True)
    ]
