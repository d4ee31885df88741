"""Load vLLM's *real* prefix-cache hashing functions from a release wheel.

Maintainer tool (not part of the installed ``prefixkey`` package). It never copies
vLLM source into this repository: the code is downloaded and executed at run time.

How it works
------------
1. ``pip download --no-deps vllm==<version>`` into a cache directory outside the repo
   (``$PREFIXKEY_VLLM_CACHE/<version>/`` if that variable is set, else
   ``~/.cache/prefixkey/vllm/<version>/``). Only the ``.py`` files of the wheel are
   extracted next to it (``<cache>/vllm/...``).
2. A ``sys.meta_path`` finder serves every ``vllm.*`` import while loading:

   * **real** modules are executed unchanged from the wheel:
     ``vllm.envs``, ``vllm.utils.hashing``, ``vllm.lora.request`` and
     ``vllm.v1.core.kv_cache_utils``;
   * **slice** modules get only a few top-level definitions of the real file
     (parsed with :mod:`ast`, plus the top-level imports/assignments those
     definitions need): ``get_mm_features_in_window`` (``vllm.multimodal.utils``),
     ``tensor_data`` / ``ConstantList`` (``vllm.v1.utils``), ``cdiv`` / ``round_up``
     (``vllm.utils.math_utils``). This is still vLLM's code, loaded at run time;
   * every other ``vllm.*`` module is an inert **stub** whose attributes are dummy
     classes (heavy imports such as configs, loggers, KV-cache specs are off the
     hashing path).

   ``vllm.envs.VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES`` is pinned to ``True`` (the
   release default) so :meth:`VllmHashing.maybe_convert_block_hash` returns ints.
   After loading, the ``vllm*`` entries are removed from ``sys.modules`` again (the
   loaded modules keep their own references), so several versions can be loaded in
   one process and an installed vLLM is not disturbed.

Public API (used by ``tools/harvest_vectors.py`` and the benchmarks; keep stable)
---------------------------------------------------------------------------------
``load_vllm(version: str) -> VllmHashing``  (cached per process)

``VllmHashing`` attributes / methods:

* ``version: str``, ``cache_dir: pathlib.Path``, ``wheel_path: pathlib.Path``,
  ``wheel_sha256: str``, ``module_modes: dict[str, str]`` (real/slice/stub per module)
* ``hashing`` / ``kv_cache_utils``: the loaded real modules
* ``hash_fn(name) -> Callable[[Any], bytes]``: real ``sha256``, ``sha256_cbor``,
  ``xxhash``, ``xxhash_cbor`` (via ``get_hash_fn_by_name``)
* ``init_none_hash(algo_name, python_hash_seed: str | None) -> bytes``: runs the real
  ``init_none_hash`` with ``PYTHONHASHSEED`` set (or unset for ``None``), restores the
  environment and returns the module's ``NONE_HASH``
* ``request_block_hasher(hash_block_size, algo_name)``: real
  ``get_request_block_hasher(hash_block_size, hash_fn(algo_name))``
* ``make_request(token_ids, *, lora=None, cache_salt=None, mm_items=(),
  prompt_embeds=None, block_hasher=None, validate_lora=True) -> FakeRequest``
  (``lora``: ``LoraSpec``/``(name, int_id, path)``/``{"name","int_id","path"}``;
  ``mm_items``: ``MMItem``/``(identifier, offset, length)``/dicts;
  ``prompt_embeds``: a tensor or ``EmbedsSpec``/``{"dtype","shape","hex"}``)
* ``capture_hash_block_calls()``: context manager yielding a list that receives one
  ``HashBlockCall(parent, tokens, extra_keys, result)`` per real
  ``hash_block_tokens`` invocation made by the hasher inside the block
* real functions/classes, re-exported unchanged: ``hash_block_tokens``,
  ``generate_block_hash_extra_keys``, ``to_event_extra_keys``,
  ``maybe_convert_block_hash``, ``make_block_hash_with_group_id``,
  ``BlockHashListWithBlockSize``, ``LoRARequest``, ``get_request_block_hasher``

``FakeRequest`` has exactly what the real hasher reads (``block_hashes``,
``num_tokens``, ``all_token_ids`` (real ``ConstantList``), ``mm_features`` (items with
``.identifier`` and ``.mm_position.offset/.length``), ``lora_request`` (real
``LoRARequest``), ``cache_salt``, ``prompt_embeds``, ``_prompt_embeds_per_block_hashes``)
and ``append(tokens)`` mirroring ``Request.append_output_token_ids`` +
``update_block_hashes``. Creating it runs the hasher once (as ``Request.__init__`` does).

Bit-exactness: every string handed to vLLM (LoRA name/path, mm identifiers, cache
salt) is first round-tripped through ``msgspec.msgpack`` like the engine core receives
it, so object identity -- which pickle's memo depends on -- matches production:
distinct objects for multi-character strings, CPython's shared singletons for
1-character Latin-1 strings and for ``""``.

Example::

    from tools.vllm_loader import load_vllm   # or sys.path.insert(0, "tools")
    vh = load_vllm("0.31.0")
    vh.init_none_hash("sha256", "0")
    req = vh.make_request([1, 2, 3, 4], block_hasher=vh.request_block_hasher(2, "sha256"))
    print([h.hex() for h in req.block_hashes])
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import functools
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import types
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "EmbedsSpec",
    "FakeRequest",
    "HashBlockCall",
    "LoraSpec",
    "MMItem",
    "VllmHashing",
    "cache_dir_for",
    "engine_str",
    "ensure_sources",
    "load_vllm",
]

# Modules executed unchanged from the wheel.
REAL_MODULES: tuple[str, ...] = (
    "vllm.envs",
    "vllm.utils.hashing",
    "vllm.lora.request",
    "vllm.v1.core.kv_cache_utils",
)
# Modules of which only the named top-level definitions are executed (missing names
# are ignored so the table can cover several releases).
SLICED_MODULES: dict[str, tuple[str, ...]] = {
    "vllm.multimodal.utils": ("get_mm_features_in_window",),
    "vllm.v1.utils": ("tensor_data", "ConstantList"),
    "vllm.utils.math_utils": ("cdiv", "round_up"),
}
# Environment flags pinned on the real ``vllm.envs`` module.
PINNED_ENVS: dict[str, Any] = {"VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES": True}

# Wheels are platform specific but the .py files are not: always ask pip for the
# Linux x86_64 build so the tool also works on other hosts.
_PIP_PLATFORM_ARGS: tuple[str, ...] = (
    "--only-binary=:all:",
    "--implementation",
    "cp",
    "--python-version",
    "3.12",
    "--platform",
    "manylinux_2_28_x86_64",
    "--platform",
    "manylinux_2_17_x86_64",
    "--platform",
    "manylinux2014_x86_64",
    "--platform",
    "manylinux1_x86_64",
)
_EXTRACTED_MARKER = ".prefixkey-extracted"

TORCH_DTYPES = ("float32", "float16", "bfloat16")


# --------------------------------------------------------------------------- cache


def cache_dir_for(version: str) -> Path:
    """Cache directory of one release (outside the repository)."""
    root = os.environ.get("PREFIXKEY_VLLM_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "prefixkey" / "vllm"
    return base / version


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _find_wheel(cache: Path, version: str) -> Path | None:
    wheels = sorted(cache.glob(f"vllm-{version}-*.whl"))
    return wheels[0] if wheels else None


def ensure_sources(version: str) -> tuple[Path, Path, str]:
    """Download (if needed) and extract the wheel's ``.py`` files.

    Returns ``(cache_dir, wheel_path, wheel_sha256)``; ``cache_dir / "vllm"`` is the
    extracted package.
    """
    cache = cache_dir_for(version)
    cache.mkdir(parents=True, exist_ok=True)
    wheel = _find_wheel(cache, version)
    if wheel is None:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            *_PIP_PLATFORM_ARGS,
            f"vllm=={version}",
            "-d",
            str(cache),
        ]
        print(f"[vllm_loader] downloading: {' '.join(cmd)}", file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=sys.stderr)
        wheel = _find_wheel(cache, version)
        if wheel is None:
            raise RuntimeError(f"pip did not produce a vllm {version} wheel in {cache}")
    wheel_sha = _sha256_file(wheel)
    marker = cache / _EXTRACTED_MARKER
    stamp = f"{wheel.name} {wheel_sha}\n"
    if not (marker.exists() and marker.read_text() == stamp and (cache / "vllm").is_dir()):
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                name = info.filename
                if not name.startswith("vllm/") or not name.endswith(".py"):
                    continue
                target = (cache / name).resolve()
                if cache.resolve() not in target.parents:  # zip-slip guard
                    raise RuntimeError(f"refusing to extract {name!r}")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(info))
        marker.write_text(stamp)
    return cache, wheel, wheel_sha


# --------------------------------------------------------------------------- stubs


class _Inert:
    """Dummy stand-in: accepts any construction, attribute access, call or use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __class_getitem__(cls, item: Any) -> Any:
        return cls

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Inert()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Inert()

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return False


def _stub_getattr(module: types.ModuleType) -> Callable[[str], Any]:
    cache: dict[str, Any] = {}

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        sub = f"{module.__name__}.{name}"
        if sub in REAL_MODULES or sub in SLICED_MODULES:
            return importlib.import_module(sub)
        if name not in cache:
            cache[name] = type(name, (_Inert,), {"__module__": module.__name__})
        return cache[name]

    return __getattr__


def _names_used(nodes: Sequence[ast.AST]) -> set[str]:
    used: set[str] = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                used.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                # `torch.uint8` -> "torch" is caught by the Name branch
                continue
    return used


def _names_bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _slice_source(tree: ast.Module, wanted: Sequence[str]) -> ast.Module:
    """Top-level statements defining ``wanted`` plus what they need (transitively)."""
    stmts = [s for s in tree.body if _names_bound(s)]
    chosen: set[int] = {i for i, s in enumerate(stmts) if _names_bound(s) & set(wanted)}
    while True:
        needed = _names_used([stmts[i] for i in chosen])
        more = {i for i, s in enumerate(stmts) if i not in chosen and _names_bound(s) & needed}
        if not more:
            break
        chosen |= more
    return ast.Module(body=[stmts[i] for i in sorted(chosen)], type_ignores=[])


class _VllmFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``vllm.*`` from the extracted wheel in real / slice / stub mode."""

    def __init__(self, root: Path) -> None:
        self.root = root  # directory containing the ``vllm`` package
        self.modes: dict[str, str] = {}

    def _paths(self, fullname: str) -> tuple[Path | None, bool]:
        rel = Path(*fullname.split("."))
        pkg = self.root / rel / "__init__.py"
        if pkg.exists():
            return pkg, True
        mod = (self.root / rel).with_suffix(".py")
        return (mod if mod.exists() else None), False

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "vllm" and not fullname.startswith("vllm."):
            return None
        file, is_pkg = self._paths(fullname)
        spec = importlib.util.spec_from_loader(fullname, self, is_package=is_pkg)
        assert spec is not None
        if file is not None:
            spec.origin = str(file)
            spec.has_location = True
        if is_pkg and file is not None:
            spec.submodule_search_locations = [str(file.parent)]
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        file, _ = self._paths(name)
        if name in REAL_MODULES:
            if file is None:
                raise ImportError(f"{name} not found in the wheel (unsupported release?)")
            self.modes[name] = "real"
            code = compile(file.read_bytes(), str(file), "exec", dont_inherit=True)
            exec(code, module.__dict__)
            return
        module.__dict__["__getattr__"] = _stub_getattr(module)
        if name in SLICED_MODULES and file is not None:
            self.modes[name] = "slice"
            tree = ast.parse(file.read_bytes(), filename=str(file))
            sliced = _slice_source(tree, SLICED_MODULES[name])
            # Annotations stay unevaluated so they can name anything.
            flags = __future__.annotations.compiler_flag
            code = compile(sliced, str(file), "exec", flags=flags, dont_inherit=True)
            exec(code, module.__dict__)
            return
        self.modes[name] = "stub"


# --------------------------------------------------------------------------- request


def engine_str(s: str) -> str:
    """``s`` as the engine core receives it: decoded by msgspec from msgpack."""
    import msgspec

    out = msgspec.msgpack.decode(msgspec.msgpack.encode(s))
    assert isinstance(out, str) and out == s
    return out


@dataclass(frozen=True)
class LoraSpec:
    name: str
    int_id: int
    path: str | None


@dataclass(frozen=True)
class MMItem:
    identifier: str
    offset: int
    length: int


@dataclass(frozen=True)
class EmbedsSpec:
    dtype: str  # float32 | float16 | bfloat16
    shape: tuple[int, ...]
    raw: bytes  # little-endian tensor bytes

    def to_tensor(self) -> Any:
        import torch

        if self.dtype not in TORCH_DTYPES:
            raise ValueError(f"unsupported embeds dtype {self.dtype!r}")
        torch_dtype = getattr(torch, self.dtype)
        buf = bytearray(self.raw)
        flat = (
            torch.frombuffer(buf, dtype=torch.uint8) if buf else torch.empty(0, dtype=torch.uint8)
        )
        return flat.view(torch_dtype).reshape(self.shape)


@dataclass
class _Position:
    offset: int
    length: int


@dataclass
class _Feature:
    identifier: str
    mm_position: _Position


@dataclass
class HashBlockCall:
    parent: bytes | None
    tokens: tuple[int, ...]
    extra_keys: tuple[Any, ...] | None
    result: bytes


@dataclass
class FakeRequest:
    """The attributes of ``vllm.v1.request.Request`` that the block hasher reads."""

    _all_token_ids: list[int]
    all_token_ids: Any
    mm_features: list[Any]
    lora_request: Any
    cache_salt: str | None
    prompt_embeds: Any
    block_hasher: Callable[[FakeRequest], list[bytes]] | None = None
    block_hashes: list[bytes] = field(default_factory=list)
    _prompt_embeds_per_block_hashes: dict[tuple[int, int], bytes] = field(default_factory=dict)
    new_hashes_per_call: list[int] = field(default_factory=list)

    @property
    def num_tokens(self) -> int:
        return len(self._all_token_ids)

    def update_block_hashes(self) -> None:
        """Mirror of ``Request.update_block_hashes``; records how many were added."""
        before = len(self.block_hashes)
        if self.block_hasher is not None:
            self.block_hashes.extend(self.block_hasher(self))
        self.new_hashes_per_call.append(len(self.block_hashes) - before)

    def append(self, tokens: int | Sequence[int]) -> None:
        """Mirror of ``Request.append_output_token_ids``."""
        if isinstance(tokens, int):
            self._all_token_ids.append(tokens)
        else:
            self._all_token_ids.extend(tokens)
        self.update_block_hashes()


def _coerce_lora(lora: Any) -> LoraSpec | None:
    if lora is None or isinstance(lora, LoraSpec):
        return lora
    if isinstance(lora, Mapping):
        return LoraSpec(lora["name"], int(lora["int_id"]), lora.get("path"))
    name, int_id, path = lora
    return LoraSpec(name, int(int_id), path)


def _coerce_mm(item: Any) -> MMItem:
    if isinstance(item, MMItem):
        return item
    if isinstance(item, Mapping):
        return MMItem(item["identifier"], int(item["offset"]), int(item["length"]))
    identifier, offset, length = item
    return MMItem(identifier, int(offset), int(length))


def _coerce_embeds(embeds: Any) -> Any:
    if embeds is None:
        return None
    if isinstance(embeds, EmbedsSpec):
        return embeds.to_tensor()
    if isinstance(embeds, Mapping):
        spec = EmbedsSpec(embeds["dtype"], tuple(embeds["shape"]), bytes.fromhex(embeds["hex"]))
        return spec.to_tensor()
    return embeds  # assume a tensor


# --------------------------------------------------------------------------- facade


class VllmHashing:
    """Handle on one release's real hashing code. Create with :func:`load_vllm`."""

    def __init__(
        self,
        version: str,
        cache_dir: Path,
        wheel_path: Path,
        wheel_sha256: str,
        modules: dict[str, types.ModuleType],
        module_modes: dict[str, str],
    ) -> None:
        self.version = version
        self.cache_dir = cache_dir
        self.wheel_path = wheel_path
        self.wheel_sha256 = wheel_sha256
        self.module_modes = dict(sorted(module_modes.items()))
        self.hashing = modules["vllm.utils.hashing"]
        self.kv_cache_utils = modules["vllm.v1.core.kv_cache_utils"]
        self._v1_utils = modules.get("vllm.v1.utils")
        kcu = self.kv_cache_utils
        self.LoRARequest = modules["vllm.lora.request"].LoRARequest
        self.get_request_block_hasher = kcu.get_request_block_hasher
        self.hash_block_tokens = kcu.hash_block_tokens
        self.generate_block_hash_extra_keys = kcu.generate_block_hash_extra_keys
        self.to_event_extra_keys = kcu.to_event_extra_keys
        self.maybe_convert_block_hash = kcu.maybe_convert_block_hash
        self.make_block_hash_with_group_id = kcu.make_block_hash_with_group_id
        self.BlockHashListWithBlockSize = kcu.BlockHashListWithBlockSize

    def __repr__(self) -> str:
        return f"VllmHashing(version={self.version!r}, cache_dir={str(self.cache_dir)!r})"

    # -- hash functions / NONE_HASH

    def hash_fn(self, name: str) -> Callable[[Any], bytes]:
        fn: Callable[[Any], bytes] = self.hashing.get_hash_fn_by_name(name)
        return fn

    def init_none_hash(self, algo_name: str, python_hash_seed: str | None) -> bytes:
        """Run the real ``init_none_hash`` under ``PYTHONHASHSEED=python_hash_seed``."""
        saved = os.environ.get("PYTHONHASHSEED")
        try:
            if python_hash_seed is None:
                os.environ.pop("PYTHONHASHSEED", None)
            else:
                os.environ["PYTHONHASHSEED"] = python_hash_seed
            self.kv_cache_utils.init_none_hash(self.hash_fn(algo_name))
        finally:
            if saved is None:
                os.environ.pop("PYTHONHASHSEED", None)
            else:
                os.environ["PYTHONHASHSEED"] = saved
        none_hash: bytes = self.kv_cache_utils.NONE_HASH
        return none_hash

    def request_block_hasher(
        self, hash_block_size: int, algo_name: str
    ) -> Callable[[Any], list[bytes]]:
        hasher: Callable[[Any], list[bytes]] = self.get_request_block_hasher(
            hash_block_size, self.hash_fn(algo_name)
        )
        return hasher

    # -- requests

    def make_lora_request(self, lora: Any, *, validate: bool = True) -> Any:
        """Real ``LoRARequest`` with msgspec-decoded strings.

        ``validate=False`` skips ``__post_init__`` checks (e.g. 0.31's non-empty path
        assertion) by building a valid object and then setting the path; only for
        replaying third-party vectors that were produced that way.
        """
        spec = _coerce_lora(lora)
        if spec is None:
            return None
        name = engine_str(spec.name)
        path = engine_str(spec.path) if spec.path is not None else None
        if validate:
            return self.LoRARequest(name, spec.int_id, path)
        req = self.LoRARequest(name, max(spec.int_id, 1), engine_str("placeholder"))
        req.lora_int_id = spec.int_id
        req.lora_path = path
        return req

    def make_request(
        self,
        token_ids: Sequence[int],
        *,
        lora: Any = None,
        cache_salt: str | None = None,
        mm_items: Sequence[Any] = (),
        prompt_embeds: Any = None,
        block_hasher: Callable[[Any], list[bytes]] | None = None,
        validate_lora: bool = True,
    ) -> FakeRequest:
        """Build a request and run the hasher once, like ``Request.__init__``."""
        tokens = [int(t) for t in token_ids]
        constant_list = getattr(self._v1_utils, "ConstantList", None)
        all_ids = constant_list(tokens) if isinstance(constant_list, type) else tokens
        features = [
            _Feature(engine_str(m.identifier), _Position(m.offset, m.length))
            for m in map(_coerce_mm, mm_items)
        ]
        req = FakeRequest(
            _all_token_ids=tokens,
            all_token_ids=all_ids,
            mm_features=features,
            lora_request=self.make_lora_request(lora, validate=validate_lora),
            cache_salt=engine_str(cache_salt) if cache_salt is not None else None,
            prompt_embeds=_coerce_embeds(prompt_embeds),
            block_hasher=block_hasher,
        )
        req.update_block_hashes()
        return req

    @contextlib.contextmanager
    def capture_hash_block_calls(self) -> Iterator[list[HashBlockCall]]:
        """Record every real ``hash_block_tokens`` call made through the module."""
        calls: list[HashBlockCall] = []
        real = self.hash_block_tokens
        kcu = self.kv_cache_utils

        def recording(
            hash_function: Callable[[Any], bytes],
            parent_block_hash: bytes | None,
            curr_block_token_ids: Sequence[int],
            extra_keys: tuple[Any, ...] | None = None,
        ) -> bytes:
            result: bytes = real(
                hash_function, parent_block_hash, curr_block_token_ids, extra_keys
            )
            calls.append(
                HashBlockCall(parent_block_hash, tuple(curr_block_token_ids), extra_keys, result)
            )
            return result

        kcu.hash_block_tokens = recording
        try:
            yield calls
        finally:
            kcu.hash_block_tokens = real


@functools.cache
def load_vllm(version: str) -> VllmHashing:
    """Download/extract ``vllm==version`` if needed and load its real hashing code."""
    cache, wheel, wheel_sha = ensure_sources(version)
    finder = _VllmFinder(cache)
    saved = {k: v for k, v in sys.modules.items() if k == "vllm" or k.startswith("vllm.")}
    for k in saved:
        del sys.modules[k]
    sys.meta_path.insert(0, finder)
    try:
        modules = {name: importlib.import_module(name) for name in REAL_MODULES}
        for name in SLICED_MODULES:
            if name in sys.modules:
                modules[name] = sys.modules[name]
        envs = modules["vllm.envs"]
        for key, value in PINNED_ENVS.items():
            setattr(envs, key, value)
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "vllm" or k.startswith("vllm.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    return VllmHashing(version, cache, wheel, wheel_sha, modules, finder.modes)
