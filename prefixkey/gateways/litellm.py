"""Exact prefix routing inside LiteLLM's Router, for deployments that are vLLM replicas.

:class:`PrefixKeyRouting` is a LiteLLM custom routing strategy
(``CustomRoutingStrategyBase``, registered with ``Router.register_plugin``, the
interface of litellm 1.110.2). For a model group's ``hosted_vllm/…``
deployments that carry ``model_info["prefixkey"]`` (docs/gateways/litellm.md) it

1. builds the chat body LiteLLM will send (LiteLLM's own provider
   transformation, :mod:`._litellm_body`) and renders it into vLLM's token ids
   (:class:`prefixkey.render.Renderer`);
2. hashes it and ranks the healthy deployments with
   :class:`prefixkey.fleet.Router` (the expected time to first token: queued
   prefill plus the prefill still needed) over the fleet index, fed by the
   replicas' KV events through a :class:`prefixkey.fleet.Subscriber`, with
   the prefill each deployment was sent and has still to do as the load
   (:mod:`._litellm_load`, a :class:`prefixkey.fleet.PrefillBacklog`: counted
   on the pick, released at the first token where LiteLLM reports one, else
   at the answer or failure, or after ``outstanding_timeout`` seconds);
3. returns the chosen deployment dict.

Steps 1 and 2 run in a worker thread (a lean hand-off, :mod:`._handoff`): rendering a
long conversation takes milliseconds and the Redis index's client blocks, so
the event loop is held only for LiteLLM's own group and cooldown reads.

LiteLLM calls a custom strategy before its own candidate filters, so the
plugin applies what they would: deployments in LiteLLM's cooldown are left
out, and so are those a retry of the same call (``litellm_trace_id``) already
tried; with none left it raises LiteLLM's ``RouterRateLimitError``, which
LiteLLM's fallbacks handle as they handle their own. Deployments with no
events yet are candidates (they hold nothing). A request that cannot be
rendered, an index that does not answer (Redis down) or a group without
prefix configuration is routed without keys (a healthy deployment at
random, as LiteLLM's simple shuffle): at most a cache miss, never an error of the plugin's.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._extras import needs_extra

with needs_extra("litellm", "prefixkey.gateways.litellm"):
    import litellm
    from litellm.types.router import CustomRoutingStrategyBase, RouterRateLimitError

    from ._litellm_body import vllm_chat_body
    from ._litellm_load import Outcomes, Outstanding

from ..core import Request
from ..errors import InvalidRequestError, PrefixKeyError
from ..fleet import (
    IndexUnavailableError,
    PrefixIndex,
    PrefixIndexBackend,
    SubscriberOptions,
)
from ..fleet import Router as PrefixRouter
from ._handoff import Handoff
from ._litellm_config import ReplicaConfig, deployment_id, replica_config

if TYPE_CHECKING:
    from ..fleet import Subscriber
    from ..render import Renderer

__all__ = ["PrefixKeyRouting", "ReplicaConfig", "install", "replica_config"]

logger = logging.getLogger("prefixkey.gateways.litellm")

Deployment = Mapping[str, Any]


class PrefixKeyRouting(CustomRoutingStrategyBase):  # type: ignore[misc]  # litellm is untyped here
    """LiteLLM's routing step for vLLM deployments, by the prefix each replica holds.

    ``router`` is the ``litellm.Router`` whose deployments are routed (its
    ``model_list`` is read once, here: a deployment added later routes without
    keys until a new strategy is registered). ``index`` is the fleet index
    (:class:`~prefixkey.fleet.PrefixIndex` in memory by default, or a shared
    :class:`~prefixkey.fleet.RedisPrefixIndex`). ``renderers`` maps a model
    group to the :class:`~prefixkey.render.Renderer` of its model, for groups
    whose deployments give no ``model_dir``. ``subscriber_options`` tune the
    KV-event subscriber (:class:`~prefixkey.fleet.SubscriberOptions`);
    ``subscribe=False`` reads a shared index another process feeds (docs/fleet.md,
    "Many routers on Redis"). A request routed by keys counts as its deployment's
    load (its prefill tokens, as a PrefillBacklog counts them) until LiteLLM reports
    its first token (a stream's), its answer or its failure, or for
    ``outstanding_timeout`` seconds at most (a callback LiteLLM drops reports nothing).
    Call :meth:`start` (or use :func:`install`) to subscribe and count the load,
    :meth:`close` to stop.
    """

    def __init__(
        self, router: Any, *, index: PrefixIndexBackend | None = None,
        renderers: Mapping[str, Renderer] | None = None,
        subscriber_options: SubscriberOptions | None = None, subscribe: bool = True,
        max_tracked_calls: int = 10_000, outstanding_timeout: float = 600.0,
    ) -> None:
        self.litellm_router = router
        self.index: PrefixIndexBackend = PrefixIndex() if index is None else index
        #: The replicas' configurations by deployment id.
        self.replicas: dict[str, ReplicaConfig] = {}
        for deployment in router.registry().all():
            config = replica_config(deployment)
            if config is not None:
                self.replicas[config.name] = config
        self._renderers: dict[str, Renderer] = dict(renderers or {})
        self._by_render_key: dict[tuple[object, ...], Renderer] = {}
        self._check_groups()
        self.router = PrefixRouter(self.index, replicas=list(self.replicas), cache_tokens={
            c.name: c.kv_cache_size_tokens for c in self.replicas.values()
            if c.kv_cache_size_tokens is not None})
        #: Each deployment's prefill sent and still waiting (PrefillBacklog): the Router's load.
        self.outstanding = Outstanding(self.router, self.replicas, outstanding_timeout)
        self._outcomes: Outcomes | None = None  # LiteLLM's callback, while started
        self._subscriber_options = subscriber_options
        self._subscribe = subscribe
        self.subscriber: Subscriber | None = None
        # The Router's own queue estimate and the index are read and written under it.
        self._lock: Any = threading.RLock()
        self._tried: OrderedDict[str, set[str]] = OrderedDict()
        self._tried_lock = threading.Lock()
        self._max_tracked = max_tracked_calls
        #: How often each path was taken (routed by keys, without keys and why).
        self.counts: dict[str, int] = dict.fromkeys(
            ("routed", "unconfigured", "render_failed", "index_unavailable"), 0)
        self._handoff = Handoff()
        self._groups: dict[str, tuple[object, dict[str, Deployment]]] = {}

    # -- lifecycle ---------------------------------------------------------------------

    def _check_groups(self) -> None:
        """Build each group's Renderer once; a group must render one way (one model)."""
        groups: dict[str, tuple[object, ...]] = {}
        for config in self.replicas.values():
            seen = groups.setdefault(config.group, config.render_key)
            if seen != config.render_key:
                raise InvalidRequestError(
                    "model_info.prefixkey", f"model group {config.group!r}: its deployments "
                    "render differently (model_dir, served model or server_options): one group "
                    "is one model, as vLLM replicas of it are")
            if config.group in self._renderers or config.model_dir is None:
                continue
            renderer = self._by_render_key.get(config.render_key)
            if renderer is None:
                from ..render import Renderer, ServerOptions  # the render extra

                try:
                    options = ServerOptions(model=config.model_dir,
                                            served_model_name=(config.served_model,),
                                            vllm_version=config.vllm_version,
                                            **dict(config.server_options))
                except TypeError as exc:  # a name ServerOptions has not, or one set here
                    raise InvalidRequestError(
                        "model_info.prefixkey.server_options",
                        f"deployment {config.name}: {exc} (the fields are ServerOptions', "
                        "docs/render.md; model, served_model_name and vllm_version come from "
                        "the deployment)") from None
                renderer = self._by_render_key[config.render_key] = Renderer(options)
            self._renderers[config.group] = renderer

    def start(self) -> PrefixKeyRouting:
        """Subscribe to the replicas' KV events (those with ``kv_events``) and count the
        load (LiteLLM's callbacks release it)."""
        if self._outcomes is None:
            self._outcomes = Outcomes(self.outstanding.owner, self._first_token,
                                      self._released, self._streaming)
            litellm.logging_callback_manager.add_litellm_callback(self._outcomes)
        endpoints = [c.endpoint for c in self.replicas.values() if c.endpoint is not None]
        if endpoints and self._subscribe and self.subscriber is None:
            from ..fleet import Subscriber  # the zmq extra

            self.subscriber = Subscriber(endpoints, index=self.index,
                                         options=self._subscriber_options)
            self._lock = self.subscriber.lock
            self.subscriber.start()
        return self

    def close(self) -> None:
        if self._outcomes is not None:
            # LiteLLM copies litellm.callbacks into its per-event lists: out of every one
            litellm.logging_callback_manager.remove_callback_from_all_lists(self._outcomes)
            self._outcomes = None
        if self.subscriber is not None:
            self.subscriber.close()
        self._handoff.close()

    def __enter__(self) -> PrefixKeyRouting:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- LiteLLM's interface -----------------------------------------------------------

    async def async_get_available_deployment(
        self, model: str, messages: list[dict[str, str]] | None = None,
        input: str | list[object] | None = None, specific_deployment: bool | None = False,
        request_kwargs: dict[str, object] | None = None,
    ) -> Deployment:
        kwargs = request_kwargs or {}
        group = self._group(model)
        healthy, configured = self._candidates(model, group, await self._cooling(group), kwargs)
        if not configured:
            return self._without_keys(group, healthy, "unconfigured", kwargs)
        try:  # rendering, hashing and ranking in a worker thread: the loop is never held
            chosen = await self._handoff.call(self._route, model, group[configured[0]], messages,
                                              kwargs, configured)
        except PrefixKeyError as exc:
            logger.debug("model group %s: routed without keys: %s", model, exc)
            return self._without_keys(group, healthy, "render_failed", kwargs)
        return self._chosen(group, healthy, chosen, kwargs)

    def get_available_deployment(
        self, model: str, messages: list[dict[str, str]] | None = None,
        input: str | list[object] | None = None, specific_deployment: bool | None = False,
        request_kwargs: dict[str, object] | None = None,
    ) -> Deployment:
        kwargs = request_kwargs or {}
        group = self._group(model)
        healthy, configured = self._candidates(model, group, self._cooling_now(group), kwargs)
        if not configured:
            return self._without_keys(group, healthy, "unconfigured", kwargs)
        try:
            chosen = self._route(model, group[configured[0]], messages, kwargs, configured)
        except PrefixKeyError as exc:
            logger.debug("model group %s: routed without keys: %s", model, exc)
            return self._without_keys(group, healthy, "render_failed", kwargs)
        return self._chosen(group, healthy, chosen, kwargs)

    # -- the steps ---------------------------------------------------------------------

    def _group(self, model: str) -> dict[str, Deployment]:
        """The model group's deployments by id, in LiteLLM's order (kept per registry version)."""
        registry = self.litellm_router.registry()
        version = getattr(registry, "version", None)  # changes whenever the deployments do
        kept = self._groups.get(model)
        if kept is not None and version is not None and kept[0] == version:
            return kept[1]
        group = {deployment_id(d): d for d in registry.deployments(model) or ()}
        if version is not None:
            self._groups[model] = (version, group)
        return group

    async def _cooling(self, group: Mapping[str, Deployment]) -> set[str]:
        """The group's deployments in LiteLLM's cooldown."""
        cooldowns = self.litellm_router.health().cooldowns
        if not _shared(cooldowns):
            return _cooling_locally(cooldowns, group)
        return {c[0] for c in await cooldowns.async_get_active_cooldowns(list(group), None)}

    def _cooling_now(self, group: Mapping[str, Deployment]) -> set[str]:
        """:meth:`_cooling`, read synchronously."""
        cooldowns = self.litellm_router.health().cooldowns
        if not _shared(cooldowns):
            return _cooling_locally(cooldowns, group)
        return {c[0] for c in cooldowns.get_active_cooldowns(list(group), None)}

    def _candidates(self, model: str, group: Mapping[str, Deployment], cooling: set[str],
                    kwargs: Mapping[str, object]) -> tuple[list[str], list[str]]:
        """Both entry points' prelude, given the group's deployments in cooldown (read sync
        or async): the healthy deployments, and those of them routed by keys (none when the
        group cannot be: no prefix configuration, no renderer)."""
        healthy = self._filter(model, group, cooling, kwargs)
        if model not in self._renderers:
            return healthy, []
        return healthy, [name for name in healthy if name in self.replicas]

    def _filter(self, model: str, group: Mapping[str, Deployment], cooling: set[str],
                kwargs: Mapping[str, object]) -> list[str]:
        """What LiteLLM's filters would leave: no cooldown, none this call already tried."""
        healthy = [name for name in group if name not in cooling]
        tried = self._tried_by(kwargs)
        fresh = [name for name in healthy if name not in tried] if tried else healthy
        if fresh:
            return fresh
        if healthy:  # every healthy one was tried: retry among them, as LiteLLM's own do
            return healthy
        raise RouterRateLimitError(model=model, cooldown_time=0.0, enable_pre_call_checks=False,
                                   cooldown_list=sorted(cooling))

    def _tried_by(self, kwargs: Mapping[str, object]) -> set[str]:
        call = kwargs.get("litellm_trace_id")
        if not isinstance(call, str):
            return set()
        with self._tried_lock:
            return set(self._tried.get(call, ()))

    def _mark_tried(self, kwargs: Mapping[str, object], chosen: str) -> None:
        call = kwargs.get("litellm_trace_id")
        if not isinstance(call, str):
            return
        with self._tried_lock:
            self._tried.setdefault(call, set()).add(chosen)
            self._tried.move_to_end(call)
            while len(self._tried) > self._max_tracked:
                self._tried.popitem(last=False)

    def _route(self, model: str, deployment: Deployment, messages: Any,
               kwargs: Mapping[str, object], candidates: list[str]) -> str | None:
        """The chosen deployment's id; None when the index does not answer (PrefixKeyError
        when the body cannot be rendered)."""
        return self._rank(self._render(model, deployment, messages, kwargs), candidates, kwargs)

    def _render(self, model: str, deployment: Deployment, messages: Any,
                kwargs: Mapping[str, object]) -> Request:
        """The request vLLM hashes for the body LiteLLM will send (raises PrefixKeyError)."""
        body = vllm_chat_body(deployment, messages, kwargs)
        (rendered,) = self._renderers[model].render("/v1/chat/completions", body)
        return rendered.request

    def _rank(self, request: Request, candidates: list[str],
              kwargs: Mapping[str, object]) -> str | None:
        """The best candidate by the index (counted as sent to it while started), or None
        when the index does not answer."""
        try:
            with self._lock:
                self.outstanding.refresh()  # the busy deployments' backlog, now
                prepared = self.router.prepare(request, candidates)
                decision = self.router.rank(prepared, candidates, limit=1)[0]
                if self._outcomes is not None:
                    self.outstanding.sent(decision, kwargs)
                return decision.replica.name
        except IndexUnavailableError as exc:
            logger.debug("the index did not answer: routed without keys: %s", exc)
            return None

    def _first_token(self, ticket: object, at: float) -> None:
        """LiteLLM reported the first token of the request of ``ticket``, come at ``at``."""
        with self._lock:
            self.outstanding.first_token(ticket, at)

    def _streaming(self, ticket: object, details: Mapping[str, object]) -> None:
        """The request of ``ticket`` is a stream: LiteLLM's call details, watched for its first
        chunk."""
        with self._lock:
            self.outstanding.streaming(ticket, details)

    def _released(self, ticket: object) -> None:
        """LiteLLM reported the request of ``ticket`` ended with no first token seen."""
        with self._lock:
            self.outstanding.done(ticket)

    def _chosen(self, group: Mapping[str, Deployment], healthy: list[str], chosen: str | None,
                kwargs: Mapping[str, object]) -> Deployment:
        if chosen is None:
            return self._without_keys(group, healthy, "index_unavailable", kwargs)
        self.counts["routed"] += 1
        self._mark_tried(kwargs, chosen)
        return group[chosen]

    def _without_keys(self, group: Mapping[str, Deployment], healthy: list[str], why: str,
                      kwargs: Mapping[str, object]) -> Deployment:
        """No keys to route on: a healthy deployment at random, as LiteLLM's simple shuffle."""
        self.counts[why] += 1
        chosen = random.choice(healthy)
        self._mark_tried(kwargs, chosen)
        return group[chosen]


def _shared(cooldowns: Any) -> bool:
    """Whether LiteLLM's cooldowns have a Redis tier (or a store this reads no other way)."""
    store = getattr(cooldowns, "cooldown_store", None)
    return store is None or getattr(store, "has_redis", True) is not False


def _cooling_locally(cooldowns: Any, group: Mapping[str, Deployment]) -> set[str]:
    """The group's cooldowns from LiteLLM's memory-only store.

    Its ``snapshot()`` holds every cooldown recorded (expired ones until
    evicted) and is usually empty, answered without reading the group's
    ids one by one; otherwise the group is read as LiteLLM reads it.
    """
    if not cooldowns.cooldown_store.snapshot():
        return set()
    return {c[0] for c in cooldowns.get_active_cooldowns(list(group), None)}


def install(router: Any, **options: Any) -> PrefixKeyRouting:
    """Build a :class:`PrefixKeyRouting` for ``router``, register it and start it."""
    strategy = PrefixKeyRouting(router, **options)
    router.register_plugin(strategy)
    return strategy.start()
