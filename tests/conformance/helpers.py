"""Councils and assertions shared by the RFC conformance modules."""

from __future__ import annotations

import copy
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

import wopdsl
from wopdsl import Council, Post, Reply, Run
from wopdsl.protocol.check import check_events

ROOT = Path(__file__).resolve().parents[2]
COUNCILS = ROOT / "councils"
FIXTURE_COUNCIL = COUNCILS / "conformance-multi-party-council.toml"
OVERSIZE_COUNCIL = COUNCILS / "conformance-multi-party-council-oversize.toml"
MEMBERS = ("conformance-council-a", "conformance-council-b", "conformance-council-c")


def desk(**settings: Any) -> Council:
    """An agent asks the human `me` in room `desk`; an external `peer` sits in `desk` too."""
    council = Council("desk", task="Plan the launch.", max_turns_per_member=3, **settings)
    council.room("desk", members=["assistant", "me", "peer"])
    council.room("side", members=["assistant"])
    council.human("me", role="founder")
    council.add_member("peer", role="outside agent", engine="external", initial_turn=False)

    @council.member(role="assistant")
    async def assistant(turn: Any) -> Reply:
        if turn.turn == 1:
            return Reply(summary="asked", posts=[
                Post(room="desk", text="Q3 or Q4, @me?", mentions=["me"])])
        return Reply(summary=f"heard {turn.triggers[0].text}")

    return council


def types(run: Run) -> list[str]:
    return [e["type"] for e in run.events]


def valid(run: Run) -> None:
    """The run passes `wop check` (schemas and log rules)."""
    violations = check_events(run.store.read(run.run_id))
    assert not violations, "\n".join(map(str, violations))


async def refused(run: Run, attempt: Awaitable[Any], match: str) -> None:
    """``attempt`` is refused with validation_error; nothing appended; status unchanged."""
    before, status = len(run.events), run.status
    with pytest.raises(wopdsl.ValidationError, match=match) as info:
        await attempt
    assert info.value.code == "validation_error"
    assert len(run.events) == before
    assert run.status == status


def broken(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A deep copy of a log to break on purpose (for the checker's negative cases)."""
    return copy.deepcopy(list(events))


def checks(events: list[dict[str, Any]]) -> set[str]:
    return {v.check for v in check_events(events)}
