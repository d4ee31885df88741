"""Redis for the tests: the shared server's client, and private redis-server processes.

The shared server is ``PREFIXKEY_TEST_REDIS_URL`` (default
redis://127.0.0.1:6379/15, flushed before each test). Tests that kill and
restart a server start their own :class:`RedisServer` on a free loopback port
(from ``PREFIXKEY_TEST_REDIS_PORTS``, e.g. ``18200-18299``, else an ephemeral
one), without persistence, so a restart loses everything as a crashed
production server without persistence would; ``PREFIXKEY_TEST_REDIS_SERVER``
names its binary (default ``redis-server``; ``.ci/run`` also runs the Redis
tests against Valkey). Missing pieces (redis-py,
redis-server, a server answering) fail the test when ``CI`` is set and skip
it otherwise, saying why.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

REDIS_URL = os.environ.get("PREFIXKEY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
#: The server binary the tests start (e.g. a valkey-server, as .ci/run does).
SERVER = os.environ.get("PREFIXKEY_TEST_REDIS_SERVER", "redis-server")


def missing(message: str) -> None:
    """Fail under CI, skip otherwise: a missing service is never a pass."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def redis_module() -> Any:
    try:
        import redis
    except ImportError as exc:  # pragma: no cover - depends on the environment
        missing(f"redis-py is not installed (pip install 'prefixkey[test]'): {exc}")
    return redis


def shared_client() -> Any:
    """A client of the shared server's test database, flushed."""
    redis = redis_module()
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.exceptions.ConnectionError as exc:
        missing(f"no Redis server answers at {REDIS_URL} ({exc}); start one with "
                "`redis-server --port 6379 --save '' --daemonize yes` or set "
                "PREFIXKEY_TEST_REDIS_URL")
    client.flushdb()
    return client


def flushed_client() -> Iterator[Any]:
    """:func:`shared_client` for one test, flushed and closed after it (a fixture's body)."""
    client = shared_client()
    yield client
    client.flushdb()
    client.close()


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _free_port(bus: bool = False) -> int:
    """A free loopback port; with ``bus``, port + 10000 (the cluster bus) is free too."""
    spec = os.environ.get("PREFIXKEY_TEST_REDIS_PORTS")
    if spec:
        low, high = (int(p) for p in spec.split("-"))
        candidates = list(range(low, high + 1))
    elif bus:  # ephemeral ports plus 10000 may pass 65535: pick below 30000
        candidates = random.Random().sample(range(20_000, 30_000), 200)
    else:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
            return port
    for port in candidates:
        if _bindable(port) and (not bus or _bindable(port + 10_000)):
            return port
    raise RuntimeError(f"no free port among {candidates[0]}..{candidates[-1]}")


class RedisServer:
    """A redis-server process of this test, on its own port, without persistence."""

    def __init__(self, *extra: str, bus: bool = False) -> None:
        binary = shutil.which(SERVER)
        if binary is None:
            missing(f"{SERVER} is not installed (Debian: apt-get install redis-server)")
        self.binary = str(binary)
        self.extra = extra
        self.port = _free_port(bus)
        self.dir = tempfile.mkdtemp(prefix="prefixkey-redis-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        missing(f"{self.binary} did not start on port {self.port}")

    def kill(self) -> None:
        """Kill the server (SIGKILL: no shutdown, no save)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def close(self) -> None:
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def redis_server(*extra: str) -> Iterator[RedisServer]:
    server = RedisServer(*extra)
    try:
        yield server
    finally:
        server.close()


@contextmanager
def redis_cluster(masters: int = 3) -> Iterator[list[RedisServer]]:
    """A loopback Redis Cluster of ``masters`` masters (no replicas), slots spread evenly."""
    cli = shutil.which("redis-cli")
    if cli is None:
        missing("redis-cli is not installed (Debian: apt-get install redis-tools)")
    servers: list[RedisServer] = []
    try:
        for _ in range(masters):
            servers.append(RedisServer("--cluster-enabled", "yes",
                                       "--cluster-config-file", "nodes.conf", bus=True))
        create = subprocess.run(
            [str(cli), "--cluster", "create", *(f"127.0.0.1:{s.port}" for s in servers),
             "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True, text=True, timeout=60)
        if create.returncode != 0:
            missing("redis-cli --cluster create failed: "
                    f"{create.stdout[-500:]} {create.stderr[-500:]}")
        deadline = time.monotonic() + 20
        while True:
            info = subprocess.run([str(cli), "-p", str(servers[0].port), "cluster", "info"],
                                  capture_output=True, text=True, timeout=10).stdout
            if "cluster_state:ok" in info:
                break
            if time.monotonic() > deadline:
                missing(f"the loopback cluster never became ready: {info[:300]}")
            time.sleep(0.1)
        yield servers
    finally:
        for server in servers:
            server.close()
