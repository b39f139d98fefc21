"""Commands that read the log: events, replay, transcript, rooms, runs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import DB, Wop, json_lines, stored_events


def test_events_are_json_lines_in_sequence_order(wop: Wop, tmp_path: Path,
                                                 release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "e1").returncode == 0
    done = wop("events", "e1")
    assert done.returncode == 0
    events = json_lines(done.stdout)
    assert events == stored_events(tmp_path / DB, "e1")
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "run.started" and events[-1]["type"] == "run.completed"
    # --follow on a run that already ended prints the same and returns.
    assert json_lines(wop("events", "e1", "--follow").stdout) == events


def test_replay_folds_the_log_and_appends_nothing(wop: Wop, tmp_path: Path,
                                                  release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "p1").returncode == 0
    before = stored_events(tmp_path / DB, "p1")

    text = wop("replay", "p1")
    as_json = wop("replay", "p1", "--json")

    assert text.returncode == 0 and as_json.returncode == 0
    assert stored_events(tmp_path / DB, "p1") == before
    assert "[review] reviewer team/reviewer/2/0 @writer: Reviewed team/writer/1/0: Please " \
           "review: Prepare a release note." in text.stdout
    assert f"completed: run p1 ({len(before)} events)" in text.stdout
    doc = json.loads(as_json.stdout)
    assert doc == {"runId": "p1", "status": "completed",
                   "result": before[-1]["payload"]["outputs"]}


def test_replay_exit_codes_follow_the_status(wop: Wop, tmp_path: Path, human_council: Path,
                                             failing_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "w").returncode == 3
    assert wop("run", str(failing_council), "--run-id", "f").returncode == 1
    counts = {run: len(stored_events(tmp_path / DB, run)) for run in ("w", "f")}

    waiting = wop("replay", "w")
    failed = wop("replay", "f")

    assert waiting.returncode == 3 and "waiting for input: me in room desk" in waiting.stdout
    assert failed.returncode == 1 and failed.stderr.startswith("error[TEAM_NODE_FAILED]")
    assert json.loads(wop("replay", "w", "--json").stdout) == {
        "runId": "w", "status": "waiting-input", "result": None}
    assert {run: len(stored_events(tmp_path / DB, run)) for run in ("w", "f")} == counts


def test_transcript(wop: Wop, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "t1").returncode == 0
    done = wop("transcript", "t1")
    assert done.returncode == 0
    assert done.stdout.splitlines()[:4] == [
        "council release-team: completed",
        "",
        "room review (writer, reviewer)",
        "  writer team/writer/1/0 @reviewer: Please review: Prepare a release note.",
    ]


def test_rooms_writes_one_file_per_room(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "m1").returncode == 0
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine", encoding="utf-8")

    done = wop("rooms", "m1", "--out", "out")

    assert done.returncode == 0
    listing = json.loads(done.stdout)
    assert listing["revision"] == len(stored_events(tmp_path / DB, "m1")) - 1
    assert [r["roomId"] for r in listing["rooms"]] == ["review"]
    path = tmp_path / listing["rooms"][0]["path"]
    assert path.parent == tmp_path / "out" and "review" not in path.name
    assert path.read_text(encoding="utf-8").splitlines() == [
        "writer team/writer/1/0 @reviewer: Please review: Prepare a release note.",
        "reviewer team/reviewer/2/0 @writer: Reviewed team/writer/1/0: Please review: "
        "Prepare a release note.",
    ]
    assert (tmp_path / "out" / "notes.txt").read_text(encoding="utf-8") == "mine"
    # Writing again replaces the file with the same content.
    assert json.loads(wop("rooms", "m1", "--out", "out").stdout) == listing


def test_runs_lists_every_run_with_its_status(wop: Wop, release_team: Path,
                                              human_council: Path,
                                              failing_council: Path) -> None:
    assert wop("runs").stdout.startswith("no runs in .wop/runs.db")
    wop("run", str(release_team), "--run-id", "a")
    wop("run", str(human_council), "--run-id", "b")
    wop("run", str(failing_council), "--run-id", "c")

    table = wop("runs")
    rows = json.loads(wop("runs", "--json").stdout)

    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["RUN", "COUNCIL", "STATUS", "EVENTS", "TOKENS", "COST",
                                "STARTED"]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["a", "release-team", "completed"], ["b", "ask-me", "waiting-input"],
        ["c", "echo", "failed"]]
    assert [(r["runId"], r["status"]) for r in rows] == [
        ("a", "completed"), ("b", "waiting-input"), ("c", "failed")]
    assert all(r["events"] > 0 for r in rows)


def test_runs_does_not_create_a_store(wop: Wop, tmp_path: Path) -> None:
    assert wop("runs").returncode == 0
    assert not (tmp_path / ".wop").exists()


def test_unknown_run_is_invalid_input(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    for command in (["events", "nope"], ["replay", "nope"], ["rooms", "nope", "--out", "o"],
                    ["resume", "nope"]):
        done = wop(*command)
        assert done.returncode == 2, command
        assert done.stderr.startswith("error[RUN_NOT_FOUND]: "), done.stderr
        assert "hint:" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / ".wop").exists()  # Reading never creates a store.
    assert wop("run", str(release_team)).returncode == 0
    done = wop("transcript", "nope")
    assert done.returncode == 2 and "error[RUN_NOT_FOUND]: run nope not found" in done.stderr
