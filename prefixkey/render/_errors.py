"""The errors rendering raises: vLLM's own refusals, and what prefixkey cannot render exactly.

Both derive from :class:`~prefixkey.errors.PrefixKeyError` and name the field
at fault. A :class:`RenderRequestError` is a body vLLM 0.31 itself refuses
(``status`` is the HTTP status its server answers: 400, or 404 for an unknown
model); a :class:`RenderUnsupportedError` is a folder, option or body whose
token ids prefixkey cannot compute exactly in process, so it refuses rather
than return ids that might differ: use vLLM's render endpoint for those.
"""

from __future__ import annotations

from typing import Final

from ..errors import PrefixKeyError

__all__ = ["ModelFolderError", "RenderRequestError", "RenderUnsupportedError"]

#: Where to go for what prefixkey refuses to render in process.
RENDER_ENDPOINT_HINT: Final = (
    "render it with vLLM's render endpoint instead (/v1/chat/completions/render, "
    "/v1/completions/render; prefixkey hash --render-url)"
)


class RenderRequestError(PrefixKeyError, ValueError):
    """A body vLLM 0.31's OpenAI server refuses (it answers ``status``: 400, 404 or 500).

    A 500 is where vLLM's own renderer raises (an encoder-decoder prompt without a
    decoder start token).

    ``field`` is the body field at fault (``"messages[2].content"``,
    ``"tool_choice"``, ``"model"``), ``position`` an index inside it or None.
    The message is vLLM's own; ``hint`` (or None) is prefixkey's advice beside it
    (for a 404: the names the options serve).
    """

    def __init__(self, field: str, message: str, *, status: int = 400,
                 position: int | None = None, hint: str | None = None) -> None:
        self.field: str | None = field
        self.position = position
        self.status = status
        self.reason = message
        self.hint = hint
        where = field if position is None else f"{field}[{position}]"
        super().__init__(f"{where}: {message}")


class RenderUnsupportedError(PrefixKeyError):
    """What prefixkey cannot render exactly as vLLM does, refused instead of guessed.

    The message says why and points to vLLM's render endpoint; ``field`` names
    the folder file, server option or body field that decides it.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}; {RENDER_ENDPOINT_HINT}")


class ModelFolderError(PrefixKeyError, ValueError):
    """A model folder or server option vLLM itself would not start with.

    ``field`` names the file (``"config.json"``) or flag (``"--max-model-len"``).
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}")
