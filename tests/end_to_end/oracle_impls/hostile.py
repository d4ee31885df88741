"""Foreign implementations that break the protocol's I/O, for the oracle's bounds tests.

``--mode flood`` writes to stdout forever without a newline; ``lines`` writes
``{}`` lines forever; ``deaf`` never reads stdin; ``pad N`` answers each
request with a JSON object line of exactly N bytes (newline excluded);
``stderr N`` writes N bytes to stderr, then exits with status 4.
"""

from __future__ import annotations

import sys
import time


def main() -> None:
    mode = sys.argv[sys.argv.index("--mode") + 1]
    out = sys.stdout.buffer
    if mode == "flood":
        while True:
            out.write(b"x" * 65536)
    elif mode == "lines":
        while True:
            out.write(b"{}\n" * 4096)
    elif mode == "deaf":
        time.sleep(600)
    elif mode == "pad":
        size = int(sys.argv[-1])
        for _ in sys.stdin.buffer:
            out.write(b'{"pad": "' + b"x" * (size - 11) + b'"}\n')
            out.flush()
    elif mode == "stderr":
        sys.stderr.buffer.write(b"e" * (int(sys.argv[-1]) - 4) + b"last")
        sys.exit(4)


if __name__ == "__main__":
    main()
