"""Shared pytest configuration: Hypothesis profiles.

``ci`` (selected when the ``CI`` environment variable is set) runs more
examples, never derandomized; ``dev`` is the quicker default.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    deadline=None,
    derandomize=False,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
