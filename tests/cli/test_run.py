"""`wop run` and `wop validate`: live transcript, exit codes, errors, python handlers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli.conftest import Wop, sqlite_tables, stored_events

REVIEW = "Reviewed team/writer/1/0: Please review: Prepare a release note."


def test_run_release_team_on_a_fresh_dir(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    done = wop("run", str(release_team), "--run-id", "r1")

    assert done.returncode == 0, done.stderr
    db = tmp_path / ".wop" / "runs.db"
    assert db.is_file() and "events" in " ".join(sqlite_tables(db))
    lines = done.stdout.splitlines()
    assert lines[0] == "run r1 (council release-team, store .wop/runs.db)"
    assert ("[review] writer team/writer/1/0 @reviewer: Please review: Prepare a release note."
            in lines)
    assert f"[review] reviewer team/reviewer/2/0 @writer: {REVIEW}" in lines
    assert "  reviewer (reviewer): Draft checked." in lines
    assert lines[-1].startswith("completed: run r1 (")
    out = done.stdout
    assert (out.index("[review] writer team/writer/1/0") < out.index("[review] reviewer ")
            < out.index("\nresults\n") < out.index("\ncompleted: run "))
    assert done.stderr == ""
    dispatched = [e["payload"]["nodeId"] for e in stored_events(db, "r1")
                  if e["type"] == "node.started"
                  and e["payload"].get("typeId") == "council.member"]
    assert dispatched == ["writer", "reviewer", "writer"]


def test_run_json_prints_only_the_document(wop: Wop, release_team: Path) -> None:
    done = wop("run", str(release_team), "--json", "--run-id", "j1")

    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert set(doc) == {"runId", "status", "result"}
    assert doc["runId"] == "j1" and doc["status"] == "completed"
    assert doc["result"]["task"] == "Prepare a release note."
    assert [a["name"] for a in doc["result"]["agents"]] == ["writer", "reviewer"]
    assert doc["result"]["agents"][1]["result"]["posts"][0]["text"] == REVIEW


def test_run_on_the_memory_store_leaves_no_file(wop: Wop, tmp_path: Path,
                                                release_team: Path) -> None:
    done = wop("--store", "memory:", "run", str(release_team))
    assert done.returncode == 0
    assert REVIEW in done.stdout
    assert not (tmp_path / ".wop").exists()


def test_store_option_and_env_var(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    assert wop("run", str(release_team), "--store", "a.db", "--run-id", "x").returncode == 0
    assert [e["type"] for e in stored_events(tmp_path / "a.db", "x")][-1] == "run.completed"
    env = {**os.environ, "WOP_STORE": str(tmp_path / "env.db")}
    assert wop("run", str(release_team), "--run-id", "y", env=env).returncode == 0
    assert stored_events(tmp_path / "env.db", "y")
    assert not (tmp_path / ".wop").exists()


def test_failed_run_exits_1_with_the_error(wop: Wop, failing_council: Path) -> None:
    done = wop("run", str(failing_council), "--run-id", "f1")

    assert done.returncode == 1
    assert "[self] echo team/echo/1/0 @echo: again @echo" in done.stdout
    assert "failed: run f1 (" in done.stdout
    assert done.stderr.startswith("error[TEAM_NODE_FAILED]: member echo failed: SCRIPT_EXHAUSTED")
    assert "Traceback" not in done.stderr
    as_json = wop("run", str(failing_council), "--json", "--run-id", "f2")
    assert as_json.returncode == 1
    doc = json.loads(as_json.stdout)
    assert set(doc) == {"runId", "status", "error"}
    assert doc["status"] == "failed" and doc["error"]["code"] == "TEAM_NODE_FAILED"


def test_bad_toml_is_invalid_input_with_a_location(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('[council]\nid = "x"\ntask = "t"\nbogus = 1\n',
                                       encoding="utf-8")
    for command in ("run", "validate"):
        done = wop(command, "bad.toml")
        assert done.returncode == 2
        assert done.stderr.startswith("error[DECLARATION_INVALID]:")
        assert "bad.toml:4:1" in done.stderr
        assert "hint:" in done.stderr
        assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / ".wop").exists()


def test_toml_syntax_error(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text('[council]\nid = "x\n', encoding="utf-8")
    done = wop("run", "broken.toml")
    assert done.returncode == 2
    assert "error[DECLARATION_INVALID]" in done.stderr and "broken.toml:2:" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_file(wop: Wop) -> None:
    done = wop("run", "nowhere.toml")
    assert done.returncode == 2
    assert "error[DECLARATION_INVALID]" in done.stderr and "nowhere.toml" in done.stderr


def test_taken_run_id_is_refused(wop: Wop, tmp_path: Path, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "same").returncode == 0
    before = stored_events(tmp_path / ".wop" / "runs.db", "same")
    done = wop("run", str(release_team), "--run-id", "same")
    assert done.returncode == 2
    assert done.stderr.startswith("error[STORE_CONFLICT]: run same already exists")
    assert stored_events(tmp_path / ".wop" / "runs.db", "same") == before


def test_bad_arguments_exit_2(wop: Wop, release_team: Path) -> None:
    for args in (("run",), ("run", str(release_team), "--run-id", "a/b"),
                 ("capabilities", "--max-participants", "1"), ("nope",)):
        done = wop(*args)
        assert done.returncode == 2, args
        assert "usage: wop" in done.stderr
        assert "Traceback" not in done.stderr


def test_max_participants_refuses_a_crowded_room(wop: Wop, tmp_path: Path) -> None:
    members = "".join(
        f'[[members]]\nid = "m{i}"\nrole = "r"\nengine = "script"\n'
        f'script = [{{ summary = "hi" }}]\n\n' for i in range(3))
    (tmp_path / "crowd.toml").write_text(
        '[council]\nid = "crowd"\ntask = "t"\n\n[[rooms]]\nid = "all"\n'
        'members = ["m0", "m1", "m2"]\n\n' + members, encoding="utf-8")
    done = wop("run", "crowd.toml", "--max-participants", "2")
    assert done.returncode == 2
    assert done.stderr.startswith("error[validation_error]: room 'all' has 3 participants")
    assert wop("run", "crowd.toml", "--max-participants", "3").returncode == 0


def test_python_handler_council_next_to_its_module(wop: Wop, tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "handlers.py").write_text(
        "from wopdsl import Post, Reply\n\n"
        "def writer(turn):\n"
        "    if turn.turn == 1:\n"
        "        return Reply(summary='asked', posts=[Post(room='r', text='look @critic',"
        " mentions=['critic'])])\n"
        "    return Reply(summary='thanks: ' + turn.triggers[0].text)\n\n"
        "async def critic(turn):\n"
        "    return Reply(summary='ok', posts=[Post(room='r', text='fine @writer',"
        " mentions=['writer'])])\n", encoding="utf-8")
    (folder / "council.toml").write_text(
        '[council]\nid = "py"\ntask = "T"\n\n[[rooms]]\nid = "r"\nmembers = ["writer", "critic"]'
        '\n\n[[members]]\nid = "writer"\nrole = "w"\nhandler = "handlers:writer"\n\n'
        '[[members]]\nid = "critic"\nrole = "c"\ninitial_turn = false\n'
        'handler = "handlers:critic"\n', encoding="utf-8")

    done = wop("run", "team/council.toml")

    assert done.returncode == 0, done.stderr
    assert "[r] writer team/writer/1/0 @critic: look @critic" in done.stdout
    assert "[r] critic team/critic/2/0 @writer: fine @writer" in done.stdout
    assert "  writer (w): thanks: fine @writer" in done.stdout


def test_validate_prints_a_summary(wop: Wop, release_team: Path, human_council: Path) -> None:
    done = wop("validate", str(release_team))
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == "ok: council release-team (version 1)"
    assert "    review: writer, reviewer" in done.stdout
    assert "    writer [writer] engine=script cap=2" in done.stdout
    assert "    reviewer [reviewer] engine=script cap=2 (waits for a mention)" in done.stdout
    human = wop("validate", str(human_council)).stdout
    assert "    me [user] engine=human cap=3 (waits for a mention)" in human


def test_validate_reports_a_bad_reference(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "ref.toml").write_text(
        '[council]\nid = "x"\ntask = "t"\n\n[[rooms]]\nid = "r"\nmembers = ["ghost"]\n\n'
        '[[members]]\nid = "a"\nrole = "r"\nengine = "script"\nscript = []\n',
        encoding="utf-8")
    done = wop("validate", "ref.toml")
    assert done.returncode == 2
    assert "error[DECLARATION_INVALID]" in done.stderr and "ghost" in done.stderr
