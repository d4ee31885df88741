"""The exception tree: everything prefixkey raises derives from PrefixKeyError.

Warnings have a root of their own, :class:`PrefixKeyWarning`: a warning is not an
error, and ``except PrefixKeyError`` must not catch one that a filter turned into
an exception by mistake of category.

Errors about caller input name the field (a dotted path such as
``mm_items[2].offset``) and, where there is one, the position inside it, so a
router can log exactly what was wrong without a traceback.
"""

from __future__ import annotations

__all__ = [
    "FrozenError",
    "InvalidRequestError",
    "JSONLimitError",
    "MalformedJSONError",
    "MissingExtraError",
    "PrefixKeyError",
    "PrefixKeyWarning",
    "RemoteMediaError",
    "UndecodableMediaError",
    "UnknownAlgorithmError",
    "UnknownVersionError",
    "UnreproducibleIdentifierError",
    "UnreproducibleKeysError",
]


class PrefixKeyError(Exception):
    """Root of every error prefixkey raises.

    ``field`` names the request field at fault, where there is one.
    """

    field: str | None = None


class PrefixKeyWarning(UserWarning):
    """Root of every warning prefixkey issues (``warnings.warn``): one filter for all."""


class InvalidRequestError(PrefixKeyError, ValueError):
    """A request field is missing, ill-typed or out of range.

    ``field`` is the dotted name of the offending field (``"token_ids"``,
    ``"mm_items[1].offset"``); ``position`` is an index inside that field when
    one element is at fault (``token_ids[position]``), else ``None``.
    """

    def __init__(self, field: str, message: str, *, position: int | None = None) -> None:
        self.field: str | None = field
        self.position = position
        where = field if position is None else f"{field}[{position}]"
        self.reason = message
        super().__init__(f"{where}: {message}")


class FrozenError(PrefixKeyError, AttributeError):
    """An attribute of an immutable object (a ``Hasher``, ``TokenIds``) was set or deleted.

    A hasher is shared by every request of a replica configuration (and cached
    by the JSON Lines reader), so changing one in place would change the keys
    of requests that never asked; build another instead. ``field`` names the
    attribute.
    """

    def __init__(self, obj: object, name: str) -> None:
        self.field = name
        super().__init__(
            f"{type(obj).__name__} is immutable: cannot set {name!r} (build a new one)"
        )


class MalformedJSONError(PrefixKeyError, ValueError):
    """A JSON Lines line is not valid JSON (``NaN`` and ``Infinity`` are not).

    ``field`` names the top-level field at fault, and ``position`` an index
    inside it, where the fault can be placed (a ``NaN`` in ``id``), else None.
    """

    def __init__(self, message: str, *, field: str | None = None,
                 position: int | None = None) -> None:
        self.field = field
        self.position = position
        where = "" if field is None else f"{field}: " if position is None else (
            f"{field}[{position}]: ")
        super().__init__(f"{where}{message}")


class JSONLimitError(MalformedJSONError):
    """A JSON Lines line exceeds one of its limits (``prefixkey.jsonl.JsonLimits``).

    ``limit`` names the bound (``"max_line_bytes"``, ``"max_depth"``,
    ``"max_int_digits"``); the line was not decoded, or not kept.
    """

    def __init__(self, limit: str, message: str, *, field: str | None = None,
                 position: int | None = None) -> None:
        self.limit = limit
        super().__init__(f"{message} ({limit})", field=field, position=position)


class UnknownVersionError(PrefixKeyError, ValueError):
    """A vLLM version string is malformed or names a release with no known scheme."""

    field = "vllm_version"


class UnknownAlgorithmError(PrefixKeyError, ValueError):
    """The hash algorithm is not one the chosen release offers."""

    field = "hash_algo"


class UnreproducibleKeysError(PrefixKeyError):
    """The configuration makes vLLM's keys random per engine process.

    Returning a key here would be returning a key that cannot match, so
    prefixkey refuses and says what the operator can set to fix it.
    """

    field = "python_hash_seed"


class UndecodableMediaError(InvalidRequestError):
    """A media item is not one vLLM's media path loads (not an image, truncated, too large).

    vLLM rejects the request too, so there is no identifier to give. ``field``
    names the item (``"image"``, a file name on the command line).
    """


class UnreproducibleIdentifierError(PrefixKeyError):
    """vLLM's multimodal identifier for this item cannot be computed from its encoded bytes.

    Releases 0.7-0.12 hash decoded pixels, which match across Pillow (and
    libjpeg, libwebp) versions only for lossless formats; audio and video are
    hashed after decoders prefixkey does not run. ``reason`` says which;
    vLLM's render endpoint (0.31+) or the identifiers the engine reports are
    the way to key such requests.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field: str | None = field
        self.reason = reason
        super().__init__(
            f"{field}: {reason}; the identifier is not reproducible from the encoded bytes "
            "(take it from vLLM itself: its render endpoint from 0.31, or the identifiers "
            "its engine reports)"
        )


class RemoteMediaError(InvalidRequestError):
    """An http(s) media URL: prefixkey fetches nothing, the caller passes the bytes.

    ``url`` is the URL, its host already checked against the allowed media
    domains (vLLM's ``--allowed-media-domains``) where those are set.
    """

    def __init__(self, field: str, url: str) -> None:
        self.url = url
        super().__init__(field, "an http(s) URL: fetch its bytes (as vLLM would) and pass them")


class MissingExtraError(PrefixKeyError, ImportError):
    """A name needs an optional dependency (an extra of the package) that is not installed.

    ``extra`` is the extra to install (``pip install 'prefixkey[<extra>]'``), and
    ``module`` (also ``name``, as for any ImportError) the module that is missing.
    Being an ImportError too, it is caught where a missing module was caught before.
    """

    def __init__(self, what: str, extra: str, module: str) -> None:
        self.extra = extra
        self.module = module
        ImportError.__init__(
            self, f"{what} needs the {extra!r} extra: pip install 'prefixkey[{extra}]' "
            f"(the module {module!r} is not installed)", name=module)
