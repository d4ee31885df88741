"""A chat template is parsed and its code generated once (render/_template.py).

The generation that compiles a template also notes its undeclared variables (the
``chat_template_kwargs`` names vLLM passes on); the independent path here is jinja2's
own ``meta.find_undeclared_variables`` over a second parse, and jinja2's
``from_string`` for the rendered text, over every chat template committed under
tests/render, in both environments (a folder's, and the bounded one of a request's
template). A folder template that does not compile fails each chat body as vLLM's
does, unless vLLM's start-up probe stops the server (render/_startup_probe.py). The code
and analyses are kept once per process for each text and environment kind; every
environment binds them to itself (its own clock, its own bounds).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import pytest
from render_folders import build_folder

from prefixkey.render import ModelFolderError, Renderer, RenderRequestError, ServerOptions
from prefixkey.render._template import TemplateEnvironment
from prefixkey.render._template_bounds import (
    REQUEST_TEMPLATE_MAX_CHARS,
    TemplateLimitError,
    render_bounded,
)

RENDER = Path(__file__).resolve().parents[1] / "render"
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]


def _templates(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for item in value if isinstance(item, dict) for t in
                _templates(item.get("template"))]
    return []


def committed_templates() -> list[str]:
    found: list[str] = []
    for path in sorted(RENDER.rglob("tokenizer_config.json")):
        found += _templates(json.loads(path.read_text("utf-8")).get("chat_template"))
    # tests/render/templates/ holds broken --chat-template files (real_tpl_ corpus).
    found += [path.read_text("utf-8") for path in sorted(RENDER.rglob("*.jinja"))
              if path.parent.name != "templates"]
    return list(dict.fromkeys(found))


TEMPLATES = [
    *committed_templates(),
    "{% set x = 1 %}{% macro m(a) %}{{ a ~ b }}{% endmacro %}{{ m(x) }}{{ c | default(d) }}",
    "{% for m in messages %}{% set ns = namespace(k=m) %}{{ ns.k[key] }}{% endfor %}",
    "{% if tools %}{% for t in tools %}{{ t | tojson }}{% endfor %}{% endif %}{{ raise_exception"
    "('x') if bad }}{{ strftime_now('%Y') if date is defined }}",
]


def test_the_committed_templates_are_read() -> None:
    assert len(TEMPLATES) > 20


@pytest.mark.parametrize("bounded", [False, True])
@pytest.mark.parametrize("source", TEMPLATES, ids=range(len(TEMPLATES)))
def test_one_generation_gives_what_jinja2s_two_passes_give(source: str, bounded: bool) -> None:
    environment = TemplateEnvironment(bounded=bounded)
    compiled = environment.compile(source)
    assert compiled.variables == jinja2.meta.find_undeclared_variables(
        environment.env.parse(source))

    def rendered(template: jinja2.Template) -> str:
        try:
            return template.render(messages=MESSAGES, add_generation_prompt=True,
                                   bos_token="<s>", eos_token="</s>")
        except jinja2.TemplateError as exc:  # a template's own refusal, compared too
            return f"{type(exc).__name__}: {exc}"

    assert rendered(compiled.template) == rendered(environment.env.from_string(source))


#: A folder template that does not compile, and whether vLLM's start-up probe (0.31 on:
#: the folder's template; render/_startup_probe.py) stops the server: Jinja's own errors
#: never do, Python's compiler's do.
BROKEN = [
    ("{% if %}x{% endif %}", False),  # a parse error
    ("{{ messages | no_such_filter }}", False),  # an error of the code generation
    ("{{ 10 ** 5000 }}", True),  # folded into a literal past Python's 4,300 digits
]


@pytest.mark.parametrize("release", ["0.30.0", "0.31.0"])
@pytest.mark.parametrize(("source", "stops"), BROKEN)
def test_a_folder_template_that_does_not_compile_fails_as_vllm_does(
        tmp_path: Path, source: str, stops: bool, release: str) -> None:
    folder = build_folder(tmp_path, "generic", chat_template=source)
    options = ServerOptions(model=str(folder), vllm_version=release)
    env = jinja2.Environment()
    try:
        # vLLM's order: jinja2.meta's variables (the kwargs it passes on), then compiling.
        jinja2.meta.find_undeclared_variables(env.parse(source))
        env.from_string(source)
    except (jinja2.TemplateError, ValueError) as exc:
        message = str(exc)  # jinja2's (or Python's) own message, as vLLM answers it
    else:
        pytest.fail("jinja2 compiles it")
    if stops and release != "0.30.0":  # 0.29/0.30 probe --chat-template's only
        with pytest.raises(ModelFolderError, match="does not start") as refused:
            Renderer(options)
        assert refused.value.field == "chat_template"
        assert message[:100] in str(refused.value)
        return
    renderer = Renderer(options)  # vLLM starts, and renders completions
    assert list(renderer.render_completion({"prompt": "Hi"})[0].token_ids)
    with pytest.raises(RenderRequestError) as info:
        renderer.render_chat({"messages": MESSAGES})
    assert (info.value.field, info.value.status, info.value.reason) == (
        "chat_template", 400, message)


#: Templates and the release range whose start-up probe they stop, as vLLM 0.31's own
#: ``AnthropicServingMessages._detect_merge_inline_system`` answered them (a TypeError:
#: jinja2's tojson of ``tools``, undefined there; a ZeroDivisionError on its four
#: messages); Jinja's errors (``raise_exception`` is undefined there) never stop it.
PROBED = [
    ("{{ tools | tojson }}", True),
    ("{{ 1 // (messages | length - 4) }}", True),
    ("{{ raise_exception('no') }}", False),
    ("{% if tools %}{{ tools | tojson }}{% endif %}", False),
    ("{% generation %}{{ messages[0].content }}{% endgeneration %}", False),
]


@pytest.mark.parametrize(("source", "stops"), PROBED)
def test_the_start_up_probe_stops_on_a_python_error_only(tmp_path: Path, source: str,
                                                         stops: bool) -> None:
    folder = build_folder(tmp_path, "generic", chat_template=source)
    for release in ("0.29.0", "0.31.0", "0.33.0"):
        options = ServerOptions(model=str(folder), vllm_version=release)
        if stops and release != "0.29.0":
            with pytest.raises(ModelFolderError, match=f"vLLM {release} does not start"):
                Renderer(options)
        else:
            assert list(Renderer(options).render_completion({"prompt": "Hi"})[0].token_ids)
    # 0.29/0.30 probe --chat-template's text: the same template given so stops them all.
    given = tmp_path / "given.jinja"
    given.write_text(source, "utf-8")
    options = ServerOptions(model=str(folder), vllm_version="0.29.0",
                            chat_template=str(given))
    if stops:
        with pytest.raises(ModelFolderError, match="--chat-template's template"):
            Renderer(options)
    else:
        Renderer(options)


def test_environments_share_a_templates_code_but_render_with_their_own_clock() -> None:
    source = "{{ strftime_now('%Y-%m-%d') }} {{ messages | length }}"
    first = TemplateEnvironment(lambda: datetime(2024, 1, 2)).compile(source)
    second = TemplateEnvironment(lambda: datetime(2031, 5, 6)).compile(source)
    assert first.template is not second.template
    assert first.template.render(messages=MESSAGES) == "2024-01-02 4"
    assert second.template.render(messages=MESSAGES) == "2031-05-06 4"
    assert (first.variables, first.detected_format) == (second.variables,
                                                        second.detected_format)


@pytest.mark.parametrize("bounded_first", [False, True])
def test_one_text_compiles_apart_for_a_request_and_for_a_folder(bounded_first: bool) -> None:
    # The same text, past the request bound: bounded as a request's template only,
    # whichever kind compiled it first in this process.
    source = f"{{{{ 'x' * {REQUEST_TEMPLATE_MAX_CHARS + int(bounded_first) + 1} }}}}"
    kinds = [True, False] if bounded_first else [False, True]
    compiled = {bounded: TemplateEnvironment(bounded=bounded).compile(source)
                for bounded in kinds}
    assert compiled[True].bounded and not compiled[False].bounded
    with pytest.raises(TemplateLimitError):
        render_bounded(compiled[True].template.generate)
    assert len(compiled[False].template.render()) > REQUEST_TEMPLATE_MAX_CHARS


def test_a_template_that_does_not_compile_fails_each_time() -> None:
    for environment in (TemplateEnvironment(), TemplateEnvironment()):
        with pytest.raises(Exception, match="no_such_filter"):
            environment.compile("{{ messages | no_such_filter }}")


@pytest.mark.parametrize("source", [s for s, stops in [*BROKEN, *PROBED] if stops])
def test_a_probe_that_stops_the_server_stops_each_build(tmp_path: Path, source: str) -> None:
    # The probe's compiled code is kept for the process; its failures and its rendering
    # are not: each build over the folder is refused alike.
    folder = build_folder(tmp_path, "generic", chat_template=source)
    messages = set()
    for _ in range(2):
        with pytest.raises(ModelFolderError, match="does not start") as refused:
            Renderer(ServerOptions(model=str(folder), vllm_version="0.31.0"))
        messages.add(str(refused.value))
    assert len(messages) == 1
