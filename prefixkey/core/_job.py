"""A hash job: one request hashed the way vLLM's engine hashes it, as typed values.

The engine hashes a request's full prompt blocks when it creates the request,
then again whenever appended tokens complete blocks. A :class:`HashJob` holds
the bound hasher, the prompt request, every token and the token counts at
which those hashing calls happen; :meth:`HashJob.run` makes the calls and
returns the :class:`JobKeys`. The JSON Lines reader
(:func:`prefixkey.jsonl.parse_request`) produces jobs and
:func:`prefixkey.jsonl.run_job` writes their keys; the analysis and testing
tools work on the typed values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise

from ._algorithms import BlockHash
from ._extra_keys import BlockExtraKeys
from ._hasher import Hasher
from ._request import Request, TokenIds

__all__ = ["HashJob", "JobKeys"]


@dataclass(frozen=True, slots=True)
class JobKeys:
    """What a job's hashing calls computed."""

    #: The hasher that computed them (the job's, or the one given to :meth:`HashJob.run`).
    hasher: Hasher
    block_hashes: list[BlockHash]
    #: One per full block; with lookahead ``(extra keys, *lookahead tokens)``.
    extra_keys: list[BlockExtraKeys]
    #: How many keys each hashing call added (the prompt's first).
    new_hashes_per_call: tuple[int, ...]
    #: The job's warnings, then the features the release does not key.
    warnings: tuple[str, ...]
    #: Per requested KV-cache group block size, that group's keys.
    group_block_hashes: dict[int, list[BlockHash]]


@dataclass(frozen=True, slots=True)
class HashJob:
    """One request to hash: how to build the hasher, the request, and the calls."""

    hasher: Hasher
    #: The prompt (``token_ids[:hash_calls[0]]``) with the request's features.
    request: Request
    #: Every token the engine holds once all calls are made.
    token_ids: TokenIds
    #: Token counts at which the engine hashes: the prompt, then each append.
    hash_calls: tuple[int, ...]
    #: Whether the calls were given (a result then reports the keys per call).
    report_calls: bool
    group_block_sizes: tuple[int, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    def run(self, hasher: Hasher | None = None) -> JobKeys:
        """Make the job's hashing calls with its hasher (or ``hasher``, e.g. a what-if twin)."""
        hasher = self.hasher if hasher is None else hasher
        state = hasher.start(self.request)
        per_call = [len(state.block_hashes)]
        for previous, current in pairwise(self.hash_calls):
            per_call.append(len(state.append(self.token_ids[previous:current])))
        hashes = state.block_hashes
        groups = {size: hasher.group_block_hashes(hashes, size) for size in self.group_block_sizes}
        return JobKeys(hasher, hashes, state.extra_keys, tuple(per_call),
                       (*self.warnings, *state.warnings), groups)
