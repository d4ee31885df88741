"""A prefix index shared by a fleet of routers, kept in Redis (7+; Redis Cluster too).

:class:`RedisPrefixIndex` implements :class:`~prefixkey.fleet.PrefixIndexBackend`
with the semantics of :mod:`prefixkey.fleet.index._memory` (idempotent stores and
removes, per group and medium, int vs bytes publishers, counters), so
``Router(RedisPrefixIndex(client))`` routes over it directly:

* **Layout** (inverted, as in memory). Every key of namespace ``ns`` starts with
  the hash tag ``{ns}``, so a namespace lives in one Redis Cluster slot and
  every operation stays one call; fleets shard by namespace (e.g. one per
  model)::

    {ns}:epoch            str   the namespace's epoch (a random id, see below)
    {ns}:run              str   the server's run_id when the epoch was made
    {ns}:reg              hash  replica id (JSON) -> scheme spec (JSON)
    {ns}:gen / {ns}:slot  hash  replica id -> registration generation / current slot
    {ns}:media            hash  medium name -> id (GPU 0, CPU 1, STORAGE 2, then 3, ...)
    {ns}:stats, :lastts, :inflight   counters; per replica: newest ts, last chunk applied
    {ns}:h:<group>        hash  block key -> holders: sorted (slot, medium id) tokens,
                                inline up to 8, else "@" + the sha1 of an interned set
    {ns}:sets / {ns}:refs hash  interned set -> its tokens / the keys referring to it
    {ns}:diffs            hash  two interned sets -> the slots that differ (kept by ranking)
    {ns}:s:<slot>:lru     zset  "<group>|<key>" scored by the replica's store clock
    {ns}:s:<slot>:clock   str   the store clock; its absence means "expired"
    {ns}:dead             list  dead slots whose LRU still names keys to reap

  Int keys are 8-byte big-endian fields (``key_bytes``), digest keys raw bytes. A *slot* is
  one incarnation of a replica: re-registering with another scheme,
  ``AllBlocksCleared`` and expiry give the replica a new slot, so the old
  slot's holder tokens are never read again; the apply script reaps them from
  the dead slot's LRU (64 plus 2 per block applied, so dead fields never outgrow
  live ones), and :meth:`~RedisPrefixIndex.sweep` finds those of expired slots.
  ``{ns}:reg``, ``:slot`` and ``:gen`` keep a sentinel field ``""`` (so they
  exist with no replica). No bit table: any number of media and replicas.
* **Apply**: a batch of up to ``chunk_blocks`` (10,000) blocks is one
  ``EVALSHA``, applied whole or not at all. A larger batch goes in chunks of
  that size (the tail of a ``BlockStored`` first, as in memory), so no call
  blocks the server long; each chunk is idempotent and recorded under the
  call's nonce, so calling :meth:`~RedisPrefixIndex.apply` again with the same
  batch after an :class:`~prefixkey.fleet.IndexUnavailableError` completes it
  exactly once (counters included).
* **Ranking**: :meth:`~RedisPrefixIndex.leading_runs` is one ``EVALSHA`` for
  every scheme and group of a request: the script walks the request's keys in
  growing slices, narrows the candidates still matching and stops when none is
  left. Holder sets are interned and the changes between two are kept
  (``{ns}:diffs``): the walk costs the keys and the runs that end, not the
  holders per key. Registrations and media are this process's copy, re-read
  every ``registry_max_age`` seconds; a candidate re-registered meanwhile is
  reported (the Router hashes it again), one removed holds nothing.
* **Memory bound**: ``max_entries`` is enforced **per replica**: a store that
  would take a replica past it first evicts that replica's entry stored least
  recently (whatever its group). ``ttl_seconds`` expires a replica's data when
  it has not stored anything for that long (a replica that died without being
  removed); the registration stays.
* **Failures**: every call is bounded by the client's socket timeouts
  (:meth:`~RedisPrefixIndex.from_url` sets them, 1 s by default, with no
  retries); an unreachable, restarting or busy server raises
  :class:`~prefixkey.fleet.IndexUnavailableError`. A restart without
  persistence loses the namespace: the scripts see its epoch missing or new,
  and this process registers again every replica it knows (keeping any
  registration another router restored first) before it re-sends the batch or
  the lookup, so no batch is dropped as from an unknown replica
  (``restarts_detected`` counts these). A restart *with* persistence (an older
  RDB or AOF), a failover or a lost structure key is caught the same way: every
  script compares the server's ``run_id`` with ``{ns}:run`` and checks the
  structure keys, and drops every entry it can no longer trust first
  (:mod:`._redis_namespace`). A full server (``noeviction``) raises
  :class:`~prefixkey.fleet.IndexFullError`; a batch given up after any failure
  makes the replica's next batch clear it first (``resyncs``).
* Schemes are shared as specs (release, algorithm, PYTHONHASHSEED, hash block
  size, lookahead, publishes, groups); each router rebuilds its own
  :class:`~prefixkey.core.Hasher` from them. Engine-bound algorithms
  (builtin ``hash()``) cannot be shared and are refused.

``redis`` (redis-py, ``pip install prefixkey[redis]``) is needed only to build
a client; this module imports it only in :meth:`~RedisPrefixIndex.from_url`.
The client must return bytes (``decode_responses=False``, the default); a
``redis.cluster.RedisCluster`` works the same way. The server must not evict
keys on its own (``maxmemory-policy noeviction``, the default).
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, cast, get_type_hints

from ...core._checks import check_int
from ...errors import InvalidRequestError, PrefixKeyError
from ...events import DecodedOps, EventBatch, EventHash
from . import _redis_lua as lua
from ._backend import (
    INDEX_COUNTERS,
    IndexFullError,
    IndexUnavailableError,
    RedisIndexStats,
    RunsAnswer,
    RunsQuery,
    RunsResult,
)
from ._memory import (
    ReplicaId,
    ReplicaScheme,
    UnknownReplicaError,
    as_replica_id,
)
from ._ops import check_ops
from ._redis_codec import (
    RunTexts,
    batch_ops,
    pack_keys,
    rid_field,
    rid_of,
    scheme_from_spec,
    scheme_spec,
    unpack_int,
)

__all__ = ["CHUNK_BLOCKS", "RedisPrefixIndex", "RegistrationConflictError"]

#: Blocks applied by one script call: bigger batches are cut in chunks of this size.
CHUNK_BLOCKS: Final = 10_000


class RegistrationConflictError(PrefixKeyError, RuntimeError):
    """Other routers re-registered a replica during every retry of one batch.

    The batch was not applied (its keys would belong to a scheme the replica
    no longer has).
    """

    field = "replica"


#: Fault counters (see :mod:`._redis_namespace`), in :meth:`RedisPrefixIndex.stats` once
#: non-zero: the optional keys of :class:`RedisIndexStats`, in their order.
FAULT_COUNTERS: Final = tuple(name for name in get_type_hints(RedisIndexStats)
                              if name in RedisIndexStats.__optional_keys__)
#: Server replies that mean "not now" rather than "wrong": the caller can retry.
_TRANSIENT: Final = ("BUSY", "LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS")


def _full(exc: BaseException) -> bool:
    """Whether ``exc`` (from the client) is the server refusing a write: out of memory."""
    errors = sys.modules.get("redis.exceptions")
    if errors is None:
        return False
    oom = getattr(errors, "OutOfMemoryError", None)  # redis-py strips the "OOM" code
    return (oom is not None and isinstance(exc, oom)) or (
        isinstance(exc, errors.ResponseError) and str(exc).startswith("OOM"))


def _unavailable(exc: BaseException) -> bool:
    """Whether ``exc`` (from the client) means the server did not answer in time."""
    if isinstance(exc, (ConnectionError, TimeoutError)):  # builtins (OSError family)
        return True
    errors = sys.modules.get("redis.exceptions")  # loaded with any redis-py client
    if errors is None:
        return False
    transient = tuple(getattr(errors, n) for n in (
        "ConnectionError", "TimeoutError", "ClusterDownError", "TryAgainError",
        "MasterDownError") if hasattr(errors, n))
    if isinstance(exc, transient):
        return True
    return isinstance(exc, errors.ResponseError) and str(exc).startswith(_TRANSIENT)


class _Reg:
    __slots__ = ("field", "gen", "scheme", "spec")

    def __init__(self, rid: ReplicaId, spec: bytes, scheme: ReplicaScheme, gen: bytes) -> None:
        self.field = rid_field(rid)
        self.spec = spec
        self.scheme = scheme
        self.gen = gen


class _RedisTable(Mapping[EventHash, int]):
    """A live view of one replica group's keys and media bitmasks (debugging, tests)."""

    def __init__(self, index: RedisPrefixIndex, rid: ReplicaId, group: int,
                 publishes: str) -> None:
        self._index = index
        self._rid = rid
        self._group = group
        self._int = publishes == "int"

    def _items(self) -> dict[EventHash, int]:
        return {k: m for g, k, m in self._index._entry_masks(self._rid) if g == self._group}

    def __getitem__(self, key: EventHash) -> int:
        if self._int is isinstance(key, bytes):  # never held in that form
            raise KeyError(key)
        return self._items()[key]

    def __iter__(self) -> Iterator[EventHash]:
        return iter(self._items())

    def __len__(self) -> int:
        return len(self._items())


class RedisPrefixIndex:
    """Block keys per replica, group and medium in Redis, shared by several routers.

    ``client`` is a ``redis.Redis`` or ``redis.cluster.RedisCluster`` (bytes
    responses; :meth:`from_url` builds one with bounded timeouts). See the
    module docs for the layout, chunks, the per-replica ``max_entries`` bound,
    ``ttl_seconds`` and failures. ``registry_max_age`` is how long this
    process trusts its copy of the registrations and media before re-reading
    them (a re-registered candidate is noticed by the lookup whatever its age).
    ``sweep_every`` is how many :meth:`apply` calls go between two
    :meth:`sweep` steps (0: never; call :meth:`sweep` yourself).
    """

    def __init__(self, client: Any, *, namespace: str = "prefixkey",
                 max_entries: int = 10_000_000, ttl_seconds: int | None = None,
                 registry_max_age: float = 1.0, chunk_blocks: int = CHUNK_BLOCKS,
                 sweep_every: int = 64) -> None:
        if not isinstance(namespace, str) or not namespace or set(namespace) & set("{}"):
            raise InvalidRequestError(
                "namespace", f"must be a non-empty string without braces, got {namespace!r}")
        check_int("max_entries", max_entries)
        check_int("chunk_blocks", chunk_blocks)
        check_int("sweep_every", sweep_every, least=0)
        check_int("ttl_seconds", ttl_seconds, optional=True)
        self._r = client
        self.namespace = namespace
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.registry_max_age = registry_max_age
        self.chunk_blocks = chunk_blocks
        self.sweep_every = sweep_every
        #: Times this process found the namespace lost or re-created (Redis restarts).
        self.restarts_detected = 0
        self._p = "{" + namespace + "}"
        self._keys = [f"{self._p}:epoch"]
        self._scripts = {name: client.register_script(source) for name, source in (
            ("register", lua.REGISTER), ("remove", lua.REMOVE), ("apply", lua.APPLY),
            ("rank", lua.RANK), ("entries", lua.ENTRIES), ("sweep", lua.SWEEP))}
        self._epoch: bytes | None = None
        self._regs: dict[ReplicaId, _Reg] = {}
        self._regs_at = float("-inf")
        self._bits: dict[str, int] = {}
        self._bits_at = float("-inf")
        self._schemes: dict[bytes, ReplicaScheme] = {}  # spec -> scheme (Hashers reused)
        self._pending: dict[ReplicaId, tuple[DecodedOps, str]] = {}  # batches to complete
        # Replicas with a batch given up since: their next batch clears them first.
        self._untrusted: set[ReplicaId] = set()
        self._applies = 0
        self._texts = RunTexts()

    @classmethod
    def from_url(cls, url: str, *, timeout: float = 1.0, **kw: Any) -> RedisPrefixIndex:
        """An index over ``redis.Redis.from_url(url)`` with bounded timeouts and no retries.

        ``timeout`` bounds connecting and each reply (a chunk of
        ``chunk_blocks`` blocks takes well under it); ``kw`` goes to the index.
        """
        from ..._extras import needs_extra

        with needs_extra("redis", "RedisPrefixIndex.from_url"):
            import redis
            from redis.backoff import NoBackoff
            from redis.retry import Retry

        client = redis.Redis.from_url(url, socket_timeout=timeout,
                                      socket_connect_timeout=timeout,
                                      retry=Retry(NoBackoff(), 0))
        return cls(client, **kw)

    # -- calls ------------------------------------------------------------------

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            if _full(exc):
                raise IndexFullError(
                    f"Redis namespace {self.namespace!r} refused a write: the server is "
                    f"out of memory (maxmemory): {exc}") from exc
            if _unavailable(exc):
                err = IndexUnavailableError(
                    f"Redis namespace {self.namespace!r} did not answer: "
                    f"{type(exc).__name__}: {exc}")
                # A reply that timed out was sent: the server may run it yet (SIGSTOP).
                err.maybe_applied = (type(exc).__name__ == "TimeoutError"
                                     and "connecting" not in str(exc))
                raise err from exc
            raise

    def _script(self, name: str, args: list[Any]) -> Any:
        script = self._scripts[name]
        return self._call(lambda: script(keys=self._keys, args=args))

    def _scheme_of(self, spec: bytes) -> ReplicaScheme:
        scheme = self._schemes.get(spec)
        if scheme is None:
            scheme = self._schemes[spec] = scheme_from_spec(spec)
        return scheme

    # -- epochs -----------------------------------------------------------------

    def _register_raw(self, field: bytes, spec: bytes, mode: str) -> tuple[bytes, bytes]:
        ep, _, gen = self._script("register", [
            self._p, secrets.token_hex(8), field, spec, self.ttl_seconds or 0, mode])
        return bytes(ep), str(gen).encode()

    def _resync(self, seen: bytes) -> None:
        """The namespace's epoch is not ours: adopt it, registering what we know again.

        ``seen`` is the server's epoch (empty: none, the namespace is gone). A
        registration another router restored first is kept (``restore``); the
        registry is re-read on next use.
        """
        if self._epoch is not None:
            self.restarts_detected += 1
        ep = seen or self._register_raw(b"", b"", "set")[0]
        for rid, reg in list(self._regs.items()):
            ep, gen = self._register_raw(rid_field(rid), reg.spec, "restore")
            self._regs[rid] = _Reg(rid, reg.spec, reg.scheme, gen)
        self._epoch = ep
        self._regs_at = self._bits_at = float("-inf")

    # -- replicas ---------------------------------------------------------------

    def register(self, replica: ReplicaId | str, scheme: ReplicaScheme) -> ReplicaId:
        """Register (or re-register) a replica; a changed scheme drops its entries."""
        rid = as_replica_id(replica)
        if not isinstance(scheme, ReplicaScheme):
            raise InvalidRequestError("scheme", f"must be a ReplicaScheme, got {scheme!r}")
        spec = scheme_spec(scheme).encode()
        ep, gen = self._register_raw(rid_field(rid), spec, "set")
        if self._epoch is not None and ep != self._epoch:
            self._resync(ep)  # the namespace was lost since our last call
        self._epoch = ep
        self._schemes.setdefault(spec, scheme)
        self._regs[rid] = _Reg(rid, spec, self._schemes[spec], gen)
        return rid

    def remove_replica(self, replica: ReplicaId | str) -> int:
        """Forget a replica that disappeared; return how many entries it held."""
        rid = as_replica_id(replica)
        self._regs.pop(rid, None)
        self._pending.pop(rid, None)
        return max(int(self._script("remove", [self._p, rid_field(rid)])), 0)

    def _refresh(self) -> dict[ReplicaId, _Reg]:
        # No MULTI: a full server (noeviction) refuses every command queued in one, and
        # a ranking must keep working then. A generation read apart from its spec is
        # caught by the ranking script, which compares generations itself.
        pipe = self._r.pipeline(transaction=False)
        pipe.get(self._keys[0])
        pipe.hgetall(f"{self._p}:reg")
        pipe.hgetall(f"{self._p}:gen")
        ep, raw, gens = self._call(pipe.execute)
        if self._epoch is not None and (ep is None or bytes(ep) != self._epoch):
            self._resync(b"" if ep is None else bytes(ep))  # lost: restore what we know
            return self._refresh()
        if ep is not None:
            self._epoch = bytes(ep)
        regs = {}
        for f, spec in sorted(raw.items()):
            if not f:  # the sentinel that keeps the hash in existence
                continue
            rid = rid_of(f)
            regs[rid] = _Reg(rid, bytes(spec), self._scheme_of(bytes(spec)),
                             bytes(gens.get(f, b"")))
        self._regs = regs
        self._regs_at = time.monotonic()
        return self._regs

    def _cached(self) -> dict[ReplicaId, _Reg]:
        if time.monotonic() - self._regs_at > self.registry_max_age:
            return self._refresh()
        return self._regs

    def replicas(self) -> dict[ReplicaId, ReplicaScheme]:
        """Registered replicas and their schemes (re-read every ``registry_max_age`` s)."""
        return {rid: reg.scheme for rid, reg in self._cached().items()}

    def scheme(self, replica: ReplicaId | str) -> ReplicaScheme:
        rid = as_replica_id(replica)
        spec = self._call(self._r.hget, f"{self._p}:reg", rid_field(rid))
        if spec is None:
            raise UnknownReplicaError(f"replica {rid} is not registered")
        return self._scheme_of(bytes(spec))

    # -- events -----------------------------------------------------------------

    def apply(self, replica: ReplicaId | str, batch: EventBatch) -> None:
        """Apply one published batch from ``replica`` (one EVALSHA per chunk).

        A name given as a string takes its data-parallel rank from the batch.
        After an :class:`~prefixkey.fleet.IndexUnavailableError`, calling
        again with the same batch applies the chunks not applied yet, once.
        """
        self.apply_ops(replica, DecodedOps.of_batch(batch))

    def apply_ops(self, replica: ReplicaId | str, decoded: DecodedOps) -> None:
        """:meth:`apply` of a payload as :meth:`~prefixkey.events.EventDecoder.ops` decodes it.

        After an :class:`~prefixkey.fleet.IndexUnavailableError`, calling
        again with the same (or an equal) ``decoded`` applies the chunks not
        applied yet, once.
        """
        check_ops(decoded.ops)  # a hand-built batch: typed, before any chunk is written
        rid = (ReplicaId(replica, decoded.data_parallel_rank or 0)
               if isinstance(replica, str) else as_replica_id(replica))
        pending = self._pending.pop(rid, None)
        if pending is not None and (pending[0] is decoded or pending[0] == decoded):
            nonce = pending[1]
        else:
            nonce = secrets.token_hex(8)
            if pending is not None:
                # The batch that failed was given up: what it stored, removed or
                # cleared is missing, so the replica's entries cannot be trusted.
                self._untrusted.add(rid)
        try:
            self._apply(rid, decoded, nonce, rid in self._untrusted)
        except Exception:
            self._pending[rid] = (decoded, nonce)
            raise
        self._untrusted.discard(rid)
        self._applies += 1
        if self.sweep_every and self._applies % self.sweep_every == 0:
            # The batch is applied: raising now would make the caller send it again.
            with contextlib.suppress(IndexUnavailableError):
                self.sweep()  # a failed step is resumed by the next one

    def _apply(self, rid: ReplicaId, decoded: DecodedOps, nonce: str, resync: bool) -> None:
        field = rid_field(rid)
        reg = self._regs.get(rid)
        for _ in range(3):
            publishes = None if reg is None else reg.scheme.publishes
            chunks, mismatches = batch_ops(decoded.ops, publishes, self.chunk_blocks)
            if resync:  # clear first, then rebuild from this batch on
                chunks[0].insert(0, b"X")
            head = [self._p, self._epoch or b"", field, b"" if reg is None else reg.spec, nonce]
            tail = [repr(decoded.ts), self.max_entries, self.ttl_seconds or 0, len(decoded.ops),
                    mismatches]
            for k, ops in enumerate(chunks):
                res = self._script("apply", [*head, k, *tail, *ops])
                tag = bytes(res[0])
                if tag in (b"A", b"D"):
                    continue
                if tag == b"U":  # counted by the script (chunk 0) as an unknown replica
                    self._regs.pop(rid, None)
                    return
                if tag == b"M":
                    raise InvalidRequestError(
                        "medium", "the namespace already has 65,536 medium names")
                if tag == b"S":  # another router re-registered it: convert again
                    spec = bytes(res[1])
                    reg = self._regs[rid] = _Reg(rid, spec, self._scheme_of(spec),
                                                 bytes(res[2]))
                else:  # b"E": the namespace was lost (restart) or is new to us
                    self._resync(bytes(res[1]))
                    reg = self._regs.get(rid)
                break
            else:
                return
        raise RegistrationConflictError(
            f"replica {rid} keeps being re-registered; batch not applied")

    def sweep(self, budget: int = 512) -> int:
        """Delete up to about ``budget`` holder fields' tokens of dead slots; return how many.

        Dead slots are those of removed, cleared, re-registered and expired
        replicas: never read, only memory. :meth:`apply` runs a step every
        ``sweep_every`` calls; each step is one bounded script call.
        """
        check_int("budget", budget)
        return int(self._script("sweep", [self._p, budget]))

    # -- ranking ----------------------------------------------------------------

    def leading_runs(self, queries: Sequence[RunsQuery], media: int) -> list[RunsAnswer]:
        """:meth:`PrefixIndex.leading_runs <prefixkey.fleet.PrefixIndex.leading_runs>`
        in one round trip (the keys are walked server side, with early exit)."""
        return [RunsAnswer([(result, [q.replicas[j] for j in positions])
                            for result, positions in groups])
                for q, groups in zip(queries, self._grouped_runs(queries, media), strict=True)]

    def _grouped_runs(self, queries: Sequence[RunsQuery], media: int
                      ) -> list[list[tuple[RunsResult, list[int]]]]:
        """Per query, its candidates grouped by equal answers: ``(answer, positions)``
        in order of first appearance (a re-registered candidate is a group of its own)."""
        if not queries:
            return []
        regs = self._regs
        ids = [i for i in range(media.bit_length()) if media >> i & 1]
        for attempt in range(2):
            args: list[Any] = [self._p, self._epoch or b"", len(ids), *ids, len(queries)]
            for q in queries:
                fields, gens = [], []
                for rid in q.replicas:
                    reg = regs.get(rid)
                    fields.append(rid_field(rid) if reg is None else reg.field)
                    gens.append(b"-" if reg is None else reg.gen)
                # one argument each (redis-py spends about a microsecond per argument)
                args += [len(q.replicas), b"\n".join(fields), b",".join(gens), len(q.groups)]
                for gi, keys in enumerate(q.groups):
                    args += [gi, pack_keys(keys)]
            res = self._script("rank", args)
            if res and res[0] == b"E":
                if attempt == 0:
                    self._resync(bytes(res[1]))
                    continue
                return [[(tuple(() for _ in q.groups), list(range(len(q.replicas))))]
                        for q in queries]
            break
        out: list[list[tuple[RunsResult, list[int]]]] = []
        for q, (text, *stale) in zip(queries, res, strict=True):
            groups: list[tuple[RunsResult, list[int]]] = []
            changed = iter(stale)  # per "!" line, in order: (spec or b"", generation)
            for line, members in self._texts.grouped(bytes(text), len(q.replicas)):
                if line != b"!":
                    groups.append((self._texts.runs(line), members))
                    continue
                for j in members:
                    rid, spec, gen = q.replicas[j], bytes(next(changed)), bytes(next(changed))
                    if spec:  # re-registered: the Router hashes it again
                        reg = self._regs[rid] = _Reg(rid, spec, self._scheme_of(spec), gen)
                        groups.append((reg.scheme, [j]))
                    else:  # removed meanwhile: holds nothing
                        self._regs.pop(rid, None)
                        groups.append((tuple(() for _ in q.groups), [j]))
            out.append(groups)
        return out

    def medium_bits(self) -> dict[str, int]:
        """The bit of each medium (``GPU`` 1, ``CPU`` 2, ``STORAGE`` 4, then 8, 16, ...).

        Re-read every ``registry_max_age`` seconds; Python ints, so any number of media.
        """
        if time.monotonic() - self._bits_at > self.registry_max_age:
            raw = self._call(self._r.hgetall, f"{self._p}:media")
            ids = {"GPU": 0, "CPU": 1, "STORAGE": 2}
            ids.update({bytes(k).decode(): int(v) for k, v in raw.items()})
            self._bits = {name: 1 << i for name, i in sorted(ids.items(), key=lambda kv: kv[1])}
            self._bits_at = time.monotonic()
        return dict(self._bits)

    # -- read-outs --------------------------------------------------------------

    def _entry_masks(self, rid: ReplicaId) -> Iterator[tuple[int, EventHash, int]]:
        """``(group, key, media mask)`` of a replica, least recently stored first."""
        as_int = self.scheme(rid).publishes == "int"
        field, start, page = rid_field(rid), 0, 10_000
        while True:  # pages: one bounded call each
            flat = self._script("entries", [self._p, field, start, start + page - 1])
            for i in range(0, len(flat), 2):
                group, key = bytes(flat[i]).split(b"|", 1)
                ids = bytes(flat[i + 1])
                mask = sum(1 << int(m) for m in ids.split(b",")) if ids else 0
                yield int(group), (unpack_int(key) if as_int else key), mask
            if len(flat) < 2 * page:
                return
            start += page

    def table(self, replica: ReplicaId | str, group: int = 0) -> Mapping[EventHash, int]:
        """A live view of a replica group's keys and media bitmasks (reads them all)."""
        rid = as_replica_id(replica)
        return _RedisTable(self, rid, group, self.scheme(rid).publishes)

    def media(self, replica: ReplicaId | str, key: EventHash, group: int = 0) -> frozenset[str]:
        """The media on which ``replica`` holds ``key`` (published form), or an empty set."""
        mask = self.table(replica, group).get(key, 0)
        return frozenset(name for name, bit in self.medium_bits().items() if mask & bit)

    def entries(self, replica: ReplicaId | str) -> Iterator[tuple[int, EventHash, frozenset[str]]]:
        """Every ``(group, key, media)`` of a replica, least recently stored first."""
        rid = as_replica_id(replica)
        self._bits_at = float("-inf")
        bits = self.medium_bits()
        for group, key, mask in self._entry_masks(rid):
            if mask:
                yield group, key, frozenset(n for n, b in bits.items() if mask & b)

    def replica_size(self, replica: ReplicaId | str) -> int:
        rid = as_replica_id(replica)
        self._checked()
        self.scheme(rid)
        return self._sizes([rid])[0]

    def _checked(self) -> None:
        """Have the namespace checked (run_id, structure keys) and reset if it cannot be
        trusted, as every script does first: read-outs that are not scripts call it."""
        ep = self._register_raw(b"", b"", "set")[0]
        if self._epoch is not None and ep != self._epoch:
            self._resync(ep)

    def _sizes(self, rids: list[ReplicaId]) -> list[int]:
        if not rids:
            return []
        slots = self._call(self._r.hmget, f"{self._p}:slot", [rid_field(r) for r in rids])
        pipe = self._r.pipeline(transaction=False)
        for slot in slots:
            pipe.zcard(f"{self._p}:s:{int(slot or 0)}:lru")
        return [int(n) for n in self._call(pipe.execute)]

    def __len__(self) -> int:
        self._checked()
        return sum(self._sizes(list(self._refresh())))

    def stats(self) -> RedisIndexStats:
        """Counters (the fault counters once non-zero), plus ``size`` (entries held),
        ``max_entries`` (per replica), ``replicas``."""
        self._checked()  # a restored snapshot's sizes are not the index's
        raw = self._call(self._r.hgetall, f"{self._p}:stats")
        counters = dict.fromkeys(INDEX_COUNTERS, 0)
        # The scripts count only these (HINCRBY of the contract's and the fault counters).
        counters.update({bytes(k).decode(): int(v) for k, v in raw.items()})
        rids = list(self._refresh())
        return cast("RedisIndexStats", {
            **counters, "size": sum(self._sizes(rids)), "max_entries": self.max_entries,
            "replicas": len(rids)})

    def clear_namespace(self) -> int:
        """Delete every key of this namespace (tests, decommissioning); return how many."""
        n = 0
        for key in self._call(lambda: list(self._r.scan_iter(match=f"{self._p}:*",
                                                             count=1000))):
            n += int(self._call(self._r.unlink, key))
        self._regs, self._pending, self._epoch = {}, {}, None
        self._untrusted = set()
        self._regs_at = self._bits_at = float("-inf")
        return n
