"""LoRA adapter name -> path, from a replica's ``/v1/models`` (stdlib http.client).

vLLM keys a LoRA request's blocks by the adapter's name *and* path (0.31's
``_gen_lora_extra_hash_keys``: ``("lora", lora_name, lora_path)``), and lets
an operator re-point a name at another path at runtime
(``/v1/load_lora_adapter``). Its ``/v1/models`` lists each loaded adapter as
a model card whose ``root`` is that ``lora_path`` and whose ``parent`` is the
base model (``OpenAIServingModels.show_available_models``); base model cards
have no parent. :class:`LoRAPaths` polls it and warns
(:class:`LoRAPathChangedWarning`) when a name's path changes, since every key
of that adapter changes with it.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
import urllib.parse
import warnings
from typing import Any, Final

from ...core import LoRA
from ...errors import PrefixKeyError
from ._learning import FleetWarning

__all__ = ["LoRAPathChangedWarning", "LoRAPaths", "LoRAPollError", "fetch_lora_paths"]

logger = logging.getLogger("prefixkey.fleet.LoRAPaths")

#: The largest /v1/models body read (a card is ~300 bytes).
MAX_BODY_BYTES: Final = 4 * 1024 * 1024


class LoRAPollError(PrefixKeyError, OSError):
    """``/v1/models`` could not be fetched or is not vLLM's model list (``field``: what)."""

    def __init__(self, message: str, *, field: str, position: int | None = None) -> None:
        self.field: str | None = field
        self.position = position
        super().__init__(message)


class LoRAPathChangedWarning(FleetWarning):
    """A replica re-pointed a LoRA name at another path: its keys changed."""


def _cards(body: bytes) -> list[Any]:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise LoRAPollError(f"/v1/models: not JSON: {exc}", field="body") from None
    cards = data.get("data") if isinstance(data, dict) else None
    if not isinstance(cards, list):
        raise LoRAPollError("/v1/models: no 'data' array (not an OpenAI model list)",
                            field="data")
    return cards


def fetch_lora_paths(base_url: str, *, timeout: float = 2.0) -> dict[str, str]:
    """The adapters ``base_url``'s ``/v1/models`` lists: name (card ``id``) -> ``root``."""
    url = urllib.parse.urlsplit(base_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise LoRAPollError(f"base_url must be http(s)://host[:port], got {base_url!r}",
                            field="base_url")
    conn = (http.client.HTTPSConnection if url.scheme == "https" else
            http.client.HTTPConnection)(url.hostname, url.port, timeout=timeout)
    try:
        conn.request("GET", url.path.rstrip("/") + "/v1/models",
                     headers={"Accept": "application/json"})
        response = conn.getresponse()
        body = response.read(MAX_BODY_BYTES + 1)
        status = response.status
    except (OSError, http.client.HTTPException) as exc:
        raise LoRAPollError(f"{base_url}/v1/models: {exc}", field="base_url") from None
    finally:
        conn.close()
    if status != 200:
        raise LoRAPollError(f"{base_url}/v1/models: HTTP {status}", field="status")
    if len(body) > MAX_BODY_BYTES:
        raise LoRAPollError(f"/v1/models: body over {MAX_BODY_BYTES} bytes", field="body")
    paths: dict[str, str] = {}
    for i, card in enumerate(_cards(body)):
        if not isinstance(card, dict) or card.get("parent") is None:
            continue  # a base model (no parent)
        name, root = card.get("id"), card.get("root")
        if not isinstance(name, str) or not isinstance(root, str) or not root:
            raise LoRAPollError(f"/v1/models: data[{i}] is an adapter card without a string "
                                "id and root", field="data", position=i)
        paths[name] = root
    return paths


class LoRAPaths:
    """One replica's adapters, refreshed by :meth:`poll` (or a background thread).

    :meth:`lora` gives the :class:`~prefixkey.LoRA` a request names, with the
    path the replica hashes. A failed poll keeps the last paths (logged,
    counted in ``failures``).
    """

    def __init__(self, base_url: str, *, timeout: float = 2.0) -> None:
        self.base_url = base_url
        self.timeout = timeout
        self.paths: dict[str, str] = {}
        self.polls = 0
        self.failures = 0
        self.changes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> dict[str, str]:
        """Fetch the adapters now; warn for each name whose path changed. The new paths."""
        try:
            fresh = fetch_lora_paths(self.base_url, timeout=self.timeout)
        except LoRAPollError as exc:
            with self._lock:
                self.failures += 1
            logger.warning("%s: LoRA poll failed, keeping the last paths: %s", self.base_url, exc)
            return dict(self.paths)
        with self._lock:
            old = self.paths
            changed = [(n, old[n], p) for n, p in fresh.items() if n in old and old[n] != p]
            self.paths = fresh
            self.polls += 1
            self.changes += len(changed)
        for name, before, after in changed:
            message = (f"{self.base_url}: LoRA {name!r} now points at {after!r} (was "
                       f"{before!r}): its blocks' keys changed")
            logger.warning("%s", message)
            warnings.warn(LoRAPathChangedWarning(message), stacklevel=2)
        return dict(fresh)

    def lora(self, name: str, int_id: int | None = None) -> LoRA | None:
        """The adapter ``name`` as the replica hashes it, or None if it does not list it."""
        path = self.paths.get(name)
        return None if path is None else LoRA(name, path, int_id)

    def start(self, interval: float = 10.0) -> LoRAPaths:
        """Poll now, then every ``interval`` seconds in a daemon thread."""
        self.poll()
        self._stop.clear()

        def run() -> None:
            while not self._stop.wait(interval):
                self.poll()

        self._thread = threading.Thread(target=run, name="prefixkey-lora-poll", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 1)
            self._thread = None
