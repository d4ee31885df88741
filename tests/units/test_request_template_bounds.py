"""A request's own chat template renders within bounds on time and size (issue 23, item 9).

With ``trust_request_chat_template`` vLLM renders whatever template a request
carries: nested ``range(100000)`` loops ran for minutes, ``'a' * 10**10`` took
8 GB. prefixkey bounds a request's template (a documented divergence: vLLM has
no bound) and answers a typed error on ``chat_template``; the folder's and the
server's templates render as vLLM renders them. Nothing here is timed: a loop
bounded only by the clock fails at the clock, whenever that is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from render_folders import build_folder

from prefixkey.render import Renderer, RenderRequestError, ServerOptions
from prefixkey.render._template import TemplateEnvironment
from prefixkey.render._template_bounds import REQUEST_TEMPLATE_MAX_CHARS, render_bounded

USER = {"role": "user", "content": "Hello, world!"}


@pytest.fixture(scope="module")
def trusted(tmp_path_factory: pytest.TempPathFactory) -> Renderer:
    folder = build_folder(tmp_path_factory.mktemp("models"), "generic")
    return Renderer(ServerOptions(model=str(folder), trust_request_chat_template=True))


HOSTILE = {
    "nested ranges": "{% for i in range(100000) %}{% for j in range(100000) %}"
                     "{% endfor %}{% endfor %}",
    "str times": "{{ 'a' * 10**10 }}",
    "list times": "{{ ([0] * 10**10) | length }}",
    "int power": "{% set x = 7 ** 1000000000 %}",
    "doubling by ~": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
                     "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
    "doubling by +": "{% set ns = namespace(s='ab') %}{% for i in range(64) %}"
                     "{% set ns.s = ns.s + ns.s %}{% endfor %}",
    "center filter": "{{ 'x' | center(10**10) }}",
    "str method width": "{{ 'x'.ljust(10**10) }}",
    "replace growth": "{% set ns = namespace(s='a') %}{% for i in range(40) %}"
                      "{% set ns.s = ns.s.replace('a', 'aaaa') %}{% endfor %}",
    "replace filter growth": "{% set ns = namespace(s='a') %}{% for i in range(40) %}"
                             "{% set ns.s = ns.s | replace('a', 'aaaa') %}{% endfor %}",
    "format width": "{{ '{:>10000000000}'.format(1) }}",
    "percent width": "{{ '%10000000000d' % 1 }}",
    "output": "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
}


@pytest.mark.parametrize("source", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_request_template_fails_typed(trusted: Renderer, source: str) -> None:
    with pytest.raises(RenderRequestError, match="vLLM has none") as info:
        trusted.render_chat({"messages": [USER], "chat_template": source})
    assert info.value.field == "chat_template"


def test_bounds_leave_ordinary_request_templates_alone(trusted: Renderer) -> None:
    source = ("{% for m in messages %}{{ '<|' + m.role + '|>' ~ m.content | trim }}"
              "{{ '%s!' % m.role }}{{ 'ab' * 3 }}{{ 2 ** 10 }}{{ '-'.join(['a', 'b']) }}"
              "{{ m.content | replace('world', 'there') | center(20) }}{% endfor %}")
    rendered = trusted.render_chat({"messages": [USER], "chat_template": source})
    assert rendered.prompt == ("<|user|>Hello, world!user!ababab1024a-b"
                               + "Hello, there!".center(20))
    env = TemplateEnvironment(bounded=True)  # at the bound, not past it
    big = env.compile(f"{{{{ 'x' * {REQUEST_TEMPLATE_MAX_CHARS} }}}}").template
    assert len(render_bounded(big.generate)) == REQUEST_TEMPLATE_MAX_CHARS


def test_the_folders_template_is_not_bounded(tmp_path: Path) -> None:
    # The model's own template renders as vLLM renders it, even past the request bound:
    # the prompt is built whole, then found longer than the model's context, as in vLLM.
    folder = build_folder(tmp_path, "generic",
                          chat_template=f"{{{{ 'x' * {REQUEST_TEMPLATE_MAX_CHARS + 1} }}}}")
    with pytest.raises(RenderRequestError, match=f"contains {REQUEST_TEMPLATE_MAX_CHARS + 1} "
                       "characters") as info:
        Renderer(ServerOptions(model=str(folder))).render_chat({"messages": [USER]})
    assert info.value.field == "input_text"
