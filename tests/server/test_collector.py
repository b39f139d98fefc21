"""``wop serve`` tunes its own garbage collector; the host's code runs the same either way."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from wopdsl.server.collector import YOUNG_THRESHOLD, tune_collector


@pytest.fixture()
def collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_start_up_is_frozen_and_the_young_generation_collected_less_often(
        collector: None) -> None:
    built_at_start_up = [{"kept": i} for i in range(1000)]
    _, middle, old = gc.get_threshold()
    tune_collector()
    assert gc.get_freeze_count() >= len(built_at_start_up)
    walked = {id(obj) for obj in gc.get_objects()}
    assert not walked & {id(obj) for obj in built_at_start_up}  # No longer walked.
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, old)


def test_a_larger_threshold_of_your_own_is_kept(collector: None) -> None:
    gc.set_threshold(100_000, 10, 10)
    tune_collector()
    assert gc.get_threshold() == (100_000, 10, 10)
