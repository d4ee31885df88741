"""DeepSeek-V4/V4.1 prompt strings against vLLM's own encoders, release by release.

tests/render/releases/<release>/deepseek_prompts.jsonl holds what each release's
renderer and encoder made of tests/render/deepseek_prompt_bodies.jsonl
(tools/harvest_deepseek_prompts.py): the prompt string, or the error with its status.
prefixkey's encoders (render/_deepseek_v4.py, _deepseek_v41.py) must give the same
string, or refuse with the same status and message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prefixkey.render._deepseek_v4 import render_prompt as render_v4
from prefixkey.render._deepseek_v41 import render_prompt as render_v41
from prefixkey.render._errors import RenderRequestError

HERE = Path(__file__).parent
BODIES = {row["id"]: row for row in map(json.loads, (HERE / "deepseek_prompt_bodies.jsonl")
                                        .read_text(encoding="utf-8").splitlines())}
RELEASES = sorted(p.parent.name for p in (HERE / "releases").glob("*/deepseek_prompts.jsonl"))


def _cases() -> list[Any]:
    cases = []
    for release in RELEASES:
        path = HERE / "releases" / release / "deepseek_prompts.jsonl"
        for line in path.read_text(encoding="utf-8").splitlines():
            got = json.loads(line)
            if got.get("absent") or "validation_error" in got:
                continue
            cases.append(pytest.param(release, got, id=f"{release}/{got['id']}"))
    return cases


def _render(release: str, got: dict[str, Any]) -> str:
    body = BODIES[got["id"]]
    args = (got.get("tools"), body["chat_template_kwargs"], body["reasoning_effort"])
    if body["mode"] == "deepseek_v4":
        return render_v4(got["conversation"], *args, release=release)
    return render_v41(got["request_messages"], *args, release=release)


@pytest.mark.parametrize(("release", "got"), _cases())
def test_prompt_matches_vllm(release: str, got: dict[str, Any]) -> None:
    if "error" not in got:
        assert _render(release, got) == got["prompt"]
        return
    with pytest.raises(RenderRequestError) as info:
        _render(release, got)
    want = got["error"]
    assert info.value.status == want["status"]
    if want["message"].startswith("Invalid task:"):
        # vLLM lists the task names from a set, in an order that changes per process.
        head = "Valid tasks are: "
        assert info.value.reason.split(head)[0] == want["message"].split(head)[0]
        assert (sorted(json.loads(info.value.reason.split(head)[1].replace("'", '"')))
                == sorted(json.loads(want["message"].split(head)[1].replace("'", '"'))))
    else:
        assert info.value.reason == want["message"]


def test_every_release_harvested() -> None:
    assert RELEASES == ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"]
