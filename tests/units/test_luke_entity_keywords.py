"""LukeTokenizer's and MLukeTokenizer's entity keywords, older and renamed, in each
transformers release's form (render/_hf_rebuilds.py ``Rebuild.builds_in``).

tests/render/test_real_luke_vectors.py replays vLLM's own answers for folders whose
tokenizer_config.json names the class alone. transformers 5.24 (vLLM 0.29, 0.30) renames
the ``entity_token_1`` / ``_2`` keywords ``entity_1_token`` / ``_2`` and still reads the
older ones first; here the real LUKE folders under tokenizer_config.json variants giving
them (a text, a serialised AddedToken) are loaded by transformers itself in each release's
scratch vLLM install (tests/vllm_venvs.py, as vLLM's tokenizer loads them:
``AutoTokenizer.from_pretrained(folder, truncation_side="left")``), and prefixkey must give
the same ids, or refuse. Skipped without the installs or the real folders' cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions

TEXTS = ("Hello world", "a <ent> b <ent2> c", "x<e1>y <e2> ▁<e1> ▁<ent>", "[MASK] [UNK] <s>",
         "")
_ADDED = {"__type": "AddedToken", "content": "<e1>", "lstrip": False, "rstrip": False,
          "normalized": True, "single_word": False}
#: name -> tokenizer_config.json keys beside the class.
VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "old_text": {"entity_token_1": "<e1>", "entity_token_2": "<e2>"},
    "old_default": {"entity_token_1": "<ent>"},
    "old_added": {"entity_token_1": _ADDED},
    "new_added": {"entity_1_token": _ADDED},
    "new_text": {"entity_1_token": "<e1>"},
}
#: Variants prefixkey refuses at a release (not reproduced there): 5.24's keyword keeps
#: its default for the extra list while the file's text is the model-specific token.
REFUSED: dict[str, frozenset[str]] = {"0.30.0": frozenset({"new_text"})}


def _folders(root: Path, real: str, cls: str) -> list[Path]:
    import real_models

    source = real_models.folder(real)
    made = []
    for name, keys in VARIANTS.items():
        folder = root / f"{real}-{name}"
        folder.mkdir()
        for file in ("config.json", "tokenizer.json"):
            (folder / file).symlink_to(source / file)
        (folder / "tokenizer_config.json").write_text(json.dumps(
            {"tokenizer_class": cls, **keys}), "utf-8")
        made.append(folder)
    return made


@pytest.mark.parametrize("release", ["0.30.0", "0.31.0"])
@pytest.mark.parametrize(("real", "cls"), [("luke_rule", "LukeTokenizer"),
                                           ("mluke_rule", "MLukeTokenizer")])
def test_the_entity_keywords_build_as_transformers_does(release: str, real: str, cls: str,
                                                        tmp_path: Path) -> None:
    from vllm_venvs import transformers_encodes

    folders = _folders(tmp_path, real, cls)
    expected = transformers_encodes(release, folders, TEXTS, cwd=tmp_path,
                                    test="tests/units/test_luke_entity_keywords.py")
    for folder in folders:
        answer = expected[str(folder)]
        assert not isinstance(answer, str), f"{folder.name}: transformers failed: {answer}"
        options = ServerOptions(model=str(folder), served_model_name=("m",),
                                vllm_version=release)
        if folder.name.split("-")[1] in REFUSED.get(release, ()):
            with pytest.raises(RenderUnsupportedError):
                Renderer(options)
            continue
        renderer = Renderer(options)
        got = [[renderer.tokenizer.encode(t, add_special_tokens=s) for s in (True, False)]
               for t in TEXTS]
        assert got == answer, folder.name
