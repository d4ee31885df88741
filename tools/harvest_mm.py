"""Harvest vLLM's multimodal identifiers of image files from each release's real code.

Maintainer tool (not part of the installed package). For every release it
loads, from the release wheel (``tools/vllm_loader.py`` downloads and extracts
it; nothing is copied into this repository):

* the real ``vllm.multimodal.hasher`` (``MultiModalHasher``), the real image
  module(s) (``ImageMediaIO``, ``convert_image_mode``, ``normalize_image``) and
  the real ``MediaWithBytes``; every other ``vllm.*`` import is an inert stub;
* the chat server's construction of the image loader: the ``image_io = ...``
  statement of ``MediaConnector.fetch_image``, executed as written with the
  server's ``--media-io-kwargs`` and the method's default ``image_mode``;
* the hash call site as the chat path reaches it: ``ProcessorInputs.get_mm_hashes``
  (0.17+, the real class), ``BaseMultiModalProcessor._hash_mm_items`` (0.8.5-0.16,
  the real method's code run on a stand-in ``self``) or the ``mm_hashes = {...}``
  statement of ``apply`` (0.7.0-0.8.4, executed as written). The chat path
  hands the processor one uuid per item (``None`` unless the content part has
  one), so the uuid branch of those functions is the one taken.

Each image file is loaded with ``ImageMediaIO.load_bytes`` (what data: URLs,
file:// URLs and fetched URLs reach) and hashed; a release that raises records
the exception's type name instead. Third-party modules are the real ones
(numpy, torch CPU, Pillow, blake3: harvest-time only, never package deps).

Usage::

    python tools/harvest_mm.py [--out tests/multimodal/vectors.jsonl] [VERSION ...]
"""

from __future__ import annotations
import __future__

import argparse
import ast
import dataclasses
import functools
import importlib
import inspect
import json
import re
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import PIL
from vllm_loader import _Inert, _VllmFinder, ensure_sources

from prefixkey.core import KNOWN_RELEASES

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "tests" / "multimodal" / "images"
DEFAULT_OUT = ROOT / "tests" / "multimodal" / "vectors.jsonl"

QWEN = "Qwen/Qwen2-VL-2B-Instruct"
#: 0.33's processors that re-hash image identifiers in their own _get_mm_hashes, by module.
REHASHING = {
    "deepseek_vl2": "DeepseekVL2MultiModalProcessor",
    "h2ovl": "H2OVLMultiModalProcessor",
    "unlimited_ocr": "UnlimitedOCRMultiModalProcessor",
}
LLAVA = "llava-hf/llava-1.5-7b-hf"


@dataclasses.dataclass(frozen=True)
class Case:
    """One identifier question: the configuration a request is hashed under."""

    model: str = QWEN
    algorithm: str | None = None  # None: the release's default
    mm_processor_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    tokenization_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    media_io_kwargs: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    uuid: str | None = None
    #: The request's LoRA adapter under --enable-tower-connector-lora (0.14+).
    lora_name: str | None = None
    #: VLLM_MAX_IMAGE_PIXELS (None: the release's default).
    max_image_pixels: int | None = None
    #: A model module whose processor re-hashes image identifiers (0.33), and the
    #: number of images in the request (its re-hash depends on it).
    architecture: str | None = None
    images: int = 1


_EVERY_IMAGE = (Case(), Case(model=LLAVA), Case(algorithm="sha256"), Case(algorithm="sha512"))
_SOME_IMAGES = (
    Case(mm_processor_kwargs={"max_pixels": 1003520, "do_resize": True}),
    Case(mm_processor_kwargs={
        "fps": 2.5, "size": {"shortest_edge": 224, "longest_edge": 448}, "crop": [1, "a"],
        "images_kwargs": {"do_pad": False}, "videos_kwargs": {"fps": 1}, "resample": None,
        "flag": True, "offset": -3,
    }),
    Case(mm_processor_kwargs={"max_pixels": 1003520}, algorithm="sha256"),
    Case(tokenization_kwargs={"truncation": False}),
    Case(media_io_kwargs={"image": {"rgba_background_color": [0, 0, 0]}}),
    Case(media_io_kwargs={"image": {"image_mode": "RGBA"}}),
    Case(media_io_kwargs={"image": {"image_mode": None}}),
    Case(uuid="user-image-0001"),
    Case(uuid="user-image-0001", mm_processor_kwargs={"max_pixels": 1003520}),
    Case(uuid="user-image-0001", media_io_kwargs={"image": {"rgba_background_color": [9, 9, 9]}}),
    Case(lora_name="vision-adapter"),
    Case(lora_name="vision-adapter", uuid="user-image-0001"),
    Case(max_image_pixels=100),
    *(Case(architecture=arch, images=n) for arch in REHASHING for n in (1, 3)),
    Case(architecture="deepseek_vl2", uuid="user-image-0001"),
)
_SOME = ("rgb.png", "rgba.png", "palette_transparent.png", "gray.png", "rgb.jpg")


def cases(image: str) -> Iterator[Case]:
    yield from _EVERY_IMAGE
    if image in _SOME:
        yield from _SOME_IMAGES


# --------------------------------------------------------------------------- loading


def _exists(root: Path, module: str) -> bool:
    rel = Path(*module.split("."))
    return (root / rel).with_suffix(".py").exists() or (root / rel / "__init__.py").exists()


def _class_method(path: Path, cls: str | None, name: str) -> ast.FunctionDef | None:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if cls is not None and not (isinstance(node, ast.ClassDef) and node.name == cls):
            continue
        body = node.body if isinstance(node, ast.ClassDef) else [node]
        for sub in body:
            if isinstance(sub, ast.FunctionDef) and sub.name == name:
                return sub
    return None


def _compile_function(fn: ast.FunctionDef, path: Path, namespace: dict[str, Any]) -> Any:
    module = ast.Module(body=[fn], type_ignores=[])
    flags = __future__.annotations.compiler_flag
    exec(compile(module, str(path), "exec", flags=flags, dont_inherit=True), namespace)
    return namespace[fn.name]


def _mm_identifier(root: Path) -> Callable[[str, str | None], str] | None:
    """``InputProcessor._get_mm_identifier`` (0.14+): the tower-connector LoRA prefix."""
    path = root / "vllm/v1/engine/input_processor.py"
    fn = _class_method(path, "InputProcessor", "_get_mm_identifier") if path.exists() else None
    if fn is None:
        return None
    method = _compile_function(fn, path, {})
    me = types.SimpleNamespace(
        lora_config=types.SimpleNamespace(enable_tower_connector_lora=True))

    def identify(mm_hash: str, lora_name: str | None) -> str:
        lora = None if lora_name is None else types.SimpleNamespace(lora_name=lora_name)
        return str(method(me, mm_hash, lora))

    return identify


def _model_rehash(root: Path, mmh: Any, items_cls: Any,
                  module: str) -> Callable[[Any, dict[str, list[str]]], list[str]] | None:
    """A processor's own ``_get_mm_hashes`` (0.33), run over the generic hashes it wraps.

    The real method is compiled into a class whose base returns the generic
    hashes (what ``super()._get_mm_hashes`` gives); the processor's config reads
    are stand-ins: H2OVL's image processor has ``use_msac`` on, Unlimited-OCR's
    merged kwargs are the request's (``crop_mode`` at its default).
    """
    path = root / "vllm/model_executor/models" / f"{module}.py"
    fn = _class_method(path, REHASHING[module], "_get_mm_hashes") if path.exists() else None
    if fn is None:
        return None
    crop_mode = True  # vllm/transformers_utils/processors/deepseek_ocr.py CROP_MODE
    base = type("_Base", (), {"_get_mm_hashes": lambda self, inputs: inputs.generic})
    cls_def = ast.parse("class Processor(_Base):\n    pass\n").body[0]
    assert isinstance(cls_def, ast.ClassDef)
    cls_def.body = [fn]
    ns: dict[str, Any] = {"_Base": base, "MultiModalHasher": mmh,
                          "ImageProcessorItems": items_cls, "CROP_MODE": crop_mode}
    flags = __future__.annotations.compiler_flag
    exec(compile(ast.fix_missing_locations(ast.Module(body=[cls_def], type_ignores=[])),
                 str(path), "exec", flags=flags, dont_inherit=True), ns)
    processor = ns["Processor"]()

    def rehash(inputs: Any, generic: dict[str, list[str]]) -> list[str]:
        algorithm = inputs.algorithm
        processor.info = types.SimpleNamespace(
            ctx=types.SimpleNamespace(
                get_mm_config=lambda: types.SimpleNamespace(mm_hasher_algorithm=algorithm),
                get_merged_mm_kwargs=lambda kwargs: dict(kwargs)),
            get_image_processor=lambda **kwargs: types.SimpleNamespace(use_msac=True))
        wrapped = types.SimpleNamespace(generic=generic, mm_data_items=inputs.mm_data_items,
                                        hf_processor_mm_kwargs=inputs.hf_processor_mm_kwargs)
        return list(processor._get_mm_hashes(wrapped)["image"])

    return rehash


@dataclasses.dataclass
class Release:
    version: str
    hasher: Any  # the vllm.multimodal.hasher module
    envs: Any
    image_io: Callable[[Mapping[str, Mapping[str, Any]]], Any]
    hashes: Callable[[Any, Case], str]
    algorithms: tuple[str, ...]
    mm_identifier: Callable[[str, str | None], str] | None
    #: The REHASHING architectures whose processor re-hashes in this release.
    rehashing: frozenset[str]


def _defining(root: Path, rels: tuple[str, ...], cls: str, name: str) -> Path:
    """The first of ``rels`` (under ``root``) whose class ``cls`` defines ``name``."""
    for rel in rels:
        path = root / rel
        if path.exists() and _class_method(path, cls, name) is not None:
            return path
    raise RuntimeError(f"no {cls}.{name} under {root}")


def _media_connector_image_io(root: Path, image_io_cls: Any) -> Callable[..., Any]:
    """``MediaConnector.fetch_image``'s ``image_io = ImageMediaIO(...)``, run as written."""
    path = _defining(root, ("vllm/multimodal/media/connector.py", "vllm/multimodal/utils.py"),
                     "MediaConnector", "fetch_image")
    fn = _class_method(path, "MediaConnector", "fetch_image")
    assert fn is not None
    stmt = next(s for s in fn.body if isinstance(s, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "image_io" for t in s.targets))
    code = compile(ast.Module(body=[stmt], type_ignores=[]), str(path), "exec")
    defaults = dict(zip([a.arg for a in fn.args.kwonlyargs],
                        [ast.literal_eval(d) if d is not None else None
                         for d in fn.args.kw_defaults], strict=True))
    # 0.33 moved the construction into MediaConnector._image_io.
    helper = _class_method(path, "MediaConnector", "_image_io")
    helper_fn = (None if helper is None else
                 _compile_function(helper, path, {"ImageMediaIO": image_io_cls}))

    def make(media_io_kwargs: Mapping[str, Mapping[str, Any]]) -> Any:
        # No per-request decoded-media budget: the server default.
        me = types.SimpleNamespace(media_io_kwargs=dict(media_io_kwargs), decoded_budget=None)
        if helper_fn is not None:
            me._image_io = functools.partial(helper_fn, me)
        ns: dict[str, Any] = {"ImageMediaIO": image_io_cls, "self": me, **defaults}
        exec(code, ns)
        return ns["image_io"]

    return make


def load_release(version: str) -> Release:
    cache, _, _ = ensure_sources(version)
    image_mods = [m for m in ("vllm.multimodal.image", "vllm.multimodal.media.image")
                  if _exists(cache, m)]
    real = ["vllm.envs", "vllm.multimodal.hasher", *image_mods]
    sliced: dict[str, tuple[str, ...]] = {
        "vllm.multimodal.base": ("MediaIO", "MediaWithBytes"),
        "vllm.multimodal.media.base": ("MediaIO", "MediaWithBytes"),
        "vllm.multimodal.media": ("MediaIO", "MediaWithBytes"),
        "vllm.multimodal.parse": ("ImageProcessorItems",),
        "vllm.multimodal.processing.inputs": ("ProcessorInputs",),
    }
    finder = _VllmFinder(cache, real, sliced)
    saved = {k: v for k, v in sys.modules.items() if k == "vllm" or k.startswith("vllm.")}
    for k in saved:
        del sys.modules[k]
    sys.meta_path.insert(0, finder)
    try:
        envs = importlib.import_module("vllm.envs")
        hasher = importlib.import_module("vllm.multimodal.hasher")
        image_mod = importlib.import_module(image_mods[-1])
        parse = importlib.import_module("vllm.multimodal.parse")
        inputs = (importlib.import_module("vllm.multimodal.processing.inputs")
                  if _exists(cache, "vllm.multimodal.processing.inputs") else None)
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "vllm" or k.startswith("vllm.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    image_io = _media_connector_image_io(cache, image_mod.ImageMediaIO)
    items_cls = parse.__dict__.get("ImageProcessorItems")
    if not isinstance(items_cls, type) or issubclass(items_cls, _Inert):
        raise RuntimeError(f"vllm {version}: no real ImageProcessorItems in multimodal/parse.py")
    mmh = hasher.MultiModalHasher
    hashes = _call_site(cache, version, mmh, inputs, items_cls)
    # Releases with _get_hasher_factory offer sha256 and sha512 besides blake3.
    algorithms: tuple[str, ...] = ("blake3",)
    if hasattr(hasher, "_get_hasher_factory"):
        algorithms = ("blake3", "sha256", "sha512")
    rehashing = frozenset(m for m in REHASHING if _model_rehash(cache, mmh, items_cls, m))
    return Release(version, hasher, envs, image_io, hashes, algorithms, _mm_identifier(cache),
                   rehashing)


def _items(items_cls: Any, media: Any) -> Any:
    """The release's real ``ImageProcessorItems`` over one item."""
    return items_cls([media])


def _call_site(root: Path, version: str, mmh: Any, inputs: Any,
               items_cls: Any) -> Callable[[Any, Case], str]:
    """The function turning (item, case) into the identifier, as the release's chat path does."""
    if inputs is not None and "ProcessorInputs" in vars(inputs):
        pi = inputs.ProcessorInputs
        names = {f.name for f in dataclasses.fields(pi)}
        takes_algorithm = "hash_algorithm" in inspect.signature(pi.get_mm_hashes).parameters

        rehashers = {m: _model_rehash(root, mmh, items_cls, m) for m in REHASHING}

        def get_mm_hashes(media: Any, case: Case) -> str:
            kwargs: dict[str, Any] = {
                "prompt": [], "mm_data_items": {"image": items_cls([media] * case.images)},
                "mm_uuid_items": {"image": [case.uuid] * case.images},
                "hf_processor_mm_kwargs": dict(case.mm_processor_kwargs),
            }
            if "media_io_kwargs" in names:
                kwargs["media_io_kwargs"] = dict(case.media_io_kwargs)
            if "tokenization_kwargs" in names:
                kwargs["tokenization_kwargs"] = dict(case.tokenization_kwargs)
            obj = pi(**kwargs)
            if takes_algorithm:
                out = obj.get_mm_hashes(case.model, case.algorithm or "blake3")
            else:
                out = obj.get_mm_hashes(case.model)
            rehash = None if case.architecture is None else rehashers[case.architecture]
            if rehash is not None:
                obj.algorithm = case.algorithm or "blake3"
                return str(rehash(obj, out)[0])
            return str(out["image"][0])

        return get_mm_hashes

    rels = ("vllm/multimodal/processing/processor.py", "vllm/multimodal/processing.py")
    try:
        path = _defining(root, rels, "BaseMultiModalProcessor", "_hash_mm_items")
    except RuntimeError:
        path = _defining(root, rels, "BaseMultiModalProcessor", "apply")
        return _inline_call_site(path, mmh, items_cls)
    fn = _class_method(path, "BaseMultiModalProcessor", "_hash_mm_items")
    assert fn is not None
    method = _compile_function(fn, path, {"MultiModalHasher": mmh})
    params = inspect.signature(method).parameters

    def hash_mm_items(media: Any, case: Case) -> str:
        me = types.SimpleNamespace(info=types.SimpleNamespace(model_id=case.model))
        args: list[Any] = [me, {"image": _items(items_cls, media)},
                           dict(case.mm_processor_kwargs)]
        if "tokenization_kwargs" in params:
            args.append(dict(case.tokenization_kwargs))
        kw = {"mm_uuids": {"image": [case.uuid]}} if "mm_uuids" in params else {}
        return str(method(*args, **kw)["image"][0])

    return hash_mm_items


def _inline_call_site(path: Path, mmh: Any, items_cls: Any) -> Callable[[Any, Case], str]:
    """0.7.0-0.8.4: the ``mm_hashes = {...}`` statement of ``apply``, executed as written."""
    apply = _class_method(path, "BaseMultiModalProcessor", "apply")
    assert apply is not None
    stmt = next(
        s for s in ast.walk(apply) if isinstance(s, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "mm_hashes" for t in s.targets)
        and isinstance(s.value, ast.DictComp)
    )
    code = compile(ast.Module(body=[stmt], type_ignores=[]), str(path), "exec")

    def inline(media: Any, case: Case) -> str:
        ns: dict[str, Any] = {
            "MultiModalHasher": mmh, "model_id": case.model,
            "self": types.SimpleNamespace(info=types.SimpleNamespace(model_id=case.model)),
            "mm_items": {"image": _items(items_cls, media)},
            "hf_processor_mm_kwargs": dict(case.mm_processor_kwargs),
        }
        exec(code, ns)
        return str(ns["mm_hashes"]["image"][0])

    return inline


# --------------------------------------------------------------------------- harvesting


def _applies(release: Release, case: Case) -> bool:
    """Algorithms and options a release does not have are not asked."""
    if case.lora_name is not None and release.mm_identifier is None:
        return False
    if case.architecture is not None and case.architecture not in release.rehashing:
        return False
    if case.max_image_pixels is not None and "VLLM_MAX_IMAGE_PIXELS" not in getattr(
            release.envs, "environment_variables", {}):
        return False
    return case.algorithm is None or case.algorithm in release.algorithms


def identifier(release: Release, data: bytes, case: Case) -> dict[str, Any]:
    envs = release.envs
    # 0.15-0.26 read the algorithm from the environment; the pixel limit is its default.
    variables = getattr(envs, "environment_variables", {})
    if "VLLM_MM_HASHER_ALGORITHM" in variables:
        envs.VLLM_MM_HASHER_ALGORITHM = case.algorithm or "blake3"
    if "VLLM_MAX_IMAGE_PIXELS" in variables:
        envs.VLLM_MAX_IMAGE_PIXELS = (int(variables["VLLM_MAX_IMAGE_PIXELS"]())
                                      if case.max_image_pixels is None else case.max_image_pixels)
    try:
        media = release.image_io(case.media_io_kwargs).load_bytes(data)
        mm_hash = release.hashes(media, case)
        if release.mm_identifier is not None:
            mm_hash = release.mm_identifier(mm_hash, case.lora_name)
        return {"identifier": mm_hash}
    except Exception as exc:  # what vLLM raises is the vector
        # Object addresses in messages differ per run.
        message = re.sub(r" at 0x[0-9a-f]+", "", str(exc))[:200]
        return {"error": type(exc).__name__, "message": message}


def harvest(versions: list[str], out: Path) -> None:
    images = sorted(p for p in IMAGES.iterdir() if p.is_file())
    n = 0
    with out.open("w") as fh:
        for version in versions:
            release = load_release(version)
            for path in images:
                data = path.read_bytes()
                for case in cases(path.name):
                    if not _applies(release, case):
                        continue
                    record: dict[str, Any] = {"vllm_version": version, "file": path.name,
                                              "model": case.model}
                    for key in ("algorithm", "mm_processor_kwargs", "tokenization_kwargs",
                                "media_io_kwargs", "uuid", "lora_name", "max_image_pixels",
                                "architecture"):
                        value = getattr(case, key)
                        if value:
                            record[key] = value
                    if case.architecture is not None:
                        record["images"] = case.images
                    record.update(identifier(release, data, case))
                    # Nested objects keep their order: unsorted releases hash kwargs in it.
                    fh.write(json.dumps(dict(sorted(record.items()))) + "\n")
                    n += 1
            print(f"{version}: done", file=sys.stderr, flush=True)
    meta = {"pillow": PIL.__version__, "releases": versions, "vectors": n}
    out.with_suffix(".meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=list(KNOWN_RELEASES))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    harvest(args.versions, args.out)


if __name__ == "__main__":
    main()
