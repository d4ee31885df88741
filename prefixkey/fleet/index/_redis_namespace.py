"""The Lua helpers that keep a :class:`~prefixkey.fleet.RedisPrefixIndex` namespace
trustworthy under Redis' own failure modes (prepended to every script, after
:data:`~._redis_holders.HOLDERS`).

**What no snapshot restores.** Every script first calls ``ensure()``: the
server's ``run_id`` (``INFO server``: new on every process start and on every
failover, and never written to an RDB or AOF file) must equal the one the
namespace recorded (``{ns}:run``), and the structure keys must all exist
(``{ns}:epoch``, ``:reg``, ``:slot``, ``:gen``, ``:media``, ``:nextslot``; the
three replica hashes hold a sentinel field ``""`` so that they exist with no
replica). Otherwise the server restarted (from an older snapshot, an AOF, or
empty), failed over, or keys were evicted or deleted: what is left cannot be
trusted, so ``reset()`` drops every entry (holder hashes, interned sets, LRUs,
clocks), keeps the registrations and media names, gives each registered
replica a new slot and the namespace a new epoch, and counts it
(``resets_after_restart`` or ``resets_after_missing_keys`` in ``{ns}:stats``).
Every router then sees the new epoch on its next call and registers again what
it knows; replicas fill up again from new events (an under-report, never an
over-report).

**Dead slots are reaped.** A cleared, re-registered or removed replica's slot
goes to the list ``{ns}:dead`` with its LRU (which names every key the slot
holds): ``reap(budget)`` drops the dead slot's tokens from up to ``budget`` of
those keys, so the holder fields of dead slots are deleted at a bounded cost
per call instead of waiting for the sweep to find them.
"""

from __future__ import annotations

from typing import Final

#: Holder hashes of KV-cache groups 0 .. this - 1 are deleted by a reset even if
#: ``{ns}:groups`` (which names them) was itself lost.
PROBED_GROUPS: Final = 32

NAMESPACE: Final = r"""
local NS = ARGV[1]
local function run_id()
  return string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
end
local function reset()  -- drop every entry; keep registrations and media names
  local doomed, groups = {}, redis.call('SMEMBERS', NS .. ':groups')
  for g = 0, """ + str(PROBED_GROUPS - 1) + r""" do groups[#groups + 1] = tostring(g) end
  for _, g in ipairs(groups) do doomed[#doomed + 1] = NS .. ':h:' .. g end
  for _, s in ipairs(redis.call('HVALS', NS .. ':slot')) do
    doomed[#doomed + 1] = NS .. ':s:' .. s .. ':lru'
    doomed[#doomed + 1] = NS .. ':s:' .. s .. ':clock'
  end
  for _, s in ipairs(redis.call('LRANGE', NS .. ':dead', 0, -1)) do
    doomed[#doomed + 1] = NS .. ':s:' .. s .. ':lru'
  end
  for _, k in ipairs({'groups', 'sets', 'refs', 'diffs', 'sweep', 'dead', 'inflight',
                      'lastts'}) do
    doomed[#doomed + 1] = NS .. ':' .. k
  end
  for x = 1, #doomed, 1000 do
    redis.call('UNLINK', unpack(doomed, x, math.min(x + 999, #doomed)))
  end
  -- Slots only grow: a lost counter restarts above every slot still named.
  local next = tonumber(redis.call('GET', NS .. ':nextslot') or '0')
  for _, s in ipairs(redis.call('HVALS', NS .. ':slot')) do
    next = math.max(next, tonumber(s) or 0)
  end
  local regs = redis.call('HGETALL', NS .. ':reg')
  local gens, had = {}, redis.call('HGETALL', NS .. ':gen')
  for x = 1, #had, 2 do gens[had[x]] = had[x + 1] end
  redis.call('UNLINK', NS .. ':slot', NS .. ':gen')
  redis.call('HSET', NS .. ':slot', '', 0)
  redis.call('HSET', NS .. ':gen', '', 0)
  for x = 1, #regs, 2 do
    local rid = regs[x]
    if rid ~= '' then
      next = next + 1
      redis.call('HSET', NS .. ':slot', rid, next)
      redis.call('HSET', NS .. ':gen', rid, gens[rid] or next)
      redis.call('SET', NS .. ':s:' .. next .. ':clock', 0)
    end
  end
  redis.call('SET', NS .. ':nextslot', next)
end
-- The namespace's epoch, after creating the namespace or resetting what cannot be
-- trusted (see the module docs of _redis_namespace).
local function ensure()
  local run, got = run_id(), redis.call('MGET', KEYS[1], NS .. ':run')
  local ep, why = got[1], nil
  if got[2] ~= run then
    why = 'resets_after_restart'
  elseif not ep or redis.call('EXISTS', NS .. ':reg', NS .. ':slot', NS .. ':gen',
                                NS .. ':media', NS .. ':nextslot') ~= 5 then
    why = 'resets_after_missing_keys'
  else
    return ep
  end
  local existed = ep or redis.call('EXISTS', NS .. ':reg', NS .. ':slot', NS .. ':media',
                                   NS .. ':nextslot', NS .. ':groups') > 0
  reset()
  local t = redis.call('TIME')
  ep = string.sub(redis.sha1hex(run .. t[1] .. '.' .. t[2] .. (ep or '')), 1, 16)
  redis.call('SET', KEYS[1], ep)
  redis.call('SET', NS .. ':run', run)
  for name, id in pairs({GPU = 0, CPU = 1, STORAGE = 2}) do
    redis.call('HSETNX', NS .. ':media', name, id)
  end
  redis.call('HSET', NS .. ':reg', '', '')
  if existed then redis.call('HINCRBY', NS .. ':stats', why, 1) end
  return ep
end
-- A replica's slot dies (cleared, re-registered, removed): its LRU names the keys
-- whose holder tokens reap() will drop.
local function bury(slot)
  redis.call('UNLINK', NS .. ':s:' .. slot .. ':clock')
  local lru = NS .. ':s:' .. slot .. ':lru'
  if redis.call('EXISTS', lru) == 1 then
    redis.call('PERSIST', lru)
    redis.call('RPUSH', NS .. ':dead', slot)
  end
end
-- Drops dead slots' tokens from up to ``budget`` keys (the caller settles the
-- reference counts). Returns the tokens dropped.
local function reap(budget)
  local DEAD, dropped = NS .. ':dead', 0
  while budget > 0 do
    local s = redis.call('LINDEX', DEAD, 0)
    if not s then break end
    local got = redis.call('ZPOPMIN', NS .. ':s:' .. s .. ':lru', budget)
    if #got == 0 then
      redis.call('LPOP', DEAD)
    else
      local slot = tonumber(s)
      for x = 1, #got, 2 do
        local m = got[x]
        local sep = string.find(m, '|', 1, true)
        local hk, f = NS .. ':h:' .. string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
        local v = redis.call('HGET', hk, f)
        if v then
          local h = load(v)
          local kept = drop(h, slot)
          if #kept < #h then
            dropped = dropped + (#h - #kept) / 6
            put(hk, f, v, kept)
          end
        end
        budget = budget - 1
      end
    end
  end
  return dropped
end
"""
