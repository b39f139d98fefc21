"""The store conformance suite collects a capability's tests only where it is provided."""

from __future__ import annotations

from pathlib import Path

import pytest

from wopdsl.store.base import EventStore
from wopdsl.store.memory import MemoryStore
from wopdsl.testing.store_conformance import StoreConformance

REOPEN = ("test_a_second_handle_sees_the_claim", "test_close_and_reopen_keeps_every_run",
          "test_two_handles_never_interleave", "test_subscribe_follows_another_handle")
RAW = ("test_record_that_is_not_json_is_rejected",
       "test_record_that_is_not_an_event_is_rejected",
       "test_unsupported_schema_version_is_rejected")


class Volatile(StoreConformance):
    def make_store(self, tmp_path: Path) -> EventStore:
        return MemoryStore()


class Reopenable(Volatile):
    def reopen_store(self, tmp_path: Path) -> EventStore:
        return MemoryStore()


def collected(cls: type) -> set[str]:
    return {name for name in dir(cls) if name.startswith("test_")
            and callable(getattr(cls, name))}


def test_a_backend_without_a_capability_has_none_of_its_tests() -> None:
    names = collected(Volatile)
    assert not names & set(REOPEN + RAW)
    assert "test_a_run_has_one_claim_at_a_time" in names


def test_a_subclass_that_adds_the_capability_gets_its_tests_back() -> None:
    names = collected(Reopenable)
    assert set(REOPEN) <= names and not names & set(RAW)
    assert Reopenable.provides("reopen_store") and not Volatile.provides("reopen_store")


def test_require_still_skips_a_subclass_s_own_capability_test() -> None:
    with pytest.raises(pytest.skip.Exception, match="does not provide write_raw_record"):
        Reopenable().require("write_raw_record")
