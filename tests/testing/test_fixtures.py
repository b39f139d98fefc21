"""The council fixtures: sources, handler overrides, stores, determinism, loops."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from wopdsl import Council, DeclarationError, Post, Reply, SqliteStore, StoreError, Turn, load
from wopdsl.testing.fixtures import CouncilRunner


def desk() -> Council:
    council = Council("desk", task="Answer the customer.")
    council.room("desk", members=["agent", "customer"])
    council.human("customer", role="customer")

    @council.member(role="support agent")
    def agent(turn: Turn) -> Reply:
        if not turn.triggers:
            return Reply(summary="asked", posts=[
                Post(room="desk", text="How can I help?", mentions=["customer"])])
        return Reply(summary=f"answered {turn.triggers[0].text}")

    return council


def test_a_file_a_council_a_spec_and_spec_data_give_the_same_run(
    run_council: CouncilRunner, release_team_path: Path
) -> None:
    spec = load(release_team_path).spec

    runs = [run_council(release_team_path), run_council(load(release_team_path)),
            run_council(spec), run_council(spec.model_dump(mode="json"))]

    assert [r.status for r in runs] == ["completed"] * 4
    assert len({r.transcript for r in runs}) == 1
    assert {r.run_id for r in runs} == {"release-team-1"}  # a fresh store for every run


def test_two_runs_are_event_for_event_identical(
    run_council: CouncilRunner, release_team_path: Path
) -> None:
    first, second = run_council(release_team_path), run_council(release_team_path)

    assert first.events.to_list() == second.events.to_list()
    assert first.events[0]["timestamp"] == "2026-01-01T00:00:00.000Z"


def test_a_handler_replaces_a_script_member_for_one_run_only(
    run_council: CouncilRunner, release_team_path: Path
) -> None:
    seen: list[int] = []

    def writer(turn: Turn) -> Reply:
        seen.append(turn.turn)
        return Reply(summary="wrote alone")

    run = run_council(release_team_path, handlers={"writer": writer})

    assert seen == [1]
    assert run.result is not None
    assert [a["result"] for a in run.result["agents"]] == [{"summary": "wrote alone"}, None]
    members = run.events[0]["payload"]["metadata"]["council"]["members"]
    assert [m["engine"] for m in members] == ["python", "script"]
    assert "script" not in members[0]
    assert run_council(release_team_path).result == load(release_team_path).run(
        store="memory:", deterministic=True).result


def test_a_handler_stands_in_for_a_person_and_the_council_object_is_left_alone(
    run_council: CouncilRunner,
) -> None:
    council = desk()
    original = council.spec

    answered = run_council(council, handlers={
        "customer": lambda turn: Reply(summary="said thanks", posts=[
            Post(room="desk", text="Thanks @agent", mentions=["agent"])])})
    waiting = run_council(council)

    assert answered.status == "completed"
    assert [m.text for m in answered.messages] == ["How can I help?", "Thanks @agent"]
    assert waiting.status == "waiting-input"
    assert waiting.waiting_for == ["customer"]
    assert council.spec is original
    assert set(council.handlers) == {"agent"}


def test_overriding_a_python_handler_keeps_the_declaration(run_council: CouncilRunner) -> None:
    run = run_council(desk(), handlers={"agent": lambda turn: Reply(summary="closed")})

    assert run.status == "completed"
    members = run.events[0]["payload"]["metadata"]["council"]["members"]
    assert [m["engine"] for m in members] == ["human", "python"]
    assert run.result is not None and run.result["agents"][1]["result"] == {"summary": "closed"}


def test_a_handler_for_no_member_is_a_declaration_error(
    run_council: CouncilRunner, release_team_path: Path
) -> None:
    with pytest.raises(DeclarationError, match="'editor', which is not a member"):
        run_council(release_team_path, handlers={"editor": lambda turn: "x"})


def test_a_store_path_keeps_the_runs_in_one_sqlite_file(
    release_team_path: Path, tmp_path: Path
) -> None:
    runner = CouncilRunner()
    db = tmp_path / "runs.db"

    run = runner(release_team_path, store=db)
    again = runner(release_team_path, store=db)
    events = again.events.to_list()
    runner.close()

    assert (run.run_id, again.run_id) == ("release-team-1", "release-team-2")
    with pytest.raises(StoreError, match="closed"):
        again.events.to_list()  # the runner closed the stores it opened
    store = SqliteStore(db)
    try:
        assert [r.run_id for r in store.runs()] == ["release-team-1", "release-team-2"]
        assert store.read("release-team-2") == events
    finally:
        store.close()


def test_a_store_object_is_used_as_is_and_not_closed(
    run_council: CouncilRunner, release_team_path: Path, sqlite_store: SqliteStore
) -> None:
    run = run_council(release_team_path, store=sqlite_store, run_id="mine")
    run_council.close()

    assert run.store is sqlite_store
    assert [r.run_id for r in sqlite_store.runs()] == ["mine"]


async def test_async_tests_await_runs_and_reply_on_their_own_loop(
    arun_council, run_council: CouncilRunner, release_team_path: Path
) -> None:
    run = await arun_council(desk())
    assert run.status == "waiting-input"

    await run.reply("My order is late @agent", room="desk")
    assert await run.wait() == "completed"
    assert run.messages[-1].text == "My order is late @agent"

    # The sync fixture inside a running loop runs the council on a loop of its own.
    threads: list[str] = []
    seen_loop = asyncio.get_running_loop()

    def writer(turn: Turn) -> Reply:
        threads.append(threading.current_thread().name)
        return Reply(summary="ok")

    sync_run = run_council(release_team_path, handlers={"writer": writer})
    assert sync_run.status == "completed"
    assert asyncio.get_running_loop() is seen_loop
    assert threads


def test_an_invalid_spec_is_reported_before_anything_runs(run_council: CouncilRunner) -> None:
    with pytest.raises(DeclarationError):
        run_council({"council": {"id": "x", "task": "t"},
                     "members": [{"id": "a", "role": "r", "engine": "human"}],
                     "rooms": [{"id": "r", "members": ["a", "ghost"]}]})

