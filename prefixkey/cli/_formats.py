"""What a line of the wrong kind looks like, and which command reads it.

The commands read several JSON Lines formats: requests (``hash``, ``drift``),
OpenAI bodies (``render``, ``hash --model-dir``), KV-event recordings
(``listen --record`` writes them; ``events decode`` and ``fingerprint
--vllm-version`` read them), decoded messages and their BlockStored events
(``fingerprint``), and ``hash``'s results. Given a file of another kind a
command's own errors ("token_ids: is required") do not say what went wrong;
:func:`line_kind` recognises each format by the fields only it has, and
:func:`wrong_kind_hint` says what the line looks like and which command
reads it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final

from packaging.version import InvalidVersion, Version

__all__ = ["line_kind", "swapped_version", "wrong_kind_hint", "wrong_kind_of_lines"]

#: Each kind: what its lines are, and the commands that read them (None: an output only).
_KINDS: Final[dict[str, tuple[str, str | None]]] = {
    "recording": ("a KV-event recording (prefixkey listen --record)",
                  "prefixkey fingerprint --vllm-version X or prefixkey events decode "
                  "--vllm-version X"),
    "decoded": ("decoded KV-event messages (prefixkey events decode)",
                "prefixkey fingerprint --vllm-version X on the recording they came from"),
    "event": ("KV events (BlockStored)", "prefixkey fingerprint"),
    "body": ("OpenAI body lines (endpoint + body)",
             "prefixkey render --model-dir DIR or prefixkey hash --model-dir DIR"),
    "openai": ("bare OpenAI request bodies",
               'prefixkey hash --model-dir DIR with lines {"endpoint": '
               '"/v1/chat/completions", "body": …}'),
    "result": ("prefixkey hash results", None),
    "request": ("request lines (docs/request-format.md)", "prefixkey hash"),
}


def line_kind(obj: Any) -> str | None:
    """The format one decoded line belongs to (a key of ``_KINDS``), or None if unclear."""
    if not isinstance(obj, Mapping):
        return None
    if "frames_b64" in obj:
        return "recording"
    if "events" in obj and ("seq" in obj or "ts" in obj):
        return "decoded"
    if obj.get("type") in ("BlockStored", "BlockRemoved", "AllBlocksCleared"):
        return "event"
    if "endpoint" in obj and "body" in obj:
        return "body"
    if "messages" in obj or ("prompt" in obj and "model" in obj and "token_ids" not in obj):
        return "openai"
    if "block_hashes" in obj and ("none_hash" in obj or "resolved" in obj):
        return "result"
    if "block_hashes" in obj and "parent_block_hash" in obj:
        return "event"
    if "token_ids" in obj and "block_size" in obj:
        return "request"
    return None


def _hint(subject: str, kind: str, command: str) -> str:
    what, readers = _KINDS[kind]
    if readers is None:
        return f"{subject} {what}, an output, not {command}'s input"
    return f"{subject} {what}, not {command}'s input; did you mean {readers}?"


def wrong_kind_hint(obj: Any, command: str, reads: Iterable[str]) -> str | None:
    """A hint when ``obj`` is a line of another kind than the ones ``command`` reads."""
    kind = line_kind(obj)
    if kind is None or kind in reads:
        return None
    return _hint("this looks like", kind, command)


def wrong_kind_of_lines(objs: Iterable[Any], command: str, reads: Iterable[str],
                        name: str) -> str | None:
    """A hint when the lines of file ``name`` are mostly of one other kind."""
    kinds = [line_kind(obj) for obj in objs]
    known = [k for k in kinds if k is not None]
    if not known:
        return None
    top = max(set(known), key=known.count)
    if top in reads or known.count(top) * 2 < len(kinds):
        return None
    return _hint(f"{name} looks like", top, command)


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def swapped_version(args: argparse.Namespace) -> str | None:
    """The message when ``--vllm-version`` names a file rather than a release
    (``--vllm-version FILE 0.31.0``: the two swapped), else None."""
    given = getattr(args, "vllm_version", None)
    if not isinstance(given, str) or given == "auto" or _is_version(given):
        return None
    if not os.path.exists(given):
        return None
    inputs = [v for k, v in vars(args).items()
              if k in ("file", "events", "recording") and isinstance(v, str)]
    swapped = next((v for v in inputs if _is_version(v)), None)
    order = (f": did you mean --vllm-version {swapped} {given}?" if swapped is not None
             else "")
    return (f"--vllm-version {given!r} is a file, not a vLLM release (e.g. 0.31.0); "
            f"the input file goes last{order}")
