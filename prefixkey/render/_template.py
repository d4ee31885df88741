"""Chat templates as transformers 5 compiles and vLLM 0.31 inspects them.

The environment is the one ``transformers.utils.chat_template_utils``
builds: sandboxed, ``trim_blocks`` and ``lstrip_blocks``, loop controls, the
``{% generation %}`` tag, its own ``tojson`` (no HTML escaping),
``raise_exception`` and ``strftime_now``, whose clock is injectable here so
that tests are stable. vLLM reads two facts from a template's syntax tree:
whether message content is iterated as a list of parts (content format
'openai', else 'string'), and which variables it uses (the only
``chat_template_kwargs`` it passes on). A compiled template is built once per
text and reused. A template is parsed and its code generated once: the generation
that compiles it also finds its undeclared variables (what ``jinja2.meta`` runs a second
generation for), and the analyses read the same tree. The code and the analyses are
also kept once per process for each text (:func:`_compiled_parts`, as transformers keeps
its compiled templates with ``lru_cache``): a second Renderer over the same template
only binds that code to its own environment.
"""

from __future__ import annotations

import io
import json
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from types import CodeType
from typing import Any, Final

import jinja2
import jinja2.compiler
import jinja2.ext
import jinja2.nodes
import jinja2.parser
import jinja2.runtime
import jinja2.sandbox

from ._template_bounds import BoundedCodeGenerator, BoundedSandbox, bound_filters

__all__ = ["ChatTemplate", "Clock", "TemplateEnvironment"]

#: What ``strftime_now`` reads: a function returning the current local time.
Clock = Callable[[], datetime]

# The parameters of transformers' PythonBackend.apply_chat_template, which vLLM passes on
# whatever the template uses (renderers/hf.py _get_hf_base_chat_template_params).
HF_BASE_PARAMS: Final = frozenset({
    "self", "conversation", "tools", "documents", "chat_template", "add_generation_prompt",
    "continue_final_message", "tokenize", "padding", "truncation", "max_length",
    "return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs",
})


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}…{% endgeneration %}``: renders its body (no assistant mask here)."""

    tags = {"generation"}  # noqa: RUF012  # jinja2's own class attribute

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_generation_support")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_support(self, caller: Callable[[], str]) -> str:
        return caller()


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


_DICT_ATTRIBUTES: Final = frozenset(dir(dict))
# The loop variable's public names, which the sandbox allows (no underscore, not a method
# of a mutable container).
_LOOP_ATTRIBUTES: Final = frozenset({
    "first", "last", "index", "index0", "revindex", "revindex0", "length", "depth", "depth0",
    "previtem", "nextitem", "cycle", "changed"})
_MISSING: Final = object()


class _TrackingCodeGenerator(jinja2.compiler.CodeGenerator):
    """Jinja's code generator, also noting the undeclared variables as
    ``jinja2.meta.find_undeclared_variables``' generator does (the same rule, in the
    generation that compiles the template)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.undeclared: set[str] = set()

    def enter_frame(self, frame: jinja2.compiler.Frame) -> None:
        super().enter_frame(frame)
        for _, (action, param) in frame.symbols.loads.items():
            if action == "resolve" and param not in self.environment.globals:
                self.undeclared.add(param)


class _BoundedTrackingCodeGenerator(_TrackingCodeGenerator, BoundedCodeGenerator):
    """The bounded generator (a request's template), noting them too."""


class _SandboxedEnvironment(jinja2.sandbox.ImmutableSandboxedEnvironment):
    """The sandbox, with the two lookups chat templates make most read directly, to the
    same values: ``message.role`` on a plain dict without the failed attribute lookup
    jinja2 tries first (a dict has no attributes but its class's, so for any other name
    jinja2 ends at the item, or undefined, anyway), and ``loop.first`` without the safety
    checks those public names pass."""

    code_generator_class = _TrackingCodeGenerator

    def getattr(self, obj: Any, attribute: str) -> Any:
        kind = type(obj)
        if kind is dict and attribute not in _DICT_ATTRIBUTES:
            value = obj.get(attribute, _MISSING)
            if value is not _MISSING:
                return value
            return self.undefined(obj=obj, name=attribute)
        if kind is jinja2.runtime.LoopContext and attribute in _LOOP_ATTRIBUTES:
            return getattr(obj, attribute)
        return super().getattr(obj, attribute)


class _BoundedEnvironment(_SandboxedEnvironment, BoundedSandbox):
    """The environment of a request's own template: the same, within
    :mod:`._template_bounds`' bounds on time and size."""

    code_generator_class = _BoundedTrackingCodeGenerator


class TemplateEnvironment:
    """transformers' chat-template environment, with ``strftime_now`` reading ``clock``.

    ``bounded``: for the templates requests carry (``trust_request_chat_template``),
    every operator, call and filter within :mod:`._template_bounds`' size bound (render
    them with :meth:`render`, which adds the time bound).
    """

    def __init__(self, clock: Clock = datetime.now, *, bounded: bool = False) -> None:
        env = (_BoundedEnvironment if bounded else _SandboxedEnvironment)(
            trim_blocks=True, lstrip_blocks=True,
            extensions=[_GenerationTag, jinja2.ext.loopcontrols])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = lambda fmt: clock().strftime(fmt)
        if bounded:
            env.filters = bound_filters(env.filters)
        self.bounded = bounded
        self.env = env
        #: Each text's template, or why it does not compile.
        self._compiled: dict[str, ChatTemplate | ChatTemplateSyntaxError] = {}

    def compile(self, source: str) -> ChatTemplate:
        """The compiled template for ``source`` (cached: a server has a handful), or
        :class:`ChatTemplateSyntaxError` (cached too)."""
        template = self._compiled.get(source)
        if template is None:
            if len(self._compiled) >= 64:  # request templates (when trusted) bound the cache
                self._compiled.clear()
            try:
                template = ChatTemplate.bind(self.env, _compiled_parts(self.bounded, source))
            except ChatTemplateSyntaxError as exc:
                # A folder's broken template fails each chat body alike: compiled once.
                template = exc
            self._compiled[source] = template
        if isinstance(template, ChatTemplateSyntaxError):
            raise ChatTemplateSyntaxError(template.message, template.kind)
        return template


@lru_cache(maxsize=2)
def _prototype(bounded: bool) -> jinja2.Environment:
    """An environment of the kind, which templates are compiled in (its clock unread)."""
    return TemplateEnvironment(bounded=bounded).env


@lru_cache(maxsize=64)
def _compiled_parts(bounded: bool, source: str) -> _Parts:
    """A template's code and analyses, once per process for each kind and text.

    Exact for every environment of the kind: the code Jinja generates (and folds
    constants into) depends on the environment's settings, extensions and the names
    of its filters, tests and globals, which every :class:`TemplateEnvironment` of one
    kind shares; the clock (``strftime_now``) and the filters are looked up in the
    rendering environment when the code is bound to it (:meth:`ChatTemplate.bind`). A
    template that does not compile raises each time (nothing is cached for it).
    """
    return _Parts.build(_prototype(bounded), source)


# ---------------------------------------------------------------- vLLM's syntax-tree reading
# vLLM 0.31 renderers/hf.py: content is 'openai' iff some loop iterates a message's content
# (or a macro parameter bound to it, or a bare ``content`` variable outside macros). From
# 0.33 on (``follow_namespaces``) the names bound to ``messages`` include namespace
# attributes (``namespace(rest=messages)``, ``{% set ns.rest = messages %}``) as dotted
# names; before, an attribute assigned from them fails the reading (vLLM's default).


def _is_var(node: jinja2.nodes.Node, name: str) -> bool:
    if isinstance(node, jinja2.nodes.Name):
        return node.ctx == "load" and node.name == name
    if isinstance(node, jinja2.nodes.Getattr) and "." in name:  # ``ns.rest``: 0.33's aliases
        base, _, attr = name.rpartition(".")
        return node.attr == attr and _is_var(node.node, base)
    return False


def _is_attr(node: jinja2.nodes.Node, name: str, key: str) -> bool:
    if isinstance(node, jinja2.nodes.Getitem):
        return (_is_var(node.node, name) and isinstance(node.arg, jinja2.nodes.Const)
                and node.arg.value == key)
    if isinstance(node, jinja2.nodes.Getattr):
        return _is_var(node.node, name) and node.attr == key
    return False


def _is_var_or_elems(node: jinja2.nodes.Node, name: str, key: str | None = None) -> bool:
    if isinstance(node, jinja2.nodes.Filter):
        return node.node is not None and _is_var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Test):
        return _is_var_or_elems(node.node, name, key)
    if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Slice):
        return _is_var_or_elems(node.node, name, key)
    return _is_attr(node, name, key) if key else _is_var(node, name)


def _dotted(node: jinja2.nodes.Node) -> str | None:
    """An attribute assignment's target (``ns.rest``) as a dotted name."""
    if isinstance(node, jinja2.nodes.NSRef):
        return f"{node.name}.{node.attr}"
    parts = []
    while isinstance(node, jinja2.nodes.Getattr):
        parts.append(node.attr)
        node = node.node
    if isinstance(node, jinja2.nodes.Name):
        return ".".join([node.name, *reversed(parts)])
    return None


def _bound(assign: jinja2.nodes.Assign, current: str, follow_namespaces: bool) -> list[str]:
    """The names one assignment binds to ``current``."""
    target, node = assign.target, assign.node
    if not follow_namespaces:
        if not _is_var_or_elems(node, current):
            return []
        if not isinstance(target, jinja2.nodes.Name):
            raise jinja2.TemplateError("unexpected assignment target")
        return [target.name]
    if isinstance(target, jinja2.nodes.Name):
        if _is_var_or_elems(node, current):
            return [target.name]
        if isinstance(node, jinja2.nodes.Call) and isinstance(node.node, jinja2.nodes.Name) \
                and node.node.name == "namespace":
            return [f"{target.name}.{k.key}" for k in node.kwargs
                    if _is_var_or_elems(k.value, current)]
        return []
    if isinstance(target, (jinja2.nodes.Getattr, jinja2.nodes.NSRef)) and \
            _is_var_or_elems(node, current):
        dotted = _dotted(target)
        return [] if dotted is None else [dotted]
    return []  # another target (a tuple): 0.33 passes it by


def _names_bound_to(root: jinja2.nodes.Template, name: str, follow_namespaces: bool
                    ) -> Iterator[str]:
    yield name
    seen = {name}
    pending = deque([name])
    while pending:
        current = pending.popleft()
        for assign in root.find_all(jinja2.nodes.Assign):
            for bound in _bound(assign, current, follow_namespaces):
                yield bound
                # 0.33 visits each name once; earlier releases each binding but a
                # self-assignment (a cycle of two names never ends there, nor here).
                if bound != current and (not follow_namespaces or bound not in seen):
                    seen.add(bound)
                    pending.append(bound)


def _message_loops(root: jinja2.nodes.Template, follow_namespaces: bool) -> Iterator[str]:
    names = list(_names_bound_to(root, "messages", follow_namespaces))
    for loop in root.find_all(jinja2.nodes.For):
        for name in names:
            if _is_var_or_elems(loop.iter, name):
                if not isinstance(loop.target, jinja2.nodes.Name):
                    raise jinja2.TemplateError("unexpected loop target")
                yield loop.target.name
                break


def _iterates_content(root: jinja2.nodes.Template, follow_namespaces: bool) -> bool:
    messages = list(_message_loops(root, follow_namespaces))
    params_by_loop: dict[int, set[str]] = {}
    loops_in_macros: set[int] = set()
    for macro in root.find_all(jinja2.nodes.Macro):
        param_names = {arg.name for arg in macro.args}
        content_params: set[str] = set()
        for call in root.find_all(jinja2.nodes.Call):
            if isinstance(call.node, jinja2.nodes.Name) and call.node.name == macro.name:
                for i, arg in enumerate(call.args):
                    if i < len(macro.args) and any(
                            _is_var_or_elems(arg, m, "content") for m in messages):
                        content_params.add(macro.args[i].name)
                for kwarg in call.kwargs:
                    if isinstance(kwarg, jinja2.nodes.Keyword) and kwarg.key in param_names \
                            and any(_is_var_or_elems(kwarg.value, m, "content")
                                    for m in messages):
                        content_params.add(kwarg.key)
        for loop in macro.find_all(jinja2.nodes.For):
            loops_in_macros.add(id(loop))
            if content_params:
                params_by_loop[id(loop)] = content_params
    for loop in root.find_all(jinja2.nodes.For):
        if any(_is_var_or_elems(loop.iter, m, "content") for m in messages):
            return True
        params = params_by_loop.get(id(loop))
        if isinstance(loop.iter, jinja2.nodes.Name) and (
                (params is not None and loop.iter.name in params)
                or (id(loop) not in loops_in_macros and loop.iter.name == "content")):
            return True
    return False


def _detected_format(tree: jinja2.nodes.Template, follow_namespaces: bool) -> str:
    """The ``auto`` content format vLLM detects from the syntax tree."""
    try:
        return "openai" if _iterates_content(tree, follow_namespaces) else "string"
    except (jinja2.TemplateError, RecursionError):
        return "string"  # vLLM logs the failure and takes the default


@dataclass(frozen=True, slots=True)
class _Parts:
    """What compiling a template yields apart from its environment: its code and
    what vLLM reads from its source (:class:`ChatTemplate`'s fields)."""

    source: str
    code: CodeType
    detected_format: str
    namespace_format: str
    variables: frozenset[str]
    bounded: bool

    @classmethod
    def build(cls, env: jinja2.Environment, source: str) -> _Parts:
        try:
            tree = env.parse(source)
            code, variables = _compiled(env, tree, source)
        except jinja2.TemplateError as exc:
            raise ChatTemplateSyntaxError(str(exc)) from None
        except (RecursionError, ValueError, SyntaxError, MemoryError, OverflowError) as exc:
            # Jinja's parser and Python's compiler of what Jinja generates have limits of
            # their own: nesting (RecursionError, "too many levels of indentation"), a
            # folded constant past 4,300 digits (ValueError). vLLM answers with the
            # exception's own text, as for Jinja's.
            raise ChatTemplateSyntaxError(str(exc), type(exc).__name__) from None
        detected, namespaces = (_detected_format(tree, follow) for follow in (False, True))
        return cls(source=source, code=code, detected_format=detected,
                   namespace_format=namespaces, variables=variables,
                   bounded=isinstance(env, BoundedSandbox))


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """One compiled chat template and what vLLM reads from its source."""

    source: str
    template: jinja2.Template
    #: 'openai' when message content is iterated as parts, else 'string'.
    detected_format: str
    #: Undeclared variables: the chat_template_kwargs names vLLM passes on.
    variables: frozenset[str]
    #: Whether the text has a quoted "developer" (else vLLM maps that role to system).
    supports_developer: bool
    #: The chat_template_kwargs names that reach it: its variables and transformers'
    #: parameters (less the template and ``tokenize``, which never are variables).
    accepted_kwargs: frozenset[str]
    #: The content format 0.33 on detect, following namespace aliases of ``messages``
    #: (RenderEra.content_format_aliases).
    namespace_format: str = "string"
    #: Whether it renders within :mod:`._template_bounds`' bounds (a request's template).
    bounded: bool = False

    @classmethod
    def bind(cls, env: jinja2.Environment, parts: _Parts) -> ChatTemplate:
        """A template compiled for an environment of ``env``'s kind, bound to ``env``
        (``env.from_string`` of its source, without compiling it again)."""
        template = bind_code(env, parts.code)
        source = parts.source
        return cls(
            source=source,
            template=template,
            detected_format=parts.detected_format,
            variables=parts.variables,
            supports_developer='"developer"' in source or "'developer'" in source,
            accepted_kwargs=(parts.variables | HF_BASE_PARAMS) - {"chat_template", "tokenize"},
            namespace_format=parts.namespace_format,
            bounded=parts.bounded,
        )


def bind_code(env: jinja2.Environment, code: CodeType) -> jinja2.Template:
    """``env.from_string(source)`` for the ``code`` an environment of ``env``'s kind
    compiled ``source`` to: the code bound to ``env``'s globals, filters and tests."""
    return env.template_class.from_code(env, code, env.make_globals(None), None)


def _compiled(env: jinja2.Environment, tree: jinja2.nodes.Template,
              source: str) -> tuple[CodeType, frozenset[str]]:
    """The code ``env.compile(tree)`` generates (no second parse) and the undeclared
    variables its code generation noted (:class:`_TrackingCodeGenerator`, the
    environments' generator)."""
    stream = io.StringIO()
    generator = env.code_generator_class(env, None, None, stream, False, env.optimized)
    assert isinstance(generator, _TrackingCodeGenerator)
    try:
        generator.visit(tree)
    except jinja2.TemplateSyntaxError as exc:
        # An error of the code generation (an unknown filter): vLLM meets it first in
        # jinja2.meta.find_undeclared_variables' generation (the chat_template_kwargs it
        # passes on), whose template is named "<introspection>" and whose error is not
        # rewritten as Environment.compile rewrites it: its text names that place.
        raise ChatTemplateSyntaxError(
            f'{exc.message}\n  File "<introspection>", line {exc.lineno}') from None
    code = compile(stream.getvalue(), "<template>", "exec")
    return code, frozenset(generator.undeclared)


class ChatTemplateSyntaxError(Exception):
    """A template that does not compile (the renderer turns it into a typed error).

    Its text is the compiler's own, as vLLM answers it; ``kind`` names a Python error
    (``"ValueError"``, ``"IndentationError"``) or is None for Jinja's."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message, kind)
        self.message = message
        self.kind = kind

    def __str__(self) -> str:
        return self.message
