"""The ``tokenizers`` backend a rebuilding tokenizer class builds (render/_hf_rebuilds.py).

Such a class (render/_hf_decision.py's ``recipe``) keeps only the vocabulary, merges and
post-processor of tokenizer.json, or a vocabulary converted from a SentencePiece model
(render/_hf_converted.py), and builds the rest in its ``__init__``: a model over that
vocabulary with its options, its normalizer, pre-tokenizer and decoder. Its recipe gives
them as specs whose ``$name`` values the class derives from tokenizer_config.json
(:func:`derived_values`); here those specs become the same ``tokenizers`` objects.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

from ._errors import ModelFolderError, RenderUnsupportedError
from ._hf_converted import Vocabulary
from ._hf_rebuilds import Rebuild
from ._hf_specials import added_token

__all__ = ["derived_values", "extras_default", "rebuilt_tokenizer", "spec_value", "spm_charsmap"]


def derived_values(init: Mapping[str, Any], recipe: Rebuild) -> dict[str, Any]:
    """The values a class's ``__init__`` derives from tokenizer_config.json (``$name``)."""
    given = init.get("add_prefix_space")
    prefix = recipe.add_prefix_space if given is None else bool(given)
    legacy = bool(init.get("legacy", False))
    unk = init.get("unk_token", recipe.defaults.get("unk_token"))
    task = init.get("task")
    # The SentencePiece classes: ``"always" if add_prefix_space else "never"`` over the
    # keyword as passed (a null in the file is falsy there).
    spm_prefix = init.get("add_prefix_space", recipe.add_prefix_space)
    return {
        **{name: init.get(name, default) for name, default in recipe.options.items()},
        "metaspace_scheme": "always" if spm_prefix else "never",
        # DebertaV2Tokenizer: ``"always" if add_prefix_space else "first"``.
        "spm_first_scheme": "always" if spm_prefix else "first",
        # ``str(unk_token)``, as the WordPiece and BPE classes pass it to their model: a
        # null unk_token is the text "None" (a real token of some vocabularies).
        "unk_str": str(added_token(unk, "unk_token")) if unk is not None else "None",
        "add_prefix_space": prefix,
        "trim_offsets": bool(init.get("trim_offsets", True)),
        # models/llama/tokenization_llama.py _get_prepend_scheme.
        "llama_scheme": ("first" if not legacy else "always") if prefix else "never",
        # models/code_llama/tokenization_code_llama.py: no legacy rule.
        "prefix_scheme": "first" if prefix else "never",
        # models/whisper/tokenization_whisper.py prefix_tokens: the task's token, then
        # <|notimestamps|> unless timestamps are predicted.
        "whisper_task": None if task is None else f"<|{task}|>",
        "whisper_notimestamps": (None if init.get("predict_timestamps")
                                 else "<|notimestamps|>"),
        **({} if recipe.lang_code is None else {"src_lang": _lang_code(init, recipe.lang_code)}),
    }


def _lang_code(init: Mapping[str, Any], rule: tuple[str, str]) -> str:
    """The ``src_lang`` a language-code class's template names (Rebuild.lang_code)."""
    default, form = rule
    given = init.get("src_lang")
    if given is None and "src_lang" in init and "__" in form:
        raise ModelFolderError("tokenizer_config.json", "src_lang is null, which the class "
                               "tests for '__': transformers fails to load the folder")
    code = default if given is None else given
    if not isinstance(code, str):
        raise ModelFolderError("tokenizer_config.json", f"src_lang must be a string, got {code!r}")
    return code if "__" in code else form.format(code)


def extras_default(recipe: Rebuild, derived: Mapping[str, Any]) -> list[Any]:
    """The ``additional_special_tokens`` a class passes when the file gives none."""
    out: list[Any] = []
    for item in recipe.extras_default or ():
        if isinstance(item, str):
            value = spec_value(item, derived)
            if value is not None:
                out.append(added_token(value, item.lstrip("$")))
            continue
        form, start, stop = item
        count = spec_value(stop, derived)
        if not isinstance(count, int) or isinstance(count, bool):
            raise ModelFolderError("tokenizer_config.json", (
                f"{str(stop).lstrip('$')} must be an integer, got {count!r}"))
        out.extend(form.format(i) for i in range(start, count))
    return out


def spec_value(value: Any, derived: Mapping[str, Any]) -> Any:
    """A recipe's value: a ``$name`` of the derived values, a ``("Regex", pattern)``, else
    itself."""
    if isinstance(value, str) and value.startswith("$"):
        return derived[value[1:]]
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "Regex":
        return Regex(value[1])
    return value


def _unset(spec: Any, derived: Mapping[str, Any]) -> bool:
    """Whether a spec names a ``$`` value that is None (an ``Optional`` spec then drops)."""
    if isinstance(spec, str):
        return spec.startswith("$") and derived[spec[1:]] is None
    if isinstance(spec, Mapping):
        return any(_unset(v, derived) for v in spec.values())
    if isinstance(spec, (list, tuple)):
        return any(_unset(v, derived) for v in spec)
    return False


def _component(spec: tuple[str, Any] | None, derived: Mapping[str, Any],
               module: Any) -> Any:
    """A ``tokenizers`` normalizer, pre-tokenizer or decoder from its spec (_hf_rebuilds)."""
    if spec is None:
        return None
    name, kwargs = spec
    if name == "Optional":
        return None if _unset(kwargs, derived) else _component(kwargs, derived, module)
    if name in ("If", "Unless"):
        test, spec = kwargs
        wanted = name == "If"
        return _component(spec, derived, module) if bool(spec_value(test, derived)) == (
            wanted) else None
    if isinstance(kwargs, list):
        parts = [_component(v, derived, module) for v in kwargs]
        return getattr(module, name)([p for p in parts if p is not None])
    return getattr(module, name)(**{k: spec_value(v, derived) for k, v in kwargs.items()})


def _model(recipe: Rebuild, loaded: Tokenizer | None, derived: Mapping[str, Any],
           tokenizer_json: Mapping[str, Any] | None, converted: Vocabulary | None) -> Any:
    """The model the class builds over the file's vocabulary (and merges).

    BPE and WordPiece: the model ``tokenizers`` read from the file with the class's
    options set, the same model the class builds from the same vocabulary, without
    passing it through Python (which cost more than transformers' whole load). Unigram
    (whose options cannot be set): a new one over the file's vocabulary and scores. A
    class with a vocabulary of its own: a BPE without merges over it. ``converted``: the
    vocabulary converted from a SentencePiece model instead (render/_hf_converted.py).
    """
    kind, spec = recipe.model_spec
    options = {k: spec_value(v, derived) for k, v in spec.items()}
    if recipe.vocab is not None:  # the class's own, the file's is not read
        return models.BPE({token: i for i, token in enumerate(recipe.vocab)}, [], **options)
    if converted is not None and converted.kind != kind:
        raise RenderUnsupportedError(converted.file, (
            f"the {recipe.name} tokenizer class builds a {kind} model over the converted "
            f"vocabulary, here a {converted.kind} one: not reproduced"))
    model: Any
    if converted is not None and converted.read is not None:
        model = converted.read  # the class's options set below
    elif converted is not None and converted.bpe is not None:
        model = models.BPE(*converted.bpe)
    elif converted is None:
        assert loaded is not None  # read unless converted
        model = loaded.model
        if type(model).__name__ != kind:
            raise RenderUnsupportedError(
                "tokenizer.json", f"the {recipe.name} tokenizer class builds a {kind} model "
                f"over the file's vocabulary, here a {type(model).__name__} one: prefixkey "
                f"reproduces it over a {kind} vocabulary only")
    if kind == "Unigram":
        if converted is not None:
            assert converted.unigram is not None  # CONVERSIONS pairs Unigram classes so
            vocab = converted.unigram
        else:
            assert tokenizer_json is not None  # read for every Unigram recipe
            vocab = [tuple(item) for item in tokenizer_json["model"]["vocab"]]
        if recipe.reorders_vocab and not any(t in recipe.extras_after for t, _ in vocab):
            raise RenderUnsupportedError("tokenizer.json", (
                f"the {recipe.name} tokenizer class re-orders a vocabulary that holds none of "
                "its language codes (SentencePiece's order to fairseq's), which prefixkey "
                "does not reproduce"))
        lookup = options.pop("unk_id_lookup", None)
        if lookup is not None:  # the class finds its unk token in the vocabulary
            unk, score, start = derived["unk_str"], lookup["score"], lookup.get("start", 0)
            found = next((i for i, (t, v) in enumerate(vocab) if i >= start and t == unk and (
                score is None or v == score)), spec_value(lookup["fallback"], derived))
            if found is None:
                raise ModelFolderError("tokenizer.json", (
                    f"the unk token {unk!r} (score {score}) is not in the vocabulary from "
                    f"index {start} on: transformers' {recipe.name} tokenizer class fails "
                    "to load the folder"))
            options["unk_id"] = found
        return models.Unigram(vocab, **options)
    if kind == "BPE":
        options["ignore_merges"] = False
    for name, value in options.items():
        setattr(model, name, value)
    return model


def rebuilt_tokenizer(recipe: Rebuild, loaded: Tokenizer | None, derived: Mapping[str, Any],
                      tokenizer_json: Mapping[str, Any] | None, converted: Vocabulary | None
                      ) -> Tokenizer:
    """The backend a rebuilding class (render/_hf_rebuilds.py) builds from tokenizer.json
    (``loaded``) or from the vocabulary converted without it (``converted``).

    Those classes keep only the file's vocabulary, merges and post-processor: a new
    ``Tokenizer`` over the model the class builds (no added tokens of the file's), with
    the class's normalizer, pre-tokenizer and decoder.
    """
    tok = Tokenizer(_model(recipe, loaded, derived, tokenizer_json, converted))
    tok.post_processor = None if loaded is None else loaded.post_processor
    try:
        tok.normalizer = _component(recipe.normalizer, derived, normalizers)
    except Exception as exc:  # tokenizers raises a bare Exception
        if converted is None or converted.charsmap:
            raise ModelFolderError(converted.file if converted else "tokenizer.json", (
                f"the {recipe.name} tokenizer class's normalizer cannot be built ({exc}): "
                "transformers fails to load the folder, so vLLM does not start")) from None
        raise ModelFolderError(converted.file, (
            f"a SentencePiece model without a precompiled charsmap: the {recipe.name} "
            "tokenizer class builds a Precompiled normalizer over the empty one it is "
            "handed, which fails (\"Cannot parse precompiled_charsmap\"), so vLLM does not "
            "start")) from None
    tok.pre_tokenizer = _component(recipe.pre_tokenizer, derived, pre_tokenizers)
    tok.decoder = _component(recipe.decoder, derived, decoders)
    return tok


def spm_charsmap(found: Any) -> bytes | None:
    """convert_to_native_format's ``_spm_precompiled_charsmap``: the first Precompiled
    normalizer's charsmap in tokenizer.json's normalizer (alone or in a Sequence), decoded."""
    if not found:
        return None
    listed = found["normalizers"] if found.get("type") == "Sequence" else (
        found if isinstance(found, list) else [found])
    for normalizer in listed:
        if normalizer.get("type") == "Precompiled" and "precompiled_charsmap" in normalizer:
            return base64.b64decode(normalizer["precompiled_charsmap"])
    return None
