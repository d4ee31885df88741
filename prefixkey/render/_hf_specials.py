"""The special tokens transformers 5 hands a tokenizer class, read from a folder's files.

``tokenizer_config.json`` names them three ways: the seven named tokens
(``bos_token`` … ``mask_token``), model-specific ``*_token`` keywords, and the lists
``additional_special_tokens`` / ``extra_special_tokens``, which from_pretrained merges
by its release's rule (render/_eras.py ``specials_merge``, :data:`MERGES`). A class may
then add its own: T5's sentinel tokens, the defaults of its model-specific keywords.
Here are those values as the class receives them, the ``added_tokens_decoder`` beside
them, and TokenizersBackend's adding of both to the tokenizer (:func:`add_backend_tokens`),
which render/_tokenizer.py calls in the class's order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

from tokenizers import AddedToken, Tokenizer

from ._eras import SpecialsMerge
from ._errors import ModelFolderError, RenderUnsupportedError
from ._hf_rebuilds import Rebuild

__all__ = [
    "MERGES", "NAMED_TOKENS", "Held", "add_backend_tokens", "added_token", "added_tokens_decoder",
    "legacy_added_tokens", "merge_specials", "model_specific", "sentinels",
]

# PreTrainedTokenizerBase.SPECIAL_TOKENS_ATTRIBUTES: the named special tokens.
NAMED_TOKENS: Final = (
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
)


def added_token(value: Any, field: str) -> AddedToken | str:
    """A token value of tokenizer_config.json: a string or a serialised AddedToken (one
    read already is kept)."""
    if isinstance(value, (str, AddedToken)):
        return value
    if isinstance(value, dict) and value.get("__type") == "AddedToken":
        fields = {k: v for k, v in value.items() if k != "__type"}
        try:
            return AddedToken(**fields)
        except TypeError as exc:
            raise ModelFolderError("tokenizer_config.json", f"{field}: {exc}") from None
    raise ModelFolderError("tokenizer_config.json",
                           f"{field} must be a string or an AddedToken, got {value!r}")


def sentinels(form: str, config: Mapping[str, Any], listed: list[Any] | None) -> list[Any]:
    """T5Tokenizer's ``additional_special_tokens``: the listed ones, with the ``extra_ids``
    sentinel tokens appended when none of them is one (models/t5/tokenization_t5.py)."""
    if "extra_special_tokens" in config:
        raise RenderUnsupportedError("tokenizer_config.json", (
            "extra_special_tokens beside a T5-style tokenizer class's sentinel tokens is "
            "not reproduced"))
    count = config.get("extra_ids", 100)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ModelFolderError("tokenizer_config.json",
                               f"extra_ids must be a non-negative integer, got {count!r}")
    generated = [form.format(i) for i in range(count)]
    if listed is None:
        return generated
    marker = form.partition("{")[0]
    found = [t for t in listed if marker in str(t)]
    if not found:
        return [*listed, *generated]
    if count > 0 and count != len(found):
        raise ModelFolderError("tokenizer_config.json", (
            f"extra_ids is {count} but additional_special_tokens holds {len(found)} "
            f"{marker}…> tokens: transformers refuses the folder"))
    return listed


def model_specific(recipe: Rebuild, config: Mapping[str, Any]) -> dict[str, Any]:
    """The class's own ``*_token`` keywords beside the standard seven, with their defaults.

    from_pretrained moves a ``*_token`` of tokenizer_config.json out of the keyword (into
    the model-specific tokens), so the keyword keeps its default: a class that sets the
    attribute again from it (SplinterTokenizer) ends with another token than the file's.
    A serialised AddedToken does reach the keyword (from_pretrained reads it after moving
    the strings out): reproduced for a renamed keyword (``Rebuild.renamed_keywords``, in
    render/_tokenizer.py ``build_tokenizer``), refused for the others.
    """
    own = {k: v for k, v in recipe.defaults.items() if k not in NAMED_TOKENS}
    renamed = {new for new, _ in recipe.renamed_keywords.values()}
    for key, default in own.items():
        if key not in config or config[key] == default:
            continue
        if isinstance(config[key], str):
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"{key} {config[key]!r} beside the {recipe.name} tokenizer class is not "
                "reproduced: from_pretrained passes a string as a model-specific token, not "
                f"as the class's keyword, which keeps its default {default!r} for the class "
                "to use too"))
        if key not in renamed:
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"{key} {config[key]!r} beside the {recipe.name} tokenizer class, whose "
                f"keyword gets it (not a string) in place of its default {default!r}, is "
                "not reproduced"))
    return {k: v for k, v in own.items() if v is not None}


#: What ``extra_special_tokens`` holds beside an ``additional_special_tokens`` key: no
#: key, a falsy value (null, an empty list), a non-empty list, a dict of named tokens.
Held = Literal["absent", "empty", "list", "dict"]
#: What becomes of ``additional_special_tokens``: ``extra`` (dropped, the extra key
#: stays as it is), ``additional`` (it becomes the extra list), ``beside`` (both reach
#: the class's ``__init__``, which moves the dict to the named tokens first and so is
#: left the additional list as its extra one: :func:`merge_specials`).
Merged = Literal["extra", "additional", "beside"]
#: from_pretrained's merge (PreTrainedTokenizerBase.__init__), by the release's
#: render/_eras.py ``specials_merge`` and what the extra key holds
#: (real_specials_vectors.jsonl).
MERGES: Final[Mapping[tuple[SpecialsMerge, Held], Merged]] = {
    # ``kept``, transformers 5.17: an extra_special_tokens key wins, even a falsy one.
    ("kept", "absent"): "additional",
    ("kept", "empty"): "extra",
    ("kept", "list"): "extra",
    ("kept", "dict"): "extra",
    # ``if_empty``, 5.19 and 5.24: the additional list replaces a missing or falsy one;
    # beside a non-empty list the class's __init__ keeps the extra list, as 5.17 does.
    ("if_empty", "absent"): "additional",
    ("if_empty", "empty"): "additional",
    ("if_empty", "list"): "extra",
    ("if_empty", "dict"): "beside",
}


def _held(init: Mapping[str, Any]) -> Held:
    if "extra_special_tokens" not in init:
        return "absent"
    current = init["extra_special_tokens"]
    return "empty" if not current else "dict" if isinstance(current, dict) else "list"


def merge_specials(init: dict[str, Any], merge: SpecialsMerge, path: str, tiktoken: bool,
                   recipe: Rebuild | None) -> list[Any] | None:
    """from_pretrained's merge of ``additional_special_tokens`` into ``extra_special_tokens``
    (:data:`MERGES`), in ``init``; returns the additional list that still reaches the class
    as a keyword beside a dict of named extra tokens, which becomes the extra list once
    the dict is moved to the named tokens, else None."""
    if "additional_special_tokens" not in init:
        return None
    held = _held(init)
    extras = init.pop("additional_special_tokens")
    merged = MERGES[merge, held]
    if merged == "additional":
        init["extra_special_tokens"] = extras
    if merged != "beside" or not extras:
        return None
    if tiktoken:
        where = "the tiktoken conversion, whose special tokens it then follows"
    elif path == "converted":
        # A SentencePiece conversion replaces the keyword with the model's control
        # pieces (SentencePieceExtractor.extract): nothing of it is left.
        return None
    elif recipe is not None and recipe.builds_special_list:
        where = f"the {recipe.name} tokenizer class, which builds its own list from it"
    else:
        return list(extras)
    raise RenderUnsupportedError("tokenizer_config.json", (
        "additional_special_tokens beside named extra_special_tokens reaches "
        f"{where}, in this vLLM release's transformers (5.19, 5.24): not reproduced"))


def legacy_added_tokens(folder: Path, tokenizer_config: Mapping[str, Any]
                        ) -> dict[str, int] | None:
    """The tokens of the folder's ``added_tokens.json`` that from_pretrained reads (every
    transformers release vLLM 0.29-0.33 runs, 5.17-5.24: one rule): only without an
    ``added_tokens_decoder`` in tokenizer_config.json, else the file is never opened."""
    file = folder / "added_tokens.json"
    if "added_tokens_decoder" in tokenizer_config or not file.is_file():
        return None
    try:
        value = json.loads(file.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFolderError("added_tokens.json", f"cannot be read as JSON: {exc}") from None
    if not isinstance(value, dict) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in value.values()):
        raise ModelFolderError("added_tokens.json", "must map each token to an integer id")
    return value


def added_tokens_decoder(init: dict[str, Any], special_tokens_map: Mapping[str, Any] | None,
                         loaded: Tokenizer | None,
                         legacy: Mapping[str, int] | None = None) -> dict[int, AddedToken]:
    """The ``added_tokens_decoder`` from_pretrained passes: tokenizer_config.json's (taken
    out of ``init``), else (a legacy folder) special_tokens_map.json's tokens merged into
    ``init``, then added_tokens.json's tokens (``legacy``: :func:`legacy_added_tokens`),
    then tokenizer.json's own added tokens, which win an id both give.

    An added_tokens.json token is special when its text is a named token's or an extra
    special token's as tokenizer_config.json (or special_tokens_map.json) gives it, and then
    not normalized. Its id is not kept: the backend adds every decoder entry by its text
    (:func:`add_backend_tokens`), at its vocabulary id or the next free one."""
    decoder: dict[int, AddedToken] = {}
    if "added_tokens_decoder" in init:
        raw = init.pop("added_tokens_decoder")
        if not isinstance(raw, dict):
            raise ModelFolderError("tokenizer_config.json", "added_tokens_decoder must be an "
                                   "object")
        for index, value in raw.items():
            fields = {k: v for k, v in value.items() if k != "__type"} if isinstance(
                value, dict) else None
            if fields is None or not str(index).isdigit():
                raise ModelFolderError("tokenizer_config.json",
                                       f"added_tokens_decoder[{index!r}] is not an AddedToken")
            decoder[int(index)] = AddedToken(**fields)
    else:
        for key, value in (special_tokens_map or {}).items():
            if key == "extra_special_tokens" or key == "additional_special_tokens":
                existing = list(init.get("extra_special_tokens") or [])
                for token in value if isinstance(value, list) else []:
                    token = AddedToken(**token, special=True) if isinstance(token, dict) else token
                    if token not in existing:
                        existing.append(token)
                init["extra_special_tokens"] = existing
            elif isinstance(value, dict):
                fields = {k: v for k, v in value.items() if k not in ("special", "__type")}
                init[key] = AddedToken(**fields, special=True)
            else:
                init[key] = value
        if legacy:
            # str() of the raw value, as transformers takes it: a serialised AddedToken
            # (a dict) in tokenizer_config.json names no token here.
            special = {str(init[k]) for k in NAMED_TOKENS if init.get(k)}
            extras = init.get("extra_special_tokens") or []
            special.update(str(t) for t in (extras if isinstance(extras, (list, tuple)) else []))
            for text, index in legacy.items():
                is_special = text in special
                decoder[index] = AddedToken(text, rstrip=False, lstrip=False,
                                            normalized=not is_special, special=is_special)
        # tokenizer.json's added_tokens, as the file lists them (id, content, flags).
        if loaded is not None:
            decoder.update(loaded.get_added_tokens_decoder())
    return decoder


def add_backend_tokens(tok: Tokenizer, decoder: Mapping[int, AddedToken],
                       specials: Mapping[str, AddedToken | str],
                       extras: list[AddedToken | str]) -> None:
    """TokenizersBackend.__init__'s added tokens: every added_tokens_decoder entry again
    (its "already there" test compares against the decoder's ids, so nothing is skipped),
    then the special tokens whose text is not yet an added token."""
    to_add: list[AddedToken | str] = [t for _, t in sorted(decoder.items())]
    encoder = [str(t) for t in tok.get_added_tokens_decoder().values()] + [str(t) for t in to_add]
    for value in [*specials.values(), *extras]:
        if str(value) not in encoder and value not in to_add:
            to_add.append(value)
    all_named = [str(t) for t in specials.values() if t]
    tokens: list[AddedToken] = []
    for value in to_add:
        if isinstance(value, str):
            value = AddedToken(value, special=True)
        elif not value.special and str(value) in all_named:
            value.special = True
        tokens.append(value)
    if tokens:
        tok.add_tokens(tokens)
