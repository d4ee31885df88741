"""Explaining keys: drift between configurations, replica fingerprints, cache-hit audits.

:func:`drift` says which requests keep their keys across an upgrade or a
configuration change, and why; :func:`fingerprint` names the release family,
algorithm and seed behind a replica's events; :func:`audit` explains every
cache miss of a request log against a recording of events.
"""

from ..events._fingerprint import (
    DEFAULT_SEEDS,
    Candidate,
    FamilyMatch,
    FingerprintReport,
    SkippedEvent,
    Verdict,
    block_stored_events,
    fingerprint,
)
from ._audit import audit
from ._audit_log import AUDIT_FIELDS, LoggedRequest, parse_replica_option
from ._audit_report import audit_html, audit_text
from ._audit_results import REASONS, AuditReport, RequestAudit
from ._drift import (
    FEATURES,
    FROM_REQUEST,
    Cause,
    DriftConfig,
    DriftReport,
    FeatureSummary,
    RequestDrift,
    SideResult,
    builtin_corpus,
    drift,
    read_requests,
)
from ._report_text import drift_text, fingerprint_text
from ._simulate import (
    PolicyResult,
    SimulationConfig,
    SimulationReport,
    TimeModel,
    simulate,
    simulation_text,
)
from ._simulate_policies import POLICIES as SIMULATION_POLICIES
from ._simulate_pool import BlockPool
from ._simulate_report import simulation_html
from ._simulate_trace import TraceRequest, read_trace

__all__ = [
    "AUDIT_FIELDS",
    "DEFAULT_SEEDS",
    "FEATURES",
    "FROM_REQUEST",
    "REASONS",
    "SIMULATION_POLICIES",
    "AuditReport",
    "BlockPool",
    "Candidate",
    "Cause",
    "DriftConfig",
    "DriftReport",
    "FamilyMatch",
    "FeatureSummary",
    "FingerprintReport",
    "LoggedRequest",
    "PolicyResult",
    "RequestAudit",
    "RequestDrift",
    "SideResult",
    "SimulationConfig",
    "SimulationReport",
    "SkippedEvent",
    "TimeModel",
    "TraceRequest",
    "Verdict",
    "audit",
    "audit_html",
    "audit_text",
    "block_stored_events",
    "builtin_corpus",
    "drift",
    "drift_text",
    "fingerprint",
    "fingerprint_text",
    "parse_replica_option",
    "read_requests",
    "read_trace",
    "simulate",
    "simulation_html",
    "simulation_text",
]
