"""``PrefixKeyRouter``: Ray Serve's request router for vLLM deployments, on exact block keys.

Ray Serve builds one request router per deployment handle, in every process
that calls the deployment (the HTTP proxy, an ingress replica, a driver), and
calls ``update_replicas`` and ``choose_replicas`` on that handle's event loop.
This router

* **feeds an index from the replicas' KV events**: each replica advertises its
  publisher in its routing stats (:mod:`._ray_replicas`); the router runs one
  :class:`~prefixkey.fleet.AsyncSubscriber` per replica on its loop, started
  and closed as replicas come and go (a dead replica's entries are removed);
* **shares what it knows** through the index it is given: in memory, every
  router process subscribes to every replica itself (ZMQ's PUB fans the
  events out, so all routers hold the same entries without a round trip per
  request); with ``redis_url``, one :class:`~prefixkey.fleet.RedisPrefixIndex`
  namespace per deployment, fed by every router (applies are idempotent)
  and read in a worker thread so the loop never waits on Redis;
* **ranks with prefixkey's cost model** (:class:`~prefixkey.fleet.Router`:
  queued prefill plus the prefill still needed, in prefill tokens), the queue
  being what this router sent each replica and Ray has not reported done, in
  tokens (a :class:`~prefixkey.fleet.PrefillBacklog`: added when Ray reports
  the call routed, ``on_request_routed``, released when it reports it
  completed, ``on_request_completed``), plus the replica's other ongoing
  requests (Ray's count of them, other routers' sends included, less this
  router's own) at the Router's running mean prefill. Ray's router sees no
  first token: the result it is handed completes (``add_done_callback``) when
  the whole response, a stream's last chunk included, is produced, so a call
  counts whole, untimed, until then (docs/ray.md, "The load");
* **keys the call exactly** (:mod:`._ray_keys`): token ids as given, or an
  OpenAI body rendered with a :class:`~prefixkey.render.Renderer`;
* **keeps the loop moving**: rendering runs in a worker thread, and with Redis the
  hashing and ranking too; with the in-memory index (read on the loop, where
  the feeds write it) the call yields between hashing and ranking, so no step
  holds the loop longer than hashing the request.

A call it cannot key (no ids, no renderer, a body the renderer or vLLM
refuses), or an index that is unreachable, is routed as Ray's default
router does (power of two choices), and counted (:func:`router_stats`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ray.serve._private.request_router.pow_2_router import (
    PowerOfTwoChoicesRequestRouter as _Pow2,
)
from ray.serve.request_router import (
    LocalityMixin,
    MultiplexMixin,
    PendingRequest,
    RequestRouter,
    RunningReplica,
)

from ..core import BlockHash, Hasher, Request
from ..errors import InvalidRequestError, PrefixKeyError
from ..fleet import (
    DEFAULT_TIER_WEIGHTS,
    AsyncSubscriber,
    IndexUnavailableError,
    PrefillBacklog,
    PrefixIndex,
    PrefixIndexBackend,
    PreparedRequest,
    RedisPrefixIndex,
    ReplicaEndpoint,
    ReplicaId,
    ReplicaScheme,
    RouteDecision,
    Router,
)
from ._ray_keys import CallBody, call_body, token_request
from ._ray_registry import register, router_stats
from ._ray_replicas import cache_tokens_of, endpoint_of

__all__ = ["COUNTERS", "PrefixKeyRouter", "router_stats"]

logger = logging.getLogger("prefixkey.gateways.ray")

#: What each router counts (:func:`router_stats`).
COUNTERS: Final = (
    "routed",            # calls ranked by prefixkey
    "hits",              # of those, the first choice held a usable prefix
    "unkeyed",           # calls with no ids and no renderer to make them: Ray's default order
    "refused",           # calls whose body the renderer or the key checks refused: default order
    "index_unavailable",  # Redis unreachable while ranking: default order
    "bad_metadata",      # replicas advertising a malformed kv_event_metadata (not subscribed)
                         # or kv_cache_size_tokens (not given to the cost model)
    "counted",           # ranked calls Ray reported routed: counted in the load
    "released",          # of those, the calls Ray reported completed: released
    "completed_first",   # ranked calls Ray reported completed before routed: never counted
)

#: Ray's default order (power of two choices), as Ray's own prefix router falls back to it.
#: Private in Ray 2.60: called unbound on this router, as PrefixCacheAffinityRouter does.
_default_order: Any = _Pow2.choose_replicas

#: At most this many ranks are handed back to Ray (it tries them in order; a decision is
#: built per rank, so few: when both refuse, Ray asks again).
_MAX_RANKS: Final = 2
#: Ranked calls kept until Ray reports where each went.
_MAX_PENDING: Final = 4096
#: Routed calls counted until Ray reports each completed (it reports every one; the bound
#: only keeps a router Ray stopped reporting to from growing: the oldest is released).
_MAX_IN_FLIGHT: Final = 65536


def _scheme(config: Mapping[str, Any] | None) -> ReplicaScheme | None:
    if config is None:
        return None
    if not isinstance(config, Mapping):
        raise InvalidRequestError("scheme", f"must be a mapping of Hasher arguments, got "
                                  f"{config!r}")
    config = dict(config)
    publishes = config.pop("publishes", "int")
    return ReplicaScheme(Hasher(**config), publishes=publishes)


class PrefixKeyRouter(LocalityMixin, MultiplexMixin, RequestRouter):
    """Routes each call to the replica with the lowest expected time to first token.

    Configure it through ``RequestRouterConfig(request_router_class=PrefixKeyRouter,
    request_router_kwargs={...})``; the keywords are :meth:`configure`'s.
    """

    def initialize_state(self, **kwargs: Any) -> None:
        """Ray Serve's hook, called with ``request_router_kwargs``: see :meth:`configure`."""
        self.configure(**kwargs)

    def configure(
        self,
        *,
        redis_url: str | None = None,
        namespace: str | None = None,
        vllm_version: str | None = None,
        scheme: Mapping[str, Any] | None = None,
        render: Mapping[str, Any] | None = None,
        tier_weights: Mapping[str, float] | None = None,
        max_entries: int | None = None,
        subscriber_options: Mapping[str, Any] | None = None,
        registry_max_age: float = 1.0,
    ) -> None:
        """Set up the index, the cost model and the renderer (``request_router_kwargs``).

        ``redis_url`` shares one index over Redis (namespace ``namespace``, by
        default ``prefixkey:<app>:<deployment>``); without it each router process
        keeps its own in-memory index (``max_entries`` bounds it). ``vllm_version``
        is the replicas' release for decoding their events (None: inferred from
        the events). ``scheme`` (:class:`~prefixkey.Hasher` arguments, plus
        ``publishes``) fixes the replicas' key scheme; by default each replica's
        is learned from its first events. ``render`` (:class:`ServerOptions`
        fields, e.g. ``{"model": "/models/qwen3-8b", "vllm_version": "0.31.0"}``)
        builds the :class:`~prefixkey.render.Renderer` that keys OpenAI bodies;
        a release it does not render is refused here, with its typed error.
        ``subscriber_options`` are :class:`~prefixkey.fleet.SubscriberOptions` fields.
        ``registry_max_age`` is how long the Redis index's ranking client trusts its
        copy of the registrations (a replica's first events are routed on within it).
        """
        self._vllm_version = vllm_version
        self._scheme = _scheme(scheme)
        self._sub_options = dict(subscriber_options or {})
        self._renderer: Any = None
        if render is not None:
            if not isinstance(render, Mapping):
                raise InvalidRequestError("render", f"must be a mapping of ServerOptions "
                                          f"fields, got {render!r}")
            from ..render import Renderer, ServerOptions

            self._renderer = Renderer(ServerOptions(**render))
        app = getattr(self._deployment_id, "app_name", "") or "default"
        name = getattr(self._deployment_id, "name", "") or "deployment"
        self._namespace = namespace or f"prefixkey:{app}:{name}"
        self._redis_url = redis_url
        index: PrefixIndexBackend
        if redis_url is not None:
            index = RedisPrefixIndex.from_url(redis_url, namespace=self._namespace,
                                              registry_max_age=registry_max_age)
        else:
            index = PrefixIndex() if max_entries is None else PrefixIndex(max_entries=max_entries)
        self._index = index
        self._loads: dict[ReplicaId, float] = {}
        #: What this router sent each replica and Ray has not reported completed (tokens).
        self.backlog = PrefillBacklog()
        self._in_flight: OrderedDict[tuple[str, str], int] = OrderedDict()  # (call, replica)
        # Calls Ray reported completed before it reported them routed (a fast answer:
        # Ray registers the completion callback before it awaits the replica's acceptance).
        self._early: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._router = Router(index, load=self._load,
                              tier_weights=DEFAULT_TIER_WEIGHTS if tier_weights is None
                              else tier_weights)
        # Redis: ranking runs in worker threads, one at a time (the Router keeps state).
        self._rank_lock = threading.Lock()
        # Each ranked call's decisions until Ray says where it went (on_request_routed);
        # the sends are reported to the Router (its cache pressure) at the next ranking,
        # on whichever thread ranks. Bounded: a call Ray never routes is forgotten.
        self._ranked: OrderedDict[str, dict[str, RouteDecision]] = OrderedDict()
        self._sends: deque[RouteDecision] = deque()
        self._ids: dict[str, ReplicaId] = {}  # unique_id -> the id the index registers
        self._feeds: dict[str, tuple[ReplicaEndpoint, AsyncSubscriber]] = {}
        self._bad: set[str] = set()
        self.counters = dict.fromkeys(COUNTERS, 0)
        #: The tokens the last ranked call's first choice held (vLLM's reusable prefix).
        self.last_hit_tokens = 0
        register(self)

    # -- replicas and their feeds -------------------------------------------------

    def update_replicas(self, replicas: list[RunningReplica]) -> None:
        super().update_replicas(replicas)
        self._sync_feeds(replicas)

    def on_replica_actor_died(self, replica_id: Any) -> None:
        super().on_replica_actor_died(replica_id)
        self._drop(replica_id.unique_id)

    def _sync_feeds(self, replicas: Sequence[RunningReplica]) -> None:
        seen = set()
        for r in replicas:
            name = r.replica_id.unique_id
            seen.add(name)
            try:
                endpoint = endpoint_of(name, r.routing_stats, vllm_version=self._vllm_version,
                                       scheme=self._scheme)
            except InvalidRequestError as exc:
                if name not in self._bad:
                    self._bad.add(name)
                    self.counters["bad_metadata"] += 1
                    logger.warning("replica %s: %s; routed without its events", name, exc)
                continue
            rid = ReplicaId(name, endpoint.dp_rank or 0) if endpoint else (
                self._ids.get(name) or ReplicaId(name))
            if self._ids.get(name, rid) != rid:  # its rank changed: the old id leaves
                self._router.set_cache_tokens(self._ids[name], None)
            self._ids[name] = rid
            self._set_capacity(name, rid, r.routing_stats)
            if endpoint is None:
                continue
            current = self._feeds.get(name)
            if current is not None and current[0] == endpoint:
                continue
            if current is not None:
                self._drop(name, keep_id=True)
            self._start_feed(name, endpoint)
        for name in [n for n in self._ids if n not in seen]:
            self._drop(name)
        self._router.replicas = tuple(self._ids.values())

    def _set_capacity(self, name: str, rid: ReplicaId, stats: Mapping[str, Any]) -> None:
        """The replica's advertised KV-cache capacity into the cost model (forgotten when it
        advertises none, or a malformed one: counted and logged once)."""
        try:
            tokens = cache_tokens_of(stats)
        except InvalidRequestError as exc:
            tokens = None
            if name not in self._bad:
                self._bad.add(name)
                self.counters["bad_metadata"] += 1
                logger.warning("replica %s: %s; routed without its capacity", name, exc)
        self._router.set_cache_tokens(rid, tokens)

    def _index_for_feed(self) -> PrefixIndexBackend:
        if self._redis_url is None:
            return self._index  # applied on this loop, as rankings read it: no lock needed
        # Each feed applies from its own worker thread under its own lock: its own client.
        return RedisPrefixIndex.from_url(self._redis_url, namespace=self._namespace)

    def _start_feed(self, name: str, endpoint: ReplicaEndpoint) -> None:
        sub = AsyncSubscriber([endpoint], index=self._index_for_feed(), **self._sub_options)
        self._feeds[name] = (endpoint, sub)

        async def start() -> None:
            try:
                await sub.start()
            except Exception:  # a bad endpoint must not take the router down
                logger.exception("replica %s: could not subscribe to %s", name, endpoint.endpoint)

        self._event_loop.create_task(start())

    def _drop(self, name: str, *, keep_id: bool = False) -> None:
        feed = self._feeds.pop(name, None)
        rid = self._ids.get(name)
        if not keep_id:
            self._ids.pop(name, None)
            self._router.replicas = tuple(self._ids.values())
            if rid is not None:
                self._router.set_cache_tokens(rid, None)
        if feed is not None:
            self._event_loop.create_task(self._close(feed[1], rid))

    async def _close(self, sub: AsyncSubscriber, rid: ReplicaId | None) -> None:
        with contextlib.suppress(Exception):
            await sub.close()
        if rid is None:
            return
        try:
            if self._redis_url is None:
                self._index.remove_replica(rid)
            else:
                await asyncio.to_thread(self._index.remove_replica, rid)
        except PrefixKeyError:  # never registered, or Redis away: nothing to remove
            pass

    # -- routing ---------------------------------------------------------------------

    def _load(self, rid: ReplicaId) -> float:
        return self._loads.get(rid, 0.0)

    async def _request_of(self, pending: PendingRequest) -> Request | None:
        try:
            call = call_body(pending.args, pending.kwargs)
            if call is None:
                self.counters["unkeyed"] += 1
                return None
            request = token_request(call)
            if request is None:
                request = await self._render(call)
        except PrefixKeyError as exc:  # vLLM answers the body itself; routing goes on
            self.counters["refused"] += 1
            logger.debug("request %s not keyed: %s", pending.metadata.request_id, exc)
            return None
        if request is None:
            self.counters["unkeyed"] += 1
        return request

    async def _render(self, call: CallBody) -> Request | None:
        renderer = self._renderer
        if renderer is None or call.endpoint is None:
            return None
        # Rendering (templates, tokenizer) can take longer than hashing: off the loop.
        rendered = await asyncio.to_thread(renderer.render, call.endpoint, call.body)
        return rendered[0].request if rendered else None

    async def _loads_of(self, replicas: Sequence[RunningReplica],
                        num_tokens: int) -> dict[ReplicaId, float]:
        """Each candidate's queued prefill, in tokens: this router's backlog there, plus the
        ongoing requests Ray counts beyond this router's own, at the Router's running mean
        prefill (this call's tokens before any)."""
        ongoing = await self._queue_lens(replicas)
        per = self._router.mean_prefill_tokens or float(num_tokens)
        mine = self.backlog.busy(time.monotonic())  # only the replicas with calls in flight
        out: dict[ReplicaId, float] = {}
        for rid, n in ongoing.items():
            own = mine.get(rid)
            out[rid] = n * per if own is None else own[1] + max(n - own[0], 0.0) * per
        for rid, (_, queued) in mine.items():  # Ray's count unknown: this router's own
            out.setdefault(rid, queued)
        return out

    async def _queue_lens(self, replicas: Sequence[RunningReplica]) -> dict[ReplicaId, float]:
        """Ray's count of each candidate's ongoing requests (probed where its cache has none)."""
        out: dict[ReplicaId, float] = {}
        missing = []
        for r in replicas:
            n = (self._replica_queue_len_cache.get(r.replica_id)
                 if self._use_replica_queue_len_cache else None)
            if n is None:
                missing.append(r)
            else:
                out[self._rid(r)] = float(n)
        if missing:
            for r, n in await self._probe_queue_lens(missing, 0):
                if n is not None:
                    out[self._rid(r)] = float(n)
        return out

    def _rid(self, r: RunningReplica) -> ReplicaId:
        name = r.replica_id.unique_id
        rid = self._ids.get(name)
        if rid is None:
            rid = self._ids[name] = ReplicaId(name)
            self._router.replicas = tuple(self._ids.values())
        return rid

    def _rank(self, request: Request | PreparedRequest, names: list[ReplicaId],
              loads: dict[ReplicaId, float]) -> list[RouteDecision]:
        self._loads = loads
        while self._sends:
            self._router.sent(self._sends.popleft())
        ranking = list(self._router.route(request, names, limit=min(_MAX_RANKS, len(names))))
        self.last_hit_tokens = ranking[0].hit_tokens
        if ranking[0].hit_tokens:
            self.counters["hits"] += 1
        return ranking

    async def _prepared(self, request: Request, names: list[ReplicaId]) -> PreparedRequest:
        """The call hashed once per distinct scheme of the candidates, yielding in between.

        Only the in-memory index, read on the loop (the feeds apply there). Each
        hashing is one step on the loop, and the loop runs other work between it
        and the ranking: no step is longer than hashing the request. (A worker
        thread would free the loop entirely, but its hand-offs cost more than the
        ranking itself on a busy machine.)
        """
        request.check_inside(len(request.token_ids))
        known = self._index.replicas()
        schemes: dict[tuple[object, ...], ReplicaScheme] = {}
        for rid in names:
            scheme = known.get(rid)
            if scheme is not None:
                schemes.setdefault(scheme.key, scheme)
        keys: dict[tuple[object, ...], list[BlockHash]] = {}
        for scheme in schemes.values():
            if scheme.hash_key not in keys:
                keys[scheme.hash_key] = scheme.hasher.block_hashes(request)
                await asyncio.sleep(0)
        prepared = PreparedRequest(len(request.token_ids), request)
        for scheme in schemes.values():  # a scheme registered meanwhile is hashed by rank
            prepared._add(scheme, keys[scheme.hash_key], None, digests=True)  # its hasher's keys
        return prepared

    def _rank_locked(self, request: Request, names: list[ReplicaId],
                     loads: dict[ReplicaId, float]) -> list[RouteDecision] | None:
        with self._rank_lock:
            try:
                return self._rank(request, names, loads)
            except IndexUnavailableError:
                return None

    async def _default(self, candidates: list[RunningReplica],
                       pending: PendingRequest | None) -> list[list[RunningReplica]]:
        order: list[list[RunningReplica]] = await _default_order(self, candidates, pending)
        return order

    async def choose_replicas(
        self,
        candidate_replicas: list[RunningReplica],
        pending_request: PendingRequest | None = None,
    ) -> list[list[RunningReplica]]:
        """Rank the candidates by prefixkey's cost model, best first (one replica per rank)."""
        if pending_request is None or not candidate_replicas:
            return await self._default(candidate_replicas, pending_request)
        if pending_request.metadata.multiplexed_model_id:  # only replicas holding the adapter
            wanted = self.apply_multiplex_routing(pending_request=pending_request)
            candidates = [r for r in candidate_replicas if r.replica_id in wanted]
        else:
            candidates = list(candidate_replicas)
        request = await self._request_of(pending_request) if candidates else None
        if request is None:
            return await self._default(candidate_replicas, pending_request)
        by_id = {self._rid(r): r for r in candidates}
        loads = await self._loads_of(candidates, len(request.token_ids))
        names = list(by_id)
        try:
            if self._redis_url is None:
                prepared = await self._prepared(request, names)
                order: list[RouteDecision] | None = self._rank(prepared, names, loads)
            else:
                order = await asyncio.to_thread(self._rank_locked, request, names, loads)
        except PrefixKeyError as exc:
            self.counters["refused"] += 1
            logger.debug("request %s not ranked: %s", pending_request.metadata.request_id, exc)
            return await self._default(candidate_replicas, pending_request)
        if order is None:  # Redis unreachable (IndexUnavailableError, in the worker thread)
            self.counters["index_unavailable"] += 1
            return await self._default(candidate_replicas, pending_request)
        self.counters["routed"] += 1
        self._ranked[pending_request.metadata.internal_request_id] = {
            d.replica.name: d for d in order}
        while len(self._ranked) > _MAX_PENDING:
            self._ranked.popitem(last=False)
        return [[by_id[d.replica]] for d in order]

    def on_request_routed(self, pending_request: PendingRequest, replica_id: Any,
                          result: Any) -> None:
        """Ray sent the call to ``replica_id``: its prefill counts as stored there, and as
        queued until Ray reports the call completed."""
        super().on_request_routed(pending_request, replica_id, result)
        call = pending_request.metadata.internal_request_id
        decisions = self._ranked.pop(call, None)
        decision = decisions.get(replica_id.unique_id) if decisions else None
        if decision is None:
            return
        self._sends.append(decision)
        key = (call, replica_id.unique_id)
        if key in self._early:  # already completed: nothing queued
            del self._early[key]
            self.counters["completed_first"] += 1
            return
        self.counters["counted"] += 1
        self._in_flight[key] = self.backlog.sent(decision.replica, decision.prefill_tokens,
                                                 time.monotonic())
        while len(self._in_flight) > _MAX_IN_FLIGHT:
            self.backlog.failed(self._in_flight.popitem(last=False)[1])

    def on_request_completed(self, replica_id: Any, internal_request_id: str) -> None:
        """Ray reports the call done (answered, its stream ended, failed or cancelled): its
        prefill is no longer queued. No first token was seen: released untimed."""
        super().on_request_completed(replica_id, internal_request_id)
        key = (internal_request_id, replica_id.unique_id)
        ticket = self._in_flight.pop(key, None)
        if ticket is not None:
            self.counters["released"] += 1
            self.backlog.failed(ticket)
        elif internal_request_id in self._ranked:  # ranked, not yet reported routed
            # (a rejected attempt is reported completed too: a retry accepted by the same
            # replica is then not counted, an under-count of that one call)
            self._early[key] = None
            while len(self._early) > _MAX_PENDING:
                self._early.popitem(last=False)

    def stats(self) -> dict[str, Any]:
        """This router's counters, its index size, each feed's counters and each replica's
        backlog (this router's calls there not reported completed, and their tokens)."""
        feeds: dict[str, Any] = {}
        for name, (_, sub) in list(self._feeds.items()):
            replicas = sub.stats().get("replicas", {})
            feeds[name] = next(iter(replicas.values()), {})
        try:
            entries: int | None = len(self._index) if self._redis_url is None else None
        except PrefixKeyError:
            entries = None
        now = time.monotonic()
        backlog = {rid.name: [self.backlog.requests(rid), self.backlog.queued(rid, now)]
                   for rid in self._ids.values()}
        return {"deployment": str(self._deployment_id), "namespace": self._namespace,
                "counters": dict(self.counters), "last_hit_tokens": self.last_hit_tokens,
                "entries": entries, "feeds": feeds, "backlog": backlog}
