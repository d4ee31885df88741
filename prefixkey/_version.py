"""The package's version: one place, read by ``pyproject.toml`` and by every layer."""

__version__ = "0.1.0"
