"""How RedisPrefixIndex writes things to Redis: scheme specs, replica ids, block keys.

A scheme is shared as a spec (JSON) that every router rebuilds its own
:class:`~prefixkey.core.Hasher` from; a replica id is a JSON ``[name,
dp_rank]`` field; block keys travel to the scripts packed in one string (see
:func:`pack_keys`) and are stored as :func:`key_bytes`; a batch's
:data:`~prefixkey.events.BlockOp` go as chunks of script ops (:func:`batch_ops`); the
ranking script answers runs as text (:class:`RunTexts`).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Sequence
from typing import Any, Final, cast

from ...core import Hasher, block_hash_to_int64
from ...errors import InvalidRequestError, PrefixKeyError
from ...events import CLEARED, STORED, BlockOp, EventHash
from ._memory import DEFAULT_MEDIUM, GroupSpec, ReplicaId, ReplicaScheme
from ._ops import medium_name
from ._walk import Run

__all__ = ["RunTexts", "batch_ops", "key_bytes", "pack_keys", "rid_field", "rid_of",
           "scheme_from_spec", "scheme_spec", "unpack_int"]


def scheme_spec(scheme: ReplicaScheme) -> str:
    """A scheme as the JSON text stored in Redis (what another router rebuilds it from)."""
    h = scheme.hasher
    if h.algorithm.engine_bound:
        raise InvalidRequestError(
            "scheme", f"hash_algo {h.algorithm.name} is bound to one engine process (builtin "
            "hash()): its keys cannot be reproduced by another router, so it cannot be shared"
        )
    seed = h.none_hash.seed if h.none_hash.seed_source == "PYTHONHASHSEED" else None
    spec = {
        "vllm_version": h.vllm_version, "hash_algo": h.algorithm.name,
        "python_hash_seed": seed, "block_size": h.block_size, "lookahead": h.lookahead,
        "publishes": scheme.publishes,
        "groups": [[g.block_size, g.kind] for g in scheme.groups],
    }
    rebuilt = scheme_from_spec(json.dumps(spec))
    if rebuilt.key != scheme.key:
        raise InvalidRequestError("scheme", f"{h!r} cannot be rebuilt from its spec {spec}")
    return json.dumps(spec, sort_keys=True, separators=(",", ":"))


def scheme_from_spec(spec: str | bytes) -> ReplicaScheme:
    """The scheme (with a new Hasher) a stored spec describes.

    A spec that is not what :func:`scheme_spec` writes raises
    :class:`~prefixkey.errors.InvalidRequestError` (field ``spec``, or the
    scheme field at fault).
    """
    try:
        d = json.loads(spec)
    except ValueError as exc:  # not JSON, or not UTF-8
        raise InvalidRequestError("spec", f"is not JSON: {exc}") from None
    if not isinstance(d, dict):
        raise InvalidRequestError("spec", f"must be a JSON object, got {type(d).__name__}")
    try:
        hasher = Hasher(block_size=d["block_size"], hash_algo=d["hash_algo"],
                        python_hash_seed=d["python_hash_seed"], vllm_version=d["vllm_version"],
                        lookahead=d["lookahead"], strict=False)
        groups = tuple(GroupSpec(bs, kind) for bs, kind in d["groups"])
        return ReplicaScheme(hasher, publishes=d["publishes"], groups=groups)
    except PrefixKeyError:
        raise
    except (KeyError, TypeError, ValueError) as exc:  # a key missing, a value of a bad shape
        what = f"lacks {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InvalidRequestError("spec", f"is not a scheme spec: {what}") from None


def rid_field(rid: ReplicaId) -> bytes:
    return json.dumps([rid.name, rid.dp_rank]).encode()


def rid_of(field: bytes) -> ReplicaId:
    name, dp = json.loads(field)
    return ReplicaId(name, dp)


_UINT64: Final = 1 << 64


def key_bytes(key: EventHash) -> bytes:
    """A key as a holder-hash field: 8 bytes for ints in uint64 range (what vLLM's
    sha256-era events carry), ``-`` and 8 bytes for negative ones above -2**64
    (builtin-hash eras), decimal otherwise (20+ digits: never 8 or 9 long)."""
    if isinstance(key, bytes):
        return key
    if 0 <= key < _UINT64:
        return key.to_bytes(8, "big")
    if -_UINT64 < key < 0:
        return b"-" + (-key).to_bytes(8, "big")
    return str(key).encode()


def pack_keys(keys: Sequence[EventHash]) -> bytes:
    """Keys as the scripts read them, in one string.

    A first byte gives the keys' common width (8 for ints in uint64 range, the
    digest length for digests of one length); else 0, then each key as a
    2-byte length and its :func:`key_bytes`.
    """
    if keys and type(keys[0]) is int:
        try:  # struct refuses what is not an int in uint64 range
            return b"\x08" + struct.pack(f">{len(keys)}Q", *keys)
        except struct.error:
            pass
    width = len(keys[0]) if keys and isinstance(keys[0], bytes) else 0
    if 0 < width < 256 and all(isinstance(k, bytes) and len(k) == width for k in keys):
        return bytes((width,)) + b"".join(cast("list[bytes]", keys))
    parts = [b"\x00"]
    for key in keys:
        raw = key_bytes(key)
        if len(raw) > 0xFFFF:
            raise InvalidRequestError("block_hashes", f"a {len(raw):,}-byte key is too long")
        parts.append(len(raw).to_bytes(2, "big") + raw)
    return b"".join(parts)


def unpack_int(raw: bytes) -> int:
    if len(raw) == 8:
        return int.from_bytes(raw, "big")
    if len(raw) == 9 and raw[:1] == b"-":
        return -int.from_bytes(raw[1:], "big")
    return int(raw)


class RunTexts:
    """The runs of a candidate's answer line (``=`` then per group ``media ids:count``
    segments, comma-separated, groups joined by ``|``: ``=0.2:5,0:3|0:8``).

    Lines repeat (candidates with equal runs, rankings over the same prefix),
    so each is parsed once; at most ``limit`` are kept.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._lines: dict[bytes, tuple[Run, ...]] = {}
        self._masks: dict[bytes, int] = {}
        self._limit = limit

    @staticmethod
    def grouped(text: bytes, n: int) -> list[tuple[bytes, list[int]]]:
        """A query's answer cut in its ``n`` candidates' lines, equal lines grouped:
        ``(line, positions)`` in order of first appearance."""
        seen: dict[bytes, list[int]] = {}
        for j, line in zip(range(n), text.split(b"\n") if n else (), strict=True):
            seen.setdefault(line, []).append(j)
        return list(seen.items())

    def runs(self, line: bytes) -> tuple[Run, ...]:
        runs = self._lines.get(line)
        if runs is None:
            if len(self._lines) >= self._limit:
                self._lines.clear()
            runs = self._lines[line] = tuple(self._run(g) for g in line[1:].split(b"|"))
        return runs

    def _run(self, text: bytes) -> Run:
        if not text:
            return ()
        masks = self._masks
        run = []
        for seg in text.split(b","):
            sig, _, n = seg.partition(b":")
            mask = masks.get(sig)
            if mask is None:
                mask = masks[sig] = sum(1 << int(m) for m in sig.split(b"."))
            run.append((mask, int(n)))
        return tuple(run)


def batch_ops(ops: Iterable[BlockOp], publishes: str | None, limit: int
              ) -> tuple[list[list[Any]], int]:
    """A batch's :data:`~prefixkey.events.BlockOp` as the apply script's ops, in chunks of
    at most ``limit`` keys, and how many keys were not in the form the replica publishes
    (``publishes``; None: not registered, nothing counted)."""
    chunks: list[list[Any]] = [[]]
    room = limit
    mismatches = 0
    for kind_code, hashes, published_medium, group in ops:
        if kind_code == CLEARED:
            if room < 1:
                chunks.append([])
                room = limit
            chunks[-1].append(b"C")
            room -= 1
            continue
        keys: list[EventHash]
        if publishes == "int":
            keys = [block_hash_to_int64(h) if isinstance(h, bytes) else h for h in hashes]
        else:
            keys = [h for h in hashes if isinstance(h, bytes)]
            mismatches += len(hashes) - len(keys)
        medium = DEFAULT_MEDIUM if published_medium is None else medium_name(published_medium)
        kind = b"S" if kind_code == STORED else b"R"
        end = len(keys)
        while True:  # a BlockStored's tail first, as the script stores it
            if room < 1:
                chunks.append([])
                room = limit
            take = min(room, end)
            chunks[-1] += [kind, medium, group or 0, take, pack_keys(keys[end - take:end])]
            room -= take
            end -= take
            if not end:
                break
    return chunks, (mismatches if publishes is not None else 0)
