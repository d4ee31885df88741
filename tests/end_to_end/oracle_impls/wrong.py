"""A foreign implementation with a planted bug, for the oracle tests.

``--bug salt`` (default) forgets the cache salt; ``--bug wide-ids`` truncates
token ids to 16 bits (a uint16 encoder); ``--bug crash`` exits on any request
with a LoRA; ``--bug garble`` answers requests with a salt with a non-JSON line.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from correct import answer


def main() -> None:
    bug = sys.argv[sys.argv.index("--bug") + 1] if "--bug" in sys.argv else "salt"
    for line in sys.stdin:
        if not line.strip():
            continue
        obj = json.loads(line)
        if bug == "crash" and obj.get("lora") is not None:
            sys.exit(3)
        if bug == "garble" and obj.get("cache_salt") is not None:
            sys.stdout.write("Traceback (most recent call last): oops\n")
        else:
            result = answer(obj, ignore_salt=bug == "salt", mask_high_ids=bug == "wide-ids")
            sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
