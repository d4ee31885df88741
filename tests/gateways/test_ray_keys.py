"""The Ray gateway's sans-IO halves: what a Serve call carries, where a replica publishes.

No Ray needed: these run everywhere (tests/gateways/test_ray.py runs the router itself).
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from prefixkey.errors import InvalidRequestError
from prefixkey.fleet import ReplicaEndpoint
from prefixkey.gateways._ray_keys import CHAT, COMPLETIONS, call_body, token_request
from prefixkey.gateways._ray_replicas import (
    KV_CACHE_SIZE_TOKENS,
    KV_EVENT_METADATA,
    cache_tokens_of,
    endpoint_of,
    replica_kv_events,
)


class _Model:
    """A pydantic request model as Ray Serve LLM passes it (only ``model_dump`` matters)."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def model_dump(self, exclude_unset: bool = False) -> dict[str, Any]:
        return dict(self.fields)


def test_ray_llm_token_ids_come_first_and_are_checked() -> None:
    call = call_body((_Model(messages=[{"role": "user", "content": "hi"}]),),
                     {"request_token_ids": [1, 2, 3]})
    assert call is not None and call.endpoint is None
    request = token_request(call)
    assert request is not None and list(request.token_ids) == [1, 2, 3]
    with pytest.raises(InvalidRequestError) as err:
        call_body((), {"request_token_ids": [1, True, 3]})
    assert err.value.field == "request_token_ids" and err.value.position == 1


def test_bodies_are_found_in_models_and_mappings() -> None:
    chat = call_body((_Model(model="m", messages=[{"role": "user", "content": "hi"}]),), {})
    assert chat is not None and chat.endpoint == CHAT and chat.body is not None
    assert token_request(chat) is None  # only a renderer can tell a chat's ids
    text = call_body(("ignored", {"prompt": "Hello"}), {})
    assert text is not None and text.endpoint == COMPLETIONS and token_request(text) is None
    assert call_body((42, "x"), {}) is None


def test_a_completions_prompt_of_ids_is_hashed_as_is_with_its_salt() -> None:
    call = call_body(({"prompt": [5, 6, 7], "cache_salt": "tenant-a"},), {})
    assert call is not None
    request = token_request(call)
    assert request is not None and list(request.token_ids) == [5, 6, 7]
    assert request.cache_salt == "tenant-a"
    with pytest.raises(InvalidRequestError) as err:
        token_request(call_body(({"prompt": [5, 1.5]},), {}))  # type: ignore[arg-type]
    assert err.value.field == "prompt" and err.value.position == 1
    with pytest.raises(InvalidRequestError, match="cache_salt"):
        token_request(call_body(({"prompt": [5], "cache_salt": 3},), {}))  # type: ignore[arg-type]


def test_replica_ports_follow_rays_convention_and_round_trip() -> None:
    kv = replica_kv_events(2, "10.0.0.7", block_size=16)
    assert kv.kv_events_config == {
        "enable_kv_cache_events": True, "publisher": "zmq", "endpoint": "tcp://*:5559",
        "replay_endpoint": "tcp://*:6559"}
    meta = kv.routing_stats[KV_EVENT_METADATA]
    assert meta["endpoint"] == "tcp://10.0.0.7:5559" and meta["block_size"] == 16
    assert endpoint_of("r1", kv.routing_stats, vllm_version="0.29.0", scheme=None) == \
        ReplicaEndpoint("r1", "tcp://10.0.0.7:5559", "0.29.0",
                        replay_endpoint="tcp://10.0.0.7:6559")
    ranked = {KV_EVENT_METADATA: {**meta, "dp_rank": 3}}
    got = endpoint_of("r1", ranked, vllm_version=None, scheme=None)
    assert got is not None and got.dp_rank == 3


@pytest.mark.parametrize(("stats", "field"), [
    ({KV_EVENT_METADATA: "tcp://x:1"}, KV_EVENT_METADATA),
    ({KV_EVENT_METADATA: {"endpoint": "ipc:///tmp/x"}}, f"{KV_EVENT_METADATA}.endpoint"),
    ({KV_EVENT_METADATA: {"endpoint": "tcp://x:1", "replay_endpoint": 5}},
     f"{KV_EVENT_METADATA}.replay_endpoint"),
    ({KV_EVENT_METADATA: {"endpoint": "tcp://x:1", "dp_rank": -1}},
     f"{KV_EVENT_METADATA}.dp_rank"),
])
def test_malformed_metadata_is_a_typed_error_naming_the_field(
        stats: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidRequestError) as err:
        endpoint_of("r1", stats, vllm_version=None, scheme=None)
    assert err.value.field == field


def test_a_replica_advertises_its_kv_cache_size_beside_its_publisher() -> None:
    kv = replica_kv_events(0, "10.0.0.7", kv_cache_size_tokens=160_000)
    assert kv.routing_stats[KV_CACHE_SIZE_TOKENS] == 160_000
    assert cache_tokens_of(kv.routing_stats) == 160_000.0
    assert cache_tokens_of(replica_kv_events(0, "h").routing_stats) is None
    assert cache_tokens_of({}) is None


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, True, "160000"])
def test_a_bad_kv_cache_size_is_a_typed_error_naming_the_field(bad: object) -> None:
    with pytest.raises(InvalidRequestError) as err:
        cache_tokens_of({KV_CACHE_SIZE_TOKENS: bad})
    assert err.value.field == KV_CACHE_SIZE_TOKENS
    with pytest.raises(InvalidRequestError) as err:
        replica_kv_events(0, "h", kv_cache_size_tokens=bad)  # type: ignore[arg-type]
    assert err.value.field == KV_CACHE_SIZE_TOKENS


def test_no_metadata_yet_is_no_endpoint_and_bad_ports_are_refused() -> None:
    assert endpoint_of("r1", {}, vllm_version=None, scheme=None) is None
    with pytest.raises(InvalidRequestError, match="port_base"):
        replica_kv_events(0, "h", port_base=70_000)
    with pytest.raises(InvalidRequestError, match="rank"):
        replica_kv_events(-1, "h")
