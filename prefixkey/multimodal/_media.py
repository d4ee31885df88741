"""Where an image content part's bytes come from, under vLLM 0.31's ``MediaConnector`` rules.

A chat request names an image by URL. vLLM loads ``data:`` URLs (base64 only,
RFC 2397) and ``file://`` URLs under ``--allowed-local-media-path`` (the
resolved path must lie inside it: a symlink out of it is refused), and fetches
http(s) URLs from ``--allowed-media-domains``. :class:`MediaSource` gives the
bytes of the first two and refuses every other file; an http(s) URL raises
:class:`~prefixkey.errors.RemoteMediaError` for the caller to fetch.
"""

from __future__ import annotations

import base64
import binascii
import os
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit
from urllib.request import url2pathname

from ..errors import InvalidRequestError, RemoteMediaError

__all__ = ["MediaSource"]

_MAX_BYTES: Final = 64 << 20


class MediaSource:
    """The media a replica may load: its ``--allowed-local-media-path`` and media domains.

    ``max_bytes`` bounds what one item may cost to read or decode from base64.
    """

    __slots__ = ("allowed_local_media_path", "allowed_media_domains", "max_bytes")

    def __init__(self, *, allowed_local_media_path: str | os.PathLike[str] | None = None,
                 allowed_media_domains: tuple[str, ...] = (),
                 max_bytes: int = _MAX_BYTES) -> None:
        root = None
        if allowed_local_media_path:
            root = Path(allowed_local_media_path).resolve()
            if not root.is_dir():  # vLLM refuses to start with such a path
                raise InvalidRequestError("allowed_local_media_path",
                                          f"{root} is not an existing directory")
        self.allowed_local_media_path = root
        self.allowed_media_domains = tuple(allowed_media_domains)
        self.max_bytes = max_bytes

    def image_bytes(self, url: str, *, field: str = "image_url.url") -> bytes:
        """The bytes vLLM loads for ``url`` (``data:`` or ``file://``)."""
        if not isinstance(url, str):
            raise InvalidRequestError(field, f"must be a string, got {type(url).__name__}")
        if url[:5].lower() == "data:":
            return self._data(url, field)
        try:
            parts = urlsplit(url)
        except ValueError as exc:  # e.g. "http://[::1/x.png": an unclosed IPv6 host
            raise InvalidRequestError(field, f"invalid URL: {exc}") from None
        if parts.scheme.startswith("http"):
            if self.allowed_media_domains and parts.hostname not in self.allowed_media_domains:
                raise InvalidRequestError(
                    field, f"the URL must be from one of the allowed domains "
                    f"{list(self.allowed_media_domains)} (got {parts.hostname})")
            raise RemoteMediaError(field, url)
        if parts.scheme == "file":
            return self._file(parts.netloc, parts.path, field)
        raise InvalidRequestError(field, "the URL must be either a HTTP, data or file URL")

    def _data(self, url: str, field: str) -> bytes:
        spec, sep, data = url[5:].partition(",")
        if not sep:
            raise InvalidRequestError(field, "invalid data URL: missing ',' separator")
        _, sep, encoding = spec.rpartition(";")
        if not sep or encoding != "base64":
            raise InvalidRequestError(field, "only base64 data URLs are supported")
        if len(data) > self.max_bytes * 4 // 3 + 4:
            raise InvalidRequestError(field, f"decodes to more than {self.max_bytes} bytes")
        try:
            return base64.b64decode(data, validate=True)  # pybase64's validate=True rule
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequestError(field, f"invalid base64: {exc}") from None

    def _file(self, netloc: str, path: str, field: str) -> bytes:
        root = self.allowed_local_media_path
        if root is None:
            raise InvalidRequestError(
                field, "cannot load local files without --allowed-local-media-path")
        filepath = Path(url2pathname(netloc + path))
        if not filepath.is_absolute():
            # vLLM resolves it against its own working directory, unknown here.
            raise InvalidRequestError(field, f"the file path {filepath} is not absolute")
        try:
            resolved = filepath.resolve()
        except (OSError, ValueError, RuntimeError) as exc:
            # a NUL byte (ValueError), a symlink loop (RuntimeError before Python 3.13)
            raise InvalidRequestError(field, f"the file path cannot be resolved: {exc}") from None
        if root not in resolved.parents:
            raise InvalidRequestError(
                field, f"the file path {filepath} must be a subpath of "
                f"--allowed-local-media-path {root}")
        try:
            if resolved.exists() and not resolved.is_file():
                # a FIFO or device would block the read forever (vLLM would hang there)
                raise InvalidRequestError(field, f"{filepath} is not a regular file")
            with resolved.open("rb") as source:
                data = source.read(self.max_bytes + 1)
        except OSError as exc:
            raise InvalidRequestError(field, f"cannot be read: {exc.strerror or exc}") from None
        if len(data) > self.max_bytes:
            raise InvalidRequestError(field, f"is larger than {self.max_bytes} bytes")
        return data
