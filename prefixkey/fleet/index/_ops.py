"""What every backend checks of a batch before writing any of it, and how batches are cut.

A batch decoded by :meth:`~prefixkey.events.EventDecoder.ops` is well formed;
one built by hand (``DecodedOps`` or ``EventBatch`` values of the caller's own)
may not be. :func:`check_ops` reads the whole batch first, so that a bad op is a
typed :class:`~prefixkey.errors.InvalidRequestError` naming it and nothing of
the batch is applied, in memory as in Redis (which applied none of it already,
while the in-memory index applied the ops before the bad one).

Medium names are compared by :func:`medium_name`: ASCII letters upper-cased
(vLLM publishes ``"GPU"``, ``"CPU"``; old recordings ``"cpu"``), every other
character as published, so ``"ß"`` and ``"SS"`` stay two media
(``str.upper`` would merge them). A namespace or an in-memory index holds at
most :data:`MAX_MEDIA` names, as Redis' medium ids are 2 bytes: a batch naming
one more is refused whole.

:func:`slices` cuts a large batch into pieces of at most a number of keys, so
that a subscriber applies it under the shared lock a piece at a time and the
other replicas' batches are applied in between (issue 23, item 12).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Final

from ...core._checks import check_int
from ...errors import InvalidRequestError
from ...events import CLEARED, REMOVED, STORED, BlockOp, DecodedOps

__all__ = ["MAX_MEDIA", "check_ops", "medium_name", "ops_keys", "slices"]

#: Distinct medium names an index holds at most (Redis: 2-byte medium ids).
MAX_MEDIA: Final = 65_536
_ASCII_UPPER: Final = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_KINDS: Final = frozenset({STORED, REMOVED, CLEARED})
_KIND: Final = itemgetter(0)
_HASHES: Final = itemgetter(1)
_MEDIUM: Final = itemgetter(2)
_GROUP: Final = itemgetter(3)
_OK_MEDIUM: Final = frozenset({str, type(None)})
_OK_GROUP: Final = frozenset({int, type(None)})
_OK_KEY: Final = frozenset({int, bytes})


def medium_name(published: str) -> str:
    """The name a published medium is held under: ASCII letters upper-cased, nothing else."""
    return published.upper() if published.isascii() else published.translate(_ASCII_UPPER)


def check_ops(ops: Iterable[BlockOp]) -> Sequence[BlockOp]:
    """``ops`` as a sequence, every op well formed; else :class:`InvalidRequestError`.

    One pass, each op's keys typed in C; only a batch that fails it is walked again
    op by op, to name the first bad one.
    """
    seq = ops if type(ops) is list or type(ops) is tuple else list(ops)
    ok_key = _OK_KEY.issuperset
    for op in seq:
        if type(op) is not tuple or len(op) != 4:
            break
        kind, hashes, medium, group = op
        if (type(kind) is not int or kind not in _KINDS or type(hashes) is not tuple
                or (medium is not None and type(medium) is not str)
                or (group is not None and (type(group) is not int or group < 0))
                or not ok_key(map(type, hashes))):
            break
    else:
        return seq
    for i, op in enumerate(seq):
        _check_op(i, op)
    return seq  # pragma: no cover - the op-by-op walk raises on what the pass refused


def _check_op(i: int, op: object) -> None:
    where = f"ops[{i}]"
    if type(op) is not tuple or len(op) != 4:
        raise InvalidRequestError(where, "must be a (kind, block_hashes, medium, group_idx) "
                                  f"tuple, got {type(op).__name__}")
    kind, hashes, medium, group = op
    if type(kind) is not int or kind not in _KINDS:
        raise InvalidRequestError(f"{where}.kind", f"must be STORED, REMOVED or CLEARED (0, 1, "
                                  f"2), got {kind!r:.80}")
    if type(medium) not in _OK_MEDIUM:
        raise InvalidRequestError(f"{where}.medium",
                                  f"must be a str or None, got {type(medium).__name__}")
    if type(group) not in _OK_GROUP or (group is not None and group < 0):
        check_int(f"{where}.group_idx", group, least=0, optional=True)  # raises
    if type(hashes) is not tuple:
        raise InvalidRequestError(f"{where}.block_hashes",
                                  f"must be a tuple, got {type(hashes).__name__}")
    for j, key in enumerate(hashes):
        if type(key) is bytes:
            continue
        if type(key) is not int:
            raise InvalidRequestError(f"{where}.block_hashes[{j}]",
                                      f"must be an int or bytes, got {type(key).__name__}")


def ops_keys(ops: Sequence[BlockOp]) -> int:
    """The batch's weight for slicing: its keys, and one per op without keys."""
    return sum(map(len, map(_HASHES, ops))) + len(ops)


def slices(decoded: DecodedOps, limit: int) -> list[DecodedOps]:
    """``decoded`` in pieces of about ``limit`` keys each (``[decoded]`` when it fits).

    Applied one after the other, the pieces leave the index as the whole batch
    does: ops in order; a BlockStored cut tail first (the index stores a chain
    tail first, so its eviction order is kept, and a reader between two pieces
    sees the chain's tail without its head: a shorter run, never a longer
    one); a BlockRemoved cut head first (a reader between pieces sees the run
    already cut). The index counts each piece as a batch. Checked whole first
    (:func:`check_ops`), so a bad op refuses the batch before any piece.
    """
    ops = decoded.ops
    if ops_keys(ops) <= limit:
        return [decoded]
    ops = check_ops(ops)
    pieces: list[list[BlockOp]] = [[]]
    room = limit
    for op in ops:
        kind, hashes, medium, group = op
        if len(hashes) + 1 <= room or not hashes:
            if room <= 0:
                pieces.append([])
                room = limit
            pieces[-1].append(op)
            room -= len(hashes) + 1
            continue
        left = len(hashes)  # keys not yet in a piece: hashes[:left] (STORED) or [-left:]
        while left:
            if room <= 1:
                pieces.append([])
                room = limit
            take = min(room - 1, left)
            done = len(hashes) - left
            # A BlockStored tail first, a BlockRemoved head first (see above).
            part = hashes[left - take:left] if kind == STORED else hashes[done:done + take]
            left -= take
            pieces[-1].append((kind, part, medium, group))
            room -= take + 1
    return [DecodedOps(decoded.ts, decoded.data_parallel_rank, piece, decoded.warnings)
            for piece in pieces if piece]
