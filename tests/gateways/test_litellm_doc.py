"""docs/litellm.md's snippets run as written, against fake vLLM replicas on loopback.

The page's ``# given: replicas, model_dir, served_model`` snippet is given three
fake replicas (tests/gateways/fake_vllm.py), the test model folder and its
served name; what it printed and where its conversation went are checked here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fake_vllm import FakeVLLM
from litellm_fleet import (
    MODEL_DIR,
    SERVED,
    replicas,  # noqa: F401 (a fixture)
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "litellm.md"


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def test_the_page_has_its_snippets() -> None:
    # The proxy's module runs in test_litellm_proxy.py, in a real proxy process.
    assert [s.splitlines()[0] for s in snippets()] == [
        "# given: replicas, model_dir, served_model (vLLM replicas publishing KV events)",
        "# given: redis_url (a Redis server); this is prefixkey_routing.py, next to config.yaml"]


def test_the_python_configuration_routes_a_conversation(
        replicas: list[FakeVLLM], capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    snippet = snippets()[0]
    namespace: dict[str, Any] = {
        "__name__": "__snippet__", "model_dir": str(MODEL_DIR), "served_model": SERVED,
        "replicas": {r.name: (r.url, r.kv_events, r.replay) for r in replicas},
    }
    # Each replica publishes once before the snippet runs, so the subscriber is connected
    # (ZMQ's slow joiner) when the conversation's events come: the snippet does not wait.
    for r in replicas:
        r.publish([])
    exec(compile(snippet, f"{PAGE}:snippet0", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "'routed': 2" in printed and "'render_failed': 0" in printed, printed
    routing = namespace["routing"]
    assert routing.subscriber is not None and not routing.subscriber.running
    served = [(r.name, b["messages"][-1]["content"]) for r in replicas for b in r.received]
    # Both turns were served (where the second went depends on when the first's events
    # arrived, which the snippet does not wait for: test_litellm.py asserts placement).
    assert sorted(c for _, c in served) == ["And parcel 43?", "Where is parcel 42?"]
