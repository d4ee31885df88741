"""The post-processor a tokenizer class ends with: the special tokens around a text.

TokenizersBackend.__init__ sets one from the ``add_bos_token`` / ``add_eos_token``
flags when it must (:func:`update_post_processor`); a rebuilding class
(render/_hf_rebuilds.py) may set its own before (:func:`template_first`) or after it
(:func:`after_init`, which first re-adds the special tokens some classes add again: its
template over its named tokens, Roberta or Bert processing, WhisperTokenizer's prefix
tokens), each token's id looked up in the built tokenizer as transformers does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokenizers import AddedToken, Tokenizer, processors

from ._errors import ModelFolderError, RenderUnsupportedError
from ._hf_backend import spec_value
from ._hf_rebuilds import Rebuild, Template
from ._hf_specials import NAMED_TOKENS

__all__ = ["after_init", "check_prefix_options", "template_first", "update_post_processor"]


def update_post_processor(tok: Tokenizer, special_tokens: Mapping[str, Any], *,
                          add_bos_token: bool = False,
                          add_eos_token: bool = False) -> processors.TemplateProcessing:
    """``TokenizersBackend.update_post_processor``: the sequence between the BOS and EOS
    the flags add (a flag without its token is dropped), each token's id looked up as
    ``convert_tokens_to_ids`` does (else the unknown token's)."""
    parts: dict[str, tuple[str, int]] = {}
    for key, wanted in (("bos_token", add_bos_token), ("eos_token", add_eos_token)):
        token = special_tokens.get(key)
        if not wanted or token is None:
            continue
        found = tok.token_to_id(str(token))
        unk = special_tokens.get("unk_token")
        if found is None and unk is not None:
            found = tok.token_to_id(str(unk))
        if found is None:
            raise ModelFolderError("tokenizer_config.json", (
                f"add_{key} is set but {str(token)!r} has no id (and no unknown token): "
                "transformers fails to build its post-processor and vLLM does not start"))
        parts[key] = (str(token), found)
    bos, eos = parts.get("bos_token"), parts.get("eos_token")
    single = f"{bos[0] + ':0 ' if bos else ''}$A:0{' ' + eos[0] + ':0' if eos else ''}"
    pair = f"{single}{' ' + bos[0] + ':1' if bos else ''} $B:1{' ' + eos[0] + ':1' if eos else ''}"
    return processors.TemplateProcessing(single=single, pair=pair,
                                         special_tokens=list(parts.values()))


def _token_id(tok: Tokenizer, token: str) -> int:
    """A special token's id (every named special token is added before this is asked)."""
    found = tok.token_to_id(token)
    if found is None:
        raise ModelFolderError("tokenizer_config.json", f"special token {token!r} has no id")
    return found


def template_first(recipe: Rebuild, template: Template, tok: Tokenizer,
                   specials: Mapping[str, AddedToken | str]) -> Any:
    """The TemplateProcessing a class sets before ``super().__init__``, over the bare
    model's ids (AlbertTokenizer): a token the vocabulary lacks fails the class."""
    names = {n: str(specials.get(n, "None")) for n in NAMED_TOKENS}
    pieces = []
    for text, name in template.special_tokens:
        found = tok.model.token_to_id(names[name])
        if found is None:
            raise ModelFolderError("tokenizer.json", (
                f"{name} {names[name]!r} is not in the vocabulary: transformers' "
                f"{recipe.name} tokenizer class fails to load the folder"))
        pieces.append((text.format(**names), found))
    return processors.TemplateProcessing(single=template.single.format(**names),
                                         pair=_pair(template, names), special_tokens=pieces)


def _template(template: Template, tok: Tokenizer, specials: Mapping[str, AddedToken | str],
              derived: Mapping[str, Any]) -> Any:
    """The TemplateProcessing a class sets itself over its named special tokens (and
    its language code, ``{src_lang}``)."""
    names = {}
    for name in NAMED_TOKENS:
        value = specials.get(name)
        names[name] = "" if value is None else str(value)
    lang = derived.get("src_lang")
    if lang is not None:
        names["src_lang"] = lang
        if tok.token_to_id(lang) is None:
            # MBart, Nllb and SeamlessM4T then put the unknown token's id under the code's
            # text (MBart50 fails to load): not reproduced.
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"src_lang {lang!r} is not a token of the vocabulary, which prefixkey does "
                "not reproduce"))
    used = [n for n in NAMED_TOKENS if "{" + n + "}" in template.single + (template.pair or "")]
    used += [n for _, n in template.special_tokens]
    missing = [n for n in used if not names[n]]
    if missing:
        raise ModelFolderError("tokenizer_config.json",
                               f"{missing[0]} is null, which the class's template needs")
    return processors.TemplateProcessing(
        single=template.single.format(**names), pair=_pair(template, names),
        special_tokens=[(text.format(**names), _token_id(tok, names[name]))
                        for text, name in template.special_tokens])


def _pair(template: Template, names: Mapping[str, str]) -> str | None:
    return None if template.pair is None else template.pair.format(**names)


def after_init(recipe: Rebuild, tok: Tokenizer, derived: Mapping[str, Any],
               specials: Mapping[str, AddedToken | str], extras: list[AddedToken | str],
               file_processor: bool, flags: Mapping[str, bool]) -> None:
    """What the class's ``__init__`` does after TokenizersBackend's (render/_hf_rebuilds.py);
    ``file_processor``: whether tokenizer.json has a post-processor; ``flags``: the
    ``add_bos_token`` / ``add_eos_token`` the folder passes (without tokenizer.json), which
    win over the class's."""
    add_bos = flags.get("add_bos_token", recipe.add_bos_token)
    add_eos = flags.get("add_eos_token", recipe.add_eos_token)
    if recipe.readd_specials:  # add_tokens(all_special_tokens), as special AddedTokens
        seen: list[str] = []
        for value in [*specials.values(), *extras]:
            if str(value) not in seen:
                seen.append(str(value))
        tok.add_tokens([AddedToken(t, special=True) for t in seen])
    if recipe.post_init:  # _post_init(): every special token through add_special_tokens
        tok.add_special_tokens([
            t if isinstance(t, AddedToken) else AddedToken(t, special=True, normalized=False)
            for t in [*specials.values(), *extras]])
    if recipe.post_processor == "update":
        tok.post_processor = update_post_processor(
            tok, specials, add_bos_token=add_bos, add_eos_token=add_eos)
    elif recipe.post_processor == "roberta":
        null = [name for name in recipe.processor_tokens if specials.get(name) is None]
        if null:
            # str(None) is "None", a token of some vocabularies (Qwen's): most classes
            # then fail on the null id, MPNetTokenizer falls back to 0 and 2.
            raise RenderUnsupportedError("tokenizer_config.json", (
                f"{null[0]} is null, which the {recipe.name} tokenizer class's "
                "RobertaProcessing takes: not reproduced"))
        sep, cls = (str(specials.get(name)) for name in recipe.processor_tokens)
        options = {k: spec_value(v, derived) for k, v in recipe.processor_options.items()}
        tok.post_processor = processors.RobertaProcessing(
            (sep, _token_id(tok, sep)), (cls, _token_id(tok, cls)), **options)
    elif recipe.post_processor == "bert":
        sep, cls = (str(specials.get(name)) for name in recipe.processor_tokens)
        sep_id, cls_id = recipe.processor_ids
        tok.post_processor = processors.BertProcessing((sep, sep_id), (cls, cls_id))
    elif recipe.post_processor == "prefix":
        # Through convert_tokens_to_ids and back: a token the tokenizer lacks (a folder
        # without its added tokens) is the unk token.
        unk = str(specials.get("unk_token"))
        prefix = [t if tok.token_to_id(t) is not None else unk
                  for t in (spec_value(v, derived) for v in recipe.prefix_tokens)
                  if t is not None]
        eos = str(specials.get("eos_token"))
        head = " ".join(f"{t}:0" for t in prefix)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{head} $A:0 {eos}:0", pair=f"{head} $A:0 $B:1 {eos}:1",
            special_tokens=[(t, _token_id(tok, t)) for t in dict.fromkeys([eos, *prefix])])
    elif isinstance(recipe.post_processor, Template):
        template = recipe.post_processor
        if recipe.template_if is not None and spec_value(recipe.template_if[0], derived):
            template = recipe.template_if[1]
        tok.post_processor = _template(template, tok, specials, derived)
    if recipe.post_init and not file_processor and not recipe.template_last:
        # _post_init() ends with update_post_processor() when TokenizersBackend had to
        # (no post-processor in the file), over whatever the class set before it.
        tok.post_processor = update_post_processor(
            tok, specials, add_bos_token=add_bos, add_eos_token=add_eos)


def check_prefix_options(init: Mapping[str, Any]) -> None:
    """The WhisperTokenizer options prefixkey reproduces (set_prefix_tokens' checks)."""
    if init.get("language") is not None:
        # The language token's id is <|startoftranscript|>'s plus its index in
        # transformers' LANGUAGES table, which prefixkey does not carry.
        raise RenderUnsupportedError("tokenizer_config.json",
                                     "a WhisperTokenizer language is not reproduced")
    task = init.get("task")
    if task is not None and task not in ("translate", "transcribe"):
        raise ModelFolderError("tokenizer_config.json", f"task: Unsupported task: {task}. "
                               "Task should be in: ['translate', 'transcribe']")
