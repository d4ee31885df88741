"""Which settings of a folder a reproduced Python tokenizer class accepts.

A folder is reproduced only when its ``tokenizer_config.json`` (and
``special_tokens_map.json``) leave the class's defaults (render/_hf_python.py's
:class:`PythonCodec`) as they are, or set them to a value the record reproduces: any
other setting is refused, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._errors import RenderUnsupportedError
from ._hf_python import PYTHON_CODECS, BasicWordPiece, PythonCodec

__all__ = ["check_folder"]

# tokenizer_config.json keys that change nothing these classes encode.
_INERT: Final = frozenset({
    "tokenizer_class", "model_max_length", "clean_up_tokenization_spaces", "chat_template",
    "name_or_path", "special_tokens_map_file", "padding_side", "truncation_side",
    "model_input_names", "extra_special_tokens", "additional_special_tokens",
    "added_tokens_decoder", "extra_ids", "add_prefix_space", "backend", "processor_class",
})


def _check_only(codec_class: str, only: Mapping[str, Any], why: Mapping[tuple[str, str], str],
                source: str, key: str, value: Any) -> None:
    if key in only and value != only[key] and not (key == "never_split" and value == []):
        reason = why.get((key, str(value)), "is not reproduced")
        raise RenderUnsupportedError(source, f"{key} {value!r}: {codec_class} with it {reason}")


def _check_wordpiece(codec_class: str, wordpiece: BasicWordPiece, source: str, key: str,
                     value: Any) -> None:
    _check_only(codec_class, wordpiece.only, wordpiece.why, source, key, value)
    if key == wordpiece.subword_setting and value not in ("wordpiece", "character"):
        raise RenderUnsupportedError(source, f"{key} {value!r}: only wordpiece and "
                                     f"character are reproduced for {codec_class}")
    if key in ("do_lower_case", "tokenize_chinese_chars") and not isinstance(value, bool):
        raise RenderUnsupportedError(source, f"{key} {value!r}: only true or false is "
                                     f"reproduced for {codec_class}")
    if key == "strip_accents" and value is not None and not isinstance(value, bool):
        raise RenderUnsupportedError(source, f"strip_accents {value!r}: only null, true or "
                                     f"false is reproduced for {codec_class}")


def _content(value: Any) -> Any:
    return value.get("content") if isinstance(value, Mapping) else value


def check_folder(codec_class: str, tokenizer_config: Mapping[str, Any],
                 special_tokens_map: Mapping[str, Any] | None) -> None:
    """Refuse a folder whose settings differ from what the codec records."""
    codec = PYTHON_CODECS[codec_class]
    if codec.spm is not None:
        _check_spm(codec_class, codec, tokenizer_config, special_tokens_map)
        return
    for key in codec.only:
        # A default is refused too (Vits's phonemize true): the value in force is checked.
        _check_only(codec_class, codec.only, codec.why, "tokenizer_config.json", key,
                    tokenizer_config.get(key, codec.settings.get(key)))
    if codec.vocab_file is not None:
        for source, settings in (("tokenizer_config.json", tokenizer_config),
                                 ("special_tokens_map.json", special_tokens_map or {})):
            for key, value in settings.items():
                if key == "target_lang" and value is not None:
                    raise RenderUnsupportedError(source, "target_lang (a nested multilingual "
                                                 "vocabulary) is not reproduced")
                if codec.wordpiece is not None:
                    _check_wordpiece(codec_class, codec.wordpiece, source, key, value)
                if codec.bpe is not None:
                    _check_only(codec_class, codec.bpe.only, codec.bpe.why, source, key, value)
                if key in codec.settings:
                    continue
                if key == "added_tokens_decoder" and (codec.bpe or codec.wordpiece):
                    continue  # checked against the vocabulary when it is read
                if key in _INERT - {"additional_special_tokens", "extra_special_tokens",
                                    "added_tokens_decoder", "extra_ids", "add_prefix_space"}:
                    continue
                if key in ("additional_special_tokens", "extra_special_tokens") and not value:
                    continue
                raise RenderUnsupportedError(source, f"{key} is not reproduced for {codec_class}")
        return
    named = {a.attribute: a for a in codec.added if a.attribute}
    extras = [a.content for a in codec.added if a.attribute is None]
    for source, settings in (("tokenizer_config.json", tokenizer_config),
                             ("special_tokens_map.json", special_tokens_map or {})):
        for key, value in settings.items():
            if key in named:
                if (_content(value) != named[key].content
                        or (isinstance(value, Mapping) and any(
                            value.get(flag, default) != default for flag, default in (
                                ("lstrip", named[key].lstrip),
                                ("rstrip", named[key].rstrip))))):
                    raise RenderUnsupportedError(source, (
                        f"{key} {value!r}: only {codec_class}'s default "
                        f"{named[key].content!r} is reproduced"))
            elif key in ("additional_special_tokens", "extra_special_tokens"):
                if value not in (None, []) and [_content(v) for v in value] != extras:
                    raise RenderUnsupportedError(source, (
                        f"{key}: only {codec_class}'s own "
                        f"{'sentinels' if extras else 'none'} are reproduced"))
            elif key == "extra_ids":
                if value != len(extras):
                    raise RenderUnsupportedError(source, (
                        f"extra_ids {value!r}: only {codec_class}'s default {len(extras)} "
                        "is reproduced"))
            elif key == "added_tokens_decoder":
                for index, token in (value or {}).items():
                    known = [a for a in codec.added if str(a.id) == str(index)
                             and a.content == _content(token)]
                    if not known:
                        raise RenderUnsupportedError(source, (
                            f"added_tokens_decoder[{index!r}] is not one of "
                            f"{codec_class}'s own tokens"))
            elif key == "add_prefix_space":
                if value:
                    raise RenderUnsupportedError(source, "add_prefix_space is not reproduced")
            elif key not in _INERT and key.endswith("_token") and value is not None:
                raise RenderUnsupportedError(source, (
                    f"{key} {value!r}: {codec_class} has no such token here"))
            elif key not in _INERT and not key.endswith("_token"):
                raise RenderUnsupportedError(source, (
                    f"{key} is not reproduced for {codec_class}"))


def _check_spm_setting(codec_class: str, codec: PythonCodec, source: str, key: str,
                       value: Any, language_codes: str) -> None:
    spm = codec.spm
    assert spm is not None
    default = codec.settings[key]
    if key.endswith("_token"):
        flags = value if isinstance(value, Mapping) else {}
        strips = spm.strip_specials or (key == "mask_token" and spm.mask_after_languages)
        if _content(value) != default or any(
                flags.get(flag, strips) != strips for flag in ("lstrip", "rstrip")):
            raise RenderUnsupportedError(source, (
                f"{key} {value!r}: only {codec_class}'s default {default!r} is reproduced"))
    elif key == "language_codes" and value not in spm.languages:
        raise RenderUnsupportedError(source, (
            f"language_codes {value!r}: only {sorted(spm.languages)} are reproduced for "
            f"{codec_class}"))
    elif key == "src_lang" and value not in spm.languages.get(language_codes, {}):
        raise RenderUnsupportedError(source, (
            f"src_lang {value!r} is not one of the {language_codes!r} language codes: "
            f"{codec_class} does not load"))


def _check_spm(codec_class: str, codec: PythonCodec, tokenizer_config: Mapping[str, Any],
               special_tokens_map: Mapping[str, Any] | None) -> None:
    """A SentencePiece class's folder: its settings, with the values reproduced."""
    spm = codec.spm
    assert spm is not None
    language_codes = str(tokenizer_config.get("language_codes")
                         or codec.settings.get("language_codes"))
    for source, settings in (("tokenizer_config.json", tokenizer_config),
                             ("special_tokens_map.json", special_tokens_map or {})):
        for key, value in settings.items():
            if key in codec.settings:
                if value is not None:
                    _check_spm_setting(codec_class, codec, source, key, value,
                                       language_codes)
            elif key == "legacy":
                # SentencePieceBackend drops the model's dummy prefix for legacy false;
                # a PythonBackend class does not read it.
                if value is False and spm.backend == "sentencepiece":
                    raise RenderUnsupportedError(source, f"legacy false is not reproduced "
                                                 f"for {codec_class}")
            elif key == "added_tokens_decoder" and source == "tokenizer_config.json":
                continue  # checked against the tokens the class adds (render/_python_spm.py)
            elif key in ("additional_special_tokens", "extra_special_tokens"):
                # None, or the language codes' tokens in their order (M2M100 and PLBart
                # folders list them): anything else is an added token not reproduced.
                codes = list(dict.fromkeys(spm.languages.get(language_codes, {}).values()))
                if value and [_content(v) for v in value] != codes:
                    raise RenderUnsupportedError(source, (
                        f"{key}: only none or {codec_class}'s language codes, in their "
                        "order, are reproduced"))
            elif key in _INERT - {"additional_special_tokens", "extra_special_tokens",
                                  "added_tokens_decoder", "extra_ids", "add_prefix_space"}:
                continue
            elif value not in (None, False, [], {}):
                raise RenderUnsupportedError(source, f"{key} is not reproduced for {codec_class}")
