"""`wop diff` through real `python -m wopdsl` subprocesses on real SQLite files (and PostgreSQL).

Exit codes: 0 equal, 1 differ, 2 invalid input or an unknown run. The text output is locked
with syrupy snapshots (it has no timestamps); ``--json`` is checked field by field.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from syrupy.assertion import SnapshotAssertion

from tests.cli.conftest import REPO, Wop


def _fork_at_last(wop: Wop, run: str, new: str, mode: str, *store: str) -> None:
    """Fork ``run`` at its last event (the point where it waits, or its end)."""
    last = len(wop("events", run, *store).stdout.splitlines()) - 1
    done = wop("fork", run, "--from", str(last), "--mode", mode, "--run-id", new, *store)
    assert done.returncode in (0, 3), done.stderr


def test_a_run_and_its_replay_fork_are_equal(wop: Wop, release_team: Path,
                                             snapshot: SnapshotAssertion) -> None:
    assert wop("run", str(release_team), "--run-id", "a").returncode == 0
    assert wop("fork", "a", "--from", "8", "--mode", "replay", "--run-id", "a2"
               ).returncode == 0
    done = wop("diff", "a", "a2")
    assert done.returncode == 0, done.stderr
    assert "B is a fork of A: it shares A's events 0-8 (replay mode)" in done.stdout
    assert done.stdout == snapshot
    doc = json.loads(wop("diff", "a", "a2", "--json").stdout)
    assert doc["equal"] is True and doc["firstDivergence"] is None
    assert doc["fork"] == {"child": "b", "source": "a", "atSequence": 8, "mode": "replay"}
    assert doc["rooms"] == [{"room": "review", "membersA": ["writer", "reviewer"],
                             "membersB": ["writer", "reviewer"], "equal": True, "same": 2,
                             "added": 0, "removed": 0, "changed": 0,
                             "entries": [{"op": "same", "count": 2}]}]
    assert doc["order"]["a"] == ["writer", "reviewer", "writer"] == doc["order"]["b"]


def test_a_branch_fork_with_a_changed_reply(wop: Wop, human_council: Path,
                                            snapshot: SnapshotAssertion) -> None:
    assert wop("run", str(human_council), "--run-id", "h1").returncode == 3
    _fork_at_last(wop, "h1", "h2", "branch")
    assert wop("reply", "h1", "--room", "desk", "Aurora @namer").returncode == 0
    assert wop("reply", "h2", "--room", "desk", "Borealis @namer").returncode == 0
    done = wop("diff", "h1", "h2")
    assert done.returncode == 1, done.stderr
    assert done.stdout == snapshot
    doc = json.loads(wop("diff", "h1", "h2", "--json").stdout)
    assert doc["equal"] is False
    room = doc["rooms"][0]
    assert (room["same"], room["changed"], room["added"], room["removed"]) == (1, 1, 0, 0)
    changed = [e for e in room["entries"] if e["op"] == "changed"]
    assert [(e["a"]["text"], e["b"]["text"]) for e in changed] == [
        ("Aurora @namer", "Borealis @namer")]
    divergence = doc["firstDivergence"]
    assert divergence["a"]["sequence"] > 8 and divergence["b"]["sequence"] > 8
    assert {m["member"]: m["resultChanged"] for m in doc["members"]} == {
        "namer": True, "me": True}
    assert doc["outcome"] == {"equal": False, "a": "completed", "b": "completed",
                              "errorA": None, "errorB": None, "resultsEqual": False}


SAYS = """\
[council]
id = "says"
task = "Greet."

[[rooms]]
id = "hall"
members = ["host"]

[[members]]
id = "host"
role = "host"
engine = "script"
script = [{ summary = "Greeted.", posts = [{ room = "hall", text = "TEXT" }] }]
"""


def test_the_first_divergence_names_the_event_and_the_message(wop: Wop,
                                                               tmp_path: Path) -> None:
    # Same summary, another post: the first fact that differs is the saved message.
    for name, text in (("hello", "Hello, all."), ("bye", "Goodbye, all.")):
        (tmp_path / f"{name}.toml").write_text(SAYS.replace("TEXT", text), encoding="utf-8")
        assert wop("run", f"{name}.toml", "--run-id", name).returncode == 0
    done = wop("diff", "hello", "bye")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("first divergence:")
    events = wop("events", "hello").stdout.splitlines()
    said = next(e for e in map(json.loads, events) if e["type"] == "conversation.exchanged")
    assert said["payload"]["turn"]["content"]["text"] == "Hello, all."
    assert lines[start + 1:start + 3] == [
        f'  A: host said in room hall (team/host/1/0): "Hello, all." '
        f'(event {said["sequence"]}, conversation.exchanged)',
        f'  B: host said in room hall (team/host/1/0): "Goodbye, all." '
        f'(event {said["sequence"]}, conversation.exchanged)']
    assert "speaking order: same (1 turn: host)" in lines
    # No internal counters a reader cannot look up ("fact 5", "#12").
    assert "fact " not in done.stdout and "#" not in done.stdout
    doc = json.loads(wop("diff", "hello", "bye", "--json").stdout)["firstDivergence"]
    assert doc["a"] == {"sequence": said["sequence"], "event": "conversation.exchanged",
                        "what": 'host said in room hall (team/host/1/0): "Hello, all."'}


def test_unrelated_runs_of_one_council_and_of_different_councils(
        wop: Wop, release_team: Path, human_council: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "r1").returncode == 0
    assert wop("run", str(release_team), "--run-id", "r2").returncode == 0
    same = wop("diff", "r1", "r2")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "fork" not in same.stdout
    assert wop("run", str(human_council), "--run-id", "h").returncode == 3
    other = wop("diff", "r1", "h")
    assert other.returncode == 1
    assert "different councils: A runs release-team, B runs ask-me" in other.stdout
    assert "room review (writer, reviewer): only in A" in other.stdout
    assert "room desk (me, namer): only in B" in other.stdout
    doc = json.loads(wop("diff", "r1", "h", "--json").stdout)
    assert doc["sameCouncil"] is False and doc["outcome"]["a"] == "completed"
    assert doc["outcome"]["b"] == "waiting-input"


def test_across_stores_and_bad_input(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "x", "--store", "one.db").returncode == 0
    assert wop("run", str(release_team), "--run-id", "x", "--store", "two.db").returncode == 0
    done = wop("diff", "x", "x", "--store", "one.db", "--store-b", "two.db")
    assert done.returncode == 0, done.stderr
    missing = wop("diff", "x", "nope", "--store", "one.db", "--store-b", "two.db")
    assert missing.returncode == 2
    assert "error[RUN_NOT_FOUND]" in missing.stderr and "two.db" in missing.stderr
    assert "Traceback" not in missing.stderr
    unknown_a = wop("diff", "nope", "x", "--store", "one.db")
    assert unknown_a.returncode == 2 and "error[RUN_NOT_FOUND]" in unknown_a.stderr
    no_store = wop("diff", "x", "x", "--store", "one.db", "--store-b", "absent.db")
    assert no_store.returncode == 2 and "absent.db" in no_store.stderr
    assert not (tmp_path / "absent.db").exists()
    bad_id = wop("diff", "x", "../etc", "--store", "one.db")
    assert bad_id.returncode == 2 and "invalid run id" in bad_id.stderr


def test_postgres_against_sqlite(wop: Wop, release_team: Path, human_council: Path,
                                 pg_url: str) -> None:
    assert wop("run", str(release_team), "--run-id", "p", "--store", pg_url).returncode == 0
    assert wop("run", str(release_team), "--run-id", "s", "--store", "s.db").returncode == 0
    done = wop("diff", "p", "s", "--store", pg_url, "--store-b", "s.db", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["equal"] is True
    assert wop("run", str(human_council), "--run-id", "h", "--store", pg_url).returncode == 3
    differ = wop("diff", "p", "h", "--store", pg_url)
    assert differ.returncode == 1 and "different councils" in differ.stdout
    password = pg_url.split("@")[0].rsplit(":", 1)[-1]
    gone = wop("diff", "s", "nope", "--store", "s.db", "--store-b", pg_url)
    assert gone.returncode == 2 and "error[RUN_NOT_FOUND]" in gone.stderr
    assert password not in gone.stderr + gone.stdout


def test_the_guides_example_is_what_wop_diff_prints(wop: Wop, human_council: Path) -> None:
    guide = (REPO / "docs" / "guides" / "diff.md").read_text(encoding="utf-8")
    block = re.search(r"```\n(\$ wop reply h1 .*?)```", guide, flags=re.S)
    assert block is not None
    assert wop("run", str(human_council), "--run-id", "h1").returncode == 3  # waits for `me`
    steps = re.split(r"^\$ ", block.group(1), flags=re.M)[1:]
    code = None
    for step in steps:
        command, _, shown = step.partition("\n")
        args = shlex.split(command.split("#", 1)[0])
        if args == ["echo", "$?"]:
            assert shown == f"{code}\n"
            continue
        assert args[0] == "wop", command
        done = wop(*args[1:])
        code = done.returncode
        assert code in (0, 1, 3), done.stderr  # 3: the fork waits for `me` again
        if shown:
            assert done.stdout == shown, done.stdout
