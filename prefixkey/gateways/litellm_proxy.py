"""Exact prefix routing in LiteLLM's proxy (``litellm --config config.yaml``), from its config.

The proxy of litellm 1.110.2 has no configuration key for a custom routing
strategy (``router_settings.routing_strategy`` takes only LiteLLM's own names;
``router_settings.plugins`` narrows candidate *models*), but its config loads
callbacks: ``litellm_settings.callbacks`` names a ``CustomLogger`` instance by
dotted path (a module next to the config file, or an installed one), and the
proxy awaits every callback's ``async_pre_call_hook`` on each request before
its Router picks a deployment. :class:`ProxyRouting` is such a callback: on a
request, when the proxy's Router (``litellm.proxy.proxy_server.llm_router``)
has no prefixkey strategy yet, it builds one for it (:func:`.litellm.install`)
and registers it, so that request and every later one is routed by prefix. A
Router the proxy rebuilds (a configuration reload) gets a new strategy and the
old one's subscriber is closed.

``prefixkey.gateways.litellm_proxy.routing`` is a :class:`ProxyRouting` with
the in-memory index; a module of one's own builds another with options
(``ProxyRouting(index=RedisPrefixIndex.from_url(...))``). docs/litellm.md,
"The proxy".
"""

from __future__ import annotations

import asyncio
from typing import Any

from .._extras import needs_extra

with needs_extra("litellm", "prefixkey.gateways.litellm_proxy"):
    from litellm.integrations.custom_logger import CustomLogger

from .litellm import PrefixKeyRouting

__all__ = ["ProxyRouting", "routing"]


def _proxy_router() -> Any:
    """The proxy's Router (None before its config is loaded)."""
    from litellm.proxy import proxy_server  # imported by the proxy process already

    return proxy_server.llm_router


class ProxyRouting(CustomLogger):  # type: ignore[misc]  # litellm is untyped here
    """A proxy callback that installs :class:`~.litellm.PrefixKeyRouting` on the proxy's Router.

    ``options`` are :class:`~.litellm.PrefixKeyRouting`'s (``index``,
    ``subscriber_options``, ``subscribe``, ...). ``routing`` is the strategy
    installed, None until the first request.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.options = options
        self.routing: PrefixKeyRouting | None = None
        self._router: Any = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict[str, Any],
                                  call_type: Any) -> None:
        """Install the strategy on the proxy's Router if it has none; the request is unchanged."""
        router = _proxy_router()
        if router is None or router is self._router:
            return
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:  # a lock serves one loop
            self._lock, self._lock_loop = asyncio.Lock(), loop
        async with self._lock:  # concurrent first requests build one strategy
            if router is not self._router:
                # Building it reads the model folder (tokenizer, template): off the loop.
                built = await asyncio.to_thread(PrefixKeyRouting, router, **self.options)
                self.install(router, built)

    def install(self, router: Any, built: PrefixKeyRouting) -> None:
        """Register ``built`` on ``router``, subscribe, and retire the previous strategy."""
        previous = self.routing
        router.register_plugin(built)
        self.routing, self._router = built.start(), router
        if previous is not None:
            previous.close()


#: The callback a proxy config names (with the in-memory index):
#: ``litellm_settings: {callbacks: ["prefixkey.gateways.litellm_proxy.routing"]}``.
routing = ProxyRouting()
