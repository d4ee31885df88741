"""``pickle.dumps(obj, protocol=5)`` of the hashed block tuple, as the engine core pickles it.

vLLM's ``sha256`` and ``xxhash`` algorithms digest the pickle of
``(parent_hash, tuple(block_tokens), extra_keys)``. CPython's C pickler
writes it; what needs care is the **memo**: pickle writes a back-reference
(BINGET) instead of a second copy when the *same object* appears twice in one
dump, so the bytes depend on object identity, not only on values.

In the engine core the tag strings (``"mm"``, ``"lora"``, …) are literals: one
shared object per tag, so a block with two multimodal items pickles the second
``"mm"`` as a back-reference. Every data string (LoRA name and path, item
identifiers, the salt) arrives msgpack-decoded from the API process as its own
object, except that CPython keeps a single object for ``""`` and for each
one-character Latin-1 string. :func:`engine_extra_keys` rebuilds extra keys
with exactly that identity: the tags are this module's literals and every data
string is decoded afresh from its UTF-8 bytes, as msgpack decodes it.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["chain", "dumps", "encode_extra_keys_tail", "encode_tokens"]


def dumps(obj: Any) -> bytes:
    """``pickle.dumps(obj, protocol=5)``, vLLM's ``pickle.HIGHEST_PROTOCOL`` (3.8+)."""
    return pickle.dumps(obj, protocol=5)


def _engine_value(value: Any) -> Any:
    # A fresh object per data string, as msgpack decoding makes (CPython still
    # hands back its shared singletons for "" and one Latin-1 character).
    return value.encode("utf-8").decode("utf-8") if isinstance(value, str) else value


def encode_extra_keys_tail(extra_keys: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
    """Extra keys with the object identity the engine core's pickle sees.

    Element 0 of each key is its tag, already the shared literal; the other
    elements are data.
    """
    if extra_keys is None:
        return None
    return tuple((key[0], *map(_engine_value, key[1:])) for key in extra_keys)


def encode_tokens(token_ids: Sequence[int]) -> list[int]:
    """The pickle serializer works on the token ids themselves (a private copy)."""
    return list(token_ids)


def chain(
    parent: bytes,
    tokens: Sequence[int],
    starts: range,
    size: int,
    tail: tuple[Any, ...] | None,
    digest: Callable[[bytes], bytes],
) -> list[bytes]:
    """Keys of the blocks starting at ``starts``, all with extra keys ``tail``.

    Each key is the digest of ``pickle.dumps((parent, tuple(block), tail), 5)``
    and the parent of the next.
    """
    dumps_ = pickle.dumps
    keys = []
    for start in starts:
        parent = digest(dumps_((parent, tuple(tokens[start : start + size]), tail), 5))
        keys.append(parent)
    return keys
