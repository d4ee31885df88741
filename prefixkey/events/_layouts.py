"""The event decoder's fast path: each wire layout's checks, compiled once and reused.

An event's *layout* is what its shape says before its values are looked at:
for a map event (0.24+) its keys in wire order and its tag, for an array
event its tag and length. vLLM writes every event of a kind the same way, so
a replica sends a handful of layouts. For each one this module compiles, once,
which value position feeds which field of the event class, the field names a
release does not know (ignored and reported), and the exact Python types each
position may hold; then it remembers each tuple of value types that passed
(*signatures*), so checking a well-formed event's scalar fields is one set
lookup, and the event is built positionally from its values.

The fast path takes a batch whole: every event's layout and signature,
then the hash and token-id arrays of all its events typed in one scan. It
accepts exactly what the reference path
(:meth:`EventDecoder._event <prefixkey.events.EventDecoder>`) accepts and
builds the same events; a batch with anything it does not recognise (a new
layout once the caches are full, a signature that fails, element types that
fail) goes to the reference path, event by event, which raises the typed
error naming the field and the first failing event. The caches are bounded,
so a hostile stream of distinct layouts costs the reference path's time
(and the fast path's attempt before it), never memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from operator import countOf, itemgetter
from typing import Any, Final, NamedTuple, TypeAlias

from ._model import (
    AllBlocksCleared,
    BlockRemoved,
    BlockStored,
    EventBatch,
    EventHash,
    KVCacheEvent,
)

#: Exact types msgpack decodes to here (arrays as tuples, maps as pair lists).
_NIL: Final = type(None)
_ANY: Final[frozenset[type]] = frozenset({_NIL, bool, int, float, str, bytes, tuple, list})
_STR_OR_NIL: Final[frozenset[type]] = frozenset({str, _NIL})
_INT_OR_NIL: Final[frozenset[type]] = frozenset({int, _NIL})
_ARRAY_OR_NIL: Final[frozenset[type]] = frozenset({tuple, _NIL})
_STR: Final[frozenset[type]] = frozenset({str})
#: Appended to an event's values: what its absent fields read.
_ABSENT: Final = (None,)

#: What each field's value may be at the top level (elements are checked apart).
_FIELD_TYPES: Final[dict[str, frozenset[type]]] = {
    "block_hashes": frozenset({tuple}),
    "parent_block_hash": frozenset({int, bytes, _NIL}),
    "token_ids": frozenset({tuple}),
    "block_size": frozenset({int}),
    "lora_id": _INT_OR_NIL,
    "group_idx": _INT_OR_NIL,
    "kv_cache_spec_sliding_window": _INT_OR_NIL,
    "extra_keys": _ARRAY_OR_NIL,
    "lookahead_token_ids": _ARRAY_OR_NIL,
}
_CLASSES: Final[dict[str, type[BlockStored] | type[BlockRemoved]]] = {
    "BlockStored": BlockStored, "BlockRemoved": BlockRemoved}
#: One shared value: AllBlocksCleared has no fields.
_CLEARED: Final = AllBlocksCleared()

#: Bounds on the caches (layouts per decoder, signatures per layout) and on the
#: names a cached layout may carry: past them the reference path decodes.
_MAX_LAYOUTS: Final = 64
_MAX_SIGNATURES: Final = 32
_MAX_KEY_CHARS: Final = 2048
#: Elements of a batch's arrays typed through a list (faster), beyond which they are counted
#: one by one (no list of millions).
_SCAN: Final = 1 << 16

#: What an index needs of an event, without building the event: ``(kind, block_hashes,
#: medium, group_idx)``, ``kind`` being :data:`STORED`, :data:`REMOVED` or :data:`CLEARED`
#: (then ``((), None, None)``). A plain tuple: what the decoder's fast path builds per event.
BlockOp: TypeAlias = "tuple[int, tuple[EventHash, ...], str | None, int | None]"
#: A :data:`BlockOp`'s kind: ``BlockStored``.
STORED: Final = 0
#: A :data:`BlockOp`'s kind: ``BlockRemoved``.
REMOVED: Final = 1
#: A :data:`BlockOp`'s kind: ``AllBlocksCleared``.
CLEARED: Final = 2
CLEARED_OP: Final[BlockOp] = (CLEARED, (), None, None)


class DecodedOps(NamedTuple):
    """A payload as :meth:`~prefixkey.events.EventDecoder.ops` decodes it: the batch's
    ``ts`` and ``data_parallel_rank``, one :data:`BlockOp` per event, and the decoder's
    warnings (ignored unknown fields). What every index backend applies
    (``apply_ops``)."""

    ts: float
    data_parallel_rank: int | None
    ops: Sequence[BlockOp]
    warnings: tuple[str, ...] = ()

    @classmethod
    def of_batch(cls, batch: EventBatch, warnings: tuple[str, ...] = ()) -> DecodedOps:
        """The ops of a decoded batch (the same as ``ops()`` of its payload)."""
        return cls(batch.ts, batch.data_parallel_rank, list(map(op_of, batch.events)),
                   warnings)


def op_of(event: KVCacheEvent) -> BlockOp:
    """An event object's :data:`BlockOp` (what the reference path built)."""
    if isinstance(event, BlockStored):
        return (STORED, event.block_hashes, event.medium, event.group_idx)
    if isinstance(event, BlockRemoved):
        return (REMOVED, event.block_hashes, event.medium, event.group_idx)
    return CLEARED_OP


#: The reference path: (event index, raw event, warnings) -> the event, or a typed error.
Reference: TypeAlias = Callable[[int, Any, list[str]], KVCacheEvent]
#: A field checked by the reference path's own code: (event index, field, value).
FieldCheck: TypeAlias = Callable[[int, str, Any], Any]


def _cleared(values: tuple[Any, ...]) -> KVCacheEvent:
    return _CLEARED


def _cleared_op(values: tuple[Any, ...]) -> BlockOp:
    return CLEARED_OP


def _builders(cls: type[BlockStored] | type[BlockRemoved], names: tuple[str, ...],
              positions: dict[str, int], width: int,
              ) -> tuple[Callable[[tuple[Any, ...]], KVCacheEvent],
                         Callable[[tuple[Any, ...]], BlockOp]]:
    """The event and the :data:`BlockOp` of a layout's values, positionally.

    Absent fields read the None appended after the values (``_ABSENT``).
    """
    code = STORED if cls is BlockStored else REMOVED
    op_at = [positions.get(n, width) for n in ("block_hashes", "medium", "group_idx")]
    get_op = itemgetter(*op_at)
    at = [positions.get(n, width) for n in names]
    get: Callable[[tuple[Any, ...]], tuple[Any, ...]] = itemgetter(*at)
    if len(at) == 1:  # 0.9's BlockRemoved: an itemgetter of one index returns no tuple
        def get(values: tuple[Any, ...], one: int = at[0]) -> tuple[Any, ...]:
            return (values[one],)

    def build(values: tuple[Any, ...]) -> KVCacheEvent:
        return cls(*get(values + _ABSENT))

    def op(values: tuple[Any, ...]) -> BlockOp:
        return (code, *get_op(values + _ABSENT))

    def op_present(values: tuple[Any, ...]) -> BlockOp:
        return (code, *get_op(values))

    # All three published (0.20+ with group_idx): no copy of the values per event.
    return build, (op_present if max(op_at) < width else op)


class _Layout:
    """One compiled layout: where each field's value is and what it may be."""

    __slots__ = ("allowed", "build", "extra", "hashes", "ignored", "look", "note", "op",
                 "plain", "signatures", "tokens")

    def __init__(self, names: tuple[str, ...], positions: dict[str, int], width: int,
                 tag_at: int, cls: type[BlockStored] | type[BlockRemoved] | None,
                 ignored: tuple[str, ...], note: str) -> None:
        allowed = [_ANY] * width
        for name, at in positions.items():
            allowed[at] = _FIELD_TYPES.get(name, _STR_OR_NIL)
        allowed[tag_at] = _STR
        self.allowed = tuple(allowed)
        self.signatures: set[tuple[type, ...]] = set()
        self.ignored = ignored  # counter keys of the names the release does not know
        self.note = note  # the warning's text after "events[i] "
        self.hashes = positions.get("block_hashes", -1)
        self.tokens = positions.get("token_ids", -1)
        self.extra = positions.get("extra_keys", -1)
        self.look = positions.get("lookahead_token_ids", -1)
        #: Nothing to count or check beyond the signature and the two arrays.
        self.plain = not ignored and self.extra < 0 and self.look < 0
        self.build: Callable[[tuple[Any, ...]], KVCacheEvent] = _cleared
        self.op: Callable[[tuple[Any, ...]], BlockOp] = _cleared_op
        if cls is not None:
            self.build, self.op = _builders(cls, names, positions, width)

    def admits(self, signature: tuple[type, ...]) -> bool:
        """Whether values of these types pass the scalar checks (remembered when they do)."""
        if signature in self.signatures:
            return True
        if len(signature) != len(self.allowed) or not all(
                map(frozenset.__contains__, self.allowed, signature)):
            return False
        if len(self.signatures) < _MAX_SIGNATURES:
            self.signatures.add(signature)
        return True


def _counted(arrays: list[tuple[Any, ...]], *types: type) -> int:
    """How many elements of ``arrays`` are of none of ``types`` (exactly).

    A list of the types is counted fastest; past ``_SCAN`` elements they are
    counted as they come, so that no list that large is allocated.
    """
    size = sum(map(len, arrays))
    kinds = map(type, chain.from_iterable(arrays))
    if size <= _SCAN:
        listed = list(kinds)
        return size - sum(map(listed.count, types))
    if len(types) == 1:
        return size - countOf(kinds, types[0])
    allowed = frozenset(types)
    return size - sum(map(allowed.__contains__, kinds))


class EventLayouts:
    """The compiled layouts of one decoder's wire era, and the fast loop over a batch."""

    def __init__(self, fields: dict[str, tuple[tuple[str, ...], int]], encoding: str,
                 since: str, reference: Reference, field_check: FieldCheck,
                 ignored: Counter[str]) -> None:
        self._fields = fields
        self._maps = encoding == "map"
        self._since = since
        self._reference = reference
        self._field = field_check
        self._ignored = ignored  # the decoder's running count
        #: Keys in wire order -> (position of "type", layout per tag), or None: reference path.
        self._map_layouts: dict[tuple[str, ...], tuple[int, dict[str, _Layout]]] = {}
        self._array_layouts: dict[tuple[str, int], _Layout | None] = {}

    def events(self, events: tuple[Any, ...], warnings: list[str]) -> tuple[KVCacheEvent, ...]:
        """Every event of a batch, the fast way where its layout is known."""
        return tuple(self._each(events, warnings, False))

    def ops(self, events: tuple[Any, ...], warnings: list[str]) -> list[BlockOp]:
        """Every event of a batch as a :data:`BlockOp`, building no event objects."""
        return self._each(events, warnings, True)

    def _each(self, events: tuple[Any, ...], warnings: list[str], ops: bool) -> list[Any]:
        fast = self._batch(events, warnings, ops)
        if fast is not None:
            return fast
        # Something to report or reject (or caches full): the reference path, event by event.
        decoded = [self._reference(i, raw, warnings) for i, raw in enumerate(events)]
        return list(map(op_of, decoded)) if ops else decoded

    def _batch(self, events: tuple[Any, ...], warnings: list[str], ops: bool,
               ) -> list[Any] | None:
        """The whole batch the fast way when every event's layout and signature pass, or None.

        The hashes and token ids of all its events are typed in one scan at the
        end (a type per element is what tells a bool from an int; one scan of
        the batch spares a call and a tuple per event). Events with more to
        check (``_rest``) are checked after that, in order, so that nothing is
        counted or warned before the batch is known to pass: on None the
        reference path decodes it from the start and names the first failure.
        """
        out: list[Any] = []
        append = out.append
        hashes: list[tuple[Any, ...]] = []
        tokens: list[tuple[Any, ...]] = []
        rest: list[tuple[int, _Layout, tuple[Any, ...]]] = []
        maps, map_layouts, array_layouts = self._maps, self._map_layouts, self._array_layouts
        for raw in events:
            layout: _Layout | None = None
            if maps:
                if type(raw) is not list or not raw:
                    return None
                # msgpack's pairs are always 2-tuples: nothing for strict= to catch, and
                # the keyword costs a third of the call.
                keys, values = zip(*raw)  # noqa: B905
                compiled = map_layouts.get(keys) or self._map_layout(keys)
                if compiled is None:
                    return None
                tag = values[compiled[0]]
                if type(tag) is str:
                    layout = compiled[1].get(tag)
            else:
                if type(raw) is not tuple or not raw or type(raw[0]) is not str:
                    return None
                values = raw
                shape = (raw[0], len(raw))
                layout = array_layouts.get(shape)
                if layout is None and shape not in array_layouts:
                    layout = self._array_layout(shape)
            if layout is None:
                return None
            signature = tuple(map(type, values))
            if signature not in layout.signatures and not layout.admits(signature):
                return None
            if layout.hashes >= 0:
                hashes.append(values[layout.hashes])
            if layout.tokens >= 0:
                tokens.append(values[layout.tokens])
            if not layout.plain:
                rest.append((len(out), layout, values))
            append(layout.op(values) if ops else layout.build(values))
        # Not all ints: digest-bytes hashes, or a failure.
        if _counted(hashes + tokens, int) and (_counted(tokens, int)
                                               or _counted(hashes, int, bytes)):
            return None
        for i, layout, values in rest:
            self._rest(i, layout, values, warnings)
        return out

    def _rest(self, i: int, layout: _Layout, values: tuple[Any, ...],
              warnings: list[str]) -> None:
        """An admitted event's ignored fields, then its extra keys and lookahead tokens."""
        if layout.ignored:  # counted before the fields are checked, as the reference path does
            for key in layout.ignored:
                self._ignored[key] += 1
            warnings.append(f"events[{i}] {layout.note}")
        if layout.extra >= 0 and values[layout.extra] is not None:
            self._field(i, "extra_keys", values[layout.extra])  # raises where it fails
        if layout.look >= 0 and values[layout.look] is not None:
            self._field(i, "lookahead_token_ids", values[layout.look])

    def _map_layout(self, keys: tuple[Any, ...]) -> tuple[int, dict[str, _Layout]] | None:
        """Compile (and cache, within bounds) a map layout; None: the reference path's case."""
        if (len(self._map_layouts) >= _MAX_LAYOUTS or not all(type(k) is str for k in keys)
                or len(set(keys)) != len(keys) or "type" not in keys
                or sum(map(len, keys)) > _MAX_KEY_CHARS):
            return None
        tag_at = keys.index("type")
        by_tag: dict[str, _Layout] = {}
        for tag, (names, required) in self._fields.items():
            positions = {name: keys.index(name) for name in names if name in keys}
            if any(name not in positions for name in names[:required]):
                continue  # the reference path names the missing field
            unknown = sorted(k for k in keys if k != "type" and k not in positions)
            by_tag[tag] = _Layout(
                names, positions, len(keys), tag_at, _CLASSES.get(tag),
                tuple(f"{tag}.{k}" for k in unknown),
                f"{tag}: unknown key(s) ignored: {', '.join(unknown)}")
        compiled = self._map_layouts[keys] = (tag_at, by_tag)
        return compiled

    def _array_layout(self, shape: tuple[str, int]) -> _Layout | None:
        """Compile (and cache) an array layout ``(tag, length)``; None: the reference path's."""
        tag, length = shape
        spec = self._fields.get(tag)
        if spec is None or len(self._array_layouts) >= _MAX_LAYOUTS:
            return None  # an unknown tag is not cached: it could be any string
        names, required = spec
        given = length - 1
        layout = None
        if given >= required:
            positions = {name: 1 + j for j, name in enumerate(names[:given])}
            trailing = given - len(names)
            note = (f"{tag}: {trailing} trailing field(s) beyond vLLM {self._since}'s "
                    f"{len(names)} ignored")
            layout = _Layout(names, positions, length, 0, _CLASSES.get(tag),
                             (f"{tag}[+trailing]",) if trailing > 0 else (), note)
        self._array_layouts[shape] = layout
        return layout
