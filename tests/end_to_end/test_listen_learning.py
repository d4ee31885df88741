"""``prefixkey listen --vllm-version auto`` / ``--learn-scheme``: era and scheme from the events.

The publisher sends vLLM's own keys (golden vectors of the 0.31.0 wheel,
through tests/end_to_end/test_fleet_learning.py's helpers); the command is
given no release and no scheme, and must report the scheme the vector was
hashed with.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

zmq = pytest.importorskip("zmq", reason="needs pyzmq: pip install -e '.[test]' (or the zmq extra)")

from fake_publisher import FakePublisher  # noqa: E402
from test_fleet_learning import stored_event, vllm_vector  # noqa: E402

from prefixkey.cli import main  # noqa: E402
from prefixkey.events import EventBatch, encode_batch  # noqa: E402
from prefixkey.fleet import AmbiguousSchemeWarning  # noqa: E402

PORT = 18750  # this suite's loopback range is 18700-18799


@contextmanager
def _publishing(context: Any, row: dict[str, Any], port: int,
                interval: float = 0.02) -> Iterator[FakePublisher]:
    """A 0.31.0 publisher sending the vector's BlockStored every ``interval`` seconds."""
    pub = FakePublisher(context, "0.31.0", port=port)
    payload = encode_batch(EventBatch(1.0, (stored_event(row)[0],)), "0.31.0")
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            pub.publish(payload)
            stop.wait(interval)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield pub
    finally:
        stop.set()
        thread.join(2)
        pub.close()


def _listen(context: Any, argv: list[str], capsys: pytest.CaptureFixture[str],
            row: dict[str, Any], port: int, interval: float = 0.02) -> list[str]:
    with _publishing(context, row, port, interval) as pub, warnings.catch_warnings():
        warnings.simplefilter("ignore", AmbiguousSchemeWarning)
        code = main(["listen", pub.endpoint, "--name", "gpu-a", "--duration", "1.5", *argv])
    assert code == 0
    return capsys.readouterr().out.splitlines()


def test_listen_auto_infers_the_era_and_learns_the_scheme(
        ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:
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
        ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:
    row = vllm_vector("sha256", 16)
    lines = _listen(ctx, ["--vllm-version", "0.31.0", "--learn-scheme"], capsys, row,
                    PORT + 1)
    final = next(line for line in lines if line.startswith("final "))
    assert "vllm=0.31.0 scheme=learned" in final
    learned = next(line for line in lines if line.startswith("learned gpu-a: "))
    assert "hash_algo='sha256'" in learned and "block_size=16" in learned


def test_listen_auto_names_the_releases_the_events_fit(
        ctx: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Before the wire era settles (fewer than 32 payloads) too: never ``vllm=?`` once a
    payload arrived. A token-only 0.31.0 payload also decodes as 0.24.0-0.33.0's wire
    eras, and four of their schemes reproduce its keys: the range says so."""
    row = vllm_vector("sha256", 16)
    lines = _listen(ctx, ["--vllm-version", "auto"], capsys, row, PORT + 2, interval=0.2)
    final = next(line for line in lines if line.startswith("final "))
    assert "vllm=0.24.0-0.33.0 scheme=learned" in final
    learned = next(line for line in lines if line.startswith("learned gpu-a: "))
    assert "vllm_version='0.33.0'" in learned  # the newest fitting scheme is used


def test_listen_prints_each_warning_once_naming_releases(ctx: Any) -> None:
    """The command's own process: one log line per warning, no Python warning echo, and
    the candidates named by their releases (era letters mean other things elsewhere)."""
    row = vllm_vector("sha256", 16)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONWARNINGS": "default"}
    with _publishing(ctx, row, PORT + 3) as pub:
        proc = subprocess.run(
            [sys.executable, "-m", "prefixkey", "listen", pub.endpoint, "--name", "gpu-a",
             "--duration", "1.5", "--vllm-version", "auto"],
            capture_output=True, text=True, env=env, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    ambiguous = [line for line in proc.stderr.splitlines()
                 if "reproduce the replica's keys" in line]
    assert len(ambiguous) == 1, proc.stderr
    assert "AmbiguousSchemeWarning" not in proc.stderr and ".py:" not in proc.stderr
    assert ambiguous[0].startswith("prefixkey listen: WARNING gpu-a: 4 schemes of vLLM "
                                   "0.24.0-0.33.0 reproduce the replica's keys")
    assert "vLLM 0.31.0-0.32.0 sha256 seed='0'" in ambiguous[0]
    assert not re.search(r"\b[A-O][0-9]? sha256", ambiguous[0])  # no era letters
