"""The rules written once: era lookups, immutability, the replica label."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from packaging.version import Version

from prefixkey import Hasher
from prefixkey.core import ERAS, KNOWN_RELEASES, check_token_ids, resolve_release
from prefixkey.core._era_table import era_at, era_end, release_range, releases_between
from prefixkey.errors import FrozenError
from prefixkey.events import WIRE_ERAS, wire_era
from prefixkey.fleet import ReplicaId
from prefixkey.multimodal import IDENTIFIER_ERAS, identifier_era
from prefixkey.render import RenderResponseParser


@dataclass(frozen=True)
class _Era:
    since: str
    first_version: Version = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "first_version", Version(self.since))


_TABLE = (_Era("0.9.0"), _Era("0.10.2"), _Era("0.24.0"))


@pytest.mark.parametrize(("release", "since"), [
    ("0.8.5", None), ("0.9.0", "0.9.0"), ("0.10.1", "0.9.0"), ("0.10.2", "0.10.2"),
    ("0.23.9", "0.10.2"), ("0.24.0", "0.24.0"), ("9.0.0", "0.24.0"),
])
def test_era_at(release: str, since: str | None) -> None:
    era = era_at(_TABLE, Version(release))
    assert (era.since if era else None) == since


def test_era_end_and_ranges() -> None:
    assert [era_end(_TABLE, e) for e in _TABLE] == [Version("0.10.2"), Version("0.24.0"), None]
    known = ("0.9.0", "0.9.1", "0.10.1", "0.10.2", "0.11.0")
    assert releases_between(known, Version("0.9.1"), Version("0.10.2")) == [
        Version("0.9.1"), Version("0.10.1")]
    assert releases_between(known, Version("0.10.2"), None) == [
        Version("0.10.2"), Version("0.11.0")]
    assert release_range([Version("0.33.0"), Version("0.31.0")]) == "0.31.0-0.33.0"
    assert release_range([Version("0.31.0")]) == "0.31.0"


@pytest.mark.parametrize("release", KNOWN_RELEASES)
def test_every_table_agrees_with_a_plain_scan(release: str) -> None:
    """The one lookup gives what scanning each table newest-first gives."""
    version = resolve_release(release).release

    def scan(table: tuple[_Era, ...] | tuple[object, ...]) -> object:
        return next((e for e in reversed(table) if e.first_version <= version),  # type: ignore[attr-defined]
                    None)

    assert resolve_release(release).era is scan(ERAS)
    assert identifier_era(release) is scan(IDENTIFIER_ERAS)
    if version >= WIRE_ERAS[0].first_version:
        assert wire_era(release)[0] is scan(WIRE_ERAS)


def test_era_spans_name_known_releases() -> None:
    assert [e.span for e in ERAS][-2:] == ["0.31.0-0.32.0", "0.33.0"]


@pytest.mark.parametrize("obj", [
    Hasher(block_size=16), check_token_ids([1, 2, 3]), RenderResponseParser(),
])
def test_built_once_objects_refuse_changes(obj: object) -> None:
    with pytest.raises(FrozenError):
        obj.vllm_version = "0.30.0"  # type: ignore[attr-defined]
    with pytest.raises(FrozenError):
        del obj.__dict__  # no attribute may go either


@pytest.mark.parametrize(("label", "rid"), [
    ("gpu-a", ReplicaId("gpu-a")), ("gpu-a#dp1", ReplicaId("gpu-a", 1)),
    ("gpu-a#dp12", ReplicaId("gpu-a", 12)), ("#dp1", ReplicaId("#dp1")),
    ("gpu-a#dpx", ReplicaId("gpu-a#dpx")), ("gpu-a#dp\u0661", ReplicaId("gpu-a#dp\u0661")),
])
def test_replica_label_round_trips(label: str, rid: ReplicaId) -> None:
    assert ReplicaId.parse(label) == rid
    if label == str(rid):
        assert ReplicaId.parse(str(rid)) == rid
