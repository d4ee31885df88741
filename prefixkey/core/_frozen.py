"""Objects immutable after construction: built once, shared by every request and thread."""

from __future__ import annotations

from typing import Any

from ..errors import FrozenError

__all__ = ["Frozen"]


class Frozen:
    """A base whose instances refuse every attribute change (:class:`FrozenError`).

    ``__init__`` sets the attributes with :meth:`_bind`, once. Subclasses declare
    ``__slots__``: their objects are hot-path values (a :class:`Hasher`, ``TokenIds``).
    """

    __slots__ = ()

    def _bind(self, **fields: Any) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenError(self, name)

    def __delattr__(self, name: str) -> None:
        raise FrozenError(self, name)
