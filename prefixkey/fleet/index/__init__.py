"""The index: which replica holds which block keys, per KV-cache group and medium.

:class:`PrefixIndexBackend` is the contract (:class:`RoutingIndex` the part a router
reads); :class:`PrefixIndex` keeps it in memory, :class:`RedisPrefixIndex` on a
shared Redis (extra ``redis``), its Lua scripts beside it. Both answer a query's
leading runs grouped by holder set (:class:`RunsAnswer`), so reading costs the keys
walked and the groups read, not the fleet; both count what they apply alike
(:data:`INDEX_COUNTERS`, :data:`INDEX_GAUGES`: the typed :class:`IndexStats`).
"""

from ._backend import (
    INDEX_COUNTERS,
    INDEX_GAUGES,
    IndexFullError,
    IndexStats,
    IndexUnavailableError,
    PrefixIndexBackend,
    RedisIndexStats,
    RoutingIndex,
    RunsAnswer,
    RunsGroup,
    RunsQuery,
    RunsResult,
)
from ._memory import (
    DEFAULT_MEDIUM,
    GroupSpec,
    Ingested,
    PrefixIndex,
    ReplicaId,
    ReplicaScheme,
    UnknownReplicaError,
    UnsupportedLayoutError,
    as_replica_id,
)
from ._redis import CHUNK_BLOCKS, RedisPrefixIndex, RegistrationConflictError
from ._redis_codec import scheme_from_spec, scheme_spec

__all__ = [
    "CHUNK_BLOCKS",
    "DEFAULT_MEDIUM",
    "INDEX_COUNTERS",
    "INDEX_GAUGES",
    "GroupSpec",
    "IndexFullError",
    "IndexStats",
    "IndexUnavailableError",
    "Ingested",
    "PrefixIndex",
    "PrefixIndexBackend",
    "RedisIndexStats",
    "RedisPrefixIndex",
    "RegistrationConflictError",
    "ReplicaId",
    "ReplicaScheme",
    "RoutingIndex",
    "RunsAnswer",
    "RunsGroup",
    "RunsQuery",
    "RunsResult",
    "UnknownReplicaError",
    "UnsupportedLayoutError",
    "as_replica_id",
    "scheme_from_spec",
    "scheme_spec",
]
