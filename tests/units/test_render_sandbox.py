"""The render environment's direct attribute reads give what jinja2's own sandbox gives.

prefixkey.render reads ``message.role`` on dicts and ``loop.first`` without the
generic sandbox lookup (a speed-up on every request); the independent path here
is jinja2's ``ImmutableSandboxedEnvironment`` with the same options, rendering
the same template on the same values, including missing keys, dict method
names, keys named like dict methods and attributes the sandbox must refuse.
"""

from __future__ import annotations

from typing import Any

import jinja2
import jinja2.exceptions
import jinja2.ext
import jinja2.sandbox
import pytest

from prefixkey.render._template import TemplateEnvironment

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Hi"}], "items": "a key"},
    {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]},
]

TEMPLATES = [
    "{% for m in messages %}{{ m.role }}:{{ m.content }}|{{ m.missing is defined }}"
    "{{ m.tool_calls[0].function.name if m.tool_calls else '' }}{% endfor %}",
    "{% for m in messages %}{{ m.items is callable }}{{ m['items'] is defined }}"
    "{{ m.get('role') }}{{ m.keys() | list | length }}{% endfor %}",
    "{% for m in messages %}{{ loop.first }}{{ loop.last }}{{ loop.index }}{{ loop.index0 }}"
    "{{ loop.revindex }}{{ loop.length }}{{ loop.cycle('a', 'b') }}"
    "{{ loop.previtem.role if loop.previtem is defined else '-' }}"
    "{{ loop.changed(m.role) }}{% endfor %}",
    "{{ messages[0].__class__ is defined }}{{ messages[0].copy is defined }}",
]


def reference() -> jinja2.Environment:
    return jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])


@pytest.mark.parametrize("source", TEMPLATES)
def test_direct_reads_render_as_the_sandbox_does(source: str) -> None:
    ours = TemplateEnvironment().compile(source).template
    expected = reference().from_string(source).render(messages=MESSAGES)
    assert ours.render(messages=MESSAGES) == expected


@pytest.mark.parametrize("source", [
    "{{ messages[0].__class__.__mro__ }}",
    "{{ messages[0].update({'role': 'x'}) }}",
    "{% for m in messages %}{{ loop.__class__.__init__.__globals__ }}{% endfor %}",
])
def test_what_the_sandbox_refuses_is_still_refused(source: str) -> None:
    with pytest.raises(jinja2.exceptions.SecurityError):
        reference().from_string(source).render(messages=MESSAGES)
    with pytest.raises(jinja2.exceptions.SecurityError):
        TemplateEnvironment().compile(source).template.render(messages=MESSAGES)
