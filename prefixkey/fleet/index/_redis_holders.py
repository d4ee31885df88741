"""The Lua helpers of :class:`~prefixkey.fleet.RedisPrefixIndex`'s scripts that read
and edit holder sets (prepended to the scripts of :mod:`._redis_lua`).

A block key's *holders* are sorted 6-byte tokens: a replica slot (4 bytes,
big-endian) then a medium id (2 bytes). No bit table, so no width limit on
media or replicas (Lua's bit operations are 32-bit; a slot is a number below
2**32, a token value below 2**48, exact in Lua's doubles). Tokens are compared
as numbers, never as strings: Redis' Lua compares strings with strcoll (the
server's locale). A sorted string is canonical: two keys with the same holders
have equal strings.

**Interning.** The holder hash ``{ns}:h:<group>`` maps a block key to a holder
*value*: up to :data:`INLINE_TOKENS` tokens are stored inline (a length that is
a multiple of 6); a larger set is stored once, in ``{ns}:sets``, under its
content address ``"@" .. sha1hex(tokens)`` (41 bytes: never a multiple of 6),
which the key stores instead; ``{ns}:refs`` counts the keys referring to each
set (written once per set at the end of a call), deleted with its last
reference. Data written inline by the layout before interning (any length)
reads the same and is interned when next changed. So along a prefix chain held by 256
replicas a key costs 41 bytes instead of 1.5 kB, ranking fetches a few bytes
per key, and two keys with the same holders still compare equal in O(1) (Lua
interns its strings). A content address never changes meaning, so what is
derived from two sets (the changes ranking keeps in ``{ns}:diffs``) stays true.
"""

from __future__ import annotations

from typing import Final

#: Holder sets up to this many tokens are stored inline in the key's field.
INLINE_TOKENS: Final = 8

#: Token helpers, and loading, interning and releasing holder values.
HOLDERS: Final = r"""
local function tok(slot, mid)
  return string.char(math.floor(slot / 16777216) % 256, math.floor(slot / 65536) % 256,
                     math.floor(slot / 256) % 256, slot % 256, math.floor(mid / 256), mid % 256)
end
local function val(h, i)
  local a, b, c, d, e, f = string.byte(h, i * 6 + 1, i * 6 + 6)
  return ((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f
end
local function lower(h, v)
  local lo, hi = 0, #h / 6
  while lo < hi do
    local m = math.floor((lo + hi) / 2)
    if val(h, m) < v then lo = m + 1 else hi = m end
  end
  return lo
end
local function has_slot(h, slot)
  local i = lower(h, slot * 65536)
  return i < #h / 6 and math.floor(val(h, i) / 65536) == slot
end
local function add(h, slot, mid)
  local v = slot * 65536 + mid
  local had = has_slot(h, slot)
  local j = lower(h, v)
  if j < #h / 6 and val(h, j) == v then return h, true, had end
  return string.sub(h, 1, j * 6) .. tok(slot, mid) .. string.sub(h, j * 6 + 1), false, had
end
local function del(h, slot, mid)
  local v = slot * 65536 + mid
  local j = lower(h, v)
  if j >= #h / 6 or val(h, j) ~= v then return h, false, true end
  h = string.sub(h, 1, j * 6) .. string.sub(h, j * 6 + 7)
  return h, true, has_slot(h, slot)
end
local function drop(h, slot)
  local i, j = lower(h, slot * 65536), lower(h, (slot + 1) * 65536)
  return string.sub(h, 1, i * 6) .. string.sub(h, j * 6 + 1)
end
local function keys_of(p, pos, count)  -- up to count keys of packed p, from byte pos
  local out, n, width = {}, 0, string.byte(p, 1)
  if width > 0 then  -- keys of one width
    while n < count and pos <= #p do
      n = n + 1
      out[n] = string.sub(p, pos, pos + width - 1)
      pos = pos + width
    end
    return out, pos
  end
  while n < count and pos <= #p do
    local a, b = string.byte(p, pos, pos + 1)
    local len = a * 256 + b
    n = n + 1
    out[n] = string.sub(p, pos + 2, pos + 1 + len)
    pos = pos + 2 + len
  end
  return out, pos
end
local SETS, REFS = ARGV[1] .. ':sets', ARGV[1] .. ':refs'
local loaded = {}  -- holder value -> tokens, for this call
local function load(v)  -- the tokens of holder value v ('' or nil: none)
  if not v or #v % 6 == 0 then return v or '' end
  local h = loaded[v]
  if h == nil then
    h = redis.call('HGET', SETS, v) or ''  -- never missing while v is referred to
    loaded[v] = h
  end
  return h
end
local function load_all(vs)  -- load the interned values among vs: one HMGET
  local ask, seen = {}, {}
  for _, v in ipairs(vs) do
    if #v % 6 ~= 0 and loaded[v] == nil and not seen[v] then
      seen[v] = true
      ask[#ask + 1] = v
    end
  end
  for x = 1, #ask, 1000 do  -- unpack is bounded by Lua's C stack
    local got = redis.call('HMGET', SETS, unpack(ask, x, math.min(x + 999, #ask)))
    for y = 1, #got do loaded[ask[x + y - 1]] = got[y] or '' end
  end
end
-- Reference counts change in this call's memory and are written once per set by
-- settle() (one HINCRBY per set, not per key: along a chain many keys get the same
-- set); until then a new record lives in ``loaded``, which every read here checks first.
local pending, ids = {}, {}  -- value -> change of its count; tokens -> value
local function intern(h)  -- the value of tokens h, referred to once more
  if #h <= """ + str(INLINE_TOKENS * 6) + r""" then return h end
  local v = ids[h]
  if v == nil then
    v = '@' .. redis.sha1hex(h)
    ids[h], loaded[v] = v, h
  end
  pending[v] = (pending[v] or 0) + 1
  return v
end
local function release(v)  -- holder value v is referred to once less
  if v and #v % 6 ~= 0 then pending[v] = (pending[v] or 0) - 1 end
end
local function settle()  -- write the reference counts: new records in, unused ones out
  for v, d in pairs(pending) do
    if d ~= 0 then
      local n = redis.call('HINCRBY', REFS, v, d)
      if n <= 0 then
        redis.call('HDEL', REFS, v)
        redis.call('HDEL', SETS, v)
      elseif n == d then  -- no key referred to it before this call
        redis.call('HSET', SETS, v, loaded[v])
      end
    end
  end
  pending = {}
end
local function put(hk, field, old, h)  -- field's value old becomes that of tokens h
  local v = intern(h)
  release(old)
  if v == '' then redis.call('HDEL', hk, field) else redis.call('HSET', hk, field, v) end
  return v
end
"""
