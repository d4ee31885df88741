"""The LiteLLM plugin's own reads: its group kept per registry version, cooldowns read cheaply."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from litellm_fleet import litellm

from prefixkey.gateways.litellm import PrefixKeyRouting


def plain(i: int) -> dict[str, Any]:
    return {"model_name": "qwen", "litellm_params": {
        "model": "hosted_vllm/qwen2", "api_base": f"http://127.0.0.1:{18840 + i}/v1"},
        "model_info": {"id": f"d{i}"}}


def test_the_group_is_read_again_when_the_deployments_change() -> None:
    router = litellm.Router(model_list=[plain(0), plain(1)])
    strategy = PrefixKeyRouting(router, subscribe=False)
    first = strategy._group("qwen")
    assert list(first) == ["d0", "d1"] and strategy._group("qwen") is first
    router.add_deployment(litellm.types.router.Deployment(**plain(2)))
    assert list(strategy._group("qwen")) == ["d0", "d1", "d2"]
    router.delete_deployment("d0")
    assert list(strategy._group("qwen")) == ["d1", "d2"]


def test_cooldowns_are_read_while_recorded_and_not_after() -> None:
    router = litellm.Router(model_list=[plain(0), plain(1), plain(2)])
    strategy = PrefixKeyRouting(router, subscribe=False)
    group = strategy._group("qwen")

    def both() -> tuple[set[str], set[str]]:
        return asyncio.run(strategy._cooling(group)), strategy._cooling_now(group)

    assert both() == (set(), set())
    router.health().cooldowns.add_deployment_to_cooldown("d1", RuntimeError("x"), 500, 0.5)
    assert both() == ({"d1"}, {"d1"})
    time.sleep(0.6)
    assert both() == (set(), set())
