"""The Lua scripts of :class:`~prefixkey.fleet.RedisPrefixIndex` (one per operation).

Block keys travel packed, one argument per event or group (redis-py spends
about a microsecond per argument): a first byte gives the keys' common width
(8 for int keys, 32 for sha256 digests), or 0 and then each key as a 2-byte
length and its bytes.

Every script gets ``KEYS[1] = "{ns}:epoch"`` (so a Redis Cluster client sends
it to the node of the namespace's slot) and ``ARGV[1] = "{ns}"``, the prefix of
every key it touches; all keys of a namespace share the ``{ns}`` hash tag.

A key's holders are a holder value in the hash ``{ns}:h:<group>`` (sorted
tokens, inline or interned: see :mod:`._redis_holders`).
"""

from __future__ import annotations

from typing import Final

from ._redis_holders import HOLDERS
from ._redis_namespace import NAMESPACE

#: What every script starts with: holder helpers, then ensure(), bury() and reap().
PRELUDE: Final = HOLDERS + NAMESPACE

#: Changes between interned holder sets kept for later rankings ({ns}:diffs is
#: dropped whole when it reaches this many; about 150 bytes each).
DIFFS_KEPT: Final = 200_000

#: Creates the namespace epoch (and the default media) when missing, then
#: registers a replica (none when rid is ''). ARGV: P, new epoch, rid, spec, ttl,
#: mode ('set' | 'restore': keep a registration another router restored first).
#: A new or changed registration gets a new slot: the old slot's holder tokens
#: are never read again. Returns {epoch, slot, generation}.
REGISTER: Final = PRELUDE + r"""
local P, rid, spec, ttl, mode = ARGV[1], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local ep = ensure()
if rid == '' then return {ep, 0, 0} end
local reg = redis.call('HGET', P .. ':reg', rid)
if reg and (reg == spec or mode == 'restore') then
  return {ep, tonumber(redis.call('HGET', P .. ':slot', rid)),
          tonumber(redis.call('HGET', P .. ':gen', rid))}
end
local old = redis.call('HGET', P .. ':slot', rid)
if old then bury(old) end
local slot = redis.call('INCR', P .. ':nextslot')
redis.call('UNLINK', P .. ':s:' .. slot .. ':lru')
redis.call('HSET', P .. ':reg', rid, spec)
redis.call('HSET', P .. ':slot', rid, slot)
redis.call('HSET', P .. ':gen', rid, slot)
redis.call('HDEL', P .. ':inflight', rid)
redis.call('SET', P .. ':s:' .. slot .. ':clock', 0)
if ttl > 0 then redis.call('EXPIRE', P .. ':s:' .. slot .. ':clock', ttl) end
return {ep, slot, slot}
"""

#: Forgets a replica. ARGV: P, rid. Returns the entries it held (-1: not registered).
REMOVE: Final = PRELUDE + r"""
local P, rid = ARGV[1], ARGV[2]
ensure()
local slot = redis.call('HGET', P .. ':slot', rid)
if not redis.call('HGET', P .. ':reg', rid) then return -1 end
local n = 0
if slot then
  n = redis.call('ZCARD', P .. ':s:' .. slot .. ':lru')
  bury(slot)
end
for _, h in ipairs({'reg', 'slot', 'gen', 'lastts', 'inflight'}) do
  redis.call('HDEL', P .. ':' .. h, rid)
end
return n
"""

#: Applies one chunk of a batch (at most a bounded number of blocks).
#: ARGV: P, epoch, rid, spec, nonce, chunk, ts, max_entries, ttl, events, mismatches,
#: then ops: 'C' | 'X' | ('S' | 'R', medium, group, n, n packed keys) ('X' is a clear
#: counted as a re-sync). Keys are packed in
#: one argument (a 2-byte length, then the key, each): one argument to parse per op.
#: Returns {'E', epoch} (namespace lost), {'U'} (not registered), {'S', spec, generation}
#: (re-registered: convert again), {'D'} (this chunk of this nonce was applied),
#: {'M'} (refused before any write: a 65,537th medium name) or {'A'} (applied).
#: Batch and event counters count in chunk 0 only.
APPLY: Final = PRELUDE + r"""
local P, rid = ARGV[1], ARGV[3]
local ep = ensure()
if ep ~= ARGV[2] then return {'E', ep} end
local stats = P .. ':stats'
local chunk = tonumber(ARGV[6])
local reg = redis.call('HGET', P .. ':reg', rid)
if not reg then
  if chunk == 0 then
    redis.call('HINCRBY', stats, 'unknown_replica_batches', 1)
    redis.call('HINCRBY', stats, 'unknown_replica_events', tonumber(ARGV[10]))
  end
  return {'U'}
end
if reg ~= ARGV[4] then return {'S', reg, redis.call('HGET', P .. ':gen', rid)} end
local inflight = redis.call('HGET', P .. ':inflight', rid)
if inflight then
  local sep = string.find(inflight, '|', 1, true)
  if string.sub(inflight, 1, sep - 1) == ARGV[5]
      and tonumber(string.sub(inflight, sep + 1)) >= chunk then
    return {'D'}
  end
end
local media, mids = P .. ':media', {}
local i, nargs = 12, #ARGV
while i <= nargs do  -- media ids first: a refusal must come before any write
  if ARGV[i] == 'C' or ARGV[i] == 'X' then
    i = i + 1
  else
    local name = ARGV[i + 1]
    if not mids[name] then
      local m = redis.call('HGET', media, name)
      if not m then
        m = redis.call('HLEN', media)
        if m >= 65536 then return {'M'} end
        redis.call('HSET', media, name, m)
      end
      mids[name] = tonumber(m)
    end
    i = i + 5
  end
end
local ts, maxn, ttl = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local c = {batches = 0, events = 0, stores = 0, refreshes = 0, removes = 0,
           removes_missing = 0, clears = 0, evictions = 0, hash_type_mismatches = 0,
           out_of_order_batches = 0, resyncs = 0}
if chunk == 0 then
  c.batches, c.events, c.hash_type_mismatches = 1, tonumber(ARGV[10]), tonumber(ARGV[11])
  local last = redis.call('HGET', P .. ':lastts', rid)
  if last and ts < tonumber(last) then
    c.out_of_order_batches = 1
  else
    redis.call('HSET', P .. ':lastts', rid, ARGV[7])
  end
end
local slot = tonumber(redis.call('HGET', P .. ':slot', rid))
local lru, clockkey = P .. ':s:' .. slot .. ':lru', P .. ':s:' .. slot .. ':clock'
local function incarnate()
  bury(slot)
  slot = redis.call('INCR', P .. ':nextslot')
  redis.call('HSET', P .. ':slot', rid, slot)
  lru, clockkey = P .. ':s:' .. slot .. ':lru', P .. ':s:' .. slot .. ':clock'
  redis.call('UNLINK', lru)
end
local clock = redis.call('GET', clockkey)
if not clock then  -- expired (ttl): its holder tokens must not come back
  incarnate()
  clock = 0
end
clock = tonumber(clock)
local count = redis.call('ZCARD', lru)
local function evict(fresh, at)  -- ``fresh``: holders read in this op, kept exact
  local m = redis.call('ZPOPMIN', lru)[1]
  local sep = string.find(m, '|', 1, true)
  local hk, f = P .. ':h:' .. string.sub(m, 1, sep - 1), string.sub(m, sep + 1)
  local v = redis.call('HGET', hk, f)
  if v then
    v = put(hk, f, v, drop(load(v), slot))
    if hk == at then fresh[f] = v end
  end
  count = count - 1
  c.evictions = c.evictions + 1
end
local stored_any, blocks = false, 0
i = 12
while i <= nargs do
  local kind = ARGV[i]
  if kind == 'C' or kind == 'X' then  -- 'X': a re-sync (an earlier batch was given up)
    incarnate()
    clock, count = 0, 0
    if kind == 'C' then c.clears = c.clears + 1 else c.resyncs = c.resyncs + 1 end
    i = i + 1
  else
    local mb = mids[ARGV[i + 1]]
    local g, n = ARGV[i + 2], tonumber(ARGV[i + 3])
    local hk = P .. ':h:' .. g
    blocks = blocks + n
    if kind == 'S' then
      if n > 0 then
        redis.call('SADD', P .. ':groups', g)
        stored_any = true
      end
      -- Tail first, in slices: one HMGET, one HSET and one ZADD per slice. ``fresh``
      -- holds the values this op wrote, so a key repeated in the op reads its own write.
      local fresh, sets, zs = {}, {}, {}
      local function flush()
        if #sets > 0 then redis.call('HSET', hk, unpack(sets)) end
        if #zs > 0 then redis.call('ZADD', lru, unpack(zs)) end
        sets, zs = {}, {}
      end
      local ks = keys_of(ARGV[i + 4], 2, n)
      local j = n
      while j >= 1 do
        local lo = math.max(j - 199, 1)
        local got = redis.call('HMGET', hk, unpack(ks, lo, j))
        for x = j, lo, -1 do
          local k = ks[x]
          local v = fresh[k]
          if v == nil then v = got[x - lo + 1] or '' end
          local nh, exact, had = add(load(v), slot, mb)
          clock = clock + 1
          if exact then
            c.refreshes = c.refreshes + 1
          else
            if not had then
              if count >= maxn then
                flush()
                evict(fresh, hk)  -- never k: k is not held by this slot
              end
              count = count + 1
            end
            c.stores = c.stores + 1
            local nv = intern(nh)  -- the field is written by the flush of this slice
            release(v)
            fresh[k] = nv
            sets[#sets + 1] = k
            sets[#sets + 1] = nv
          end
          zs[#zs + 1] = clock
          zs[#zs + 1] = g .. '|' .. k
        end
        flush()
        j = lo - 1
      end
    else
      for _, k in ipairs(keys_of(ARGV[i + 4], 2, n)) do
        local v = redis.call('HGET', hk, k)
        local nh, gone, still = v, false, true
        if v then nh, gone, still = del(load(v), slot, mb) end
        if not gone then
          c.removes_missing = c.removes_missing + 1
        else
          c.removes = c.removes + 1
          put(hk, k, v, nh)
          if not still then
            redis.call('ZREM', lru, g .. '|' .. k)
            count = count - 1
          end
        end
      end
    end
    i = i + 5
  end
end
reap(64 + 2 * blocks)  -- dead slots' tokens go faster than new ones come
settle()
redis.call('SET', clockkey, clock)
redis.call('HSET', P .. ':inflight', rid, ARGV[5] .. '|' .. ARGV[6])
for name, v in pairs(c) do
  if v ~= 0 then redis.call('HINCRBY', stats, name, v) end
end
if ttl > 0 then
  if stored_any then redis.call('EXPIRE', lru, ttl) end
  if stored_any or redis.call('TTL', clockkey) < 0 then redis.call('EXPIRE', clockkey, ttl) end
end
return {'A'}
"""

#: Ranks in one call. ARGV: P, epoch, number of media ids, media ids..., number of
#: queries, then per query: n candidates, their rids joined by newlines (JSON has
#: none), their generations joined by commas, n groups, then per
#: group: group, its keys packed (as APPLY's). Returns {'E', epoch}, or per query
#: {text, (spec or '', generation) per stale candidate}: the text has a line per
#: candidate, "!" when it was re-registered or removed since the caller read it
#: (its spec and generation follow the text, in order), else "=" and its runs per
#: group joined by "|", a run being "media ids:count" segments ("0.2:5,0:3").
#: One string per query: redis-py parses a reply element in microseconds.
#: The keys of a group are read in growing slices and the walk stops once no
#: candidate still matches; where a key's holders differ from the previous
#: key's, only the slots that changed are looked at (kept in {ns}:diffs when
#: both sets are interned).
RANK: Final = PRELUDE + r"""
local P = ARGV[1]
local ep = ensure()
if ep ~= ARGV[2] then return {'E', ep} end
local want = {}
for j = 4, 3 + tonumber(ARGV[3]) do want[tonumber(ARGV[j])] = true end
local i = 4 + tonumber(ARGV[3])
-- The slots of the tokens of holder tokens a missing from b, when b is a less 1 to
-- limit tokens, else nil (then decoding every token is cheaper). Along a prefix
-- chain the next key's holders are usually the previous ones less a replica or two.
-- When b is a subset of a (both sorted), a[m] == b[m - r] exactly while m is before
-- the (r+1)-th missing token: a binary search on single tokens finds each one,
-- with no substring built; one concatenation then checks the guess.
local function missing(a, b, limit)
  local na, nb = #a / 6, #b / 6
  local k = na - nb
  if k < 1 or k > limit then return nil end
  local at, lo = {}, 0
  for r = 0, k - 1 do
    local hi = na - 1
    while lo < hi do
      local m = math.floor((lo + hi) / 2)
      if m - r < nb and val(a, m) == val(b, m - r) then lo = m + 1 else hi = m end
    end
    at[r + 1] = lo
    lo = lo + 1
  end
  local parts, from = {}, 0
  for _, p in ipairs(at) do
    parts[#parts + 1] = string.sub(a, from * 6 + 1, p * 6)
    from = p + 1
  end
  parts[#parts + 1] = string.sub(a, from * 6 + 1)
  if table.concat(parts) ~= b then return nil end
  local slots = {}
  for _, p in ipairs(at) do slots[math.floor(val(a, p) / 65536)] = true end
  return slots
end
-- What changes from holder tokens a to b, all media (the wanted ones vary by call):
-- per slot whose tokens differ, its 4 bytes, its number of tokens in b (2 bytes)
-- and their medium ids (2 bytes each); '*' when many differ (b is decoded whole).
local function changes(a, b)
  local slots = missing(a, b, 8) or missing(b, a, 8)
  if not slots then return '*' end
  local parts = {}
  for slot in pairs(slots) do
    local t, n, ms = lower(b, slot * 65536), #b / 6, {}
    while t < n and math.floor(val(b, t) / 65536) == slot do
      ms[#ms + 1] = string.sub(b, t * 6 + 5, t * 6 + 6)
      t = t + 1
    end
    parts[#parts + 1] = string.sub(tok(slot, #ms), 1, 6) .. table.concat(ms)
  end
  return table.concat(parts)
end
-- Changes between two interned sets depend on their contents only, which their
-- content addresses name: kept in {ns}:diffs (bounded, best effort: a ranking
-- must not fail on a full server) for every later ranking over the same chain.
local DIFFS = P .. ':diffs'
local function split(s, sep, n)  -- the n parts of s between the bytes sep
  local out, from = {}, 1
  for j = 1, n - 1 do
    local at = string.find(s, sep, from, true)
    out[j] = string.sub(s, from, at - 1)
    from = at + 1
  end
  if n > 0 then out[n] = string.sub(s, from) end
  return out
end
local known, new = {}, {}  -- pair of interned values -> changes (false: not kept)
local function interned(v) return v and #v % 6 ~= 0 end
local out = {}
local nq = tonumber(ARGV[i])
i = i + 1
for q = 1, nq do
  local nc = tonumber(ARGV[i])
  local rids, gens = split(ARGV[i + 1], '\n', nc), split(ARGV[i + 2], ',', nc)
  i = i + 3
  local res, slots, stale, clocks, of = {}, {}, {}, {}, {}
  local cur = redis.call('HMGET', P .. ':gen', unpack(rids))
  local sl = redis.call('HMGET', P .. ':slot', unpack(rids))
  for j = 1, nc do
    if cur[j] ~= gens[j] then
      stale[#stale + 1] = redis.call('HGET', P .. ':reg', rids[j]) or ''
      stale[#stale + 1] = cur[j] or ''
    else
      res[j] = {}
      clocks[#clocks + 1] = P .. ':s:' .. sl[j] .. ':clock'
      of[#clocks] = j
    end
  end
  if #clocks > 0 then  -- a slot without its clock expired (ttl): it holds nothing
    for x, c in ipairs(redis.call('MGET', unpack(clocks))) do
      if c then slots[of[x]] = tonumber(sl[of[x]]) end
    end
  end
  local ng = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, ng do
    local hk, packed = P .. ':h:' .. ARGV[i], ARGV[i + 1]
    i = i + 2
    local alive, nalive, sig, start, segs = {}, 0, {}, {}, {}
    for j = 1, nc do
      if res[j] then
        segs[j] = {}
        if slots[j] then
          alive[slots[j]] = j
          nalive = nalive + 1
        end
      end
    end
    local pos, prev, at, step = 0, nil, 2, 16
    local function update(slot, ms)  -- slot's wanted media at key pos are ms (nil: none)
      local cur = sig[slot]
      if ms ~= nil and ms == cur then return end
      if cur then
        local seg = segs[alive[slot]]
        seg[#seg + 1] = cur .. ':' .. (pos - start[slot])
      end
      if ms then
        sig[slot], start[slot] = ms, pos
      else  -- the run ended (or, at the first key, never began)
        alive[slot] = nil
        nalive = nalive - 1
      end
    end
    while at <= #packed and nalive > 0 do
      local ks
      ks, at = keys_of(packed, at, step)
      step = math.min(step * 2, 512)
      local vals = redis.call('HMGET', hk, unpack(ks))
      -- Where the holders change from an interned set to another, the pair's name
      -- (both values); the changes kept for those pairs, and then the sets still to
      -- compare: one HMGET each.
      local pair, ask, need, p = {}, {}, {}, prev
      for x, v in ipairs(vals) do
        if v ~= p and interned(v) and interned(p) then
          local k = p .. v
          pair[x] = k
          if known[k] == nil then
            known[k] = false
            ask[#ask + 1] = k
          end
        end
        p = v
      end
      if #ask > 0 then
        for x, d in ipairs(redis.call('HMGET', DIFFS, unpack(ask))) do known[ask[x]] = d end
      end
      p = prev
      for x, v in ipairs(vals) do
        if v ~= p and v and not (pair[x] and known[pair[x]]) then
          need[#need + 1] = v
          if p then need[#need + 1] = p end
        end
        p = v
      end
      load_all(need)
      for x, h in ipairs(vals) do
        if h ~= prev then
          local d = '*'  -- the first key or a missing one: decode whole
          if h and prev then
            local k = pair[x]
            d = k and known[k]
            if not d then
              d = changes(load(prev), load(h))
              if k then
                known[k] = d
                new[#new + 1] = k
                new[#new + 1] = d
              end
            end
          end
          if d ~= '*' then  -- a few slots changed: look only at those
            local o = 1
            while o <= #d do
              local a, b, c, e, n1, n2 = string.byte(d, o, o + 5)
              local slot, n = ((a * 256 + b) * 256 + c) * 256 + e, n1 * 256 + n2
              if alive[slot] then
                local ms = nil
                for x = o + 6, o + 4 + 2 * n, 2 do
                  local m1, m2 = string.byte(d, x, x + 1)
                  local m = m1 * 256 + m2
                  if want[m] then ms = ms and (ms .. '.' .. m) or tostring(m) end
                end
                update(slot, ms)
              end
              o = o + 6 + 2 * n
            end
          else
            local now, t = {}, load(h)
            for off = 0, #t - 1, 1200 do  -- 1,200 bytes a C call, not one call per token
              local bs = {string.byte(t, off + 1, math.min(off + 1200, #t))}
              for x = 1, #bs, 6 do
                local slot = ((bs[x] * 256 + bs[x + 1]) * 256 + bs[x + 2]) * 256 + bs[x + 3]
                if alive[slot] then
                  local m = bs[x + 4] * 256 + bs[x + 5]
                  if want[m] then
                    now[slot] = now[slot] and (now[slot] .. '.' .. m) or tostring(m)
                  end
                end
              end
            end
            for slot in pairs(alive) do update(slot, now[slot]) end
          end
          prev = h
          if nalive == 0 then break end
        end
        pos = pos + 1
      end
    end
    for slot, j in pairs(alive) do
      if sig[slot] then  -- not walked: no keys in this group
        local seg = segs[j]
        seg[#seg + 1] = sig[slot] .. ':' .. (pos - start[slot])
      end
    end
    for j = 1, nc do
      if segs[j] then res[j][#res[j] + 1] = table.concat(segs[j], ',') end
    end
  end
  local lines = {}
  for j = 1, nc do
    lines[j] = res[j] and ('=' .. table.concat(res[j], '|')) or '!'
  end
  out[q] = {table.concat(lines, '\n'), unpack(stale)}
end
if #new > 0 then
  if redis.call('HLEN', DIFFS) >= """ + str(DIFFS_KEPT) + r""" then
    redis.pcall('UNLINK', DIFFS)
  end
  for x = 1, #new, 1000 do
    redis.pcall('HSET', DIFFS, unpack(new, x, math.min(x + 999, #new)))
  end
end
return out
"""

#: A replica's entries, least recently stored first: ARGV: P, rid, start, stop.
#: Returns {member "<group>|<key>", media ids "0,2"} pairs (a replica that does
#: not apply any more since its ttl expired holds nothing).
ENTRIES: Final = PRELUDE + r"""
local P, rid = ARGV[1], ARGV[2]
ensure()
local slot = redis.call('HGET', P .. ':slot', rid)
if not slot or redis.call('EXISTS', P .. ':s:' .. slot .. ':clock') == 0 then return {} end
slot = tonumber(slot)
local out = {}
for _, m in ipairs(redis.call('ZRANGE', P .. ':s:' .. slot .. ':lru', ARGV[3], ARGV[4])) do
  local sep = string.find(m, '|', 1, true)
  local h = load(redis.call('HGET', P .. ':h:' .. string.sub(m, 1, sep - 1),
                           string.sub(m, sep + 1)))
  local ms = {}
  if h ~= '' then
    for t = 0, #h / 6 - 1 do
      local a, b, c, d, x, y = string.byte(h, t * 6 + 1, t * 6 + 6)
      if ((a * 256 + b) * 256 + c) * 256 + d == slot then ms[#ms + 1] = x * 256 + y end
    end
  end
  out[#out + 1] = m
  out[#out + 1] = table.concat(ms, ',')
end
return out
"""

#: One bounded step of garbage collection. ARGV: P, budget. Drops the tokens of
#: dead slots (not a registered replica's current slot, or expired) from about
#: ``budget`` fields of one holder hash, resuming where the last step stopped
#: ({ns}:sweep). Returns the tokens dropped.
SWEEP: Final = PRELUDE + r"""
local P, budget = ARGV[1], tonumber(ARGV[2])
ensure()
local reaped = reap(budget)
settle()
local live = {}
for _, s in ipairs(redis.call('HVALS', P .. ':slot')) do
  if redis.call('EXISTS', P .. ':s:' .. s .. ':clock') == 1 then live[tonumber(s)] = true end
end
local groups = redis.call('SMEMBERS', P .. ':groups')
if #groups == 0 then return reaped end
table.sort(groups, function(a, b) return tonumber(a) < tonumber(b) end)
local state = P .. ':sweep'
local gi = tonumber(redis.call('HGET', state, 'group') or '1')
local cursor = redis.call('HGET', state, 'cursor') or '0'
if gi > #groups then gi, cursor = 1, '0' end
local hk = P .. ':h:' .. groups[gi]
local r = redis.call('HSCAN', hk, cursor, 'COUNT', budget)
local dropped, kv = 0, r[2]
for j = 1, #kv, 2 do
  local h, keep = load(kv[j + 1]), {}
  for t = 0, #h / 6 - 1 do
    local a, b, c, d = string.byte(h, t * 6 + 1, t * 6 + 4)
    if live[((a * 256 + b) * 256 + c) * 256 + d] then
      keep[#keep + 1] = string.sub(h, t * 6 + 1, t * 6 + 6)
    end
  end
  if #keep < #h / 6 then
    dropped = dropped + #h / 6 - #keep
    put(hk, kv[j], kv[j + 1], table.concat(keep))
  end
end
settle()
if r[1] == '0' then gi, cursor = gi + 1, '0' else cursor = r[1] end
redis.call('HSET', state, 'group', gi, 'cursor', cursor)
return dropped + reaped
"""
