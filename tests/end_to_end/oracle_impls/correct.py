"""A correct foreign implementation for the oracle tests: prefixkey itself behind the protocol.

Reads JSON Lines requests on stdin and answers each with one result line,
flushing after every line (the oracle waits for each answer).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from prefixkey.errors import PrefixKeyError
from prefixkey.jsonl import error_record, parse_request, run_job


def answer(
    obj: dict[str, Any], *, ignore_salt: bool = False, mask_high_ids: bool = False
) -> dict[str, Any]:
    if ignore_salt:
        obj = {k: v for k, v in obj.items() if k != "cache_salt"}
    if mask_high_ids:
        obj = {**obj, "token_ids": [t & 0xFFFF for t in obj["token_ids"]]}
    try:
        return run_job(parse_request(obj, api_checks=True), obj.get("id"))
    except PrefixKeyError as exc:
        return error_record(exc, obj.get("id"), None)


def serve(**bugs: bool) -> None:
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(answer(json.loads(line), **bugs)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    serve()
