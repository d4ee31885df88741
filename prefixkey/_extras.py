"""The package's extras: which modules each installs, and the error when one is missing.

An extra-backed name imported without its extra raises
:class:`~prefixkey.errors.MissingExtraError` naming the extra to install,
rather than a bare ``ModuleNotFoundError`` about a module the caller never named.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from .errors import MissingExtraError

#: Each extra (pyproject.toml's optional dependencies) and the top-level modules it installs.
EXTRA_MODULES: Final[dict[str, tuple[str, ...]]] = {
    "zmq": ("zmq",),
    "redis": ("redis",),
    "ray": ("ray", "zmq"),
    "render": ("tokenizers", "jinja2"),
    "mistral": ("mistral_common", "sentencepiece"),
    "sentencepiece": ("tokenizers", "jinja2", "sentencepiece"),
    "multimodal": ("blake3", "PIL"),
    "hypothesis": ("hypothesis",),
    "litellm": ("litellm",),
}


@contextmanager
def needs_extra(extra: str, what: str) -> Iterator[None]:
    """Imports in this block that miss a module of ``extra`` raise MissingExtraError for ``what``.

    Any other missing module (one of ours, a broken install's) propagates as it is:
    installing the extra would not fix it, so the error must not say it would.
    """
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in EXTRA_MODULES[extra]:
            raise
        raise MissingExtraError(what, extra, top) from exc
