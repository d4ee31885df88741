"""Harvest DeepSeek-V4/V4.1 prompt strings from vLLM's own renderer and encoders.

Run with a scratch vLLM venv's python (HF_HUB_OFFLINE=1; 0.33 through the overlay's
PYTHONPATH). For each row of a body corpus (``tests/render/deepseek_prompt_bodies.jsonl``:
``id``, ``mode`` deepseek_v4/deepseek_v41, a chat body's ``messages``, ``tools``,
``chat_template_kwargs``, ``reasoning_effort``), the body goes through vLLM's request
model, ``build_chat_params`` and the release's renderer class for the mode
(``render_messages``, tools as the online renderer passes them), and the string the
encoder returns is recorded with the conversation vLLM parsed (what prefixkey's
``deepseek_v4`` path takes) or the messages its request model validated
(``deepseek_v41``) — or the error vLLM answers (status and message, by
entrypoints/serve/exception_handling/error_response.py's classes). Rows with
``direct`` call the mode's tokenizer wrapper on the request's messages without
parsing (images: vLLM's parser needs the model's multimodal processor).

    HF_HUB_OFFLINE=1 /work/venvs/vllm031/bin/python tools/harvest_deepseek_prompts.py \\
        --bodies tests/render/deepseek_prompt_bodies.jsonl \\
        --tokenizer ~/.cache/prefixkey-tests/folders/deepseek_v3 \\
        --out tests/render/releases/0.31.0/deepseek_prompts.jsonl
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any


class _Captured(Exception):
    pass


class _TextOnlyConfig:
    """A model config for text bodies: every option unset (no multimodal config)."""

    def __getattr__(self, name: str) -> Any:
        return None


def _status(exc: BaseException) -> int:
    if isinstance(exc, (ValueError, TypeError, OverflowError)):
        return 400
    if isinstance(exc, NotImplementedError):
        return 501
    return 500


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bodies", required=True)
    ap.add_argument("--tokenizer", required=True, help="a folder with tokenizer.json")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    # The scratch venv's vLLM and transformers: not installed where the project is checked.
    import vllm  # type: ignore[import-not-found]
    from pydantic import ValidationError
    from transformers import TokenizersBackend  # type: ignore[import-not-found]
    from vllm.entrypoints.openai.chat_completion.protocol import (  # type: ignore[import-not-found]
        ChatCompletionRequest,
    )
    from vllm.renderers import registry  # type: ignore[import-not-found]

    base = TokenizersBackend.from_pretrained(args.tokenizer)
    captured: dict[str, Any] = {}
    rows_out = []
    with open(args.bodies, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    for row in rows:
        mode = row["mode"]
        if mode not in registry._VLLM_RENDERERS:  # deepseek_v41 before 0.30
            rows_out.append({"id": row["id"], "absent": True})
            continue
        tok_mod: Any = importlib.import_module(f"vllm.tokenizers.{mode}")
        wrap = getattr(tok_mod, f"get_{mode}_tokenizer")
        tokenizer = wrap(base)
        original = tok_mod.encode_messages

        def capture(messages: Any, _original: Any = original, **kwargs: Any) -> str:
            captured["prompt"] = _original(messages, **kwargs)
            raise _Captured

        tok_mod.encode_messages = capture
        captured.clear()
        out: dict[str, Any] = {"id": row["id"], "release": vllm.__version__}
        try:
            body = {"model": "m", "messages": row["messages"]}
            for key in ("tools", "chat_template_kwargs", "reasoning_effort"):
                if row.get(key) is not None:
                    body[key] = row[key]
            try:
                request = ChatCompletionRequest.model_validate(body)
            except ValidationError as exc:
                out["validation_error"] = str(exc).splitlines()[0]
                rows_out.append(out)
                continue
            tool_dicts = ([t.model_dump() for t in request.tools]
                          if request.tools is not None else None)
            params = request.build_chat_params(None, "openai").with_defaults(
                dict(tools=tool_dicts, tokenize=False))
            module_name, class_name = registry._VLLM_RENDERERS[mode]
            cls = getattr(importlib.import_module(f"vllm.renderers.{module_name}"), class_name)
            renderer = object.__new__(cls)
            renderer.model_config = _TextOnlyConfig()
            renderer.tokenizer = tokenizer
            bound = cls._apply_chat_template.__get__(renderer)

            def record(*a: Any, _bound: Any = bound, **kw: Any) -> Any:
                captured["conversation"] = kw.get("conversation")
                return _bound(*a, **kw)

            renderer._apply_chat_template = record
            try:
                if row.get("direct"):
                    tokenizer.apply_chat_template(
                        messages=request.messages,
                        **params.get_apply_chat_template_kwargs())
                else:
                    renderer.render_messages(request.messages, params)
            except _Captured:
                pass
            except Exception as exc:  # vLLM's answer: the class decides the status
                out["error"] = {"status": _status(exc), "type": type(exc).__name__,
                                "message": str(exc)}
            if "prompt" in captured:
                out["prompt"] = captured["prompt"]
            if captured.get("conversation") is not None:
                out["conversation"] = json.loads(json.dumps(captured["conversation"],
                                                            default=str))
            out["tools"] = tool_dicts
            if mode != "deepseek_v4":  # V4.1 reads the request's messages as validated
                out["request_messages"] = json.loads(
                    json.dumps(request.messages, default=str))
        finally:
            tok_mod.encode_messages = original
        rows_out.append(out)
    with open(args.out, "w", encoding="utf-8") as fh:
        for out in rows_out:
            # Not sorted: key order is data (a tool schema's JSON in the prompt).
            fh.write(json.dumps(out, ensure_ascii=False) + "\n")
    print(f"{len(rows_out)} rows -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
