"""render/_hf_tiktoken.py ``tiktoken_ranks``: the fast read of a tiktoken file (one dict
comprehension) gives what the line-by-line ``base64.b64decode`` read gives, and a bad
line is refused naming its number (the line-by-line read, done again only then)."""

from __future__ import annotations

import base64

import pytest

from prefixkey.render._errors import ModelFolderError
from prefixkey.render._hf_tiktoken import tiktoken_ranks


def _line_by_line(data: bytes) -> dict[bytes, int]:
    """tiktoken's ``load_tiktoken_bpe`` as written: each non-empty line decoded in turn."""
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


GOOD = [
    b"IQ== 0\nIg== 1\n",
    b"IQ== 0\n\nIg== 1\r\nIw== 2",  # blank lines skipped, CRLF, no final newline
    b"IQ== 0\nIQ== 5\n",  # a repeated token: the later rank wins
    b"  IQ==\t7  \n",  # any ASCII whitespace around the two fields
]


@pytest.mark.parametrize("data", GOOD)
def test_the_fast_read_is_the_line_by_line_read(data: bytes) -> None:
    assert tiktoken_ranks(data, "tokenizer.model") == _line_by_line(data)
    assert list(tiktoken_ranks(data, "tokenizer.model")) == list(_line_by_line(data))


BAD = [
    (b"IQ== 0\nIg==\n", 2),  # no rank
    (b"IQ== 0\n\nIg== 1 2\n", 3),  # three fields (the blank line still counted)
    (b"IQ== x\n", 1),  # a rank that is no integer
    (b"IQ== 0\nI 1\n", 2),  # a token that is no base64
    (b"IQ 0\n", 1),  # unpadded: b64decode refuses it too
]


@pytest.mark.parametrize(("data", "number"), BAD)
def test_a_bad_line_is_refused_naming_it(data: bytes, number: int) -> None:
    with pytest.raises(ModelFolderError, match=f"line {number} is not a base64 token") as info:
        tiktoken_ranks(data, "tokenizer.model")
    assert "tokenizer.model" in str(info.value)
