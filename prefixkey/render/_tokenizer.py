"""The tokenizer transformers 5 builds from a model folder, rebuilt with ``tokenizers`` alone.

vLLM 0.31 loads its tokenizer with ``AutoTokenizer.from_pretrained``; which class
that builds, and whether it takes ``tokenizer.json`` as it is or rebuilds the
model, normalizer and pre-tokenizer from its vocabulary (keeping only the
vocabulary, merges and post-processor), is decided in ``_hf_decision.py``. Here
the same ``tokenizers`` calls are made in the same order for the as-is path and
the rebuilds reproduced (render/_hf_rebuilds.py's REBUILDS), so
added and special tokens get the ids and matching flags transformers gives them.
Everything else is refused before this module is reached: encoding with a
different tokenizer would give ids that look right and are not.

:func:`build_tokenizer` holds the order of those steps; the steps themselves are the
special tokens (render/_hf_specials.py), a rebuilding class's backend
(render/_hf_backend.py) and the post-processors (render/_hf_post_processor.py).
:class:`HfTokenizer` is the result, encoding as the class's call does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path as FilePath
from typing import Any

from tokenizers import AddedToken, Tokenizer

from ._eras import GenericSpm, SpecialsMerge
from ._errors import ModelFolderError, RenderRequestError, RenderUnsupportedError
from ._folder import ModelFolder
from ._hf_backend import derived_values, extras_default, rebuilt_tokenizer, spm_charsmap
from ._hf_converted import (
    CONVERSIONS,
    converted_vocabulary,
    generic_inputs,
    generic_specials,
    generic_spm_tokenizer,
    inherited_specials,
    rebuilding_class,
)
from ._hf_post_processor import (
    after_init,
    check_prefix_options,
    template_first,
    update_post_processor,
)
from ._hf_rebuilds import REBUILDS, Rebuild
from ._hf_specials import (
    NAMED_TOKENS,
    add_backend_tokens,
    added_token,
    added_tokens_decoder,
    legacy_added_tokens,
    merge_specials,
    model_specific,
    sentinels,
)
from ._hf_tiktoken import converted_tokenizer

__all__ = ["HfTokenizer", "build_tokenizer"]


def _read_json(path: FilePath) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as handle:
            loaded: dict[str, Any] = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ModelFolderError("tokenizer.json", f"cannot be read: {exc}") from None
    return loaded


@dataclass(frozen=True, slots=True, eq=False)
class HfTokenizer:
    """A folder's tokenizer as vLLM 0.31 uses it, with what its templates see.

    ``special_tokens_map`` holds the template variables transformers passes
    (``bos_token``, ``eos_token``, …, and model-specific ``*_token`` names).
    """

    tokenizer: Tokenizer
    special_tokens_map: Mapping[str, str]
    #: The longest token, found on first use (listing a large vocabulary costs a quarter
    #: of a build; only a text longer than the context length in characters needs it).
    _max_chars: list[int]
    #: A copy of ``tokenizer`` for truncated encodes, made on first use (copying a large
    #: vocabulary costs as much as loading it, and most servers never truncate).
    _truncating: list[Tokenizer]
    _lock: threading.Lock
    #: CodeLlamaTokenizer's fill token: its call splits a text holding it there.
    infill_token: str | None = None
    #: The class's call encodes the text's words as pretokenized (MarkupLMTokenizer).
    words: bool = False
    #: The error the class's call raises for every text (UdopTokenizer's).
    call_error: str | None = None

    def _check(self, text: str) -> str:
        """The text CodeLlamaTokenizer's call encodes the plain way, or an error.

        Two fill tokens fail its unpacking (vLLM's 400); an empty suffix leaves the
        prefix, encoded as usual. Otherwise it encodes an infilling prompt and then keeps
        a changed normalizer (a "▁" prepended to every piece), so that tokenizer copy of
        vLLM's encodes later texts otherwise (real_py_codellama_vectors.jsonl): refused.
        """
        if self.call_error is not None:
            raise RenderRequestError("prompt", self.call_error)
        token = self.infill_token
        if token is None or token not in text:
            return text
        prefix, *suffix = text.split(token)
        if len(suffix) > 1:
            raise RenderRequestError("prompt", "too many values to unpack (expected 2)")
        if not suffix[0]:
            return prefix
        raise RenderUnsupportedError("prompt", (
            f"CodeLlamaTokenizer splits a text at its fill token {token!r} into an "
            "infilling prompt and then keeps a changed normalizer, so that vLLM tokenizer "
            "encodes later texts otherwise (a leading space, a text after a special "
            "token); not reproduced"))

    @property
    def max_chars_per_token(self) -> int:
        """vLLM's bound on characters per input token: the longest token of
        ``get_vocab(with_added_tokens=True)``, the model's and the added ones."""
        if not self._max_chars:
            with self._lock:
                if not self._max_chars:
                    vocab = self.tokenizer.get_vocab(with_added_tokens=True)
                    self._max_chars.append(max(map(len, vocab), default=0))
        return self._max_chars[0]

    def with_lowercased_specials(self) -> HfTokenizer:
        """This tokenizer after vLLM's ``add_special_tokens`` of its named special tokens
        lowercased (a sentence-transformers ``do_lower_case``:
        render/_sentence_transformers.py), changed in place and returned with the template
        variables lowercased.

        transformers hands the tokens, as ``AddedToken(normalized=False, special=True)``,
        to the ``tokenizers`` backend's own ``add_special_tokens``, called the same way
        here: a string it already has keeps its id (an added one takes the new flags), a
        new one gets the next id.
        """
        named = {k: v.lower() for k, v in self.special_tokens_map.items() if k in NAMED_TOKENS}
        self.tokenizer.add_special_tokens([
            AddedToken(named[k], rstrip=False, lstrip=False, normalized=False, special=True)
            for k in NAMED_TOKENS if k in named])
        return replace(self, special_tokens_map={**self.special_tokens_map, **named})

    def max_token_id(self) -> int:
        """vLLM's ``max_token_id`` of a TokenizersBackend (tokenizers/hf.py
        ``get_cached_tokenizer``): the largest id of ``get_vocab()``, the added tokens
        included, or the base vocabulary's ``vocab_size`` less one, whichever is larger.
        (Only MLukeTokenizer among transformers' TokenizersBackend classes counts its
        vocabulary otherwise: render/_renderer.py does not ask it.)"""
        vocab = self.tokenizer.get_vocab(with_added_tokens=True)
        return max(max(vocab.values(), default=-1),
                   self.tokenizer.get_vocab_size(with_added_tokens=False) - 1)

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """``tokenizer(text, add_special_tokens=…)["input_ids"]``, untruncated.

        ``encode_batch_fast`` runs the same pipeline as transformers' call
        without tracking character offsets, which nobody here reads.
        """
        text = self._check(text)
        return self.tokenizer.encode_batch_fast(
            [text.split() if self.words else text], is_pretokenized=self.words,
            add_special_tokens=add_special_tokens)[0].ids

    def encode_truncated(self, text: str, *, add_special_tokens: bool, max_length: int,
                         side: str) -> list[int]:
        """The same, truncated by the tokenizer to ``max_length`` (specials kept)."""
        text = self._check(text)
        with self._lock:  # truncation is state of the Rust tokenizer
            if not self._truncating:
                copy = Tokenizer.from_str(self.tokenizer.to_str())
                copy.no_padding()
                self._truncating.append(copy)
            truncating = self._truncating[0]
            truncating.enable_truncation(max_length, stride=0, strategy="longest_first",
                                         direction=side)
            return truncating.encode_batch_fast(
                [text.split() if self.words else text], is_pretokenized=self.words,
                add_special_tokens=add_special_tokens)[0].ids


def build_tokenizer(folder: ModelFolder, transformers: str, generic_spm: GenericSpm,
                    specials_merge: SpecialsMerge = "kept") -> HfTokenizer:
    """The tokenizer ``AutoTokenizer.from_pretrained(folder, truncation_side="left")`` builds
    in that ``transformers`` release (a rebuilding class's record for it:
    render/_hf_rebuilds.py ``Rebuild.builds_in``; ``generic_spm``: the release's build of
    the generic backend over a SentencePiece model; ``specials_merge``: how it merges the
    special tokens' lists: render/_eras.py)."""
    decision = folder.tokenizer_decision
    record = (REBUILDS.get(rebuilding_class(decision.tokenizer_class))
              if decision.recipe is not None and decision.tokenizer_class is not None
              else None)
    recipe = None if record is None else record.in_transformers(transformers)
    if folder.tokenizer_config.get("fix_mistral_regex"):
        # transformers may then swap the pre-tokenizer's regex (_patch_mistral_regex).
        raise RenderUnsupportedError("tokenizer_config.json",
                                     "fix_mistral_regex is not reproduced")
    path = folder.tokenizer_path / "tokenizer.json"
    # No tokenizer.json: a tiktoken or tekken file converted into a whole tokenizer
    # (render/_hf_tiktoken.py, built below), or a vocabulary converted for the class
    # (render/_hf_converted.py).
    source = decision.converted
    converted = (converted_vocabulary(folder.tokenizer_path, decision.tokenizer_class,
                                      folder.tokenizer_config)
                 if decision.path == "converted" and source is None
                 and decision.tokenizer_class else None)
    loaded: Tokenizer | None = None
    if source is None and converted is None:
        try:
            loaded = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception
            raise ModelFolderError("tokenizer.json", f"cannot be loaded: {exc}") from None
    missing = [key for key in (recipe.required if recipe else ()) if key not in
               folder.tokenizer_config]
    if missing:
        raise ModelFolderError("tokenizer_config.json", (
            f"the {decision.tokenizer_class} class requires {missing[0]!r}, without which "
            "transformers fails to build it and vLLM does not start"))
    for old, (new, _) in (recipe.renamed_keywords.items() if recipe else ()):
        if old in folder.tokenizer_config and new in folder.tokenizer_config:
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"{old} beside {new} (the {decision.tokenizer_class} class in transformers "
                f"{transformers} takes the first for the second) is not reproduced"))
    init = dict(folder.tokenizer_config)
    # The add_*_token flags are dropped when tokenizer.json exists; without it they are
    # passed, and either one given makes TokenizersBackend update the post-processor.
    given: dict[str, bool] = {name: bool(init.pop(name)) for name in (
        "add_bos_token", "add_eos_token") if name in init}
    if decision.path != "converted":
        given = {}
    for name in ("tokenizer_class", "init_inputs", "chat_template", "auto_map"):
        init.pop(name, None)
    if init.get("split_special_tokens"):
        raise RenderUnsupportedError("tokenizer_config.json",
                                     "split_special_tokens is not reproduced")
    kept_extras = merge_specials(init, specials_merge, decision.path, source is not None,
                                 recipe)
    explicit: dict[str, Any] = {
        k: init.pop(k) for k in list(init)
        if k not in NAMED_TOKENS and k.endswith("_token") and isinstance(init[k], str)}
    if isinstance(init.get("extra_special_tokens"), dict):
        explicit.update(init.pop("extra_special_tokens"))
        if kept_extras is not None:
            init["extra_special_tokens"] = kept_extras
    legacy = legacy_added_tokens(folder.tokenizer_path, folder.tokenizer_config)
    if legacy and kept_extras is not None:
        raise RenderUnsupportedError("added_tokens.json", (
            "its tokens beside additional_special_tokens and named extra_special_tokens, "
            "which transformers 5.19 and 5.24 keep apart when it marks them special: not "
            "reproduced"))
    decoder = added_tokens_decoder(init, folder.special_tokens_map, loaded, legacy)
    conversion = CONVERSIONS.get(decision.tokenizer_class or "")
    if converted is not None and conversion is not None and conversion.own_extras:
        keyword, fallback = conversion.own_extras
        # The folder's own list (extra_special_tokens by now) wins over the class's, which
        # then matters not (real_convgap_vectors.jsonl).
        if "extra_special_tokens" not in init and str(init.get(keyword, fallback)) in (
                text for text, _ in converted.added):
            raise RenderUnsupportedError(converted.file, (
                f"the model's control or user-defined pieces hold the {keyword} token, which "
                f"makes the {decision.tokenizer_class} class keep none of them: not "
                "reproduced"))
    elif converted is not None:
        # The model file's control and user-defined pieces: SentencePieceExtractor's
        # additional_special_tokens, which the folder's own list (extra_special_tokens by
        # then) wins over; the generic backend's as the release's transformers hands them.
        added = list(converted.added)
        if recipe is None:
            added, decoder = generic_inputs(converted, decoder, generic_spm)
        init.setdefault("extra_special_tokens", [
            AddedToken(text, normalized=False, special=special) for text, special in added])
        if recipe is None:
            inherited = inherited_specials(conversion) if conversion else {}
            for key, value in [*generic_specials(converted).items(), *inherited.items()]:
                init.setdefault(key, value)
    by_content = {str(t): t for t in decoder.values()}
    named: dict[str, AddedToken | str] = {}
    for key, default in (recipe.defaults if recipe else {}).items():
        if default is not None:
            named[key] = (AddedToken(default, **recipe.wrap[key])
                          if recipe is not None and key in recipe.wrap else default)
    auto: dict[str, AddedToken | str] = {}
    for key in list(init):
        if key in NAMED_TOKENS:
            value = init.pop(key)
            if value is None:  # an explicit null overrides the class's default
                named.pop(key, None)
            else:
                token = added_token(value, key)
                if recipe is not None and key in recipe.wrap and isinstance(token, str):
                    token = AddedToken(token, **recipe.wrap[key])
                named[key] = by_content.get(str(token), token) if by_content else token
        elif key.endswith("_token") and isinstance(init[key], dict):
            token = added_token(init.pop(key), key)
            if isinstance(token, AddedToken):
                auto[key] = token
    specials: dict[str, AddedToken | str] = {k: named[k] for k in NAMED_TOKENS if k in named}
    if recipe is not None:
        specials.update(model_specific(recipe, folder.tokenizer_config))
    # The class's own extra tokens (CodeLlama's infilling ones) are added in its order
    # below, not in tokenizer_config.json's (vLLM's ids: real_py_codellama_vectors.jsonl).
    late = {keyword for _, keyword in (recipe.extra_specials if recipe else ())}
    specials.update({**auto, **{k: added_token(v, k) for k, v in explicit.items()
                                if k not in late}})
    for old, (new, form) in (recipe.renamed_keywords.items() if recipe else ()):
        # The class's keyword: the older one, else the renamed one's AddedToken (a text
        # is a model-specific token from_pretrained moved out: the keyword's default).
        taken = init.pop(old) if old in init else auto.get(new)
        if taken is not None:
            init[new] = form.format(taken) if isinstance(taken, str) else taken
            specials[new] = str(added_token(init[new], old))
    listed = init.get("extra_special_tokens")
    if recipe is not None and recipe.sentinels is not None:
        listed = sentinels(recipe.sentinels, folder.tokenizer_config, listed)
    if recipe is not None and recipe.extras_default is not None and listed is None:
        if "extra_special_tokens" in folder.tokenizer_config:
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"extra_special_tokens with the {recipe.name} tokenizer class's own "
                "additional_special_tokens is not reproduced"))
        listed = extras_default(recipe, derived_values(folder.tokenizer_config, recipe))
    if recipe is not None and (recipe.extras_before or recipe.extras_after):
        before = recipe.extras_before
        listed = [*before, *(t for t in listed or [] if str(t) not in before),
                  *recipe.extras_after]
    extras = [added_token(t, "extra_special_tokens") if not isinstance(t, AddedToken) else t
              for t in listed or []]
    for default, keyword in (recipe.extra_specials if recipe else ()):
        # The class appends each (its keyword's value, else its default; None: none) to
        # additional_special_tokens and passes it to super() as a named token.
        chosen = explicit.get(keyword, default) if keyword in explicit or keyword not in init \
            else init.get(keyword)
        if chosen is not None:
            extras.append(added_token(chosen, keyword))
            specials.setdefault(keyword, added_token(chosen, keyword))

    if recipe is not None and recipe.post_processor == "prefix":
        check_prefix_options(folder.tokenizer_config)

    derived: dict[str, Any] = {}
    if source is not None:  # convert_to_native_format's tokenizer_object
        loaded = converted_tokenizer(folder.tokenizer_path, source, decoder,
                                     list(init.get("extra_special_tokens") or []))
    if recipe is None:
        if converted is not None:  # the generic backend over a SentencePiece model
            tok = generic_spm_tokenizer(converted, decoder, generic_spm,
                                        folder.tokenizer_config.get("legacy", True))
        else:
            assert loaded is not None
            tok = loaded
    else:
        derived = derived_values(folder.tokenizer_config, recipe)
        tokenizer_json = None
        if converted is not None:
            derived["spm_charsmap"] = converted.charsmap
            if converted.unigram is not None and converted.model is not None:
                # SentencePieceExtractor.extract sets the unk_id keyword to the model's.
                derived["unk_id"] = converted.model.unk_id
        elif recipe.model_spec[0] == "Unigram":  # its vocabulary's scores, the charsmap
            tokenizer_json = _read_json(path)
            derived["spm_charsmap"] = spm_charsmap(tokenizer_json.get("normalizer"))
        else:  # the file's normalizer alone, not its whole vocabulary through Python
            assert loaded is not None
            derived["spm_charsmap"] = spm_charsmap(None if loaded.normalizer is None else
                                                    json.loads(loaded.normalizer.__getstate__()))
        tok = rebuilt_tokenizer(recipe, loaded, derived, tokenizer_json, converted)
    if recipe is not None and recipe.template_first is not None:
        first = template_first(recipe, recipe.template_first, tok, specials)
        if tok.post_processor is None:
            tok.post_processor = first
    # TokenizersBackend then updates the post-processor (the flags' bos / eos, or the
    # sequence alone) when it has none, or when a flag was given.
    update = bool(given) or tok.post_processor is None
    add_backend_tokens(tok, decoder, specials, extras)
    if update:
        tok.post_processor = update_post_processor(tok, specials, **given)
    if recipe is not None:
        after_init(recipe, tok, derived, specials, extras,
                   loaded is not None and loaded.post_processor is not None, given)
    tok.no_truncation()
    tok.no_padding()
    return HfTokenizer(
        tokenizer=tok,
        special_tokens_map={k: str(v) for k, v in specials.items()},
        _max_chars=[],
        _truncating=[],
        _lock=threading.Lock(),
        infill_token=_infill_token(recipe, folder.tokenizer_config),
        words=recipe is not None and recipe.words,
        call_error=_call_error(recipe, folder.tokenizer_config, decision.tokenizer_class),
    )


def _infill_token(recipe: Rebuild | None, config: Mapping[str, Any]) -> str | None:
    """The fill token a class splits texts at (None: the class does not, or it is off)."""
    if recipe is None or recipe.infilling is None:
        return None
    default, keyword = recipe.infilling
    value = config.get(keyword, default)
    return None if value is None else str(added_token(value, keyword))


def _call_error(recipe: Rebuild | None, config: Mapping[str, Any],
                name: str | None) -> str | None:
    """The error the class's call raises for every text: its own, or its ``task``'s."""
    if recipe is None:
        return None
    task = config.get("task")
    if not recipe.task_errors or task is None:
        return recipe.call_error
    if not isinstance(task, str) or task not in recipe.task_errors:
        raise ModelFolderError("tokenizer_config.json", (
            f"task {task!r} is not one the {name} class supports "
            f"({', '.join(recipe.task_errors)}): transformers fails to build it and vLLM "
            "does not start"))
    return recipe.task_errors[task]
