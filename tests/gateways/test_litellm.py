"""prefixkey's routing strategy inside the real LiteLLM Router, against fake vLLM replicas.

Three fake replicas (tests/gateways/fake_vllm.py) serve OpenAI chat on
loopback and publish vLLM 0.31's KV events over ZMQ, with replay sockets;
LiteLLM's Router (the pinned litellm of the ``litellm`` extra) routes
``acompletion`` calls through :class:`prefixkey.gateways.litellm.PrefixKeyRouting`.
What is asserted is where each call actually arrived.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_vllm import FakeVLLM
from litellm_fleet import (
    MODEL_DIR,
    SERVED,
    deployment,
    litellm,
    replicas,  # noqa: F401 (a fixture)
)

from prefixkey.errors import InvalidRequestError
from prefixkey.fleet import PrefixIndex, PrefixIndexBackend
from prefixkey.gateways._litellm_body import vllm_chat_body
from prefixkey.gateways.litellm import PrefixKeyRouting, install

TIMEOUT = 10.0
SYSTEM = {"role": "system", "content": "You are a careful assistant for a shipping company. " * 6}


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def make_router(fleet: list[FakeVLLM], **options: Any) -> Any:
    return litellm.Router(model_list=[deployment(r) for r in fleet], num_retries=2, **options)


@pytest.fixture
def routed(replicas: list[FakeVLLM]  # noqa: F811
           ) -> Iterator[Callable[..., tuple[Any, PrefixKeyRouting]]]:
    made: list[PrefixKeyRouting] = []

    def build(index: PrefixIndexBackend | None = None, **router_options: Any
              ) -> tuple[Any, PrefixKeyRouting]:
        router = make_router(replicas, **router_options)
        strategy = install(router, index=index)
        made.append(strategy)
        return router, strategy

    yield build
    for s in made:
        s.close()


def served_by(fleet: list[FakeVLLM], messages: list[dict[str, Any]]) -> list[str]:
    """The replicas that received a body whose messages are ``messages`` (as LiteLLM sent them)."""
    return [r.name for r in fleet for body in r.received if body["messages"] == messages]


def chat(router: Any, messages: list[dict[str, Any]], **kwargs: Any) -> str:
    reply = asyncio.run(router.acompletion(model="qwen", messages=messages, **kwargs))
    content: str = reply.choices[0].message.content
    return content


def fed(strategy: PrefixKeyRouting, fleet: list[FakeVLLM]) -> None:
    """Wait until the subscriber applied every batch each replica published (or replayed)."""
    sub = strategy.subscriber
    assert sub is not None
    wait_for(lambda: all(sub.stats()["replicas"][r.name]["batches"] >= len(r.sent)
                         for r in fleet), "the replicas' events")


def connected(strategy: PrefixKeyRouting, fleet: list[FakeVLLM]) -> None:
    """Each replica re-sends an empty batch until the subscriber has one (ZMQ's slow joiner)."""
    sub = strategy.subscriber
    assert sub is not None
    for r in fleet:
        def has_one(r: FakeVLLM = r) -> bool:
            if sub.stats()["replicas"][r.name]["batches"] == 0:
                r.publish([])
                time.sleep(0.02)
            return bool(sub.stats()["replicas"][r.name]["batches"] > 0)
        wait_for(has_one, f"{r.name}'s first batch")
    fed(strategy, fleet)


def conversation(router: Any, fleet: list[FakeVLLM], turns: int, topic: str,
                 strategy: PrefixKeyRouting) -> list[str]:
    """``turns`` turns of one conversation; the replica that received each."""
    messages: list[dict[str, Any]] = [SYSTEM]
    where = []
    for turn in range(turns):
        messages = [*messages, {"role": "user", "content": f"{topic}: question {turn}?"}]
        answer = chat(router, messages)
        (name,) = served_by(fleet, messages)
        assert answer == f"served by {name}"
        where.append(name)
        fed(strategy, fleet)
        messages = [*messages, {"role": "assistant", "content": answer}]
    return where


def test_a_multi_turn_conversation_stays_on_the_replica_holding_its_prefix(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    connected(strategy, replicas)
    for topic in ("parcels", "invoices", "customs", "returns"):
        where = conversation(router, replicas, 4, topic, strategy)
        assert where == [where[0]] * 4, (topic, where)
    assert strategy.counts["routed"] == 16
    assert strategy.counts["render_failed"] == strategy.counts["unconfigured"] == 0


def test_the_body_rendered_is_the_body_litellm_sends(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, _ = routed()
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "text", "text": "a"},
                                                  {"type": "text", "text": "b"}]},
                {"role": "user", "content": "and?"}]
    tools = [{"type": "function", "function": {
        "name": "track", "strict": True, "description": "Track a parcel",
        "parameters": {"type": "object", "additionalProperties": False,
                       "properties": {"id": {"type": "string"}}}}}]
    kwargs = {"tools": tools, "max_tokens": 5,
              "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}
    chat(router, [dict(m) for m in messages], **kwargs)
    (received,) = [b for r in replicas for b in r.received]
    # LiteLLM changed it: the assistant's parts joined, the tool's schema stripped...
    assert received["messages"][2]["content"] == "a\nb"
    assert "strict" not in received["tools"][0]["function"]
    assert received["chat_template_kwargs"] == {"enable_thinking": False}
    # ... and the plugin rendered exactly what was sent.
    assert vllm_chat_body(deployment(replicas[0]), messages, kwargs) == received


def test_a_dead_replica_is_routed_around(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    connected(strategy, replicas)
    (first,) = set(conversation(router, replicas, 2, "parcels", strategy))
    holder = next(r for r in replicas if r.name == first)
    holder.kill()
    for r in replicas:
        r.received.clear()
    for topic in ("parcels", "invoices"):
        where = conversation(router, replicas, 3, topic, strategy)
        assert first not in where, where
        assert where == [where[0]] * 3, where


def test_an_event_gap_is_recovered_by_replay(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    connected(strategy, replicas)
    for r in replicas:
        r.drop_next = True  # the first turn's events are lost on PUB
    messages = [SYSTEM, {"role": "user", "content": "parcels: where is mine?"}]
    answer = chat(router, messages)
    (holder,) = served_by(replicas, messages)
    replica = next(r for r in replicas if r.name == holder)
    replica.publish([])  # the next message reveals the gap: the subscriber replays it
    fed(strategy, replicas)
    assert strategy.subscriber is not None
    assert strategy.subscriber.stats()["replicas"][holder]["replayed_batches"] >= 1
    follow_up = [*messages, {"role": "assistant", "content": answer},
                 {"role": "user", "content": "and tomorrow?"}]
    chat(router, follow_up)
    assert served_by(replicas, follow_up) == [holder]


def test_deployments_without_events_yet_are_candidates(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    # No replica has published anything: every one is a candidate, none registered.
    assert not strategy.index.replicas()
    seen = set()
    for topic in range(12):
        messages = [{"role": "user", "content": f"topic {topic}: " + "word " * 40}]
        chat(router, messages)
        seen.update(served_by(replicas, messages))
    assert seen == {r.name for r in replicas}


@pytest.mark.parametrize(("prefixkey", "field"), [
    ({"kv_events": "tcp://127.0.0.1:1", "bloc_size": 16}, "model_info.prefixkey.bloc_size"),
    ({"kv_events": 5}, "model_info.prefixkey.kv_events"),
    ({"block_size": 0}, "model_info.prefixkey.block_size"),
    ({"hash_algo": "sha256"}, "model_info.prefixkey.block_size"),
    ({"server_options": []}, "model_info.prefixkey.server_options"),
    ({"model_dir": str(MODEL_DIR), "server_options": {"tool_parser": "hermes"}},
     "model_info.prefixkey.server_options"),
    ({"kv_cache_size_tokens": 0}, "model_info.prefixkey.kv_cache_size_tokens"),
    ({"kv_cache_size_tokens": "160000"}, "model_info.prefixkey.kv_cache_size_tokens"),
    ({"kv_cache_size_tokens": -1}, "model_info.prefixkey.kv_cache_size_tokens"),
    ({"kv_cache_size_tokens": True}, "model_info.prefixkey.kv_cache_size_tokens"),
])
def test_a_bad_deployment_configuration_names_the_key(
        prefixkey: dict[str, Any], field: str) -> None:
    entry = {"model_name": "qwen", "litellm_params": {"model": f"hosted_vllm/{SERVED}",
                                                      "api_base": "http://127.0.0.1:1/v1"},
             "model_info": {"id": "bad", "prefixkey": prefixkey}}
    router = litellm.Router(model_list=[entry])
    with pytest.raises(InvalidRequestError) as caught:
        PrefixKeyRouting(router)
    assert caught.value.field == field and "deployment bad" in str(caught.value)


def test_a_deployments_kv_cache_size_is_the_routers_capacity() -> None:
    """``kv_cache_size_tokens`` reaches the Router as ``cache_tokens``: with the load the
    strategy pushes (each deployment's outstanding prefill, 0 at first), the pressure is
    recent tokens over it."""
    entries = [{"model_name": "qwen", "litellm_params": {
        "model": f"hosted_vllm/{SERVED}", "api_base": "http://127.0.0.1:1/v1"},
        "model_info": {"id": name, "prefixkey": prefixkey}}
        for name, prefixkey in (("a", {"kv_cache_size_tokens": 1000}), ("b", {}))]
    strategy = PrefixKeyRouting(litellm.Router(model_list=entries))
    assert strategy.replicas["a"].kv_cache_size_tokens == 1000.0
    assert strategy.replicas["b"].kv_cache_size_tokens is None
    router = strategy.router
    router.sent(router.route(list(range(600)), ["a"])[0])
    assert router.pressure("a") == 0.6  # 600 tokens of a's 1,000
    router.sent(router.route(list(range(1000, 1300)), ["b"])[0])
    # b counts the mean given (a's 1,000); the fleet is the ranking's candidates (b alone:
    # 1,000 tokens), which decays a by exp(-300 / 1,000)
    assert router.pressure("b") == pytest.approx(0.3)
    assert router.pressure("a") == pytest.approx(0.6 * math.exp(-0.3))


def test_a_non_vllm_deployment_is_refused() -> None:
    entry = {"model_name": "gpt", "litellm_params": {"model": "openai/gpt-4o", "api_key": "x"},
             "model_info": {"id": "gpt-1", "prefixkey": {}}}
    with pytest.raises(InvalidRequestError, match="hosted_vllm"):
        PrefixKeyRouting(litellm.Router(model_list=[entry]))


def test_the_memory_index_is_the_default(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    strategy = PrefixKeyRouting(make_router(replicas))
    assert isinstance(strategy.index, PrefixIndex) and strategy.subscriber is None


def test_a_reader_of_a_shared_index_does_not_subscribe(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    with install(make_router(replicas), subscribe=False) as strategy:
        assert strategy.subscriber is None
    with install(make_router(replicas)) as strategy:
        assert strategy.subscriber is not None and strategy.subscriber.running


def test_a_deployment_in_cooldown_is_left_out(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    # LiteLLM calls a custom strategy before its own cooldown filter: the plugin applies it.
    router, strategy = routed()
    connected(strategy, replicas)
    (holder,) = set(conversation(router, replicas, 2, "parcels", strategy))
    router.health().cooldowns.add_deployment_to_cooldown(holder, RuntimeError("down"), 500, 60.0)
    for r in replicas:
        r.received.clear()
    where = conversation(router, replicas, 3, "parcels", strategy)
    assert holder not in where and where == [where[0]] * 3, where


def test_every_deployment_cooling_falls_back_to_another_group(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    backup = {"model_name": "backup", "litellm_params": {
        "model": f"hosted_vllm/{SERVED}", "api_base": replicas[2].url}}
    router = litellm.Router(model_list=[deployment(r) for r in replicas[:2]] + [backup],
                            fallbacks=[{"qwen": ["backup"]}], num_retries=0)
    with install(router) as strategy:
        for r in replicas[:2]:
            router.health().cooldowns.add_deployment_to_cooldown(r.name, RuntimeError("x"), 500,
                                                                 60.0)
        assert chat(router, [{"role": "user", "content": "hi"}]) == "served by r2"
        assert strategy.counts["unconfigured"] == 1  # the backup group has no prefix config


def test_the_sync_completion_path_routes_by_prefix_too(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    connected(strategy, replicas)
    sends = counted_sends(strategy)
    messages: list[dict[str, Any]] = [SYSTEM]
    where = []
    for turn in range(3):
        messages = [*messages, {"role": "user", "content": f"sync question {turn}?"}]
        answer = router.completion(model="qwen", messages=messages).choices[0].message.content
        where += served_by(replicas, messages)
        fed(strategy, replicas)
        messages = [*messages, {"role": "assistant", "content": answer}]
    assert len(where) == 3 and where == [where[0]] * 3, where
    assert sends == where
    wait_for(lambda: idle(strategy), "LiteLLM's sync success callbacks")  # each one released


def test_rendering_hashing_and_ranking_leave_the_event_loop(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    threads: list[int] = []
    route = strategy._route

    def recording(*args: Any) -> str | None:
        threads.append(threading.get_ident())
        return route(*args)

    strategy._route = recording  # type: ignore[method-assign, assignment]

    async def call() -> int:
        await router.acompletion(model="qwen", messages=[{"role": "user", "content": "hi"}])
        return threading.get_ident()

    loop_thread = asyncio.run(call())
    assert len(threads) == 1 and threads[0] != loop_thread


def test_a_scheme_left_out_is_learned_from_the_replicas_events(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    router = litellm.Router(model_list=[deployment(r, scheme=False) for r in replicas],
                            num_retries=2)
    with install(router) as strategy:
        connected(strategy, replicas)
        for topic in ("parcels", "invoices"):
            where = conversation(router, replicas, 3, topic, strategy)
            assert where == [where[0]] * 3, (topic, where)
        # Registered by the subscriber once it learned the scheme from the events.
        assert any(r.name == where[0] for r in strategy.index.replicas())


def test_a_mixed_groups_unconfigured_deployment_serves_only_when_none_configured_is_healthy(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    plain = {"model_name": "qwen", "litellm_params": {
        "model": f"hosted_vllm/{SERVED}", "api_base": replicas[2].url}, "model_info": {"id": "r2"}}
    router = litellm.Router(model_list=[deployment(r) for r in replicas[:2]] + [plain],
                            num_retries=0)
    with install(router) as strategy:
        for turn in range(6):
            chat(router, [{"role": "user", "content": f"question {turn}"}])
        assert not replicas[2].received and strategy.counts["routed"] == 6
        for r in replicas[:2]:
            router.health().cooldowns.add_deployment_to_cooldown(r.name, RuntimeError("x"), 500,
                                                                 60.0)
        assert chat(router, [{"role": "user", "content": "now?"}]) == "served by r2"
        assert strategy.counts["unconfigured"] == 1


def counted_sends(strategy: PrefixKeyRouting) -> list[str]:
    """The replicas the strategy counted a send to, in order (its load's increments)."""
    sends: list[str] = []
    count = strategy.outstanding.sent

    def counting(decision: Any, kwargs: Any) -> None:
        sends.append(decision.replica.name)
        count(decision, kwargs)
    strategy.outstanding.sent = counting  # type: ignore[method-assign]
    return sends


def idle(strategy: PrefixKeyRouting) -> bool:
    return all(n == 0 and t == 0.0 for n, t in strategy.outstanding.outstanding().values())


async def until_idle(strategy: PrefixKeyRouting, what: str) -> None:
    """LiteLLM runs its callbacks as tasks of the request's loop: wait on that loop."""
    deadline = time.monotonic() + TIMEOUT
    while not idle(strategy):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_an_answered_request_is_no_longer_the_replicas_load(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    sends = counted_sends(strategy)

    async def answered(stream: bool) -> None:  # a stream is answered when it ends
        messages = [{"role": "user", "content": f"answered, stream={stream}: " + "word " * 30}]
        reply = await router.acompletion(model="qwen", messages=messages, stream=stream)
        if stream:
            async for _ in reply:
                pass
        await until_idle(strategy, "LiteLLM's success callback")
    for stream in (False, True):
        asyncio.run(answered(stream))
    assert len(sends) == 2


def test_a_failed_request_is_no_longer_the_replicas_load(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    router, strategy = routed()
    sends = counted_sends(strategy)
    for r in replicas:
        r.kill()

    async def failed() -> None:
        messages = [{"role": "user", "content": "nobody answers: " + "word " * 30}]
        with pytest.raises(litellm.InternalServerError):  # LiteLLM's for a refused connection
            await router.acompletion(model="qwen", messages=messages)
        await until_idle(strategy, "LiteLLM's failure callbacks")
    asyncio.run(failed())
    assert sends  # each attempt was counted, and each failure released it


def test_a_request_whose_outcome_never_comes_counts_until_its_timeout(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    strategy = install(make_router(replicas), outstanding_timeout=0.2)
    try:
        kwargs: dict[str, Any] = {"metadata": {}}
        messages = [{"role": "user", "content": "never answered: " + "word " * 30}]
        chosen = strategy.get_available_deployment("qwen", messages, request_kwargs=kwargs)
        name = chosen["model_info"]["id"]
        requests, tokens = strategy.outstanding.outstanding()[name]
        assert requests == 1 and tokens > 30
        wait_for(lambda: idle(strategy), "the send's timeout")
    finally:
        strategy.close()
    with pytest.raises(InvalidRequestError, match="outstanding_timeout"):
        PrefixKeyRouting(make_router(replicas), outstanding_timeout=0)


def test_a_concurrent_burst_spreads_over_the_replicas(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
) -> None:
    """Six picks of one prompt with none answered yet: each replica's outstanding prefill
    is its load, so they go two to each."""
    _, strategy = routed()
    messages = [{"role": "user", "content": "the same burst: " + "word " * 60}]

    async def burst() -> list[Any]:
        return await asyncio.gather(*(strategy.async_get_available_deployment(
            "qwen", messages, request_kwargs={"metadata": {}}) for _ in range(6)))
    chosen = [d["model_info"]["id"] for d in asyncio.run(burst())]
    assert sorted(chosen) == ["r0", "r0", "r1", "r1", "r2", "r2"], chosen
    assert {n for n, _ in strategy.outstanding.outstanding().values()} == {2}


@pytest.mark.parametrize("capacities", [{}, {"r0": 200}])
def test_a_small_kv_cache_takes_fewer_new_prompts(
        replicas: list[FakeVLLM], capacities: dict[str, int]) -> None:  # noqa: F811
    """Answered requests leave no load, but what they stored fills a replica's cache:
    with the capacities given (r0's 200 tokens against 100,000), new prompts avoid r0."""
    extra: dict[str, dict[str, Any]] = {
        r.name: {"kv_cache_size_tokens": capacities.get(r.name, 100_000)} if capacities else {}
        for r in replicas}
    model_list = [deployment(r, **extra[r.name]) for r in replicas]
    strategy = install(litellm.Router(model_list=model_list, num_retries=2))
    async def one_by_one() -> None:  # each answered (its load released) before the next
        for topic in range(9):
            messages = [{"role": "user", "content": f"new prompt {topic}: " + "word " * 40}]
            await strategy.litellm_router.acompletion(model="qwen", messages=messages)
            await until_idle(strategy, "LiteLLM's success callback")
    try:
        asyncio.run(one_by_one())
        where = [r.name for r in replicas for _ in r.received]
        assert len(where) == 9
        assert ("r0" in where) is not bool(capacities), where
    finally:
        strategy.close()


# The load the Router reads over a request's life, as LiteLLM reports it: (how it is
# called, counted once its first chunk is out (None: no chunk), timed at its end).
_LIFE = [
    pytest.param("sync stream", False, True, id="sync stream: released at its first chunk"),
    pytest.param("async stream", False, True, id="async stream: released at its first chunk"),
    pytest.param("async whole", None, False, id="whole response: released untimed at its end"),
    pytest.param("sync whole", None, False, id="sync whole response: released untimed"),
    pytest.param("failed", None, False, id="failure: released untimed"),
]


@pytest.mark.parametrize(("how", "counted_after_first", "timed"), _LIFE)
def test_the_load_over_a_requests_life(
        replicas: list[FakeVLLM], routed: Callable[..., tuple[Any, PrefixKeyRouting]],  # noqa: F811
        how: str, counted_after_first: bool | None, timed: bool) -> None:
    router, strategy = routed()
    for r in replicas:
        r.first.clear()
        r.rest.clear()
        if how == "failed":
            r.kill()
    messages = [{"role": "user", "content": f"one life, {how}: " + "word " * 40}]
    stream = how.endswith("stream")
    outcome: list[object] = []

    def call() -> None:
        try:
            if how.startswith("sync"):
                reply = router.completion(model="qwen", messages=messages, stream=stream)
                if stream:
                    for _ in reply:
                        pass
            else:
                asyncio.run(acall())
            outcome.append("ok")
        except Exception as exc:
            outcome.append(exc)

    async def acall() -> None:
        reply = await router.acompletion(model="qwen", messages=messages, stream=stream)
        if stream:
            async for _ in reply:
                pass
        await until_idle(strategy, "the release")  # LiteLLM's callbacks are the loop's tasks

    def load() -> tuple[int, float]:
        with strategy._lock:
            out = strategy.outstanding.outstanding()
        return sum(n for n, _ in out.values()), sum(t for _, t in out.values())

    caller = threading.Thread(target=call)
    caller.start()
    try:
        if how != "failed":
            wait_for(lambda: any(r.received for r in replicas), "the request at a replica")
            (name,) = [r.name for r in replicas if r.received]
            # Counted at the pick, before the request left; the replica holds its answer.
            requests, tokens = load()
            assert requests == 1 and tokens > 40  # sent: its prefill counts whole
            with strategy._lock:  # what the Router reads at a ranking: the pushed load
                strategy.outstanding.refresh()
                pushed = strategy.router._queues.get(
                    next(x for x in strategy.router.replicas if x.name == name))
            assert pushed == tokens
            for r in replicas:
                r.first.set()
            if counted_after_first is not None:  # the first chunk is out, the rest held
                time.sleep(0.3)  # room for a release that must not come (not a timing test)
                if counted_after_first:
                    assert load()[0] == 1
                else:
                    wait_for(lambda: load() == (0, 0.0), "the release at the first chunk")
            for r in replicas:
                r.rest.set()
    finally:
        caller.join(TIMEOUT)
    assert caller.is_alive() is False
    wait_for(lambda: load() == (0, 0.0), "the release")  # nothing leaks
    assert (outcome == ["ok"]) is (how != "failed"), outcome
    rates = {r.name: strategy.outstanding.backlog.rate(r.name) for r in replicas}
    assert any(v is not None for v in rates.values()) is timed, rates


# LiteLLM stamps the caller's own metadata dict (one object for every attempt of a call and
# every call given it) and runs a sync call's success callbacks on its logging thread pool
# after the call returned: an outcome may come after a later call's or attempt's pick. Each
# case is a sequence of ("pick", label, call), or (callback, label, call) the outcome of the
# pick ``label`` of ``call`` (its litellm_trace_id); the picks still counted after each step.
# "pre" is the attempt's pre-API-call callback (a stream's), handing its call details;
# "first chunk" is LiteLLM writing completion_start_time there (no callback).
_ORDERS = [
    pytest.param([("pick", "A", "a"), ("pick", "B", "b"), ("success", "A", "a"),
                  ("success", "B", "b")], [{"A"}, {"A", "B"}, {"B"}, set()],
                 id="a call's success after the next call's pick"),
    pytest.param([("pick", "A1", "a"), ("pick", "A2", "a"), ("failure", "A1", "a"),
                  ("success", "A2", "a")], [{"A1"}, {"A1", "A2"}, {"A2"}, set()],
                 id="an attempt's failure after the retry's pick"),
    pytest.param([("pick", "A", "a"), ("chunk", "A", "a"), ("pick", "B", "b"),
                  ("chunk", "A", "a"), ("success", "A", "a"), ("chunk", "B", "b")],
                 [{"A"}, set(), {"B"}, {"B"}, {"B"}, set()],
                 id="a stream's later chunks and success after the next call's pick"),
    pytest.param([("pick", "B", "b"), ("success", "A", "a"), ("pick", "A", "a"),
                  ("failure", "A", "a"), ("success", "B", "b")],
                 [{"B"}, {"B"}, {"A", "B"}, {"B"}, set()],
                 id="an outcome of a call not counted releases no other call's"),
    pytest.param([("pick", "A", "a"), ("pre", "A", "a"), ("pick", "B", "b"),
                  ("pre", "B", "b"), ("first chunk", "A", "a"), ("success", "A", "a"),
                  ("first chunk", "B", "b")],
                 [{"A"}, {"A"}, {"A", "B"}, {"A", "B"}, {"B"}, {"B"}, set()],
                 id="an async stream's first chunk, read in its call details"),
]


@pytest.mark.parametrize(("steps", "counted"), _ORDERS)
def test_each_outcome_releases_its_own_send_in_any_order(
        replicas: list[FakeVLLM], steps: list[tuple[str, str, str]],  # noqa: F811
        counted: list[set[str]]) -> None:
    with install(make_router(replicas), subscribe=False) as strategy:
        outcomes = strategy._outcomes
        assert outcomes is not None
        metadata: dict[str, Any] = {}  # the caller's, given to every call
        where: dict[str, str] = {}
        details: dict[str, dict[str, Any]] = {}  # each stream attempt's, as LiteLLM keeps it
        callbacks = {"success": outcomes.log_success_event, "failure": outcomes.log_failure_event,
                     "chunk": outcomes.log_stream_event}
        for (what, label, call), expected in zip(steps, counted, strict=True):
            if what == "pre":
                details[label] = {"litellm_params": {"metadata": metadata},
                                  "litellm_trace_id": call, "stream": True}
                outcomes.log_pre_api_call("qwen", [], details[label])
            elif what == "first chunk":
                details[label]["completion_start_time"] = datetime.datetime.now()
            elif what == "pick":
                messages = [{"role": "user", "content": f"{label}: " + "word " * 40}]
                chosen = strategy.get_available_deployment(
                    "qwen", messages, request_kwargs={"metadata": metadata,
                                                      "litellm_trace_id": call})
                where[label] = chosen["model_info"]["id"]
            else:
                kwargs = {"litellm_params": {"metadata": metadata}, "litellm_trace_id": call,
                          "stream": what == "chunk"}
                callbacks[what](kwargs, None, None, None)
            loads = {name: n for name, (n, _) in strategy.outstanding.outstanding().items() if n}
            assert loads == dict(Counter(where[p] for p in expected)), (what, label)


def test_another_strategys_callback_takes_none_of_its_sends(
        replicas: list[FakeVLLM]) -> None:  # noqa: F811
    """Every strategy's callback sees every request: each takes only its own tickets."""
    with install(make_router(replicas), subscribe=False) as mine, \
            install(make_router(replicas), subscribe=False) as other:
        assert mine._outcomes is not None and other._outcomes is not None
        metadata: dict[str, Any] = {}
        messages = [{"role": "user", "content": "mine: " + "word " * 40}]
        mine.get_available_deployment("qwen", messages, request_kwargs={
            "metadata": metadata, "litellm_trace_id": "a"})
        kwargs = {"litellm_params": {"metadata": metadata}, "litellm_trace_id": "a"}
        other._outcomes.log_success_event(kwargs, None, None, None)  # the other one first
        assert not idle(mine)
        mine._outcomes.log_success_event(kwargs, None, None, None)
        assert idle(mine)
