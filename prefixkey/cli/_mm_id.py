"""``prefixkey mm-id``: vLLM's multimodal identifier of each image file, one JSON line each."""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

from ..core import DEFAULT_VLLM_VERSION
from ..errors import InvalidRequestError, PrefixKeyError
from ..jsonl import error_record
from ._common import Commands, add_lenient_option, fail, input_name, open_input, warn

__all__ = ["register"]

#: A file larger than this is refused unread (vLLM's own fetch limits are smaller).
_MAX_FILE_BYTES = 64 << 20
_NO_EXTRA = "needs the multimodal extra: pip install 'prefixkey[multimodal]'"


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _read(name: str, limit: int) -> bytes:
    try:
        with open_input(name) as source:
            data = source.read(limit + 1)
    except OSError as exc:
        raise InvalidRequestError("file", f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InvalidRequestError("file", f"is larger than --max-file-bytes ({limit})")
    return data


def _identify(files: list[str], hasher: Any, out: IO[str], limit: int) -> int:
    """Write one record per file; the number of files that failed."""
    failures = 0
    for name in files:
        record: dict[str, Any] = {"file": input_name(name)}
        try:
            record["identifier"] = hasher.image(_read(name, limit))
        except PrefixKeyError as exc:
            failures += 1
            record["error"] = error_record(exc, None, None)["error"]
        out.write(json.dumps(record) + "\n")
    return failures


def _run(args: argparse.Namespace) -> int:
    try:
        from ..multimodal import MMHasher
    except ImportError as exc:  # blake3 or Pillow missing
        return fail("mm-id", f"{_NO_EXTRA} (the module {exc.name!r} is not installed)")
    try:
        hasher = MMHasher(
            model=args.model, vllm_version=args.vllm_version,
            mm_hasher_algorithm=args.mm_hasher_algorithm,
            mm_processor_kwargs=args.mm_processor_kwargs, media_io_kwargs=args.media_io_kwargs,
            max_image_pixels=args.max_image_pixels, strict=not args.lenient,
        )
    except PrefixKeyError as exc:
        return fail("mm-id", exc)
    for warning in hasher.warnings:
        warn("mm-id", warning)
    failures = _identify(args.files, hasher, sys.stdout, args.max_file_bytes)
    if failures:
        print(f"prefixkey mm-id: {failures} of {len(args.files)} file(s) have no identifier",
              file=sys.stderr)
    return 1 if failures else 0


def register(commands: Commands) -> None:
    """Add ``prefixkey mm-id``."""
    cmd = commands.add_parser(
        "mm-id", help="vLLM's multimodal identifier of image files (docs/multimodal.md)",
        description="Print vLLM's multimodal identifier of each image file, as the chat "
        "server computes it for the same bytes in a data: or file:// URL: one JSON line "
        'per file, {"file", "identifier"} or {"file", "error"}.',
    )
    cmd.add_argument("files", nargs="+", metavar="FILE", help="image file, or - for stdin")
    cmd.add_argument("--model", required=True,
                     help="vLLM's --model string (not the served model name)")
    cmd.add_argument("--mm-hasher-algorithm", choices=("blake3", "sha256", "sha512"),
                     help="the server's --mm-hasher-algorithm (0.27+) or "
                     "VLLM_MM_HASHER_ALGORITHM (0.15-0.26); default blake3")
    cmd.add_argument("--media-io-kwargs", type=_json_object, metavar="JSON",
                     help='the server\'s --media-io-kwargs, e.g. \'{"image": '
                     '{"rgba_background_color": [0, 0, 0]}}\'')
    cmd.add_argument("--mm-processor-kwargs", type=_json_object, metavar="JSON",
                     help="the request's mm_processor_kwargs (hash factors)")
    cmd.add_argument("--vllm-version", default=DEFAULT_VLLM_VERSION,
                     help=f"the server's vLLM release (default {DEFAULT_VLLM_VERSION})")
    cmd.add_argument("--max-image-pixels", type=int, metavar="N",
                     help="the server's VLLM_MAX_IMAGE_PIXELS (0.25+; default vLLM's)")
    cmd.add_argument("--max-file-bytes", type=int, default=_MAX_FILE_BYTES, metavar="N",
                     help=f"refuse a larger file unread (default {_MAX_FILE_BYTES}, 64 MiB)")
    add_lenient_option(cmd)
    cmd.set_defaults(run=_run)
