"""The ``Run`` handle: started at once, driven by its sync twins outside a loop, tagged."""

import asyncio
from pathlib import Path

import pytest

import wopdsl
from tests.published import decorated_release_team
from wopdsl import Council

ROOT = Path(__file__).resolve().parents[2]


async def test_start_returns_at_once_and_wait_finishes():
    run = decorated_release_team().start(store="memory:")
    assert run.status in {"pending", "running"}
    assert await run.wait() == "completed"


async def test_reply_right_after_start_waits_for_the_opening_events():
    run = wopdsl.load(ROOT / "councils" / "conformance-multi-party-council.toml").start(
        store="memory:")
    members = ["conformance-council-a", "conformance-council-b", "conformance-council-c"]
    for member in members:  # External members: the client submits their turns.
        await run.reply(f"hi from {member}", as_=member)
    assert await run.wait() == "completed"
    assert [m.sender for m in run.messages] == members


def test_sync_twins_drive_a_waiting_run_to_its_end(tmp_path):
    council = Council("ask", task="Name it.")
    council.room("desk", members=["me", "namer"])
    council.human("me")
    council.add_member("namer", role="namer", engine="script", script=[
        {"summary": "Asked.", "posts": [{"room": "desk", "text": "Which, @me?",
                                         "mentions": ["me"]}]},
        {"summary": "Named: {{ triggers[0].text }}"},
    ])
    db = tmp_path / "runs.db"
    run = council.run(store=db)
    assert run.status == "waiting-input"

    # A script with no event loop: reply_sync posts and drives the run on to its end.
    other = wopdsl.attach(db, run.run_id)
    message = other.reply_sync("Falcon @namer", room="desk")

    assert message == "team/me/2/0"
    assert other.status == "completed"
    assert wopdsl.attach(db, run.run_id).result["agents"][1]["result"]["summary"] == (
        "Named: Falcon @namer")
    assert other.wait_sync() == "completed"


async def test_sync_twins_refuse_inside_an_event_loop(tmp_path):
    run = await decorated_release_team().arun(store=tmp_path / "runs.db")
    with pytest.raises(RuntimeError, match=r"use `await run.reply\(...\)`"):
        run.reply_sync("hello")
    with pytest.raises(RuntimeError, match=r"use `await run\.wait"):
        run.wait_sync()


def test_runs_carry_tags_where_the_http_host_keeps_them() -> None:
    from wopdsl import ValidationError, load

    council = load(ROOT / "councils" / "release-team.toml")
    run = council.run(store="memory:")
    assert run.tags == []
    store = run.store

    async def tagged() -> list[str]:
        started = council.start(store, "t1", tags=["eval=x", "arm=a"], metadata={"k": 1})
        await started.wait()
        assert started.state.metadata["request"] == {
            "k": 1, "runOptions": {"tags": ["eval=x", "arm=a"]}}
        return started.tags

    assert asyncio.run(tagged()) == ["eval=x", "arm=a"]
    for bad in (["x" * 257], [""], ["t"] * 101):
        try:
            council.start(store, "t2", tags=bad)
        except ValidationError as exc:
            assert "tag" in str(exc)
        else:
            raise AssertionError(f"tags {bad[:2]} were taken")
