"""vLLM's multimodal identifiers from raw media, for every release 0.7-0.33.

Needs the ``multimodal`` extra (``pip install 'prefixkey[multimodal]'``:
blake3 and Pillow). docs/multimodal.md says which identifiers are exact.
"""

from __future__ import annotations

from .._extras import needs_extra

with needs_extra("multimodal", "prefixkey.multimodal"):
    from ._eras import IDENTIFIER_ERAS, IdentifierEra, identifier_era
    from ._hasher import LoadedImage, MMHasher, image_identifier
    from ._media import MediaSource


__all__ = [
    "IDENTIFIER_ERAS", "IdentifierEra", "LoadedImage", "MMHasher", "MediaSource", "identifier_era",
    "image_identifier",
]
