"""Image placeholders of vision-language models, expanded in process as vLLM's processors do.

In the prompt vLLM hashes, a chat body's image is a run of placeholder tokens whose
count and shape are the model's processor's own rule (docs/multimodal.md, "Vision
families"). A *family* reproduces that rule for the architectures it covers: one
private module per family here, and one row per architecture in ``_table.py``.

The contract (:class:`VisionFamily`, prefixkey/render/_vision/_base.py):

``Family(folder: VisionFolder)``
    Built once per Renderer. Reads what the processor reads from the folder
    (``config.json``, ``preprocessor_config.json``, ``processor_config.json``, and
    token ids through the tokenizer) and refuses what it does not reproduce:
    ``ModelFolderError`` for a malformed value, ``RenderUnsupportedError`` for a shape
    not verified. Sets ``marker``, the token ids an image's expansion replaces.
``expansion(size: ImageSize, kwargs) -> Sequence[int]``
    Pure: the token ids that replace one image's marker (the replacement of vLLM's
    ``PromptReplacement`` / ``PromptInsertion`` for that item), from the image's size as
    vLLM's loader hands it to the processor (``ImageMediaIO.load_bytes``: EXIF orientation
    applied; ``prefixkey.multimodal.MMHasher.loaded_image`` gives it with the identifier)
    and the processor kwargs in force (``--mm-processor-kwargs`` merged with the body's
    ``mm_processor_kwargs``, the body's winning, as ``merge_mm_processor_kwargs``).
    What vLLM answers 400 is a ``RenderRequestError``.
``place(token_ids, expansions) -> Placed``
    The prompt after the updates and each image's ``(offset, length)``: vLLM's
    ``PlaceholderRange``, the whole replacement, which ``mm_items`` carry into the keys.
    The default (:func:`replace_markers`) replaces the i-th ``marker`` by the i-th
    expansion, left to right; a family whose processor inserts, or rewrites tokens around
    its insertion, overrides it.
``check_kwargs(kwargs, field)``
    Refuses a processor kwarg the family does not reproduce (default: any name outside
    the class attribute ``kwargs``).
class attributes and ``placeholder(index)``
    ``name`` (docs, errors), ``kwargs`` (the processor kwargs honoured), ``limit``
    (``get_supported_mm_limits()["image"]``, None for none), ``releases`` (the vLLM
    releases whose answers the family was verified against; another release refuses
    images), and ``placeholder(index)``: the text an image leaves in 'string' content
    format (``get_placeholder_str``; None: none).

:data:`FAMILIES` maps each verified architecture to its family; :data:`UNVERIFIED` lists
vision architectures vLLM serves whose images are refused (``RenderUnsupportedError``
naming the render endpoint). The Renderer's caller is prefixkey/render/_media.py, which
loads each image, checks the item limit and the kwargs, and asks the family.
"""

from __future__ import annotations

from ._base import DEFAULT_LIMIT, ImageSize, Placed, VisionFamily, VisionFolder, replace_markers
from ._table import FAMILIES, MISTRAL_FORMAT, UNVERIFIED, family_architecture

__all__ = [
    "DEFAULT_LIMIT", "FAMILIES", "MISTRAL_FORMAT", "UNVERIFIED", "ImageSize", "Placed",
    "VisionFamily", "VisionFolder", "family_architecture", "replace_markers",
]
