"""Fuzz rendering: chat bodies, tool schemas, request templates, image URLs (issue 23).

Four generators, each rendering through the in-process ``Renderer`` as
``prefixkey render`` does:

* ``render/chat_bodies``: the render corpus' chat bodies (tests/render/bodies.jsonl),
  mutated in their JSON structure and bytes;
* ``render/tool_schemas``: bodies whose tools carry generated JSON schemas (deep,
  wide, hostile values) and whose assistant tool calls carry generated
  ``arguments`` strings (deep nesting, long integers, broken JSON);
* ``render/templates``: request templates (trusted) generated from a small Jinja
  grammar (loops over ranges, namespaces, operators on large numbers, filters,
  macros, deep parentheses), rendered within prefixkey's request-template bounds;
* ``render/media_urls``: image parts of a BLIP-2 folder whose URLs are generated
  (data URLs of mutated fixture images, ``file://`` paths in and out of the
  allowed folder with escapes, http(s) URLs with odd hosts and ports).

An input passes when it renders or fails with a ``PrefixKeyError``, within the
harness's time and memory bounds, and what it renders is strict JSON.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import pytest
from fuzzing import Fuzz, batches, mutate_bytes, mutate_json, strict_json

from prefixkey.jsonl import JSON_LIMITS, JsonLimits, parse_json_line
from prefixkey.render import Renderer, ServerOptions
from prefixkey.render import _template_bounds as bounds

pytestmark = pytest.mark.fuzz

TESTS = Path(__file__).resolve().parents[1]
MODEL = TESTS / "render" / "models" / "gpt2_bytelevel"
BLIP2 = TESTS / "multimodal" / "models" / "blip2_tiny"
IMAGES = TESTS / "multimodal" / "images"
BODIES = [json.loads(line)["body"] for line in
          (TESTS / "render" / "bodies.jsonl").read_text(encoding="utf-8").splitlines()
          if json.loads(line)["endpoint"] == "/v1/chat/completions"
          and json.loads(line)["model_dir"] == "models/gpt2_bytelevel"]
CORPUS = [json.dumps(body).encode() for body in BODIES]
IMAGE_BYTES = [p.read_bytes() for p in sorted(IMAGES.iterdir()) if p.is_file()]


@pytest.fixture(autouse=True)
def _template_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    # Within the harness's 2 s per input: a template looping forever fails at 1 s.
    monkeypatch.setattr(bounds, "REQUEST_TEMPLATE_SECONDS", 1.0)


def _renderer() -> Renderer:
    return Renderer(ServerOptions(
        model=str(MODEL), served_model_name=("gpt2-chatml",),
        trust_request_chat_template=True, enable_auto_tool_choice=True,
        tool_call_parser="hermes"))


def _rendered(renderer: Renderer, body: Any) -> Any:
    rendered = renderer.render_chat(body)
    return {"prompt": rendered.prompt, "token_ids": list(rendered.token_ids),
            "warnings": list(rendered.warnings)}


# ------------------------------------------------------------------------------ bodies


def test_mutated_chat_bodies() -> None:
    renderer = _renderer()
    fuzz = Fuzz("render/chat_bodies", lambda data: strict_json(
        _rendered(renderer, parse_json_line(data))))
    if not fuzz.replaying():
        fuzz.run(batches(fuzz.rng, lambda rng: mutate_json(rng, rng.choice(BODIES), CORPUS)))
    fuzz.finish()


# ------------------------------------------------------------------------ tool schemas

_LEAVES: list[Any] = [None, True, 0, -1, 2**63, 10**30, 1.5, "", "x" * 50, "\u00e9\U0001f600",
                      [], {}]


def _schema(rng: random.Random, depth: int) -> Any:
    if depth <= 0 or rng.random() < 0.15:
        return rng.choice([{"type": "string"}, {"type": "integer", "minimum": rng.choice(_LEAVES)},
                           {"enum": rng.sample(_LEAVES, 3)}, rng.choice(_LEAVES)])
    kind = rng.randrange(4)
    if kind == 0:
        return {"type": "object", "properties": {
            f"p{i}": _schema(rng, depth - 1) for i in range(rng.randrange(1, 4))},
            "required": [f"p{i}" for i in range(rng.randrange(3))]}
    if kind == 1:
        return {"type": "array", "items": _schema(rng, depth - 1)}
    if kind == 2:
        return {"anyOf": [_schema(rng, depth - 1) for _ in range(rng.randrange(1, 3))]}
    return {"$ref": "#/" + "/".join("x" * rng.randrange(3) for _ in range(depth)),
            "description": rng.choice(_LEAVES)}


def _arguments(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        depth = rng.choice([3, 30, 500, 1200])
        return "[" * depth + "]" * depth if rng.random() < 0.5 else '{"a":' * depth + "1" + \
            "}" * depth
    if kind == 1:
        return '{"n": ' + "9" * rng.choice([10, 4300, 4301, 6000]) + "}"  # past int()'s limit
    if kind == 2:
        return json.dumps({"s": "\ud800" if rng.random() < 0.5 else "ok", "f": rng.random()})
    if kind == 3:
        return rng.choice(['{"a": 1', "null", "[]", "NaN", '{"a": Infinity}', ""])
    return json.dumps(_schema(rng, rng.randrange(1, 6)))


def _tool_body(rng: random.Random) -> bytes:
    tools = [{"type": "function", "function": {
        "name": rng.choice(["f", "get_weather", "", "x" * 300]),
        "description": rng.choice(_LEAVES),
        "parameters": _schema(rng, rng.randrange(1, 16))}} for _ in range(rng.randrange(1, 4))]
    messages: list[Any] = [{"role": "user", "content": "Weather?"}]
    if rng.random() < 0.7:
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "f", "arguments": _arguments(rng)}}
            for i in range(rng.randrange(1, 3))]})
        messages.append({"role": "tool", "tool_call_id": "call_0", "content": "sunny"})
    body = {"model": "gpt2-chatml", "messages": messages, "tools": tools,
            "tool_choice": rng.choice(["auto", "none", "required", None])}
    data = json.dumps(body).encode()
    return mutate_bytes(rng, data, CORPUS) if rng.random() < 0.2 else data


def test_tool_schemas() -> None:
    renderer = _renderer()
    fuzz = Fuzz("render/tool_schemas", lambda data: strict_json(
        _rendered(renderer, parse_json_line(data, _deep_limits()))))
    if not fuzz.replaying():
        fuzz.run(batches(fuzz.rng, _tool_body))
    fuzz.finish()


def _deep_limits() -> JsonLimits:
    return dataclasses.replace(JSON_LIMITS, max_depth=64)  # --max-json-depth 64


# --------------------------------------------------------------------------- templates

def _expr(rng: random.Random, depth: int = 0) -> str:
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(["1", "7", "10", "100000", "10**9", "'a'", "'ab'", "[0]", "[1, 2]",
                           "messages", "messages[0].content", "ns.s", "i", "none", "true",
                           "range(3)", "range(100000)", "'x' * 100"])
    op = rng.choice(["*", "+", "**", "~", "%", "//", "-", "|length", "|string",
                     "|center(50)", "|replace('a', 'aaaa')", "|join(',')", "|list",
                     "|tojson", "|upper", ".format(1)", ".ljust(40)", "|indent(4)"])
    left = _expr(rng, depth + 1)
    if op.startswith("|") or op.startswith("."):
        return f"({left}){op}"
    return f"({left} {op} {_expr(rng, depth + 1)})"


def _statement(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randrange(6) if depth < 3 else 0
    if kind == 0:
        return "{{ " + _expr(rng) + " }}"
    if kind == 1:
        return "{% set ns.s = " + _expr(rng) + " %}"
    if kind == 2:
        return ("{% for i in range(" + rng.choice(["3", "3", "30", "1000", "100000"]) + ") %}"
                + "".join(_statement(rng, depth + 1) for _ in range(rng.randrange(1, 3)))
                + "{% endfor %}")
    if kind == 3:
        return ("{% if " + _expr(rng) + " %}" + _statement(rng, depth + 1) + "{% else %}"
                + _statement(rng, depth + 1) + "{% endif %}")
    if kind == 4:
        return ("{% macro m(x) %}" + _statement(rng, depth + 1) + "{{ x }}{% endmacro %}"
                "{{ m(" + _expr(rng) + ") }}")
    return "{{ " + "(" * rng.choice([5, 50, 300]) + "1" + ")" * rng.choice([5, 50, 300]) + " }}"


def _template_body(rng: random.Random) -> bytes:
    source = "{% set ns = namespace(s='') %}" + "".join(
        _statement(rng) for _ in range(rng.randrange(1, 5)))
    if rng.random() < 0.15:
        cut = rng.randrange(len(source))
        source = source[:cut] + source[cut + rng.randrange(1, 8):]  # broken syntax
    body = {"model": "gpt2-chatml", "messages": [{"role": "user", "content": "Hi"}],
            "chat_template": source}
    return json.dumps(body).encode()


def test_request_templates() -> None:
    renderer = _renderer()
    fuzz = Fuzz("render/templates", lambda data: strict_json(
        _rendered(renderer, parse_json_line(data))))
    if not fuzz.replaying():
        fuzz.run(batches(fuzz.rng, _template_body))
    fuzz.finish()


# -------------------------------------------------------------------------- media URLs

def _url(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:
        data = mutate_bytes(rng, rng.choice(IMAGE_BYTES), IMAGE_BYTES) \
            if rng.random() < 0.6 else rng.choice(IMAGE_BYTES)
        mime = rng.choice(["image/png", "image/jpeg", "image/x", "text/plain", "",
                           "image/png;x=1"])
        encoded = base64.b64encode(data).decode()
        if rng.random() < 0.2:
            encoded = encoded[: rng.randrange(len(encoded) + 1)] + rng.choice(["", "=", "%", "\n"])
        return f"data:{mime};base64,{encoded}"
    if kind == 1:
        name = rng.choice([p.name for p in IMAGES.iterdir()] + [
            "missing.png", "../models/blip2_tiny/config.json", "..", "", "%00.png", "a%2Fb.png",
            "x" * 300, "rgb.png%00", "rgb.png?x=1#y", "\u00e9.png"])
        root = rng.choice([str(IMAGES), "/etc", "/tmp", str(IMAGES) + "/..", "", "//host"])
        return f"file://{root}/{name}"
    if kind == 2:
        host = rng.choice(["example.invalid", "[::1", "[::1]", "127.0.0.1", "user@host",
                           "h:99999", "h:-1", "", "xn--", "a" * 300, "example.invalid:0"])
        return f"{rng.choice(['http', 'https', 'ftp', 'HTTP'])}://{host}/{rng.randrange(99)}.png"
    return rng.choice(["", "x", "data:", "data:,", "file:", "file:///", "://", "\ud800",
                       "data:image/png;base64," + "A" * rng.randrange(100)])


def _media_body(rng: random.Random) -> bytes:
    parts: list[Any] = [{"type": "image_url", "image_url": {"url": _url(rng)}}
                        for _ in range(rng.randrange(1, 3))]
    if rng.random() < 0.2:
        parts[0] = {"type": "image_url", "image_url": _url(rng)}
    body = {"model": "blip2", "messages": [{"role": "user", "content": [
        *parts, {"type": "text", "text": "What is this?"}]}]}
    return json.dumps(body).encode()


def _media_renderer() -> Renderer:
    return Renderer(ServerOptions(model="blip2", allowed_local_media_path=str(IMAGES),
                                  allowed_media_domains=("example.invalid",)), str(BLIP2))


def _render_media(renderer: Renderer, expansion: list[int], data: bytes) -> None:
    body = parse_json_line(data)
    images = len(body["messages"][0]["content"]) - 1
    rendered = renderer.render_chat(body, placeholder_token_ids=[expansion] * images)
    strict_json({"prompt": rendered.prompt, "token_ids": list(rendered.token_ids)})


def test_media_urls() -> None:
    renderer = _media_renderer()
    config = json.loads((BLIP2 / "config.json").read_text(encoding="utf-8"))
    expansion = [config["image_token_index"]] * config["num_query_tokens"]
    fuzz = Fuzz("render/media_urls", lambda data: _render_media(renderer, expansion, data))
    if not fuzz.replaying():
        fuzz.run(batches(fuzz.rng, _media_body))
    fuzz.finish()
