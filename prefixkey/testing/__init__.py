"""For other test suites and implementations: the oracle, vector replay and export.

:func:`check_implementation` runs another implementation that speaks the JSON
Lines format against prefixkey and shrinks any mismatch; :func:`replay`
checks a golden vector record; :func:`export_vectors` writes a vector set.
Hypothesis strategies are in :mod:`prefixkey.testing.strategies`. Needs the
``hypothesis`` extra.
"""

from .._extras import needs_extra

with needs_extra("hypothesis", "prefixkey.testing"):
    from ._export import export_vectors, generate_records, vector_record
    from ._oracle import (
        COMPARABLE_FIELDS,
        DEFAULT_COMPARED,
        MAX_LINE_BYTES,
        AnswerTooLongError,
        ForeignImplementation,
        GarbledAnswerError,
        ImplementationCrashedError,
        ImplementationFailure,
        ImplementationStartError,
        ImplementationTimeoutError,
        OracleError,
        OracleReport,
        check_implementation,
    )
    from ._vectors import replay


__all__ = [
    "COMPARABLE_FIELDS",
    "DEFAULT_COMPARED",
    "MAX_LINE_BYTES",
    "AnswerTooLongError",
    "ForeignImplementation",
    "GarbledAnswerError",
    "ImplementationCrashedError",
    "ImplementationFailure",
    "ImplementationStartError",
    "ImplementationTimeoutError",
    "OracleError",
    "OracleReport",
    "check_implementation",
    "export_vectors",
    "generate_records",
    "replay",
    "vector_record",
]
