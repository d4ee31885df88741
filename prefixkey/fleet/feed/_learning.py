"""A replica's wire era and key scheme, learned from its own events (sans-IO).

:class:`WireEraGuess` keeps the wire eras (:data:`prefixkey.events.WIRE_ERAS`)
that decode every payload seen so far without ignoring a field, and decodes
with the newest of them; it settles when one is left or after
:data:`SETTLE_PAYLOADS` payloads with events.

:class:`SchemeLearner` holds a replica's batches until one carries a usable
``BlockStored`` (a chain start: parent null, token ids present, no extra keys),
runs :func:`prefixkey.events.fingerprint` over its usable events, keeps the
candidates whose releases the wire era allows (the configured release, or the
guessed eras' span), and builds the :class:`ReplicaScheme`: the candidate's
algorithm and seed, the events' block size and hash form. Several candidates
left: :class:`AmbiguousSchemeWarning` and the newest is taken (they all
reproduce the events seen). None: :class:`SchemeNotLearnedWarning` and the
replica stays unregistered (the index counts its batches as unknown).
"""

from __future__ import annotations

import logging
import warnings
from collections import deque
from collections.abc import Callable, MutableSequence
from typing import Any, Final, Literal

from packaging.version import Version

from ...core import KNOWN_RELEASES, Hasher, resolve_release
from ...core._builtin_hash import REPRODUCIBLE_PYTHON
from ...core._era_table import era_end, release_range, releases_between
from ...errors import PrefixKeyError, PrefixKeyWarning
from ...events import (
    WIRE_ERAS,
    BlockStored,
    Candidate,
    EventBatch,
    EventDecodeError,
    EventDecoder,
    FingerprintReport,
    WireEra,
    fingerprint,
)
from ..index._memory import ReplicaId, ReplicaScheme

__all__ = [
    "SETTLE_PAYLOADS",
    "AmbiguousSchemeWarning",
    "FleetWarning",
    "SchemeLearner",
    "SchemeNotLearnedWarning",
    "WireEraGuess",
    "inferred_releases",
]

logger = logging.getLogger("prefixkey.fleet.Subscriber")

#: Where a learner's log records go: ``(level, format, args)`` appended (a feed's notes,
#: logged by its transport), or, when None, the logger at once.
Notes = MutableSequence[tuple[int, str, tuple[Any, ...]]]


def _say(notes: Notes | None, key: str, level: int, text: str, *args: Any) -> None:
    if notes is None:
        logger.log(level, "%s: " + text, key, *args)
    else:
        notes.append((level, text, args))

#: Payloads with events after which the wire-era guess settles on the newest fitting era.
SETTLE_PAYLOADS: Final = 32
#: Batches held per replica while its scheme is not known yet.
MAX_HELD_BATCHES: Final = 256


class FleetWarning(PrefixKeyWarning):
    """Something the fleet told the subscriber that it could not take as certain."""


class AmbiguousSchemeWarning(FleetWarning):
    """Several schemes reproduce a replica's events: the newest was taken."""


class SchemeNotLearnedWarning(FleetWarning):
    """No known scheme reproduces a replica's events: it stays unregistered."""




def inferred_releases(guess: WireEraGuess | None, settled: tuple[Version, Version | None] | None,
                      learner: SchemeLearner | None) -> str | None:
    """The releases a replica may run, as far as its events tell; None before any tells.

    The wire eras its payloads fit bound them (``guess`` while guessing, the span
    ``settled`` on after); a learned scheme narrows them to the releases whose keys fit.
    """
    span = guess.span() if guess is not None and guess.seen else settled
    if span is None:
        return None
    wire = releases_between(KNOWN_RELEASES, *span)
    fitting = learner.releases if learner is not None and learner.releases else wire
    releases = [v for v in fitting if v in wire] or fitting
    return release_range(releases) if releases else None


class WireEraGuess:
    """The wire eras a replica's payloads fit (see the module docstring)."""

    def __init__(self, key: str, notes: Notes | None = None) -> None:
        self.key = key
        self.notes = notes
        self.candidates: list[WireEra] = list(WIRE_ERAS)
        self._decoders = {e.since: EventDecoder(e.since) for e in WIRE_ERAS}
        self.seen = 0
        self.settled = False

    @property
    def decoder(self) -> EventDecoder:
        """The decoder of the newest fitting era."""
        return self._decoders[self.candidates[-1].since]

    def span(self) -> tuple[Version, Version | None]:
        """The releases the fitting eras cover: ``[first, end)``."""
        return self.candidates[0].first_version, era_end(WIRE_ERAS, self.candidates[-1])

    def replay_decoder(self, frames: list[bytes]) -> EventDecoder | None:
        """The newest fitting era that frames replay replies as ``frames`` (DEALER side)."""
        with_topic = len(frames) == 4  # b"", [topic,] seq, payload
        fitting = [e for e in self.candidates if e.replay_carries_topic == with_topic]
        return self._decoders[fitting[-1].since] if fitting else None

    def observe(self, payload: bytes) -> EventDecoder:
        """Narrow the eras by ``payload``; the decoder to decode it with.

        Raises the newest era's :class:`EventDecodeError` when no era decodes it.
        """
        clean: list[WireEra] = []
        tolerant: list[WireEra] = []
        error: EventDecodeError | None = None
        has_events = False
        for era in self.candidates:
            try:
                decoded = self._decoders[era.since].decode(payload)
            except EventDecodeError as exc:
                error = exc
                continue
            has_events = has_events or bool(decoded.batch.events)
            (tolerant if decoded.warnings else clean).append(era)
        fitting = clean or tolerant
        if not fitting:
            assert error is not None
            raise error
        if has_events:
            self.candidates = fitting
            self.seen += 1
        if not self.settled and (len(self.candidates) == 1 or self.seen >= SETTLE_PAYLOADS):
            self.settled = True
            first, end = self.span()
            _say(self.notes, self.key, logging.INFO, "wire era %s inferred (payloads fit vLLM "
                 "%s to %s)", self.candidates[-1].since, first, end or "newest")
        return self._decoders[fitting[-1].since]


def _usable(batch: EventBatch) -> list[BlockStored]:
    return [e for e in batch.events if isinstance(e, BlockStored)
            and e.parent_block_hash is None and e.token_ids and e.lora_name is None
            and e.lora_id is None and not (e.extra_keys and any(x is not None
                                                                for x in e.extra_keys))]


class SchemeLearner:
    """One replica's scheme, learned from its first usable BlockStored events."""

    def __init__(self, key: str, vllm_version: str | None,
                 on_drop: Callable[[], None] | None = None, notes: Notes | None = None) -> None:
        self.key = key
        self.notes = notes
        self.vllm_version = vllm_version
        self.on_drop = on_drop
        self.state: Literal["learning", "learned", "failed"] = "learning"
        self.scheme: ReplicaScheme | None = None
        self.report: FingerprintReport | None = None
        #: Every known release whose scheme reproduces the events (once learned).
        self.releases: list[Version] = []
        self._held: deque[tuple[ReplicaId, EventBatch]] = deque()

    def observe(self, rid: ReplicaId, batch: EventBatch,
                span: tuple[Version, Version | None] | None) -> list[tuple[ReplicaId, EventBatch]]:
        """The batches to apply now, in order (held ones first, once the scheme is known).

        ``span`` is the releases the wire era allows when it was inferred.
        """
        if self.state != "learning":
            return [(rid, batch)]
        events = _usable(batch)
        if not events:
            self._held.append((rid, batch))
            if len(self._held) > MAX_HELD_BATCHES:
                self._held.popleft()
                if self.on_drop is not None:
                    self.on_drop()
            return []
        self._learn(events, span)
        out = [*self._held, (rid, batch)]
        self._held.clear()
        return out

    def _fits_release(self, c: Candidate, span: tuple[Version, Version | None] | None
                      ) -> list[Version]:
        """The known releases of candidate ``c`` that the wire era allows."""
        lo = Version(c.first_release)
        hi = Version(c.last_release) if c.last_release is not None else None
        if self.vllm_version is not None:
            v = Version(self.vllm_version)
            return [v] if lo <= v and (hi is None or v <= hi) else []
        releases = [v for v in map(Version, KNOWN_RELEASES)
                    if lo <= v and (hi is None or v <= hi)]
        if span is not None:
            first, end = span
            releases = [v for v in releases if first <= v and (end is None or v < end)]
        return releases

    def _learn(self, events: list[BlockStored],
               span: tuple[Version, Version | None] | None) -> None:
        report = self.report = fingerprint(events)
        fits = [(c, r) for c in report.candidates if (r := self._fits_release(c, span))]
        if not fits:
            self.state = "failed"
            message = (f"no scheme reproduces the replica's keys ({report.summary}); it stays "
                       "unregistered")
            _say(self.notes, self.key, logging.WARNING, "%s", message)
            warnings.warn(SchemeNotLearnedWarning(f"{self.key}: {message}"), stacklevel=2)
            return
        candidate, releases = max(fits, key=lambda cr: max(cr[1]))
        release = str(max(releases))
        self.releases = sorted({v for _, fit in fits for v in fit})
        if len(fits) > 1:
            # Named by releases: the eras' letters mean other things elsewhere.
            names = "; ".join(f"vLLM {release_range(fit)} {c.hash_algo} seed="
                              f"{c.python_hash_seed!r}" for c, fit in fits)
            message = (f"{len(fits)} schemes of vLLM {release_range(self.releases)}"
                       f" reproduce the replica's keys ({names}): taking vLLM {release} "
                       f"{candidate.hash_algo} seed={candidate.python_hash_seed!r}; configure "
                       "the scheme to be sure")
            _say(self.notes, self.key, logging.WARNING, "%s", message)
            warnings.warn(AmbiguousSchemeWarning(f"{self.key}: {message}"), stacklevel=2)
        try:
            resolved = resolve_release(release)
            algorithm = resolved.era.algorithm(candidate.hash_algo, resolved.release)
            hasher = Hasher(
                block_size=events[0].block_size, hash_algo=candidate.hash_algo,
                python_hash_seed=candidate.python_hash_seed, vllm_version=release,
                engine_python=REPRODUCIBLE_PYTHON if algorithm.engine_bound else None)
            publishes: Literal["int", "bytes"] = (
                "bytes" if isinstance(events[0].block_hashes[0], bytes) else "int")
            self.scheme = ReplicaScheme(hasher, publishes=publishes)
        except PrefixKeyError as exc:
            self.state = "failed"
            message = f"the learned scheme cannot be built: {exc}"
            _say(self.notes, self.key, logging.WARNING, "%s", message)
            warnings.warn(SchemeNotLearnedWarning(f"{self.key}: {message}"), stacklevel=2)
            return
        self.state = "learned"
        _say(self.notes, self.key, logging.INFO, "scheme learned: vLLM %s, %s, PYTHONHASHSEED "
             "%r, block size %d, publishes %s", release, candidate.hash_algo,
             candidate.python_hash_seed, hasher.block_size, publishes)
