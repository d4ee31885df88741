"""vLLM's start-up probe of the chat templates: the one template failure that stops its server.

vLLM's render server (and ``vllm serve``) builds ``ServingRender`` at start, which asks
``AnthropicServingMessages`` whether a template needs inline system messages merged
into the leading one (``_detect_merge_inline_system``, entrypoints/anthropic/serving.py):
it compiles the template in a plain sandbox (``ImmutableSandboxedEnvironment`` with
``trim_blocks``, ``lstrip_blocks`` and loop controls; none of transformers' globals,
filters or its ``{% generation %}`` tag) and renders :data:`PROBE_MESSAGES` with
``add_generation_prompt=False`` and nothing else. A ``jinja2.TemplateError`` (a syntax
error, an unknown filter, ``raise_exception``, which is undefined there) is the answer
"merge" and the server starts; any other exception (a ``ZeroDivisionError`` on four
messages, a constant folded past Python's 4,300 digits, nesting past Python's limits)
escapes the constructor and the server does not start.

Which templates it probes differs by release (the era's ``startup_probe``,
render/_eras.py): ``server`` (0.29, 0.30: ``--chat-template``'s text only, the folder's
never) or ``resolved`` (0.31 on, ``_should_merge_inline_system``: the template a chat
body without tools resolves to, then, only if that one rendered, the one a body with
tools resolves to, e.g. a folder's ``tool_use``; ``--chat-template``'s text alone for a
non-HF renderer, mistral mode: real_tpl_mistral_vectors.jsonl, every release). The chat
renderer's own start-up warm-up renders with every exception caught (a warning), so it
stops nothing. Everything else about a broken template is per body: vLLM compiles it on
use (render/_renderer.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from types import CodeType
from typing import Final

import jinja2
import jinja2.ext
import jinja2.sandbox

from ._errors import ModelFolderError
from ._template import bind_code

__all__ = ["PROBE_MESSAGES", "check_startup_probe"]

#: The conversation the probe renders (``add_generation_prompt=False``, no other variable).
PROBE_MESSAGES: Final = ({"role": "system", "content": "t"}, {"role": "user", "content": "t"},
                         {"role": "system", "content": "t"}, {"role": "user", "content": "t"})


def _environment() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    """The probe's environment (a new one each time, as vLLM makes)."""
    return jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])


@lru_cache(maxsize=64)
def _code(source: str) -> CodeType:
    """The code the probe's environment compiles ``source`` to, once per process for each
    text (a Renderer built again over the same template compiles it no more). Exact: every
    probe environment has the same settings, filters and globals, which are all the
    compilation reads; the code is bound to a new environment each time, and a text that
    does not compile raises each time (nothing is kept for it)."""
    return _environment().compile(source)


def _probe(source: str) -> bool | Exception:
    """What vLLM's probe makes of ``source``: True (it rendered), False (a Jinja error:
    the answer "merge"), or the exception that stops the server."""
    env = _environment()
    try:
        # env.from_string(source), its compilation kept for the process (_code).
        bind_code(env, _code(source)).render(
            messages=[dict(m) for m in PROBE_MESSAGES], add_generation_prompt=False)
    except jinja2.TemplateError:
        return False
    except Exception as exc:  # what vLLM lets escape: its server does not start
        return exc
    return True


def check_startup_probe(release: str, probed: Iterable[tuple[str, Callable[[], str | None]]]
                        ) -> None:
    """Refuse a configuration whose templates stop ``release``'s server at its probe.

    ``probed``: in the probe's order, what each template is (for the message) and how
    to resolve it (None: no template, which the probe answers "merge" without
    rendering). As vLLM's ``any()``, the probe stops at the first template that did not
    render; an exception other than Jinja's is a :class:`ModelFolderError`.
    """
    outcomes: dict[str, bool | Exception] = {}
    for what, resolve in probed:
        source = resolve()
        if not source:
            return
        # A folder's one template is what both resolve to: rendered once (the same answer).
        outcome = outcomes.get(source)
        if outcome is None:
            outcome = outcomes[source] = _probe(source)
        if isinstance(outcome, Exception):
            raise ModelFolderError("chat_template", (
                f"vLLM {release} does not start: its start-up probe renders {what} with "
                f"[system, user, system, user] messages, which raised "
                f"{type(outcome).__name__}: {str(outcome)[:300]}"))
        if not outcome:
            return  # a Jinja error: the probe's answer is "merge", and it stops there
