"""docs/litellm.md's proxy config in a real LiteLLM proxy process, against fake vLLM replicas.

The page's ``config.yaml`` (its deployment entry repeated for three fake
replicas, with their addresses) and its ``prefixkey_routing.py`` are written to
a folder and ``litellm --config`` serves them on loopback, with the shared
Redis index. The test process sends chat requests to the proxy over HTTP and
reads where each arrived; between turns it waits until the index holds the
blocks the serving replica published (the proxy's subscriber writes them).
Needs the ``litellm-proxy`` extra and a Redis server: skipped without them,
except under ``CI``, where their absence fails.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_vllm import VERSION, FakeVLLM
from litellm_fleet import (
    MODEL_DIR,
    PORTS,
    SERVED,
    SERVER_OPTIONS,
    replicas,  # noqa: F401 (a fixture)
)
from redis_servers import REDIS_URL, missing, shared_client

from prefixkey.fleet import RedisPrefixIndex

PAGE = Path(__file__).resolve().parents[2] / "docs" / "litellm.md"
INSTALL = "pip install -e '.[litellm-proxy]'"
#: What the 1.110.2 proxy imports to start (the litellm-proxy extra's modules).
PROXY_MODULES = ("litellm", "fastapi", "uvicorn", "uvloop", "orjson", "yaml", "backoff",
                 "apscheduler", "multipart", "websockets", "jwt", "cryptography",
                 "fastapi_sso", "mcp", "semver", "expression", "soundfile", "redis")
#: The proxy's port: the top of this suite's range (the replicas take the bottom).
PROXY_PORTS = range(PORTS.stop - 10, PORTS.stop)
#: Starting the proxy imports thousands of modules: about 45 s on a loaded 2-core machine.
STARTUP = 300.0
WAIT = 30.0


def snippet(first_line: str, language: str) -> str:
    for block in re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"),
                            re.DOTALL):
        if block.startswith(first_line):
            return str(block)
    raise AssertionError(f"docs/litellm.md has no {language} block starting {first_line!r}")


def config_for(fleet: list[FakeVLLM]) -> dict[str, Any]:
    """The page's config, its deployment entry repeated for each fake replica."""
    yaml: Any = importlib.import_module("yaml")  # the proxy's YAML reader (no stubs here)
    config: dict[str, Any] = yaml.safe_load(snippet("# config.yaml", "yaml"))
    (template,) = config["model_list"]
    config["model_list"] = []
    for r in fleet:
        entry = copy.deepcopy(template)
        entry["litellm_params"].update(model=f"hosted_vllm/{SERVED}", api_base=r.url)
        entry["model_info"]["id"] = r.name
        entry["model_info"]["prefixkey"].update(
            kv_events=r.kv_events, replay=r.replay, model_dir=str(MODEL_DIR),
            vllm_version=VERSION, server_options=SERVER_OPTIONS)
        config["model_list"].append(entry)
    return config


def free_port() -> int:
    for port in PROXY_PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {PROXY_PORTS}")


def wait_for(predicate: Callable[[], bool], what: str, within: float = WAIT) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Proxy:
    """``litellm --config`` in its own process group, with its output in a file."""

    def __init__(self, folder: Path) -> None:
        self.key = f"sk-{secrets.token_hex(32)}"
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = folder / "proxy.log"
        script = Path(sys.executable).with_name("litellm")
        env = {**os.environ, "LITELLM_MASTER_KEY": self.key,
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(script), "--config", str(folder / "config.yaml"), "--host", "127.0.0.1",
                 "--port", self.url.rsplit(":", 1)[1]],
                cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for(self.alive, "the proxy to start", STARTUP)

    def alive(self) -> bool:
        assert self.process.poll() is None, f"the proxy exited:\n{self.tail()}"
        try:
            with urllib.request.urlopen(f"{self.url}/health/liveliness", timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            return False

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def chat(self, messages: list[dict[str, Any]]) -> str:
        request = urllib.request.Request(
            f"{self.url}/v1/chat/completions", method="POST",
            data=json.dumps({"model": "qwen", "messages": messages}).encode(),
            headers={"Authorization": f"Bearer {self.key}", "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=WAIT) as reply:
                content: str = json.load(reply)["choices"][0]["message"]["content"]
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"the proxy answered {exc.code}: {exc.read()!r}\n"
                                 f"{self.tail()}") from None
        return content

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture
def proxy(replicas: list[FakeVLLM], tmp_path: Path) -> Iterator[Proxy]:  # noqa: F811
    for module in PROXY_MODULES:
        if importlib.util.find_spec(module) is None:
            missing(f"the LiteLLM proxy needs {module!r} (the litellm-proxy extra): {INSTALL}")
    shared_client()  # a Redis server answers (flushed), or the test skips/fails saying so
    # JSON is YAML: the proxy reads it as it reads the page's file.
    (tmp_path / "config.yaml").write_text(json.dumps(config_for(replicas), indent=1))
    (tmp_path / "prefixkey_routing.py").write_text(
        f"redis_url = {REDIS_URL!r}\n" + snippet("# given: redis_url", "python"))
    started = Proxy(tmp_path)
    yield started
    started.close()


def indexed(index: RedisPrefixIndex, fleet: list[FakeVLLM]) -> Callable[[], bool]:
    """Whether the index holds every block each replica published; until then each replica
    publishes an empty batch (a batch lost before the proxy's subscriber joined is replayed
    when it sees the next one)."""
    def check() -> bool:
        known = {rid.name for rid in index.replicas()}
        done = True
        for r in fleet:
            if not r.stored:
                continue
            if r.name not in known or not r.stored <= set(index.table(r.name)):
                r.publish([])
                done = False
        return done
    return check


def test_the_proxy_config_of_docs_litellm_md_routes_conversations_by_prefix(
        replicas: list[FakeVLLM], proxy: Proxy) -> None:  # noqa: F811
    index = RedisPrefixIndex.from_url(REDIS_URL)
    system = {"role": "system", "content": "You answer questions about parcels. " * 8}

    def conversation(topic: str, turns: int) -> list[str]:
        messages: list[dict[str, Any]] = [system]
        where = []
        for turn in range(turns):
            messages = [*messages, {"role": "user", "content": f"{topic}: question {turn}?"}]
            answer = proxy.chat(messages)
            (name,) = [r.name for r in replicas for b in r.received if b["messages"] == messages]
            assert answer == f"served by {name}"
            where.append(name)
            wait_for(indexed(index, replicas), "the index to hold the replicas' blocks")
            messages = [*messages, {"role": "assistant", "content": answer}]
        return where

    for topic in ("parcels", "invoices", "customs"):
        where = conversation(topic, 3)
        assert where == [where[0]] * 3, (topic, where)
    # A replica that dies is routed around: the proxy's retry goes elsewhere.
    holder = next(r for r in replicas if r.name == where[0])
    holder.kill()
    answer = proxy.chat([system, {"role": "user", "content": "customs: question 0?"}])
    assert answer.startswith("served by ") and answer != f"served by {holder.name}"


# -- the callback in this process (a Router standing for the proxy's) ----------------------

def test_the_dotted_name_of_the_page_resolves_as_the_proxy_resolves_it() -> None:
    from litellm.proxy.types_utils.utils import get_instance_fn

    from prefixkey.gateways import litellm_proxy

    assert get_instance_fn("prefixkey.gateways.litellm_proxy.routing") is litellm_proxy.routing
    assert "prefixkey.gateways.litellm_proxy.routing" in PAGE.read_text(encoding="utf-8")


def test_the_first_requests_install_one_strategy_and_a_new_router_gets_its_own(
        replicas: list[FakeVLLM], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import asyncio

    from litellm_fleet import deployment, litellm

    from prefixkey.gateways import litellm_proxy
    from prefixkey.gateways.litellm import PrefixKeyRouting

    proxy_router: list[Any] = [None]
    built: list[PrefixKeyRouting] = []

    def counted(*args: Any, **kwargs: Any) -> PrefixKeyRouting:
        strategy = PrefixKeyRouting(*args, **kwargs)
        built.append(strategy)
        return strategy

    monkeypatch.setattr(litellm_proxy, "_proxy_router", lambda: proxy_router[0])
    monkeypatch.setattr(litellm_proxy, "PrefixKeyRouting", counted)
    callback = litellm_proxy.ProxyRouting()

    async def requests(n: int) -> None:
        await asyncio.gather(*(callback.async_pre_call_hook(None, None, {}, "acompletion")
                               for _ in range(n)))

    asyncio.run(requests(2))  # before the proxy built its Router: nothing to do
    assert not built
    first = proxy_router[0] = litellm.Router(model_list=[deployment(r) for r in replicas])
    asyncio.run(requests(5))
    (strategy,) = built
    assert strategy.litellm_router is first and strategy.subscriber is not None
    assert callback.routing is strategy
    reply = asyncio.run(first.acompletion(model="qwen", messages=[{"role": "user",
                                                                   "content": "hi"}]))
    assert reply.choices[0].message.content.startswith("served by ")
    assert strategy.counts["routed"] == 1  # the Router routes through it
    second = proxy_router[0] = litellm.Router(model_list=[deployment(r) for r in replicas])
    asyncio.run(requests(3))
    assert len(built) == 2 and built[1].litellm_router is second
    assert not strategy.subscriber.running  # the first one's subscriber is closed
    built[1].close()
