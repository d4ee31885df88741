"""Load vLLM's *real* prefix-cache hashing functions from a release wheel (0.7.0-0.33.0).

Maintainer tool (not part of the installed ``prefixkey`` package). It never copies
vLLM source into this repository: the code is downloaded and executed at run time.

How it works
------------
1. ``pip download --no-deps vllm==<version>`` into a cache directory outside the repo
   (``$PREFIXKEY_VLLM_CACHE/<version>/`` if that variable is set, else
   ``~/.cache/prefixkey/vllm/<version>/``). Only the ``.py`` files of the wheel are
   extracted next to it (``<cache>/vllm/...``); the wheel is then deleted and the
   marker ``.prefixkey-extracted`` keeps its file name and sha256.
2. :func:`detect_profile` reads the release's sources (``ast``) and describes its
   hashing API (:class:`ReleaseProfile`): ``hash_request_tokens`` vs
   ``get_request_block_hasher`` (and their parameters, e.g. ``hash_block_size``,
   ``num_hash_lookahead_tokens``), whether ``hash_block_tokens`` takes a hash
   function, ``BlockHashType`` named tuples (<= 0.10.1.1), how NONE_HASH is made
   (none / module constant / ``init_none_hash``), the allowed
   ``PrefixCachingHashAlgo`` values (config) and the decode path.
3. A ``sys.meta_path`` finder serves every ``vllm.*`` import while loading:

   * **real** modules are executed unchanged from the wheel: ``vllm.envs``,
     ``vllm.lora.request``, ``vllm.v1.core.kv_cache_utils``, ``vllm.utils.hashing``
     (0.11.1+), and for the decode path ``vllm.v1.core.block_pool`` (0.8.0-0.10.0)
     or ``vllm.v1.core.kv_cache_manager`` (0.7.x);
   * **slice** modules get only a few top-level definitions of the real file
     (parsed with :mod:`ast`, plus the top-level imports/assignments those
     definitions need): ``get_mm_features_in_window`` (``vllm.multimodal.utils``),
     ``tensor_data`` / ``ConstantList`` (``vllm.v1.utils``), ``cdiv`` / ``round_up``
     (``vllm.utils.math_utils``) and, before ``vllm/utils/hashing.py`` existed,
     ``sha256`` / ``sha256_cbor`` / ``sha256_cbor_64bit`` / ``get_hash_fn_by_name`` /
     ``cdiv`` of ``vllm.utils``. This is still vLLM's code, loaded at run time;
   * every other ``vllm.*`` module is an inert **stub** whose attributes are dummy
     classes (heavy imports such as configs, loggers, KV-cache specs are off the
     hashing path).

   ``vllm.envs.VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES`` is pinned to ``True`` (the
   release default) so ``maybe_convert_block_hash`` returns ints. After loading, the
   ``vllm*`` entries are removed from ``sys.modules`` again (the loaded modules keep
   their own references), so several versions can be loaded in one process and an
   installed vLLM is not disturbed.

Public API (used by ``tools/harvest_vectors.py`` and the benchmarks; keep stable)
---------------------------------------------------------------------------------
``load_vllm(version, python_hash_seed=<any>) -> VllmHashing`` (cached per process).
``python_hash_seed`` is ``PYTHONHASHSEED`` while the modules execute; it matters only
for 0.8.3-0.9.2, whose NONE_HASH is a module constant computed at import.
``load_vllm_fresh(...)`` executes the modules anew (used to detect random NONE_HASH).

``VllmHashing`` attributes / methods:

* ``version``, ``cache_dir``, ``wheel_path`` (may no longer exist), ``wheel_sha256``,
  ``module_modes`` (real/slice/stub per module), ``profile`` (:class:`ReleaseProfile`)
* ``hashing`` / ``kv_cache_utils`` / ``modules``: the loaded real modules
* ``hash_fn(name)``: the release's function for ``--prefix-caching-hash-algo name``
  (``get_hash_fn_by_name`` where it exists; ``builtin`` = Python's ``hash``)
* ``init_none_hash(algo_name, python_hash_seed)``: runs the real ``init_none_hash``
  under that ``PYTHONHASHSEED`` (or unset for ``None``) and returns ``NONE_HASH``
  (module constant / ``None`` for releases without ``init_none_hash``)
* ``request_block_hasher(hash_block_size, algo_name, lookahead=0)`` (0.10.1+)
* ``run_request(token_ids, hash_calls, *, block_size, algo_name, lookahead=0, ...)``:
  hashes a request the way the release's engine does, prompt then appends (see its
  docstring for the per-release decode path) and returns the ``FakeRequest``
* ``make_request(token_ids, *, lora=None, cache_salt=None, mm_items=(),
  prompt_embeds=None, block_hasher=None, validate_lora=True) -> FakeRequest``
  (``lora``: ``LoraSpec``/``(name, int_id, path)``/``{"name","int_id","path"}``;
  ``mm_items``: ``MMItem``/``(identifier, offset, length)``/dicts;
  ``prompt_embeds``: a tensor or ``EmbedsSpec``/``{"dtype","shape","hex"}``)
* ``capture_hash_block_calls()``: context manager yielding a list that receives one
  ``HashBlockCall(parent, tokens, extra_keys, result)`` per real
  ``hash_block_tokens`` invocation (patched in every loaded module that imported it)
* real functions/classes, re-exported unchanged where the release has them (else
  ``None``): ``hash_block_tokens``, ``hash_request_tokens``,
  ``get_request_block_hasher``, ``generate_block_hash_extra_keys``,
  ``to_event_extra_keys``, ``maybe_convert_block_hash``,
  ``make_block_hash_with_group_id``, ``BlockHashListWithBlockSize``, ``LoRARequest``
* ``hash_value(h)``: ``h.hash_value`` for ``BlockHashType`` named tuples, else ``h``

``FakeRequest`` has what every release's hashing code reads (``block_hashes`` /
``kv_block_hashes``, ``num_tokens``, ``all_token_ids`` (real ``ConstantList`` where
it exists), ``mm_features`` and the older ``mm_positions`` (dict *and* attribute
access) / ``mm_hashes``, ``lora_request`` (real ``LoRARequest``), ``cache_salt``,
``prompt_embeds``, ``_prompt_embeds_per_block_hashes``, ``request_id``) and
``append(tokens)`` mirroring ``Request.append_output_token_ids`` +
``update_block_hashes`` (0.10.1+).

Bit-exactness: every string handed to vLLM (LoRA name/path, mm identifiers, cache
salt) is first round-tripped through ``msgspec.msgpack`` like the engine core receives
it, so object identity -- which pickle's memo depends on -- matches production:
distinct objects for multi-character strings, CPython's shared singletons for
1-character Latin-1 strings and for ``""``. Builtin ``hash()`` keys (0.7.0-0.10.1.1)
are only meaningful on CPython >= 3.12 with ``PYTHONHASHSEED`` set; the harvester
runs them in a separate 3.12 process (see ``tools/harvest_vectors.py``).

Example::

    sys.path.insert(0, "tools")
    from vllm_loader import load_vllm
    vh = load_vllm("0.31.0")
    vh.init_none_hash("sha256", "0")
    req = vh.run_request([1, 2, 3, 4, 5], [4, 5], block_size=2, algo_name="sha256")
    print([h.hex() for h in req.block_hashes])
"""

from __future__ import annotations
import __future__

import ast
import collections
import contextlib
import functools
import hashlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import itertools
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
    "ReleaseProfile",
    "VllmHashing",
    "cache_dir_for",
    "detect_profile",
    "engine_str",
    "ensure_sources",
    "hash_value",
    "load_vllm",
    "load_vllm_fresh",
]

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
    # 0.12.0-0.20.2 were published for glibc 2.31+, 0.21.0 as manylinux_2_24
    "--platform",
    "manylinux_2_24_x86_64",
    "--platform",
    "manylinux_2_31_x86_64",
    "--platform",
    "manylinux_2_34_x86_64",
    "--platform",
    "manylinux_2_35_x86_64",
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


def _read_marker(cache: Path) -> tuple[str, str] | None:
    marker = cache / _EXTRACTED_MARKER
    if not (marker.exists() and (cache / "vllm").is_dir()):
        return None
    parts = marker.read_text().split()
    return (parts[0], parts[1]) if len(parts) == 2 else None


def ensure_sources(version: str, *, keep_wheel: bool = False) -> tuple[Path, Path, str]:
    """Download (if needed) and extract the wheel's ``.py`` files.

    Returns ``(cache_dir, wheel_path, wheel_sha256)``; ``cache_dir / "vllm"`` is the
    extracted package. The wheel (~300 MB) is deleted after extraction unless
    ``keep_wheel``; the marker file ``.prefixkey-extracted`` keeps its name and sha256,
    so ``wheel_path`` may name a file that no longer exists.
    """
    cache = cache_dir_for(version)
    cache.mkdir(parents=True, exist_ok=True)
    done = _read_marker(cache)
    if done is not None:
        extracted_from = cache / done[0]
        if not keep_wheel and extracted_from.exists():
            extracted_from.unlink()
        return cache, extracted_from, done[1]
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
    (cache / _EXTRACTED_MARKER).write_text(f"{wheel.name} {wheel_sha}\n")
    if not keep_wheel:
        wheel.unlink()
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


def _stub_getattr(module: types.ModuleType, served: Callable[[str], bool]) -> Callable[[str], Any]:
    cache: dict[str, Any] = {}

    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        sub = f"{module.__name__}.{name}"
        if served(sub):
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

    def __init__(
        self, root: Path, real: Sequence[str], sliced: Mapping[str, Sequence[str]]
    ) -> None:
        self.root = root  # directory containing the ``vllm`` package
        self.real = frozenset(real)
        self.sliced = dict(sliced)
        self.modes: dict[str, str] = {}

    def _served(self, name: str) -> bool:
        return name in self.real or name in self.sliced

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
        if name in self.real:
            if file is None:
                raise ImportError(f"{name} not found in the wheel (unsupported release?)")
            self.modes[name] = "real"
            code = compile(file.read_bytes(), str(file), "exec", dont_inherit=True)
            exec(code, module.__dict__)
            return
        module.__dict__["__getattr__"] = _stub_getattr(module, self._served)
        if name in self.sliced and file is not None:
            self.modes[name] = "slice"
            tree = ast.parse(file.read_bytes(), filename=str(file))
            sliced = _slice_source(tree, self.sliced[name])
            # Annotations stay unevaluated so they can name anything.
            flags = __future__.annotations.compiler_flag
            code = compile(sliced, str(file), "exec", flags=flags, dont_inherit=True)
            exec(code, module.__dict__)
            return
        self.modes[name] = "stub"


# --------------------------------------------------------------------------- profile


def _sig(fn: ast.FunctionDef) -> tuple[str, ...]:
    a = fn.args
    return tuple(x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs))


def _top_level(tree: ast.Module) -> dict[str, ast.stmt]:
    out: dict[str, ast.stmt] = {}
    for node in tree.body:
        for name in _names_bound(node):
            out.setdefault(name, node)
    return out


@dataclass(frozen=True)
class ReleaseProfile:
    """How one release hashes blocks; detected from its sources (never hard-coded).

    * ``api``: ``hash_request_tokens`` (<= 0.10.0) or ``get_request_block_hasher``
    * ``decode_path``: what hashes blocks completed by appended tokens --
      ``KVCacheManager._cache_full_blocks`` (0.7.x), ``BlockPool.cache_full_blocks``
      (0.8.0-0.10.0; both pass start mm index -1) or ``request_block_hasher``
      (0.10.1+, ``Request.append_output_token_ids`` runs the request's hasher)
    * ``none_hash_mode``: ``none`` (no module NONE_HASH), ``module_level`` (computed
      at import from ``PYTHONHASHSEED``) or ``init_none_hash``
    """

    version: str
    hashing_module: str  # vllm.utils.hashing | vllm.utils
    api: str
    api_params: tuple[str, ...]
    hash_block_tokens_params: tuple[str, ...]
    decode_path: str
    none_hash_mode: str
    algos: tuple[str, ...]
    algo_source: str
    named_tuple_hash: bool
    mm_source: str  # mm_features | mm_positions
    supports_lookahead: bool
    hashes_prompt_embeds: bool
    has_to_event_extra_keys: bool
    has_maybe_convert_block_hash: bool

    @property
    def hash_block_tokens_takes_hash_function(self) -> bool:
        return "hash_function" in self.hash_block_tokens_params

    def as_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["hash_block_tokens_takes_hash_function"] = self.hash_block_tokens_takes_hash_function
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def _allowed_algos(root: Path, profile_takes_fn: bool) -> tuple[tuple[str, ...], str]:
    for rel in ("vllm/config/cache.py", "vllm/config.py"):
        path = root / rel
        if not path.exists():
            continue
        for node in ast.parse(path.read_bytes()).body:
            if (
                isinstance(node, ast.Assign)
                and any(
                    isinstance(t, ast.Name) and t.id == "PrefixCachingHashAlgo"
                    for t in node.targets
                )
                and isinstance(node.value, ast.Subscript)
            ):
                elts = node.value.slice
                items = elts.elts if isinstance(elts, ast.Tuple) else [elts]
                names = tuple(
                    e.value for e in items
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                )
                return names, f"{rel}:PrefixCachingHashAlgo"
    path = root / "vllm/v1/core/kv_cache_manager.py"
    if profile_takes_fn and path.exists() and '== "sha256"' in path.read_text():
        return ("builtin", "sha256"), "kv_cache_manager: sha256 if algo == 'sha256' else hash"
    return ("builtin",), "hash_block_tokens calls builtin hash()"


def detect_profile(version: str, root: Path) -> ReleaseProfile:
    """Read a release's sources (``root`` contains ``vllm/``) and describe its API."""
    kcu_src = (root / "vllm/v1/core/kv_cache_utils.py").read_text()
    kcu = _top_level(ast.parse(kcu_src))

    def params(name: str) -> tuple[str, ...]:
        node = kcu.get(name)
        return _sig(node) if isinstance(node, ast.FunctionDef) else ()

    hashing_module = (
        "vllm.utils.hashing" if (root / "vllm/utils/hashing.py").exists() else "vllm.utils"
    )
    if "get_request_block_hasher" in kcu:
        api, api_params = "get_request_block_hasher", params("get_request_block_hasher")
        decode_path = "request_block_hasher"
    else:
        api, api_params = "hash_request_tokens", params("hash_request_tokens")
        bp = root / "vllm/v1/core/block_pool.py"
        decode_path = (
            "BlockPool.cache_full_blocks"
            if bp.exists() and "def cache_full_blocks" in bp.read_text()
            else "KVCacheManager._cache_full_blocks"
        )
    if "init_none_hash" in kcu:
        none_hash_mode = "init_none_hash"
    elif "NONE_HASH" in kcu:
        none_hash_mode = "module_level"
    else:
        none_hash_mode = "none"
    hbt = params("hash_block_tokens")
    algos, algo_source = _allowed_algos(root, "hash_function" in hbt)
    return ReleaseProfile(
        version=version,
        hashing_module=hashing_module,
        api=api,
        api_params=api_params,
        hash_block_tokens_params=hbt,
        decode_path=decode_path,
        none_hash_mode=none_hash_mode,
        algos=algos,
        algo_source=algo_source,
        named_tuple_hash="BlockHashType" in kcu or isinstance(kcu.get("BlockHash"), ast.ClassDef),
        mm_source="mm_features" if "mm_features" in kcu_src else "mm_positions",
        supports_lookahead="num_hash_lookahead_tokens" in api_params,
        hashes_prompt_embeds="prompt_embeds" in kcu_src,
        has_to_event_extra_keys="to_event_extra_keys" in kcu,
        has_maybe_convert_block_hash="maybe_convert_block_hash" in kcu,
    )


def _module_tables(profile: ReleaseProfile) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """Real and sliced modules for one release."""
    real = ["vllm.envs", "vllm.lora.request", "vllm.v1.core.kv_cache_utils"]
    sliced: dict[str, tuple[str, ...]] = {
        "vllm.multimodal.utils": ("get_mm_features_in_window",),
        "vllm.v1.utils": ("tensor_data", "ConstantList"),
        "vllm.utils.math_utils": ("cdiv", "round_up"),
    }
    if profile.hashing_module == "vllm.utils.hashing":
        real.append("vllm.utils.hashing")
    else:
        sliced["vllm.utils"] = (
            "sha256",
            "sha256_cbor",
            "sha256_cbor_64bit",
            "get_hash_fn_by_name",
            "cdiv",
            "round_up",
        )
    if profile.decode_path == "BlockPool.cache_full_blocks":
        real.append("vllm.v1.core.block_pool")
    elif profile.decode_path == "KVCacheManager._cache_full_blocks":
        real.append("vllm.v1.core.kv_cache_manager")
    return tuple(real), sliced


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


class _Position(dict):  # type: ignore[type-arg]
    """Placeholder range: ``pos["offset"]`` (0.7.x TypedDict) and ``pos.offset``."""

    def __init__(self, offset: int, length: int) -> None:
        super().__init__(offset=offset, length=length)
        self.offset = offset
        self.length = length


@dataclass
class _Feature:
    identifier: str
    mm_position: _Position


@dataclass
class HashBlockCall:
    parent: Any
    tokens: tuple[int, ...]
    extra_keys: Any
    result: Any


@dataclass
class FakeRequest:
    """The attributes of ``vllm.v1.request.Request`` that the hashing code reads.

    Covers every era: ``mm_positions``/``mm_hashes`` (<= 0.10.x) and ``mm_features``
    (0.11+), ``kv_block_hashes`` (0.7.x) / ``block_hashes``.
    """

    _all_token_ids: list[int]
    all_token_ids: Any
    mm_features: list[Any]
    lora_request: Any
    cache_salt: str | None
    prompt_embeds: Any
    block_hasher: Callable[[FakeRequest], list[Any]] | None = None
    block_hashes: list[Any] = field(default_factory=list)
    _prompt_embeds_per_block_hashes: dict[tuple[int, int], bytes] = field(default_factory=dict)
    new_hashes_per_call: list[int] = field(default_factory=list)
    request_id: str = "prefixkey-request"

    @property
    def num_tokens(self) -> int:
        return len(self._all_token_ids)

    @property
    def mm_positions(self) -> list[_Position]:
        return [f.mm_position for f in self.mm_features]

    @property
    def mm_hashes(self) -> list[str]:
        return [f.identifier for f in self.mm_features]

    # 0.7.x Request API
    @property
    def kv_block_hashes(self) -> list[Any]:
        return self.block_hashes

    def set_kv_block_hashes(self, value: list[Any]) -> None:
        self.block_hashes = value

    def append_kv_block_hashes(self, block_hash: Any) -> None:
        self.block_hashes.append(block_hash)

    def update_block_hashes(self) -> None:
        """Mirror of ``Request.update_block_hashes``; records how many were added."""
        before = len(self.block_hashes)
        if self.block_hasher is not None:
            self.block_hashes.extend(self.block_hasher(self))
        self.new_hashes_per_call.append(len(self.block_hashes) - before)

    def extend_tokens(self, tokens: int | Sequence[int]) -> None:
        if isinstance(tokens, int):
            self._all_token_ids.append(tokens)
        else:
            self._all_token_ids.extend(tokens)

    def append(self, tokens: int | Sequence[int]) -> None:
        """Mirror of ``Request.append_output_token_ids`` (0.10.1+)."""
        self.extend_tokens(tokens)
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


def _coerce_embeds(embeds: Any, *, needed: bool = True) -> Any:
    if embeds is None:
        return None
    if isinstance(embeds, Mapping):
        embeds = EmbedsSpec(embeds["dtype"], tuple(embeds["shape"]), bytes.fromhex(embeds["hex"]))
    if isinstance(embeds, EmbedsSpec):
        # Releases that never read prompt_embeds (< 0.11.1) get the spec itself, so
        # the builtin-hash worker does not need torch.
        return embeds.to_tensor() if needed else embeds
    return embeds  # assume a tensor


def hash_value(block_hash: Any) -> Any:
    """The value that chains / gets recorded: ``.hash_value`` of a ``BlockHashType``."""
    return getattr(block_hash, "hash_value", block_hash)


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
        profile: ReleaseProfile,
        load_seed: str | None,
    ) -> None:
        self.version = version
        self.cache_dir = cache_dir
        self.wheel_path = wheel_path
        self.wheel_sha256 = wheel_sha256
        self.module_modes = dict(sorted(module_modes.items()))
        self.profile = profile
        self.load_seed = load_seed  # PYTHONHASHSEED while the modules were executed
        self.modules = modules
        self.hashing = modules[profile.hashing_module]
        self.kv_cache_utils = modules["vllm.v1.core.kv_cache_utils"]
        self._v1_utils = modules.get("vllm.v1.utils")
        kcu = self.kv_cache_utils
        self.LoRARequest = modules["vllm.lora.request"].LoRARequest
        self.get_request_block_hasher = getattr(kcu, "get_request_block_hasher", None)
        self.hash_request_tokens: Callable[..., Any] | None = getattr(
            kcu, "hash_request_tokens", None
        )
        self.hash_block_tokens = kcu.hash_block_tokens
        self.generate_block_hash_extra_keys = kcu.generate_block_hash_extra_keys
        self.to_event_extra_keys = getattr(kcu, "to_event_extra_keys", None)
        self.maybe_convert_block_hash = getattr(kcu, "maybe_convert_block_hash", None)
        self.make_block_hash_with_group_id = getattr(kcu, "make_block_hash_with_group_id", None)
        self.BlockHashListWithBlockSize = getattr(kcu, "BlockHashListWithBlockSize", None)

    def __repr__(self) -> str:
        return f"VllmHashing(version={self.version!r}, cache_dir={str(self.cache_dir)!r})"

    # -- hash functions / NONE_HASH

    def hash_fn(self, name: str) -> Callable[[Any], Any]:
        """The release's hash function for ``--prefix-caching-hash-algo name``.

        Uses the release's ``get_hash_fn_by_name`` where it exists; before that the
        engine picked ``sha256`` / ``sha256_cbor_64bit`` from ``vllm.utils`` or the
        builtin ``hash`` (``kv_cache_manager.py``), which is mirrored here.
        """
        if name not in self.profile.algos:
            raise ValueError(f"hash algo {name!r} not offered by vLLM {self.version}")
        # vars(): a sliced module answers every other attribute with a stub.
        getter = vars(self.hashing).get("get_hash_fn_by_name")
        if callable(getter) and name != "builtin":
            fn: Callable[[Any], Any] = getter(name)
            return fn
        if name == "builtin":
            return hash
        fn = vars(self.hashing)[name]
        return fn

    @property
    def none_hash(self) -> Any:
        """The module's current ``NONE_HASH`` (``None`` when the release has none)."""
        return getattr(self.kv_cache_utils, "NONE_HASH", None)

    def init_none_hash(self, algo_name: str, python_hash_seed: str | None) -> Any:
        """Run the real ``init_none_hash`` under ``PYTHONHASHSEED=python_hash_seed``.

        Releases without ``init_none_hash`` computed NONE_HASH at import (see
        :func:`load_vllm`'s ``python_hash_seed``) or have none; their value is returned.
        """
        if self.profile.none_hash_mode != "init_none_hash":
            return self.none_hash
        with _hash_seed_env(python_hash_seed):
            self.kv_cache_utils.init_none_hash(self.hash_fn(algo_name))
        return self.none_hash

    def request_block_hasher(
        self, hash_block_size: int, algo_name: str, lookahead: int = 0
    ) -> Callable[[Any], list[Any]]:
        """Real ``get_request_block_hasher(hash_block_size, hash_fn[, lookahead])``."""
        if self.get_request_block_hasher is None:
            raise NotImplementedError(f"vLLM {self.version} has no get_request_block_hasher")
        args: list[Any] = [hash_block_size, self.hash_fn(algo_name)]
        if lookahead:
            if not self.profile.supports_lookahead:
                raise NotImplementedError(f"vLLM {self.version} has no lookahead hashing")
            args.append(lookahead)
        hasher: Callable[[Any], list[Any]] = self.get_request_block_hasher(*args)
        return hasher

    # -- requests

    def make_lora_request(self, lora: Any, *, validate: bool = True) -> Any:
        """Real ``LoRARequest`` with msgspec-decoded strings.

        ``validate=False`` skips ``__post_init__`` checks (e.g. the non-empty path
        assertion) by building a valid object and then setting the fields; only for
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
        block_hasher: Callable[[Any], list[Any]] | None = None,
        validate_lora: bool = True,
        run_hasher: bool = True,
    ) -> FakeRequest:
        """Build a request; with a ``block_hasher`` run it once, like ``Request.__init__``."""
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
            prompt_embeds=_coerce_embeds(prompt_embeds, needed=self.profile.hashes_prompt_embeds),
            block_hasher=block_hasher,
        )
        if run_hasher:
            req.update_block_hashes()
        return req

    def run_request(
        self,
        token_ids: Sequence[int],
        hash_calls: Sequence[int],
        *,
        block_size: int,
        algo_name: str,
        lookahead: int = 0,
        validate_lora: bool = True,
        **request_kwargs: Any,
    ) -> FakeRequest:
        """Hash a request the way the release's engine does, one pass per hash call.

        ``hash_calls[0]`` tokens form the prompt; each later entry appends tokens up to
        that count. Per release (``profile.decode_path``):

        * ``request_block_hasher`` (0.10.1+): the hasher from ``get_request_block_hasher``
          runs in the request constructor and on every ``append_output_token_ids``.
        * ``BlockPool.cache_full_blocks`` (0.8.0-0.10.0): the prompt is hashed by
          ``hash_request_tokens`` (``KVCacheManager.get_computed_blocks``); then, like
          ``KVCacheManager.allocate_slots``, the real ``BlockPool.cache_full_blocks``
          caches blocks ``[num_cached, num_tokens // block_size)`` after every call,
          hashing the ones without a hash (start mm index -1).
        * ``KVCacheManager._cache_full_blocks`` (0.7.x): same with the manager's own
          method (``allocate_slots`` / ``append_slots``).

        ``FakeRequest.block_hashes`` holds the release's raw objects
        (``BlockHashType`` named tuples, ints or bytes).
        """
        tokens = [int(t) for t in token_ids]
        calls = list(hash_calls)
        path = self.profile.decode_path
        if lookahead and not self.profile.supports_lookahead:
            raise NotImplementedError(f"lookahead hashing not in vLLM {self.version}")
        if path == "request_block_hasher":
            hasher = self.request_block_hasher(block_size, algo_name, lookahead)
            req = self.make_request(
                tokens[: calls[0]],
                block_hasher=hasher,
                validate_lora=validate_lora,
                **request_kwargs,
            )
            for prev, upto in itertools.pairwise(calls):
                new = tokens[prev:upto]
                req.append(new[0] if len(new) == 1 else new)
            return req
        req = self.make_request(
            tokens[: calls[0]], validate_lora=validate_lora, run_hasher=False, **request_kwargs
        )
        hash_fn = self.hash_fn(algo_name)
        api_args = {"hash_function": hash_fn, "block_size": block_size, "request": req}
        # Releases without request_block_hasher (<= 0.10.0) all have hash_request_tokens.
        assert self.hash_request_tokens is not None, f"vLLM {self.version}: no hashing API"
        prompt_hashes = self.hash_request_tokens(*(api_args[p] for p in self.profile.api_params))
        req.set_kv_block_hashes(list(prompt_hashes))
        req.new_hashes_per_call.append(len(req.block_hashes))
        cacher = _BlockCacher(self, req, block_size, hash_fn)
        cacher.cache_full_blocks()
        for prev, upto in itertools.pairwise(calls):
            before = len(req.block_hashes)
            req.extend_tokens(tokens[prev:upto])
            cacher.cache_full_blocks()
            req.new_hashes_per_call.append(len(req.block_hashes) - before)
        return req

    @contextlib.contextmanager
    def capture_hash_block_calls(self) -> Iterator[list[HashBlockCall]]:
        """Record every real ``hash_block_tokens`` call (in every module that uses it)."""
        calls: list[HashBlockCall] = []
        real = self.hash_block_tokens
        signature = inspect.signature(real)

        def recording(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            calls.append(
                HashBlockCall(
                    a["parent_block_hash"],
                    tuple(a["curr_block_token_ids"]),
                    a.get("extra_keys"),
                    result,
                )
            )
            return result

        patched = [
            m for m in self.modules.values() if getattr(m, "hash_block_tokens", None) is real
        ]
        for mod in patched:
            mod.hash_block_tokens = recording  # type: ignore[attr-defined]
        try:
            yield calls
        finally:
            for mod in patched:
                mod.hash_block_tokens = real  # type: ignore[attr-defined]


class _BlockCacher:
    """Drives the release's real block-caching method like ``KVCacheManager`` does."""

    def __init__(
        self, vh: VllmHashing, req: FakeRequest, block_size: int, hash_fn: Callable[[Any], Any]
    ) -> None:
        self.vh = vh
        self.req = req
        self.block_size = block_size
        self.hash_fn = hash_fn
        self.kv_block_cls = vh.kv_cache_utils.KVCacheBlock
        self.blocks: list[Any] = []
        self.num_cached = 0
        if vh.profile.decode_path == "BlockPool.cache_full_blocks":
            pool_cls = vh.modules["vllm.v1.core.block_pool"].BlockPool
            self.owner = object.__new__(pool_cls)
            self.method = self.owner.cache_full_blocks
        else:
            mgr_cls = vh.modules["vllm.v1.core.kv_cache_manager"].KVCacheManager
            self.owner = object.__new__(mgr_cls)
            self.owner.block_size = block_size
            # 0.7.3+ keep the request's hashes in the manager (0.7.0-0.7.2: on the request)
            self.owner.req_to_block_hashes = {req.request_id: req.block_hashes}
            self.method = self.owner._cache_full_blocks
        # The state cache_full_blocks touches besides its arguments.
        self.owner.cached_block_hash_to_block = collections.defaultdict(dict)
        self.owner.enable_kv_cache_events = False
        self.owner.kv_event_queue = []
        self.owner.enable_caching = True

    def cache_full_blocks(self) -> None:
        num_full = self.req.num_tokens // self.block_size
        while len(self.blocks) < num_full:
            self.blocks.append(self.kv_block_cls(len(self.blocks) + 1))
        if num_full <= self.num_cached:
            return
        if self.vh.profile.decode_path == "BlockPool.cache_full_blocks":
            values = {
                "request": self.req,
                "blocks": self.blocks,
                "block_hashes": self.req.block_hashes,
                "num_cached_blocks": self.num_cached,
                "num_full_blocks": num_full,
                "block_size": self.block_size,
                "kv_cache_group_id": 0,
                "hash_fn": self.hash_fn,
            }
            params = list(inspect.signature(self.method).parameters)
            self.method(**{p: values[p] for p in params})
        else:
            prev = self.blocks[self.num_cached - 1] if self.num_cached else None
            self.method(self.req, self.num_cached, self.blocks[self.num_cached : num_full], prev)
        self.num_cached = num_full


@contextlib.contextmanager
def _hash_seed_env(seed: str | None) -> Iterator[None]:
    saved = os.environ.get("PYTHONHASHSEED")
    try:
        if seed is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = seed
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONHASHSEED", None)
        else:
            os.environ["PYTHONHASHSEED"] = saved


_ANY_SEED = "\0any"


def load_vllm(version: str, python_hash_seed: str | None = _ANY_SEED) -> VllmHashing:
    """Download/extract ``vllm==version`` if needed and load its real hashing code.

    ``python_hash_seed``: ``PYTHONHASHSEED`` while the modules execute (``None`` =
    unset). It only matters for releases whose NONE_HASH is a module constant
    (0.8.3-0.9.2); for the others one load serves every seed. Cached per process.
    """
    cache, _, _ = ensure_sources(version)
    profile = detect_profile(version, cache)
    if profile.none_hash_mode != "module_level":
        python_hash_seed = _ANY_SEED
    return _load_cached(version, python_hash_seed)


@functools.cache
def _load_cached(version: str, python_hash_seed: str | None) -> VllmHashing:
    return load_vllm_fresh(version, python_hash_seed)


def load_vllm_fresh(version: str, python_hash_seed: str | None = _ANY_SEED) -> VllmHashing:
    """Like :func:`load_vllm` but always executes the modules anew (not cached)."""
    cache, wheel, wheel_sha = ensure_sources(version)
    profile = detect_profile(version, cache)
    real, sliced = _module_tables(profile)
    finder = _VllmFinder(cache, real, sliced)
    saved = {k: v for k, v in sys.modules.items() if k == "vllm" or k.startswith("vllm.")}
    for k in saved:
        del sys.modules[k]
    sys.meta_path.insert(0, finder)
    env = (
        contextlib.nullcontext()
        if python_hash_seed == _ANY_SEED
        else _hash_seed_env(python_hash_seed)
    )
    try:
        with env:
            wanted = [n for n in real if n != "vllm.envs" and finder._paths(n)[0] is not None]
            modules = {
                name: importlib.import_module(name) for name in (*wanted, profile.hashing_module)
            }
        for name in (*sliced, "vllm.envs"):
            if name in sys.modules:
                modules[name] = sys.modules[name]
        envs = modules.get("vllm.envs")
        if envs is not None:
            for key, value in PINNED_ENVS.items():
                setattr(envs, key, value)
    finally:
        sys.meta_path.remove(finder)
        for k in [k for k in sys.modules if k == "vllm" or k.startswith("vllm.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    seed = None if python_hash_seed == _ANY_SEED else python_hash_seed
    return VllmHashing(version, cache, wheel, wheel_sha, modules, finder.modes, profile, seed)
