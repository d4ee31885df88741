"""Replay each release's content-format detection of chat templates that alias
``messages`` through Jinja namespaces.

vLLM 0.33 follows ``namespace(rest=messages)`` and ``{% set ns.rest = messages[1:] %}``
(and names bound to ``ns.rest``) when it detects the ``auto`` content format; 0.29-0.32
do not (render/_template.py: ``ChatTemplate.detected_format`` and ``namespace_format``,
picked by ``RenderEra.content_format_aliases``). ``real_alias_bodies.jsonl``
(tools/build_real_alias_bodies.py) sends each template in the body, with text parts and
with a string; ``real_alias_vectors.jsonl`` is vLLM 0.31.0's render server's answers,
tests/render/releases/<release>/ the other releases'.
"""

from __future__ import annotations

import sys

import pytest
from render_cases import (
    RENDER_DIR,
    RenderCase,
    assert_server_replays,
    each_release_case,
    kept_vectors,
    release_table,
    render_cases,
)

from prefixkey.render._template import TemplateEnvironment

sys.path.insert(0, str(RENDER_DIR.parent.parent / "tools"))
from build_real_alias_bodies import TEMPLATES

CORPUS = "real_alias_"
CASES = render_cases(CORPUS)
RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
#: Each template's format before 0.33 and at 0.33.
FORMATS = {"ns-kwarg": ("string", "openai"), "ns-set-slice": ("string", "openai"),
           "ns-then-name": ("string", "openai"), "ns-filter": ("string", "openai"),
           "ns-no-content-loop": ("string", "string"), "name-alias": ("openai", "openai")}


@pytest.mark.parametrize("release", [r for r in RELEASES if r != "0.31.0"])
def test_the_kept_releases_answered_every_body(release: str) -> None:
    assert set(kept_vectors(release, CORPUS)) == {c.id for c in CASES}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_each_template_is_detected_as_each_release_detects_it(name: str) -> None:
    template = TemplateEnvironment().compile(TEMPLATES[name])
    assert (template.detected_format, template.namespace_format) == FORMATS[name]


def test_the_parts_bodies_tell_the_formats_apart() -> None:
    """Where the formats differ, 0.33's answer differs from 0.32's: the corpus can fail."""
    older = {c.id: c.token_ids for c in release_table(CORPUS, {"0.32.0": ()})["0.32.0"]}
    newer = {c.id: c.token_ids for c in release_table(CORPUS, {"0.33.0": ()})["0.33.0"]}
    for name, (before, after) in FORMATS.items():
        ident = f"qwen3/chat-{name}-parts"
        assert (older[ident] != newer[ident]) is (before != after), name


@each_release_case(release_table(CORPUS, {r: set() for r in RELEASES}))
def test_vllm_rendering_of_namespace_aliases_replays(release: str, case: RenderCase) -> None:
    assert_server_replays(case, release)
