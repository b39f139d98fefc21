"""Private: the idempotency-answer cases of the store contract.

:mod:`wopdsl.testing.store_conformance` runs them.
"""

from __future__ import annotations

import threading

import pytest

from wopdsl.errors import EventInvalid, StoreConflict
from wopdsl.store.base import Answer, EventStore
from wopdsl.testing._store_cases import make_events

__all__ = ["Answers"]


class Answers:
    """``remember_answer``, ``recall_answer``, ``forget_answers`` and ``append_answered``."""

    def test_an_answer_is_kept_and_the_first_one_wins(self, store: EventStore) -> None:
        """``remember_answer`` keeps the first answer of a scope; ``recall_answer`` returns it."""
        first = Answer("scope-1", "print-1", 201, {"runId": "r1", "text": "é \u0000 😀"}, 1e9)
        assert store.recall_answer("scope-1") is None
        assert store.remember_answer(first) == first
        later = Answer("scope-1", "print-2", 200, {"runId": "r2"}, 1e9 + 1)
        assert store.remember_answer(later) == first
        assert store.recall_answer("scope-1") == first
        assert store.recall_answer("scope-2") is None

    def test_old_answers_are_forgotten(self, store: EventStore) -> None:
        """``forget_answers(before)`` drops exactly the answers created before ``before``."""
        for index, created in enumerate((10.0, 20.0, 30.0)):
            store.remember_answer(Answer(f"s{index}", "f", 200, {}, created))
        assert store.forget_answers(20.0) == 1
        assert store.recall_answer("s0") is None
        assert store.recall_answer("s1") is not None and store.recall_answer("s2") is not None

    def test_an_answer_appended_with_events_is_kept_exactly_when_they_are(
            self, store: EventStore) -> None:
        """``append_answered`` keeps the answer with its events; a refused append, neither."""
        store.append("r1", make_events("r1", 0, 2), 0)
        late = Answer("late", "f", 200, {"messageId": "m1"}, 1.0)
        with pytest.raises(StoreConflict):
            store.append_answered("r1", make_events("r1", 1, 1), 1, late)
        bad = make_events("r1", 2, 1)
        bad[0]["payload"] = {"n": float("nan")}
        with pytest.raises((EventInvalid, TypeError, ValueError)):
            store.append_answered("r1", bad, 2, late)
        assert store.recall_answer("late") is None and store.last_sequence("r1") == 1
        kept = Answer("turn", "f", 200, {"messageId": "m2"}, 1.0)
        store.append_answered("r1", make_events("r1", 2, 1), 2, kept)
        assert store.recall_answer("turn") == kept and store.last_sequence("r1") == 2

    def test_racing_answers_agree(self, store: EventStore) -> None:
        """Threads remembering one scope at once all get the same answer back."""
        kept: list[Answer] = []
        workers = [threading.Thread(target=lambda i=i: kept.append(store.remember_answer(
            Answer("race", f"f{i}", 201, {"n": i}, 1.0)))) for i in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert len(kept) == 8 and all(k == kept[0] for k in kept)
        assert store.recall_answer("race") == kept[0]
