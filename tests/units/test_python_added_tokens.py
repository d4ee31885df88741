"""Added tokens of a Python word-piece tokenizer class, as vLLM's own ``get_tokenizer``
builds them (render/_python_tokenizer.py ``PythonTokenizer.with_added``).

Two ways tokens reach such a class: transformers' legacy ``added_tokens.json`` (read only
without an ``added_tokens_decoder``: from_pretrained hands the file's tokens to the class at
their ids, named tokens following the file), and a sentence-transformers ``do_lower_case``,
for which vLLM adds the named tokens lowercased through the class's ``_add_tokens``. Real
folders (RoCBertTokenizer, BertJapaneseTokenizer word and character, ProphetNetTokenizer
over bert-base-uncased's vocabulary: tests/render/real/) get each file, and both, and
PerceiverTokenizer's and CanineTokenizer's folders (tests/render/python_models/) the legacy
file; each release's scratch vLLM install (tests/vllm_venvs.py) builds their tokenizer with
its ``get_tokenizer`` and encodes the texts with and without the special tokens: prefixkey
must give the same ids. tests/render/test_real_pyadded_vectors.py replays vLLM's render
server over two of them. Skipped without the installs or the real folders' cache.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from prefixkey.render import Renderer, RenderUnsupportedError, ServerOptions

TEXTS = ("<new_plain> a hello Hello HELLO othello [MASK] [mask] [CLS] [cls] [SEP] [sep] \u0100 "
         "<gap> zzqqxj [UNK] [unk] [PAD] [pad] [X_SEP] [x_sep]",
         "x<new_plain>y[CLS]z[cls]hello_othello[sep][SEP]<gap>", "Hello World", "",
         # Cleaned into a token's text after the split: a special one is never split.
         "F\x00oo [C\x00LS] [c\x00ls] hel\x00lo HEL\x00LO <new\x00_plain>")
#: The legacy file: a new token, a vocabulary word at a new id, named tokens at new ids
#: and at their own, a gap in the ids.
#: (ProphetNet adds its [X_SEP], which bert-base-uncased's vocabulary lacks, at 30524: the
#: file leaves that id free, see the refusal below.)
ADDED = {"<new_plain>": 30522, "hello": 30523, "[MASK]": 30525, "[CLS]": 30526,
         "[SEP]": 102, "<gap>": 40000}
REALS = ("roc_bert_rule", "bert_japanese_rule", "bert_japanese_char_rule", "prophetnet_named")
#: What each variant puts beside the real folder's files.
VARIANTS = {
    "added": {"added_tokens.json": ADDED},
    "lower": {"sentence_bert_config.json": {"max_seq_length": 512, "do_lower_case": True}},
    "both": {"added_tokens.json": ADDED,
             "sentence_bert_config.json": {"max_seq_length": 512, "do_lower_case": True}},
}
#: vLLM's own tokenizer for each folder, each text's ids with and without the specials.
_ENCODE = """
import json, sys
from vllm.tokenizers import get_tokenizer
out = {}
for folder in sys.argv[2:]:
    try:
        tok = get_tokenizer(folder)
    except Exception as exc:
        out[folder] = repr(exc)
        continue
    out[folder] = [[tok(t, add_special_tokens=s).input_ids for s in (True, False)]
                   for t in json.loads(sys.argv[1])]
print(json.dumps(out))
"""


#: Byte and code point classes (tests/render/python_models/): the file alone.
CODECS = ("perceiver", "canine")
#: Their file: a new token, a word, a named token at a new id, a gap, a character beyond
#: the bytes.
CODEC_ADDED = {"<new_plain>": 400, "hello": 401, "[CLS]": 402, "<gap>": 5000, "\u0100": 403}
PYTHON_MODELS = Path(__file__).parents[1] / "render" / "python_models"


def _folder(root: Path, real: str, variant: str) -> Path:
    import real_models

    folder = root / f"{real}-{variant}"
    if real in CODECS:
        shutil.copytree(PYTHON_MODELS / real, folder)
        (folder / "added_tokens.json").write_text(json.dumps(CODEC_ADDED), "utf-8")
        return folder
    shutil.copytree(real_models.folder(real), folder, ignore=shutil.ignore_patterns(".*"))
    for name, value in VARIANTS[variant].items():
        (folder / name).write_text(json.dumps(value), "utf-8")
    return folder


@pytest.mark.parametrize("release", ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_added_tokens_build_as_vllm_does(release: str, tmp_path: Path) -> None:
    from vllm_venvs import vllm_command

    python, env = vllm_command(release, test="tests/units/test_python_added_tokens.py")
    folders = [*(_folder(tmp_path, real, variant) for real in REALS for variant in VARIANTS),
               *(_folder(tmp_path, codec, "added") for codec in CODECS)]
    done = subprocess.run([str(python), "-c", _ENCODE, json.dumps(TEXTS), *map(str, folders)],
                          capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    expected = json.loads(done.stdout.splitlines()[-1])
    for folder in folders:
        answer = expected[str(folder)]
        assert isinstance(answer, list), (folder.name, answer)
        tokenizer = Renderer(ServerOptions(model=str(folder), served_model_name=("m",),
                                           vllm_version=release)).tokenizer
        got = [[tokenizer.encode(t, add_special_tokens=s) for s in (True, False)]
               for t in TEXTS]
        assert got == answer, folder.name


def test_the_file_changes_the_ids(tmp_path: Path) -> None:
    """The file's named tokens move the ids the class adds around a text."""
    import real_models

    plain = Renderer(ServerOptions(model=str(real_models.folder("roc_bert_rule"))))
    added = Renderer(ServerOptions(model=str(_folder(tmp_path, "roc_bert_rule", "added"))))
    assert added.tokenizer.encode("hello", add_special_tokens=True) == [30526, 30523, 102]
    assert plain.tokenizer.encode("hello", add_special_tokens=True) != [30526, 30523, 102]



def test_the_file_beside_another_python_class_is_refused(tmp_path: Path) -> None:
    """ByT5Tokenizer (bytes) keeps the file's ids its own way: not verified, refused."""
    folder = tmp_path / "byt5"
    shutil.copytree(Path(__file__).parents[1] / "render" / "python_models" / "byt5", folder)
    (folder / "added_tokens.json").write_text(json.dumps(ADDED), "utf-8")
    with pytest.raises(RenderUnsupportedError, match="Python class ByT5Tokenizer at their ids: "
                       "reproduced for the word-piece classes") as info:
        Renderer(ServerOptions(model=str(folder)))
    assert info.value.field == "added_tokens.json"


def test_a_named_token_added_at_an_id_the_file_gives_is_refused(tmp_path: Path) -> None:
    """ProphetNet's [X_SEP] (not in the vocabulary) takes the next id after get_vocab(),
    the file's tokens counted: 30524, which this file gives [MASK]. transformers then
    replaces [MASK] in added_tokens_decoder before its trie is built (vLLM's ids split
    "[MASK]" as text): not reproduced."""
    folder = _folder(tmp_path, "prophetnet_named", "added")
    (folder / "added_tokens.json").write_text(json.dumps(ADDED | {"[MASK]": 30524}), "utf-8")
    with pytest.raises(RenderUnsupportedError, match=r"x_sep_token '\[X_SEP\]' .* at id 30524"):
        Renderer(ServerOptions(model=str(folder)))


@pytest.mark.parametrize(("added", "why"), [
    ({"<new>": 2}, r"'<new>' at id 2, which is PerceiverTokenizer's own '\[EOS\]'"),
    ({"\u00e9": 400}, "one-character token PerceiverTokenizer's byte pieces can equal"),
])
def test_a_file_token_a_byte_class_reads_otherwise_is_refused(
        tmp_path: Path, added: dict[str, int], why: str) -> None:
    folder = _folder(tmp_path, "perceiver", "added")
    (folder / "added_tokens.json").write_text(json.dumps(added), "utf-8")
    with pytest.raises(RenderUnsupportedError, match=why):
        Renderer(ServerOptions(model=str(folder)))
