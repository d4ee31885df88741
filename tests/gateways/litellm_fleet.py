"""The LiteLLM suite's fixtures: litellm (or a skip naming its install), fake replicas, a Router.

litellm is imported with ``LITELLM_LOCAL_MODEL_COST_MAP=True``: it reads its
bundled price map instead of fetching one. Without litellm the suite is
skipped with the command that installs it, except under ``CI`` (``.ci/run``
installs the extra before the README's test run): there a missing litellm fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
INSTALL = "pip install -e '.[litellm]'"


def litellm_module() -> Any:
    try:
        import litellm
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"litellm is required here but not installed ({exc}): {INSTALL}")
        pytest.skip(f"needs litellm (the litellm extra): {INSTALL}", allow_module_level=True)
    return litellm


litellm = litellm_module()
zmq = pytest.importorskip("zmq", reason=f"needs pyzmq: {INSTALL}")

from fake_vllm import BLOCK, VERSION, FakeVLLM  # noqa: E402

from prefixkey.render import Renderer, ServerOptions  # noqa: E402

MODEL_DIR = Path(__file__).resolve().parents[1] / "render" / "models" / "qwen2_rebuilt"
SERVED = "qwen2"
#: This suite's loopback ports (each replica takes three: HTTP, PUB, replay); a shared
#: machine gives each run its own base (PREFIXKEY_LITELLM_PORT_BASE, 50 ports).
_BASE = int(os.environ.get("PREFIXKEY_LITELLM_PORT_BASE", "18750"))
PORTS = range(_BASE, _BASE + 50)


#: The replicas' `vllm serve` flags that change rendering (tools need a parser).
SERVER_OPTIONS = {"enable_auto_tool_choice": True, "tool_call_parser": "hermes"}


def renderer() -> Renderer:
    return Renderer(ServerOptions(model=str(MODEL_DIR), served_model_name=(SERVED,),
                                  **SERVER_OPTIONS))  # type: ignore[arg-type]


def deployment(replica: FakeVLLM, *, scheme: bool = True, **extra: Any) -> dict[str, Any]:
    """The model_list entry of one replica, as a user writes it."""
    prefixkey: dict[str, Any] = {"kv_events": replica.kv_events, "replay": replica.replay,
                                 "model_dir": str(MODEL_DIR), "vllm_version": VERSION,
                                 "server_options": SERVER_OPTIONS}
    if scheme:
        prefixkey.update(block_size=BLOCK, hash_algo="sha256", python_hash_seed="0")
    prefixkey.update(extra)
    return {"model_name": "qwen", "litellm_params": {"model": f"hosted_vllm/{SERVED}",
                                                      "api_base": replica.url},
            "model_info": {"id": replica.name, "prefixkey": prefixkey}}


@pytest.fixture
def replicas(ctx: Any) -> Iterator[list[FakeVLLM]]:
    made: list[FakeVLLM] = []
    shared = renderer()
    port = PORTS.start
    for name in ("r0", "r1", "r2"):
        while True:
            try:
                made.append(FakeVLLM(name, shared, ctx, port))
                port += 3
                break
            except (OSError, zmq.ZMQError):
                port += 3
                if port + 3 > PORTS.stop:
                    raise
    yield made
    for r in made:
        r.close()

