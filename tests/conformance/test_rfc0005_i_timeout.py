"""RFC 0005 §I timeout: a waiting run held by a process times out on time; with no holder,
the first process to act on it after the deadline applies the timeout first."""

from __future__ import annotations

import asyncio
import time

import pytest

import wopdsl

from .helpers import desk, valid


@pytest.fixture
def store(tmp_path):
    st = wopdsl.open_store(tmp_path / "runs.db")
    yield st
    st.close()


async def test_a_held_waiting_run_times_out_on_time(store):
    run = await desk(timeout_ms=300).arun(store=store)
    assert run.status == "waiting-input"
    started = time.monotonic()
    while run.status == "waiting-input" and time.monotonic() - started < 10:
        await asyncio.sleep(0.05)
    assert run.status == "failed" and run.error["code"] == "TIMEOUT"
    assert time.monotonic() - started < 3  # fired by the holder, not by a later command
    closed = [e for e in run.events if e["type"] == "conversation.closed"]
    assert all(e["payload"]["outcome"] is None for e in closed)
    valid(run)


async def test_without_a_holder_the_next_action_applies_the_timeout_first(store):
    run = await desk(timeout_ms=300).arun(store=store)
    await run.detach()  # this process lets go of the run (and of its deadline)
    await asyncio.sleep(0.5)
    other = wopdsl.attach(store, run.run_id, council=desk(timeout_ms=300))
    assert other.status == "waiting-input"  # nobody held it: reading appends nothing
    with pytest.raises(wopdsl.ValidationError, match="ended"):
        await other.reply("too late", room="desk")
    assert other.status == "failed" and other.error["code"] == "TIMEOUT"
    assert not [m for m in other.messages if m.text == "too late"]
    valid(other)


def test_the_cli_applies_an_expired_deadline_before_a_reply(wop, tmp_path):
    from .test_rfc0005_e_resume import HUMAN

    (tmp_path / "c.toml").write_text(HUMAN.replace('task = "Name it."',
                                                   'task = "Name it."\ntimeout_ms = 300'))
    assert wop("run", "c.toml", "--run-id", "r").returncode == 3
    time.sleep(0.5)
    done = wop("reply", "r", "--room", "desk", "late")
    assert done.returncode == 2 and "ended (failed)" in done.stderr
    assert "TIMEOUT" in wop("replay", "r").stdout + wop("replay", "r").stderr


async def test_a_run_answered_in_time_does_not_time_out(store):
    run = await desk(timeout_ms=5000).arun(store=store)
    await run.reply("Q4 @assistant", room="desk")
    assert await run.wait() == "completed"
    await asyncio.sleep(0.05)
    assert run.status == "completed"
