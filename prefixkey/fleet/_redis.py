"""A prefix index shared by a fleet of routers, kept in Redis.

:class:`RedisPrefixIndex` has the interface the :class:`~prefixkey.fleet.Router`
reads (:class:`PrefixIndexBackend`, which the in-memory
:class:`~prefixkey.fleet.PrefixIndex` satisfies too) and the semantics of
:mod:`prefixkey.fleet._index` (idempotent stores and removes, per group and medium,
int vs bytes publishers, counters), with these differences:

* **Layout** (``ns`` is the namespace)::

    ns:reg                      hash  replica id (JSON) -> scheme spec (JSON)
    ns:media                    hash  medium name -> bit (GPU 1, CPU 2, STORAGE 4, then 8, ...)
    ns:stats                    hash  counters (HINCRBY)
    ns:lastts                   hash  replica id -> ts of its newest batch
    ns:r:<name>:<dp>:t:<group>  hash  published key -> media bitmask
    ns:r:<name>:<dp>:lru        zset  "<group>|<key>" scored by the store clock
    ns:r:<name>:<dp>:groups     set   groups the replica stored into
    ns:r:<name>:<dp>:clock      str   the replica's store clock

  Int keys are stored as decimal ASCII, digest keys as raw bytes (a replica
  publishes one form). ``<name>`` is percent-encoded.
* **Atomicity**: one :meth:`apply` is one ``EVALSHA`` of a Lua script, so a
  batch is applied whole or not at all and concurrent routers never see half
  of it. The script checks the replica's registration against the one the
  caller converted keys under and, if another router re-registered it, returns
  the new one so the batch is converted again and re-sent.
* **Lookup in one round trip**: :meth:`RedisPrefixIndex.lookup` (and
  :meth:`~RedisPrefixIndex.snapshot`, :func:`route`) send one ``EVALSHA``
  returning, per candidate replica and group, the media masks of the leading
  run of the request's keys; :meth:`leading_runs` turns them into run lengths
  per medium. The :meth:`~RedisPrefixIndex.table` mapping works with an
  unchanged :class:`~prefixkey.fleet.Router` but costs a round trip per key:
  route with :func:`route` instead.
* **Memory bound**: ``max_entries`` is enforced **per replica** (not over the
  whole index): a store that would take a replica past it first evicts that
  replica's entry stored least recently (``ZRANGE``/``ZREMRANGEBYRANK`` on its
  recency zset; keys of one ``BlockStored`` are recorded tail first, as in
  memory). Across groups the oldest entry of the replica goes, whatever its
  group. ``ttl_seconds`` additionally expires a replica's whole data (tables,
  recency, clock) when it has not stored anything for that long (a replica
  that died without being removed); it is refreshed by every batch with a
  store, it is not a per-entry TTL.
* Schemes are shared as specs (release, algorithm, PYTHONHASHSEED, hash block
  size, lookahead, publishes, groups); each router rebuilds its own
  :class:`~prefixkey.core.Hasher` from them. Engine-bound algorithms
  (builtin ``hash()``) cannot be shared and are refused.

``redis`` (redis-py, ``pip install prefixkey[redis]``) is needed only to build
a client; this module imports nothing from it. The client must return bytes
(``decode_responses=False``, the default). Single Redis primary (the scripts
address keys they compute, so Redis Cluster is not supported).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, cast, runtime_checkable
from urllib.parse import quote

from ..core import Hasher, Request, block_hash_to_int64
from ..errors import InvalidRequestError, PrefixKeyError
from ..events import AllBlocksCleared, BlockRemoved, BlockStored, EventBatch, EventHash
from ._index import (
    DEFAULT_MEDIUM,
    GroupSpec,
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    Run,
    UnknownReplicaError,
    as_replica_id,
    runs_in_table,
)
from ._routing import PreparedRequest, RouteDecision, Router

__all__ = [
    "IndexSnapshot",
    "PrefixIndexBackend",
    "RedisPrefixIndex",
    "RegistrationConflictError",
    "route",
    "scheme_from_spec",
    "scheme_spec",
]


class RegistrationConflictError(PrefixKeyError, RuntimeError):
    """Other routers re-registered a replica during every retry of one batch.

    The batch was not applied (its keys would belong to a scheme the replica
    no longer has).
    """

    field = "replica"


@runtime_checkable
class PrefixIndexBackend(Protocol):
    """What a prefix index offers: event ingestion, and what the Router reads."""

    def register(self, replica: ReplicaId | str, scheme: ReplicaScheme) -> ReplicaId: ...
    def remove_replica(self, replica: ReplicaId | str) -> int: ...
    def replicas(self) -> dict[ReplicaId, ReplicaScheme]: ...
    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme: ...
    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None: ...
    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]: ...
    def longest_runs(self, replicas: Sequence[ReplicaId | str], group: int,
                     keys: Sequence[EventHash], media: int) -> list[Run]: ...
    def medium_bits(self) -> dict[str, int]: ...
    def media(self, replica: ReplicaId | str, key: EventHash,
              group: int = 0) -> frozenset[str]: ...
    def entries(self, replica: ReplicaId | str
                ) -> Iterator[tuple[int, EventHash, frozenset[str]]]: ...
    def replica_size(self, replica: ReplicaId | str) -> int: ...
    def __len__(self) -> int: ...
    def stats(self) -> dict[str, int]: ...


_COUNTERS: Final = (
    "batches", "events", "stores", "refreshes", "removes", "removes_missing", "clears",
    "evictions", "unknown_replica_batches", "unknown_replica_events", "hash_type_mismatches",
    "out_of_order_batches",
)
_DEFAULT_MEDIA: Final = {"GPU": 1, "CPU": 2, "STORAGE": 4}

_APPLY_LUA: Final = r"""
local ns, rid, rp, spec = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local stats = ns .. ':stats'
local reg = redis.call('HGET', ns .. ':reg', rid)
if not reg then
  redis.call('HINCRBY', stats, 'unknown_replica_batches', 1)
  redis.call('HINCRBY', stats, 'unknown_replica_events', tonumber(ARGV[8]))
  return 0
end
if reg ~= spec then return reg end
local ts, maxn, ttl = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local c = {batches = 1, events = tonumber(ARGV[8]), stores = 0, refreshes = 0, removes = 0,
           removes_missing = 0, clears = 0, evictions = 0,
           hash_type_mismatches = tonumber(ARGV[9]), out_of_order_batches = 0}
local last = redis.call('HGET', ns .. ':lastts', rid)
if last and ts < tonumber(last) then
  c.out_of_order_batches = 1
else
  redis.call('HSET', ns .. ':lastts', rid, ARGV[5])
end
local lru, groups, media = rp .. ':lru', rp .. ':groups', ns .. ':media'
local clock = tonumber(redis.call('GET', rp .. ':clock') or '0')
local count = redis.call('ZCARD', lru)
local stored_any = false
local function bitof(name)
  local b = redis.call('HGET', media, name)
  if not b then
    if redis.call('HLEN', media) == 0 then
      redis.call('HSET', media, 'GPU', 1, 'CPU', 2, 'STORAGE', 4)
    end
    b = redis.call('HGET', media, name)
    if not b then
      b = 2 ^ redis.call('HLEN', media)
      redis.call('HSET', media, name, b)
    end
  end
  return tonumber(b)
end
local function evict()
  local m = redis.call('ZRANGE', lru, 0, 0)[1]
  redis.call('ZREMRANGEBYRANK', lru, 0, 0)
  local sep = string.find(m, '|', 1, true)
  redis.call('HDEL', rp .. ':t:' .. string.sub(m, 1, sep - 1), string.sub(m, sep + 1))
  count = count - 1
  c.evictions = c.evictions + 1
end
local i, nargs = 10, #ARGV
while i <= nargs do
  local kind = ARGV[i]
  if kind == 'C' then
    for _, g in ipairs(redis.call('SMEMBERS', groups)) do redis.call('DEL', rp .. ':t:' .. g) end
    redis.call('DEL', groups, lru)
    count = 0
    c.clears = c.clears + 1
    i = i + 1
  else
    local mb, g, n = bitof(ARGV[i + 1]), ARGV[i + 2], tonumber(ARGV[i + 3])
    local tbl = rp .. ':t:' .. g
    if kind == 'S' then
      if n > 0 then
        redis.call('SADD', groups, g)
        stored_any = true
      end
      for j = i + 3 + n, i + 4, -1 do  -- tail first
        local k = ARGV[j]
        local mask = redis.call('HGET', tbl, k)
        clock = clock + 1
        if not mask then
          if count >= maxn then evict() end
          redis.call('HSET', tbl, k, mb)
          count = count + 1
          c.stores = c.stores + 1
        else
          mask = tonumber(mask)
          if bit.band(mask, mb) ~= 0 then
            c.refreshes = c.refreshes + 1
          else
            redis.call('HSET', tbl, k, bit.bor(mask, mb))
            c.stores = c.stores + 1
          end
        end
        redis.call('ZADD', lru, clock, g .. '|' .. k)
      end
    else
      for j = i + 4, i + 3 + n do
        local k = ARGV[j]
        local mask = redis.call('HGET', tbl, k)
        if (not mask) or bit.band(tonumber(mask), mb) == 0 then
          c.removes_missing = c.removes_missing + 1
        else
          c.removes = c.removes + 1
          local left = bit.band(tonumber(mask), bit.bnot(mb))
          if left ~= 0 then
            redis.call('HSET', tbl, k, left)
          else
            redis.call('HDEL', tbl, k)
            redis.call('ZREM', lru, g .. '|' .. k)
            count = count - 1
          end
        end
      end
    end
    i = i + 4 + n
  end
end
redis.call('SET', rp .. ':clock', clock)
for name, v in pairs(c) do
  if v ~= 0 then redis.call('HINCRBY', stats, name, v) end
end
if ttl > 0 and stored_any then
  for _, g in ipairs(redis.call('SMEMBERS', groups)) do
    redis.call('EXPIRE', rp .. ':t:' .. g, ttl)
  end
  redis.call('EXPIRE', lru, ttl)
  redis.call('EXPIRE', groups, ttl)
  redis.call('EXPIRE', rp .. ':clock', ttl)
end
return 1
"""

_LOOKUP_LUA: Final = r"""
local out, i = {}, 3
for r = 1, tonumber(ARGV[2]) do
  local rid, spec, rp, ng = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  i = i + 4
  local reg = redis.call('HGET', ARGV[1] .. ':reg', rid)
  local res
  if reg ~= spec then res = {0, reg or ''} else res = {1} end
  for _ = 1, ng do
    local g, n = ARGV[i], tonumber(ARGV[i + 1])
    if res[1] == 1 then
      local tbl, masks, s, last = rp .. ':t:' .. g, {}, i + 2, i + 1 + n
      while s <= last do
        local e = math.min(s + 127, last)
        local stop = false
        for _, v in ipairs(redis.call('HMGET', tbl, unpack(ARGV, s, e))) do
          if not v then stop = true break end
          masks[#masks + 1] = tonumber(v)
        end
        if stop then break end
        s = e + 1
      end
      res[#res + 1] = masks
    end
    i = i + 2 + n
  end
  out[r] = res
end
return out
"""


# -- scheme specs ---------------------------------------------------------------

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


def _rid_field(rid: ReplicaId) -> bytes:
    return json.dumps([rid.name, rid.dp_rank]).encode()


def _rid_of(field: bytes) -> ReplicaId:
    name, dp = json.loads(field)
    return ReplicaId(name, dp)




def _encode_key(key: EventHash) -> bytes:
    return key if isinstance(key, bytes) else str(key).encode()


class _Reg:
    __slots__ = ("scheme", "spec")

    def __init__(self, spec: bytes, scheme: ReplicaScheme) -> None:
        self.spec = spec
        self.scheme = scheme


class _RedisTable(Mapping[EventHash, int]):
    """A live view of one replica group's keys (one round trip per lookup)."""

    def __init__(self, index: RedisPrefixIndex, rid: ReplicaId, group: int,
                 publishes: str) -> None:
        self._r = index._r
        self._key = f"{index._prefix(rid)}:t:{group}"
        self._int = publishes == "int"

    def __getitem__(self, key: EventHash) -> int:
        if self._int and isinstance(key, bytes):
            raise KeyError(key)
        if not self._int and not isinstance(key, bytes):
            raise KeyError(key)
        value = self._r.hget(self._key, _encode_key(key))
        if value is None:
            raise KeyError(key)
        return int(value)

    def __iter__(self) -> Iterator[EventHash]:
        for field in self._r.hkeys(self._key):
            yield int(field) if self._int else bytes(field)

    def __len__(self) -> int:
        return int(self._r.hlen(self._key))


class RedisPrefixIndex:
    """Block keys per replica, group and medium in Redis, shared by several routers.

    ``client`` is a ``redis.Redis`` (bytes responses). See the module docs for
    the layout, atomicity and the per-replica ``max_entries`` bound.
    ``registry_max_age`` is how long :func:`route` trusts this process's copy
    of the registrations before re-reading them (a changed registration is
    detected at lookup time whatever its age).
    """

    def __init__(self, client: Any, *, namespace: str = "prefixkey",
                 max_entries: int = 10_000_000, ttl_seconds: int | None = None,
                 registry_max_age: float = 1.0) -> None:
        if type(max_entries) is not int or max_entries < 1:
            raise InvalidRequestError("max_entries", f"must be an int >= 1, got {max_entries!r}")
        if ttl_seconds is not None and (type(ttl_seconds) is not int or ttl_seconds < 1):
            raise InvalidRequestError("ttl_seconds",
                                      f"must be an int >= 1 or None, got {ttl_seconds!r}")
        self._r = client
        self.namespace = namespace
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.registry_max_age = registry_max_age
        self._apply_script = client.register_script(_APPLY_LUA)
        self._lookup_script = client.register_script(_LOOKUP_LUA)
        self._regs: dict[ReplicaId, _Reg] = {}
        self._regs_at = float("-inf")
        self._schemes: dict[bytes, ReplicaScheme] = {}  # spec -> scheme (Hashers reused)

    # -- keys -------------------------------------------------------------------

    def _prefix(self, rid: ReplicaId) -> str:
        return f"{self.namespace}:r:{quote(rid.name, safe='')}:{rid.dp_rank}"

    def _scheme_of(self, spec: bytes) -> ReplicaScheme:
        scheme = self._schemes.get(spec)
        if scheme is None:
            scheme = self._schemes[spec] = scheme_from_spec(spec)
        return scheme

    def _replica_keys(self, rid: ReplicaId) -> list[str]:
        p = self._prefix(rid)
        groups = [f"{p}:t:{int(g)}" for g in self._r.smembers(f"{p}:groups")]
        return [*groups, f"{p}:lru", f"{p}:groups", f"{p}:clock"]

    # -- replicas ---------------------------------------------------------------

    def register(self, replica: ReplicaId | str, scheme: ReplicaScheme) -> ReplicaId:
        """Register (or re-register) a replica; a changed scheme drops its entries."""
        rid = as_replica_id(replica)
        if not isinstance(scheme, ReplicaScheme):
            raise InvalidRequestError("scheme", f"must be a ReplicaScheme, got {scheme!r}")
        spec = scheme_spec(scheme).encode()
        field = _rid_field(rid)
        old = self._r.hget(f"{self.namespace}:reg", field)
        if old is not None and old != spec:
            self._r.delete(*self._replica_keys(rid))
        if not self._r.hexists(f"{self.namespace}:media", "GPU"):
            self._r.hsetnx(f"{self.namespace}:media", "GPU", 1)
            self._r.hsetnx(f"{self.namespace}:media", "CPU", 2)
            self._r.hsetnx(f"{self.namespace}:media", "STORAGE", 4)
        self._r.hset(f"{self.namespace}:reg", field, spec)
        self._schemes.setdefault(spec, scheme)
        self._regs[rid] = _Reg(spec, self._schemes[spec])
        return rid

    def remove_replica(self, replica: ReplicaId | str) -> int:
        """Forget a replica that disappeared; return how many entries it held."""
        rid = as_replica_id(replica)
        self._regs.pop(rid, None)
        field = _rid_field(rid)
        if not self._r.hexists(f"{self.namespace}:reg", field):
            return 0
        dropped = int(self._r.zcard(f"{self._prefix(rid)}:lru"))
        pipe = self._r.pipeline(transaction=True)
        pipe.hdel(f"{self.namespace}:reg", field)
        pipe.hdel(f"{self.namespace}:lastts", field)
        pipe.delete(*self._replica_keys(rid))
        pipe.execute()
        return dropped

    def _refresh(self) -> dict[ReplicaId, _Reg]:
        raw = self._r.hgetall(f"{self.namespace}:reg")
        self._regs = {_rid_of(f): _Reg(bytes(s), self._scheme_of(bytes(s)))
                      for f, s in sorted(raw.items())}
        self._regs_at = time.monotonic()
        return self._regs

    def _cached(self) -> dict[ReplicaId, _Reg]:
        if time.monotonic() - self._regs_at > self.registry_max_age:
            return self._refresh()
        return self._regs

    def replicas(self) -> dict[ReplicaId, ReplicaScheme]:
        """Registered replicas (read from Redis) and their schemes."""
        return {rid: reg.scheme for rid, reg in self._refresh().items()}

    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme:
        rid = as_replica_id(replica)
        spec = self._r.hget(f"{self.namespace}:reg", _rid_field(rid))
        if spec is None:
            raise UnknownReplicaError(f"replica {rid} is not registered")
        return self._scheme_of(bytes(spec))

    # -- events -----------------------------------------------------------------

    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None:
        """Apply one published batch from ``replica`` atomically (one EVALSHA).

        A name given as a string takes its data-parallel rank from the batch.
        """
        rid = (ReplicaId(replica, batch.data_parallel_rank or 0)
               if isinstance(replica, str) else as_replica_id(replica))
        reg = self._regs.get(rid)
        for _ in range(3):
            spec = b"" if reg is None else reg.spec
            publishes = None if reg is None else reg.scheme.publishes
            args = self._batch_args(rid, spec, publishes, batch)
            result = self._apply_script(args=args)
            if not isinstance(result, bytes):
                if result == 0:
                    self._regs.pop(rid, None)
                return
            reg = self._regs[rid] = _Reg(result, self._scheme_of(result))  # re-registered
        raise RegistrationConflictError(
            f"replica {rid} keeps being re-registered; batch not applied")

    def _batch_args(self, rid: ReplicaId, spec: bytes, publishes: str | None,
                    batch: EventBatch) -> list[Any]:
        events: list[Any] = []
        mismatches = 0
        for event in batch.events:
            if isinstance(event, AllBlocksCleared):
                events.append(b"C")
                continue
            if not isinstance(event, (BlockStored, BlockRemoved)):
                continue
            if publishes == "int":
                keys = [_encode_key(block_hash_to_int64(h) if isinstance(h, bytes) else h)
                        for h in event.block_hashes]
            else:
                keys = [h for h in event.block_hashes if isinstance(h, bytes)]
                mismatches += len(event.block_hashes) - len(keys)
            medium = DEFAULT_MEDIUM if event.medium is None else event.medium.upper()
            kind = b"S" if isinstance(event, BlockStored) else b"R"
            events += [kind, medium, event.group_idx or 0, len(keys), *keys]
        if publishes is None:
            mismatches = 0
        return [self.namespace, _rid_field(rid), self._prefix(rid), spec, repr(batch.ts),
                self.max_entries, self.ttl_seconds or 0, len(batch.events), mismatches,
                *events]

    # -- queries ----------------------------------------------------------------

    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]:
        """A live view of a replica group's keys and media bitmasks (one round trip a key)."""
        rid = as_replica_id(replica)
        return _RedisTable(self, rid, group, self.scheme(rid).publishes)

    def longest_runs(self, replicas: Sequence[ReplicaId | str], group: int,
                     keys: Sequence[EventHash], media: int) -> list[Run]:
        """:meth:`PrefixIndex.longest_runs`, over :meth:`table` (a round trip a key walked)."""
        return [runs_in_table(self.table(r, group), keys, media) for r in replicas]

    def medium_bits(self) -> dict[str, int]:
        """The bit of each medium seen so far (``GPU``, ``CPU``, ``STORAGE`` preassigned)."""
        raw = self._r.hgetall(f"{self.namespace}:media")
        bits = {bytes(k).decode(): int(float(v)) for k, v in raw.items()}
        return dict(sorted({**_DEFAULT_MEDIA, **bits}.items(), key=lambda kv: kv[1]))

    def media(self, replica: ReplicaId | str, key: EventHash, group: int = 0) -> frozenset[str]:
        """The media on which ``replica`` holds ``key`` (published form), or an empty set."""
        mask = self.table(replica, group).get(key, 0)
        return frozenset(name for name, bit in self.medium_bits().items() if mask & bit)

    def entries(self, replica: ReplicaId | str) -> Iterator[tuple[int, EventHash, frozenset[str]]]:
        """Every ``(group, key, media)`` of a replica, least recently stored first."""
        rid = as_replica_id(replica)
        as_int = self.scheme(rid).publishes == "int"
        bits = self.medium_bits()
        p = self._prefix(rid)
        members = [bytes(m) for m in self._r.zrange(f"{p}:lru", 0, -1)]
        pipe = self._r.pipeline(transaction=False)
        split = [m.split(b"|", 1) for m in members]
        for g, k in split:
            pipe.hget(f"{p}:t:{int(g)}", k)
        for (g, k), mask in zip(split, pipe.execute(), strict=True):
            if mask is None:
                continue
            m = int(mask)
            yield (int(g), int(k) if as_int else k,
                   frozenset(n for n, b in bits.items() if m & b))

    def replica_size(self, replica: ReplicaId | str) -> int:
        rid = as_replica_id(replica)
        self.scheme(rid)
        return int(self._r.zcard(f"{self._prefix(rid)}:lru"))

    def __len__(self) -> int:
        rids = list(self._refresh())
        pipe = self._r.pipeline(transaction=False)
        for rid in rids:
            pipe.zcard(f"{self._prefix(rid)}:lru")
        return sum(int(n) for n in pipe.execute()) if rids else 0

    def stats(self) -> dict[str, int]:
        """Counters, plus ``size`` (entries held), ``max_entries`` (per replica), ``replicas``."""
        raw = self._r.hgetall(f"{self.namespace}:stats")
        counters = dict.fromkeys(_COUNTERS, 0)
        counters.update({bytes(k).decode(): int(v) for k, v in raw.items()})
        size = len(self)
        return {**counters, "size": size, "max_entries": self.max_entries,
                "replicas": len(self._regs)}

    def clear_namespace(self) -> int:
        """Delete every key of this namespace (tests, decommissioning); return how many."""
        keys = list(self._r.scan_iter(match=f"{self.namespace}:*", count=1000))
        if keys:
            self._r.delete(*keys)
        self._regs = {}
        self._regs_at = float("-inf")
        return len(keys)

    # -- one-round-trip lookups ---------------------------------------------------

    def lookup(
        self, keys: Mapping[ReplicaId, Sequence[Sequence[EventHash]]]
    ) -> dict[ReplicaId, tuple[list[int], ...] | ReplicaScheme | None]:
        """Per replica and group, the media masks of the leading run of ``keys`` held.

        One round trip for all replicas. ``keys`` are published keys per group
        (:meth:`ReplicaScheme.group_keys`), computed under this process's copy
        of the registration; a replica re-registered since with another scheme
        maps to its new scheme instead, an unregistered one to None.
        """
        regs = self._regs
        args: list[Any] = [self.namespace, len(keys)]
        order = list(keys)
        for rid in order:
            reg = regs.get(rid)
            groups = keys[rid]
            args += [_rid_field(rid), b"" if reg is None else reg.spec, self._prefix(rid),
                     len(groups)]
            for gi, group_keys in enumerate(groups):
                args += [gi, len(group_keys), *map(_encode_key, group_keys)]
        result = self._lookup_script(args=args)
        out: dict[ReplicaId, tuple[list[int], ...] | ReplicaScheme | None] = {}
        for rid, res in zip(order, result, strict=True):
            if res[0] == 1:
                out[rid] = tuple([int(m) for m in masks] for masks in res[1:])
            elif res[1]:
                spec = bytes(res[1])
                scheme = self._scheme_of(spec)
                self._regs[rid] = _Reg(spec, scheme)
                out[rid] = scheme
            else:
                self._regs.pop(rid, None)
                out[rid] = None
        return out

    def leading_runs(self, masks: Sequence[int]) -> dict[str, int]:
        """Per medium, how many leading keys it holds, from :meth:`lookup` masks."""
        out = {}
        for name, bit in self.medium_bits().items():
            n = 0
            for m in masks:
                if not m & bit:
                    break
                n += 1
            out[name] = n
        return out

    def snapshot(self, prepared: PreparedRequest,
                 candidates: Iterable[ReplicaId | str] | None = None) -> IndexSnapshot:
        """What a Router needs to rank ``prepared``, read in one round trip.

        Keys under a scheme that another router changed are hashed again
        (``prepared.request`` needed) and looked up once more.
        """
        regs = self._cached()
        ids = list(regs) if candidates is None else [
            ReplicaId(c) if isinstance(c, str) else ReplicaId(*c) for c in candidates]
        schemes = {rid: regs[rid].scheme for rid in ids if rid in regs}
        missing = [rid for rid in ids if rid not in regs]
        if missing:
            regs = self._refresh()
            schemes.update({rid: regs[rid].scheme for rid in missing if rid in regs})
        tables: dict[tuple[ReplicaId, int], dict[EventHash, int]] = {}
        todo = list(schemes)
        for _ in range(3):
            want = {rid: prepared.keys_for(schemes[rid]).groups for rid in todo}
            found = self.lookup(want) if want else {}
            todo = []
            for rid, res in found.items():
                if res is None:
                    continue  # removed meanwhile: holds nothing
                if isinstance(res, ReplicaScheme):
                    schemes[rid] = res
                    todo.append(rid)
                    continue
                for gi, masks in enumerate(res):
                    tables[rid, gi] = dict(zip(want[rid][gi], masks, strict=False))
            if not todo:
                break
        return IndexSnapshot(schemes, tables, self.medium_bits_cached())

    def medium_bits_cached(self) -> dict[str, int]:
        """:meth:`medium_bits`, re-read at most every ``registry_max_age`` seconds."""
        now = time.monotonic()
        cached: tuple[float, dict[str, int]] | None = getattr(self, "_bits_cache", None)
        if cached is None or now - cached[0] > self.registry_max_age:
            cached = (now, self.medium_bits())
            self._bits_cache = cached
        return cached[1]


class IndexSnapshot:
    """Read-only view of a few replicas' leading runs for one request (Router input)."""

    def __init__(self, schemes: dict[ReplicaId, ReplicaScheme],
                 tables: dict[tuple[ReplicaId, int], dict[EventHash, int]],
                 bits: dict[str, int]) -> None:
        self._schemes = schemes
        self._tables = tables
        self._bits = bits

    def replicas(self) -> dict[ReplicaId, ReplicaScheme]:
        return dict(self._schemes)

    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme:
        rid = as_replica_id(replica)
        if rid not in self._schemes:
            raise UnknownReplicaError(f"replica {rid} is not registered")
        return self._schemes[rid]

    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]:
        return self._tables.get((as_replica_id(replica), group), {})

    def longest_runs(self, replicas: Sequence[ReplicaId | str], group: int,
                     keys: Sequence[EventHash], media: int) -> list[Run]:
        return [runs_in_table(self.table(r, group), keys, media) for r in replicas]

    def medium_bits(self) -> dict[str, int]:
        return dict(self._bits)


class _RegistryView:
    """Registrations only: what :meth:`Router.prepare` reads."""

    def __init__(self, schemes: dict[ReplicaId, ReplicaScheme]) -> None:
        self._schemes = schemes

    def replicas(self) -> dict[ReplicaId, ReplicaScheme]:
        return dict(self._schemes)


def route(
    router: Router, request: Request | Sequence[int] | PreparedRequest,
    candidates: Iterable[ReplicaId | str] | None = None,
    index: RedisPrefixIndex | None = None,
) -> list[RouteDecision]:
    """``router.route(request, candidates)`` over a :class:`RedisPrefixIndex`.

    The index is ``index`` or ``router.index``. Registrations come from this
    process's copy (re-read every ``registry_max_age`` seconds) and the lookup
    of every candidate is one round trip; the decisions are those the router
    would make over an in-memory index holding the same entries.
    """
    idx = index if index is not None else cast(Any, router.index)
    if not isinstance(idx, RedisPrefixIndex):
        return router.route(request, candidates)
    cands = None if candidates is None else list(candidates)
    worker = copy.copy(router)
    if not isinstance(request, PreparedRequest):
        regs = idx._cached()
        if cands is not None and any(
                (ReplicaId(c) if isinstance(c, str) else ReplicaId(*c)) not in regs
                for c in cands):
            regs = idx._refresh()
        worker.index = cast(PrefixIndex, _RegistryView({r: g.scheme for r, g in regs.items()}))
        request = worker.prepare(request, cands)
    worker.index = cast(PrefixIndex, idx.snapshot(request, cands))
    return worker.rank(request, cands)
