"""The README's test command on a machine without Redis or Chromium: skips, never errors.

README.md ("Quick start") promises that the tests needing a system service are
reported as skipped, with the command that enables them, when the service is
missing (and fail under ``CI=true``). ``.ci/run`` starts every service, so it
would never see a test that breaks without one (as the Redis state machine's
teardown once did after its skipped setup). This test runs every suite that
uses a service in a child pytest whose services are all missing: an unreachable
Redis URL, no server binary to start, no browser, ``CI`` unset.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The suites that use a service (tests/redis_servers.py, or Chromium), as .ci/run lists them.
SERVICE_SUITES = (
    "tests/units/test_index_contract.py",
    "tests/units/test_index_hostile_batches.py",
    "tests/units/test_redis_holders.py",
    "tests/units/test_redis_index.py",
    "tests/units/test_predictions.py",
    "tests/end_to_end/test_redis_cluster.py",
    "tests/end_to_end/test_redis_faults.py",
    "tests/end_to_end/test_redis_fault_model.py",
    "tests/end_to_end/test_redis_shared.py",
    "tests/end_to_end/test_subscriber_redis.py",
    "tests/end_to_end/test_subscriber_redis_restart.py",
    "tests/end_to_end/test_fleet_doc.py",
    "tests/gateways/test_litellm_redis.py",
    "tests/gateways/test_litellm_proxy.py::"
    "test_the_proxy_config_of_docs_litellm_md_routes_conversations_by_prefix",
    "tests/end_to_end/test_audit.py::test_html_report_renders_in_headless_chromium",
    "tests/gateways/test_ray.py::test_a_redis_restart_costs_at_most_a_miss",
)
#: What a skip reason must offer: the command (or setting) that enables the test.
ENABLING = ("start one with", "apt-get install", "pip install")


def _bare_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(
        # Port 1 needs root to bind: nothing answers there.
        PREFIXKEY_TEST_REDIS_URL="redis://127.0.0.1:1/0",
        PREFIXKEY_TEST_REDIS_SERVER="prefixkey-no-such-redis-server",
        PREFIXKEY_TEST_CHROMIUM=str(ROOT / "build" / "no-such-chromium"),
    )
    return env


def test_service_suites_skip_with_the_enabling_command_when_no_service_runs() -> None:
    files = [s.split("::")[0] for s in SERVICE_SUITES]
    using = {p.name for p in (ROOT / "tests").rglob("*.py")
             if "from redis_servers import" in p.read_text() and p != Path(__file__).resolve()}
    assert using <= {
        Path(f).name for f in files}, "a suite using tests/redis_servers.py is missing here"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *SERVICE_SUITES],
        cwd=ROOT, env=_bare_environment(), capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-2000:]
    summary = out.strip().splitlines()[-1]
    assert re.search(r"\d+ skipped", summary) and "failed" not in summary \
        and "error" not in summary, summary
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED")]
    assert skips
    for line in skips:
        assert any(hint in line for hint in ENABLING), line
