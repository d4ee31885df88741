"""A deadline for a whole HTTP exchange, not for each socket read.

A socket timeout bounds one ``recv``: a server that sends one byte every
second, or ``100 Continue`` lines without end, never trips it and holds the
caller indefinitely (issue 23: a 3 s render timeout held for > 90 s, the media
fetcher's 5 s for > 45 s). :class:`Watchdog` is the deadline: a timer that
shuts down the sockets of the exchange when it expires, so whatever read is
blocked returns at once, from any thread and for TLS as for plain sockets
(``shutdown`` acts on the descriptor). The caller then checks
:attr:`Watchdog.expired` and says so with its own typed error.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.request
from types import TracebackType
from typing import Any

__all__ = ["Watchdog", "WatchedHTTPConnection", "WatchedHTTPSConnection", "watched_opener"]


class Watchdog:
    """Shuts down the sockets given to :meth:`watch` once ``seconds`` have passed."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._socks.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                _shut(sock)

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed or never connected
        sock.shutdown(socket.SHUT_RDWR)


class WatchedHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection that hands its socket to :attr:`watchdog` when it connects."""

    watchdog: Watchdog | None = None

    def connect(self) -> None:
        super().connect()
        if self.watchdog is not None:
            self.watchdog.watch(self.sock)


class WatchedHTTPSConnection(http.client.HTTPSConnection):
    """:class:`WatchedHTTPConnection` over TLS."""

    watchdog: Watchdog | None = None

    def connect(self) -> None:
        super().connect()
        if self.watchdog is not None:
            self.watchdog.watch(self.sock)


def watched_opener(watchdog: Watchdog, *handlers: Any) -> urllib.request.OpenerDirector:
    """A urllib opener whose http(s) connections are watched by ``watchdog``."""

    class _Http(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(_connection(WatchedHTTPConnection), req)

    class _Https(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(_connection(WatchedHTTPSConnection), req,
                                context=self._context)  # type: ignore[attr-defined]

    def _connection(cls: type[Any]) -> Any:
        def make(*args: Any, **kwargs: Any) -> Any:
            conn = cls(*args, **kwargs)
            conn.watchdog = watchdog
            return conn
        return make

    return urllib.request.build_opener(_Http, _Https, *handlers)
