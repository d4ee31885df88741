"""Python code run in a fresh interpreter whose address space is limited.

:func:`run_bounded` runs ``code`` with ``RLIMIT_AS`` set, so a child that would
allocate past the limit gets a MemoryError there instead of exhausting the
machine, and returns the JSON object it printed last; the code may call
``peak_rss()``, its own peak (VmHWM: ru_maxrss keeps the forking process's peak
over exec). The ``bounded`` fixture (conftest.py) hands it to tests;
benchmarks/bench_decode_budget.py runs the same children to time them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

_PRELUDE = """
import resource, sys
def peak_rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status
                    if line.startswith("VmHWM:"))
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)
"""


def run_bounded(code: str, *, address_space: int, stdin: str = "",
                timeout: float = 120) -> dict[str, Any]:
    """The JSON object ``code`` printed last; one that hangs fails after ``timeout`` s."""
    proc = subprocess.run([sys.executable, "-c", _PRELUDE + code, str(address_space)],
                          input=stdin, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return result
