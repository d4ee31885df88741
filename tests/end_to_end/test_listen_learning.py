"""``prefixkey listen --vllm-version auto`` / ``--learn-scheme``: era and scheme from the events.

The publisher sends vLLM's own keys (golden vectors of the 0.31.0 wheel,
through tests/end_to_end/test_fleet_learning.py's helpers); the command is
given no release and no scheme, and must report the scheme the vector was
hashed with.
"""

from __future__ import annotations

import json
import threading
import warnings
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from test_fleet_learning import stored_event, vllm_vector  # noqa: E402
from test_subscriber import FakePublisher, ctx  # noqa: E402, F401 (a fixture)

from prefixkey.cli import main  # noqa: E402
from prefixkey.events import EventBatch, encode_batch  # noqa: E402
from prefixkey.fleet import AmbiguousSchemeWarning  # noqa: E402

PORT = 18750  # this suite's loopback range is 18700-18799


def _listen(context: Any, argv: list[str], capsys: pytest.CaptureFixture[str],
            row: dict[str, Any], port: int) -> list[str]:
    pub = FakePublisher(context, "0.31.0", port=port)
    payload = encode_batch(EventBatch(1.0, (stored_event(row)[0],)), "0.31.0")
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            pub.publish(payload)
            stop.wait(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", AmbiguousSchemeWarning)
            code = main(["listen", pub.endpoint, "--name", "gpu-a", "--duration", "1.5",
                         *argv])
    finally:
        stop.set()
        thread.join(2)
        pub.close()
    assert code == 0
    return capsys.readouterr().out.splitlines()


def test_listen_auto_infers_the_era_and_learns_the_scheme(
        ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    row = vllm_vector("xxhash_cbor", 4)
    out = [json.loads(x) for x in _listen(ctx, ["--vllm-version", "auto", "--json"], capsys,
                                          row, PORT)]
    final = out[-1]
    replica = final["replicas"]["gpu-a"]
    assert (replica["scheme"], replica["errors"]) == ("learned", 0)
    assert replica["vllm_version"] is not None  # the era that decodes the payloads
    learned = final["schemes"]["gpu-a"]
    assert "hash_algo='xxhash_cbor'" in learned and "block_size=4" in learned
    assert replica["index_size"] == len(row["result"]["block_hashes"])


def test_listen_learn_scheme_under_a_given_release(
        ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    row = vllm_vector("sha256", 16)
    lines = _listen(ctx, ["--vllm-version", "0.31.0", "--learn-scheme"], capsys, row,
                    PORT + 1)
    final = next(line for line in lines if line.startswith("final "))
    assert "vllm=0.31.0 scheme=learned" in final
    learned = next(line for line in lines if line.startswith("learned gpu-a: "))
    assert "hash_algo='sha256'" in learned and "block_size=16" in learned
