"""The simulator's block pool against vLLM 0.31's block pool, case by case.

Each case is derived from reading ``vllm/v1/core/block_pool.py`` and
``kv_cache_manager.py`` of vLLM 0.31 (facts, not code):

* ``BlockPool.__init__`` takes the null block off the free queue: ``num_blocks - 1`` usable.
* ``get_computed_blocks`` caps the hit at ``num_tokens - 1`` tokens.
* ``free`` frees a request's blocks in reverse order; ``free_blocks`` appends
  blocks with a hash to the back of the free queue and puts blocks without one
  at the front; ``get_new_blocks`` takes from the front and evicts the hash of
  a block it takes (``BlockRemoved``).
* ``touch`` raises a hit block's reference count and takes it off the free queue.
* ``allocate_slots`` refuses when the new blocks plus the evictable hit blocks
  exceed the free ones.

Keys here are small ints standing for block keys; block size 4.
"""

from __future__ import annotations

from prefixkey.analysis import BlockPool

BS = 4


def keys(*ids: int) -> list[int]:
    return list(ids)


def test_the_null_block_is_not_usable() -> None:
    pool = BlockPool(5, BS)
    assert pool.capacity == 4 and pool.free_blocks() == 4
    assert pool.admit(keys(1, 2, 3, 4, 5), 20, 20) is None  # 5 blocks > 4
    assert pool.admit(keys(1, 2, 3, 4), 16, 16) is not None


def test_the_hit_is_capped_at_num_tokens_minus_one() -> None:
    pool = BlockPool(10, BS)
    first = pool.admit(keys(1, 2), 8, 8)
    assert first is not None and first.hit_blocks == 0 and first.stored == [1, 2]
    pool.release(first.blocks)
    again = pool.admit(keys(1, 2), 8, 8)  # exactly two blocks: the last is computed again
    assert again is not None and again.hit_blocks == 1
    pool.release(again.blocks)
    longer = pool.admit(keys(1, 2), 9, 9)  # one token more: both blocks hit
    assert longer is not None and longer.hit_blocks == 2


def test_lru_eviction_and_the_tail_first() -> None:
    pool = BlockPool(5, BS)  # 4 usable
    a = pool.admit(keys(1, 2), 8, 8)
    assert a is not None
    pool.release(a.blocks)  # free queue: [2 free blocks..., key 2's block, key 1's block]
    b = pool.admit(keys(3, 4), 8, 8)  # takes the 2 never-used blocks first
    assert b is not None and b.removed == []
    pool.release(b.blocks)
    c = pool.admit(keys(5), 5, 5)  # 2 blocks: evicts a's tail (2) then a's head (1)
    assert c is not None and c.removed == [2, 1]
    assert pool.admit(keys(3, 4), 9, 9) is None  # 1 new + 2 evictable hits > 2 free
    pool.release(c.blocks)
    d = pool.admit(keys(3, 4), 9, 9)  # b's blocks are still cached
    assert d is not None and d.hit_blocks == 2


def test_a_hit_block_is_touched_out_of_the_free_queue() -> None:
    pool = BlockPool(4, BS)  # 3 usable
    a = pool.admit(keys(1), 5, 5)  # 2 blocks, key 1 cached
    assert a is not None
    pool.release(a.blocks)
    b = pool.admit(keys(1), 5, 5)  # hits key 1: touched, plus one new block
    assert b is not None and b.hit_blocks == 1 and pool.free_blocks() == 1
    # one block left; a request needing 2 must wait, and key 1 is not evictable
    assert pool.admit(keys(9), 5, 5) is None
    c = pool.admit(keys(1), 5, 5)  # shares key 1's block (ref count 2), one new block
    assert c is not None and c.hit_blocks == 1 and pool.free_blocks() == 0
    pool.release(b.blocks)  # key 1's block is still held by c
    assert pool.lookup(keys(1), 5) == 1
    d = pool.admit(keys(7), 4, 4)  # takes b's freed hashless block, not key 1's
    assert d is not None and d.removed == []


def test_admission_counts_evictable_hit_blocks() -> None:
    pool = BlockPool(4, BS)  # 3 usable
    a = pool.admit(keys(1, 2), 9, 9)  # 3 blocks: keys 1, 2 and a partial block
    assert a is not None
    pool.release(a.blocks)
    # hits 1 and 2 (both in the free queue) and needs 2 new blocks: 4 > 3 free
    assert pool.admit(keys(1, 2), 9, 16) is None
    assert pool.admit(keys(1, 2), 9, 12) is not None  # 2 hit + 1 new = 3


def test_blocks_without_a_hash_are_reused_first() -> None:
    pool = BlockPool(6, BS)  # 5 usable
    a = pool.admit(keys(1), 4, 12)  # key 1 cached; two output blocks without a hash
    assert a is not None and a.stored == [1]
    pool.release(a.blocks)
    b = pool.admit(keys(8), 4, 8)  # 2 blocks: the never-used ones... then the hashless
    assert b is not None and b.removed == []
    c = pool.admit(keys(9), 4, 8)  # the hashless ones before key 1's block
    assert c is not None and c.removed == [] and pool.lookup(keys(1), 5) == 1


def test_a_key_cached_by_another_block_is_not_cached_twice() -> None:
    pool = BlockPool(10, BS)
    a = pool.admit(keys(1, 2), 8, 8)  # hit 0; caches 1 and 2
    b = pool.admit(keys(1, 2), 8, 8)  # while a runs: hits 1 (cap), 2 is cached by a
    assert a is not None and b is not None
    assert b.hit_blocks == 1 and b.stored == [] and pool.cached_keys() == 2
