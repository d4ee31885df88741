"""Mooncake's public traces (kvcache-ai/Mooncake, ``FAST25-release/traces/``, Apache-2.0).

Not committed (megabytes): fetched once from GitHub at a pinned commit, checked
against their sha256 and kept in the cache (``PREFIXKEY_TEST_CACHE``, default
``~/.cache/prefixkey-tests``)::

    python benchmarks/mooncake_traces.py fetch         # both traces
    python benchmarks/mooncake_traces.py path synthetic
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.request
from pathlib import Path
from typing import Final

COMMIT: Final = "3b5a594133958449a1feaf1c9e0fc1b553e34a28"
#: name -> (path in the repository, sha256 of the file, lines)
TRACES: Final = {
    "conversation": ("FAST25-release/traces/conversation_trace.jsonl",
                     "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df", 12031),
    "synthetic": ("FAST25-release/traces/synthetic_trace.jsonl",
                  "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131", 3993),
}
CACHE: Final = Path(os.environ.get("PREFIXKEY_TEST_CACHE",
                                   Path.home() / ".cache" / "prefixkey-tests")) / "mooncake"


class FetchError(RuntimeError):
    """A trace could not be fetched, or its bytes are not the pinned ones."""


def path(name: str) -> Path:
    """The trace in the cache, fetched and checked first if it is not there."""
    repo_path, sha256, _ = TRACES[name]
    out = CACHE / f"{name}-{sha256[:16]}.jsonl"
    if out.exists():
        return out
    url = f"https://raw.githubusercontent.com/kvcache-ai/Mooncake/{COMMIT}/{repo_path}"
    with urllib.request.urlopen(url, timeout=120) as response:
        data: bytes = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise FetchError(f"{name}: sha256 {digest}, pinned {sha256}")
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(out)
    return out


def main(argv: list[str]) -> int:
    if argv[:1] == ["fetch"]:
        for name in TRACES:
            print(path(name))
        return 0
    if len(argv) == 2 and argv[0] == "path" and argv[1] in TRACES:
        print(path(argv[1]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
