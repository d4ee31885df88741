"""Every ```python snippet of README.md and docs/*.md runs as written.

A snippet runs alone, from the checkout's root (its paths are relative to it), in a
fresh namespace, with its own asserts. The one exception is a snippet that needs a
live service: its first line, ``# given: a, b``, names what the service provides, and
``LIVE`` names the test that runs it against that service (a loopback publisher, the
test Redis server, a loopback HTTP server). A snippet given nothing a service provides
is a fragment: make it runnable instead of listing it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Names only a live service provides, and what it is.
SERVICES = {
    "replicas": "vLLM replicas publishing KV events",
    "publishing_replicas": "vLLM replicas publishing KV events",
    "endpoint": "a replica's KV-event PUB endpoint",
    "redis_url": "a Redis server",
    "base_url": "a replica's OpenAI HTTP server (/v1/models)",
    "mistral_folder": "a real Mistral folder (tests/real_models.py's fetch cache)",
    "harmony_folder": "a real gpt-oss folder (tests/real_models.py's fetch cache)",
    "deepseek_folder": "a real DeepSeek-V3.2 folder (tests/real_models.py's fetch cache)",
    "deepseek_v41_image_folder": "a real DeepSeek-V4.1 stand-in folder with the image token "
                                 "(tests/real_models.py's fetch cache)",
    "VLLMReplica": "a Ray Serve deployment of vLLM replicas publishing KV events",
    "qwen_folder": "a real Qwen2-VL folder (tests/real_models.py's fetch cache)",
}

#: The pages with ``# given:`` snippets, and the test that runs them with the service.
LIVE = {
    "docs/fleet.md": "tests/end_to_end/test_fleet_doc.py",
    "docs/subscriber.md": "tests/end_to_end/test_fleet_doc.py",
    "docs/render-mistral.md": "tests/end_to_end/test_render_real_docs.py",
    "docs/render-harmony.md": "tests/end_to_end/test_render_real_docs.py",
    "docs/render-deepseek.md": "tests/end_to_end/test_render_real_docs.py",
    "docs/ray.md": "tests/gateways/test_ray.py",
    "docs/litellm.md": "tests/gateways/test_litellm_doc.py",
    "docs/multimodal.md": "tests/end_to_end/test_vision_doc.py",
}


def snippets(page: Path) -> list[str]:
    """The page's python snippets, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)


def given(snippet: str) -> list[str]:
    """The names a ``# given:`` first line asks for (none for a runnable snippet)."""
    first = snippet.splitlines()[0] if snippet else ""
    if not first.startswith("# given: "):
        return []
    listed = first[len("# given: "):].split("(")[0]  # a note in parentheses follows
    return [g.strip() for g in listed.split(",")]


CASES = [(page, number) for page in PAGES for number in range(len(snippets(page)))]


def test_there_are_snippets_to_run() -> None:
    assert len(CASES) >= 18


@pytest.mark.parametrize(("page", "number"), CASES,
                         ids=[f"{p.relative_to(ROOT)}:{n}" for p, n in CASES])
def test_the_snippet_runs(page: Path, number: int, monkeypatch: pytest.MonkeyPatch) -> None:
    snippet = snippets(page)[number]
    name = page.relative_to(ROOT).as_posix()
    names = given(snippet)
    if names:
        services = [SERVICES[n] for n in names if n in SERVICES]
        assert services, f"{name} snippet {number} is a fragment given {names}: make it runnable"
        assert name in LIVE, f"{name} snippet {number} needs {services}: list the test running it"
        runner = ROOT / LIVE[name]
        assert name.split("/")[-1] in runner.read_text(encoding="utf-8"), f"{runner} skips {name}"
        pytest.skip(f"needs {', '.join(dict.fromkeys(services))}: run by {LIVE[name]}")
    monkeypatch.chdir(ROOT)
    exec(compile(snippet, f"{page}:snippet{number}", "exec"), {"__name__": "__snippet__"})


def test_every_live_page_has_a_live_snippet() -> None:
    for name in LIVE:
        assert any(given(s) for s in snippets(ROOT / name)), f"{name} needs no service now"
