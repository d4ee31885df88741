"""A content part's ``type`` that is not a string is a typed refusal, wherever it sits.

Found by the render fuzz suite (tests/fuzz/test_fuzz_render.py): a list as a part's
``type`` reached a set lookup and raised ``TypeError``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jinja2")
pytest.importorskip("tokenizers")

from prefixkey.render import Renderer, RenderRequestError, ServerOptions

MODEL = Path(__file__).resolve().parent / "models" / "gpt2_bytelevel"


@pytest.mark.parametrize("part_type", [["input_text"], {"a": 1}, 3, None])
@pytest.mark.parametrize("beside", [[], [{"type": "input_text", "text": "hi"}]])
def test_a_part_type_that_is_not_a_string_is_refused(part_type: Any,
                                                     beside: list[Any]) -> None:
    renderer = Renderer(ServerOptions(model=str(MODEL), served_model_name=("m",)))
    body = {"messages": [{"role": "user", "content": [{"type": part_type}, *beside]}]}
    with pytest.raises(RenderRequestError, match=r"^messages\[0\]\.content"):
        renderer.render_chat(body)
