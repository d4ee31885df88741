"""One simulated replica's prefix cache: vLLM v1's block pool, as the simulator needs it.

The behaviour follows vLLM 0.31's ``vllm/v1/core/block_pool.py`` and
``kv_cache_manager.py`` (one full-attention KV-cache group), read, not copied:

* The pool has ``num_blocks`` blocks; one is the *null block*, taken at start
  and never used, so ``num_blocks - 1`` hold KV.
* Free blocks wait in a *free queue*. A new block is taken from its front;
  a taken block that still had a hash is evicted then (its key leaves the
  cache: ``BlockRemoved``).
* The lookup (``get_computed_blocks``, at admission) walks the request's
  keys from block 0 while they are cached, capped at ``num_tokens - 1``
  tokens (whole blocks): the last token is always computed.
* A hit block is *touched*: its reference count goes up and, at 0 before, it
  leaves the free queue (no longer evictable). Admission needs the new
  blocks plus the touched evictable ones to be free, or the request waits.
* The request's full prompt blocks are cached when allocated (their keys
  enter the cache: ``BlockStored``); a key already cached by another block
  is not cached again.
* A finished request frees its blocks in reverse order: each block's count
  goes down, and at 0 a block with a hash goes to the back of the free queue
  (least recently used evicted first, a prompt's tail before its head) and a
  block without one to the front (reused first).

Simplifications, stated: the blocks of output tokens are allocated at
admission with the prompt's and are never cached (a trace gives no keys for
them); there is no preemption (a request that cannot get its blocks waits).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import InvalidRequestError
from ..events import EventHash

__all__ = ["Admission", "BlockPool"]


@dataclass(slots=True)
class Admission:
    """What admitting a request did: its blocks, its hit, and the cache's changes."""

    blocks: list[int]
    hit_blocks: int
    removed: list[EventHash] = field(default_factory=list)
    stored: list[EventHash] = field(default_factory=list)
    #: The key before ``stored``'s first (its parent), None at block 0.
    parent: EventHash | None = None


class BlockPool:
    """vLLM's block pool for one KV-cache group (see the module docs)."""

    __slots__ = ("_cached", "_free", "_hash", "_ref", "block_size", "num_blocks")

    def __init__(self, num_blocks: int, block_size: int) -> None:
        if num_blocks < 2:
            raise InvalidRequestError(
                "num_blocks", f"a pool needs at least 2 blocks (one is vLLM's null block), "
                f"got {num_blocks}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self._free: OrderedDict[int, None] = OrderedDict.fromkeys(range(num_blocks))
        self._free.popitem(last=False)  # the null block
        self._hash: list[EventHash | None] = [None] * num_blocks
        self._ref = [0] * num_blocks
        self._cached: dict[EventHash, int] = {}

    @property
    def capacity(self) -> int:
        """Blocks that can hold KV (all but the null block)."""
        return self.num_blocks - 1

    def free_blocks(self) -> int:
        return len(self._free)

    def used_blocks(self) -> int:
        """Blocks held by running requests (what vLLM's KV-cache usage counts)."""
        return self.capacity - len(self._free)

    def cached_keys(self) -> int:
        return len(self._cached)

    def lookup(self, keys: Sequence[EventHash], num_tokens: int) -> int:
        """Leading blocks of ``keys`` cached, capped at ``num_tokens - 1`` tokens."""
        cached = self._cached
        n = 0
        for key in keys[:max(num_tokens - 1, 0) // self.block_size]:
            if key not in cached:
                break
            n += 1
        return n

    def admit(self, keys: Sequence[EventHash], num_tokens: int,
              total_tokens: int) -> Admission | None:
        """Look up, touch and allocate for a request; None when its blocks are not free.

        ``keys`` are the prompt's full-block keys, ``total_tokens`` the
        prompt and output tokens the request will hold.
        """
        bs = self.block_size
        hit = self.lookup(keys, num_tokens)
        hit_blocks = [self._cached[k] for k in keys[:hit]]
        ref = self._ref
        evictable = sum(1 for b in hit_blocks if ref[b] == 0)
        need = -(-total_tokens // bs) - hit
        if need + evictable > len(self._free):
            return None
        free = self._free
        for b in hit_blocks:  # touch
            if ref[b] == 0:
                del free[b]
            ref[b] += 1
        out = Admission(hit_blocks, hit, parent=keys[hit - 1] if hit else None)
        hashes, cached = self._hash, self._cached
        for _ in range(need):
            b, _none = free.popitem(last=False)
            old = hashes[b]
            if old is not None:  # evicted: its key leaves the cache
                if cached.get(old) == b:
                    del cached[old]
                    out.removed.append(old)
                hashes[b] = None
            ref[b] = 1
            out.blocks.append(b)
        full = min(num_tokens // bs, len(keys))
        for i in range(hit, full):
            key = keys[i]
            if key in cached:
                if out.stored:
                    break  # the run of new keys ends at a key cached elsewhere
                out.parent = key
                continue
            b = out.blocks[i]
            cached[key] = b
            hashes[b] = key
            out.stored.append(key)
        return out

    def release(self, blocks: Sequence[int]) -> None:
        """Free a finished request's blocks, in reverse order (tail evicted first)."""
        ref, hashes, free = self._ref, self._hash, self._free
        front: list[int] = []
        for b in reversed(blocks):
            ref[b] -= 1
            if ref[b] == 0:
                if hashes[b] is None:
                    front.append(b)
                else:
                    free[b] = None  # the back: evicted last
        for b in reversed(front):  # the front, the first of ``front`` first
            free[b] = None
            free.move_to_end(b, last=False)
