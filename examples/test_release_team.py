"""Lock a council's behaviour with snapshots (DESIGN.md §16, docs/guides/testing.md).

The ``wopdsl`` pytest plugin comes with the package: no conftest, no imports for fixtures.
Run it from the repository root::

    python -m pytest examples/test_release_team.py                    # compare
    python -m pytest examples/test_release_team.py --snapshot-update  # (re)write snapshots

Snapshots live in ``examples/__snapshots__/test_release_team/``.
"""

from __future__ import annotations

from wopdsl import Council, Post, Reply, Turn
from wopdsl.testing.snapshot import EventLogSnapshot


def test_release_team(run_council, snapshot):
    run = run_council("councils/release-team.toml")
    assert run.transcript == snapshot            # readable .txt snapshot per test
    assert run.events == snapshot(extension_class=EventLogSnapshot)   # normalised JSON


def test_a_writer_that_skips_review(run_council, snapshot):
    # Replace the scripted writer for this test only: the file stays as it is.
    def writer(turn: Turn) -> Reply:
        return Reply(summary=f"Shipped without review: {turn.task}")

    run = run_council("councils/release-team.toml", handlers={"writer": writer})
    assert run.status == "completed"
    assert run.transcript == snapshot


async def test_a_person_joins_the_review(arun_council, snapshot):
    council = Council("release-desk", task="Prepare a release note.", max_turns_per_member=2)
    council.room("review", members=["writer", "me"])
    council.human("me", role="release manager")

    @council.member(role="writer", brief="Draft, then ask the release manager.")
    def writer(turn: Turn) -> Reply:
        if not turn.triggers:
            return Reply(summary="Asked.", posts=[
                Post(room="review", text="Draft: v2 fixes login.", mentions=["me"])])
        return Reply(summary=f"Final: {turn.triggers[0].text}")

    run = await arun_council(council)
    assert run.status == "waiting-input"
    assert run.transcript == snapshot(name="waiting")

    await run.reply("Ship it @writer", room="review")
    await run.wait()
    assert run.status == "completed"
    assert run.transcript == snapshot(name="completed")
