"""Rough edges a newcomer meets: did-you-mean for typos, plain hints, no internal names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import Wop

HANDLER_TYPOS = """\
[council]
id = "typos"
task = "t"

[[rooms]]
id = "plan"
members = ["a", "b"]

[[members]]
id = "a"
role = "r"
handler = "agents:speek"

[[members]]
id = "b"
role = "r"
handler = "agnts:speak"
"""


def test_reply_to_a_misspelt_room_suggests_the_room(wop: Wop, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h1").returncode == 3
    done = wop("reply", "h1", "--room", "dsek", "hello")
    assert done.returncode == 2
    first, hint = done.stderr.splitlines()[:2]
    assert first == ("error[validation_error]: room 'dsek' does not exist (rooms: desk); "
                     "did you mean 'desk'?")
    assert hint.strip() == "hint: post in one of me's rooms: desk"
    assert "resume payload" not in done.stderr and "operation" not in done.stderr
    mistaken = wop("reply", "h1", "--room", "desk", "--as", "mee", "hello")
    assert mistaken.returncode == 2
    assert "did you mean 'me'?" in mistaken.stderr
    assert "hint: post as one of them: me" in mistaken.stderr


def test_a_misspelt_handler_is_named_as_written_with_a_suggestion(wop: Wop,
                                                                  tmp_path: Path) -> None:
    (tmp_path / "typos.toml").write_text(HANDLER_TYPOS)
    (tmp_path / "agents.py").write_text("def speak(turn):\n    return 'hi'\n")
    done = wop("validate", "typos.toml")
    assert done.returncode == 2
    assert ("members[0].handler: cannot import handler 'agents:speek': module 'agents' has no "
            "attribute 'speek'; did you mean 'speak'?") in done.stderr
    assert (f"members[1].handler: cannot import handler 'agnts:speak': no module 'agnts' in "
            f"the council's folder ({tmp_path.resolve()}) nor installed; did you mean "
            f"'agents'?") in done.stderr
    assert "_wopdsl_councils" not in done.stderr


def test_serve_without_the_server_extra(tmp_path: Path) -> None:
    # A real subprocess in which uvicorn can't be imported.
    code = ("import sys; sys.modules['uvicorn'] = None\n"
            "from wopdsl.cli import main\nraise SystemExit(main(['serve']))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "error[SERVER_MISSING]: wop serve needs the server extra (uvicorn is not installed)",
        "    hint: pip install 'wopdsl[server]'"]


def test_a_fork_is_listed_with_its_own_start_time(wop: Wop, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "src").returncode == 0
    assert wop("fork", "src", "--from", "8", "--run-id", "forked").returncode == 0
    runs = {r["runId"]: r for r in json.loads(wop("runs", "--json").stdout)}
    events = [json.loads(line) for line in wop("events", "forked").stdout.splitlines()]
    forked_at = events[0]["payload"]["metadata"]["forkedFrom"]["forkedAt"]
    assert runs["forked"]["startedAt"] == forked_at
    assert runs["src"]["startedAt"] == events[0]["timestamp"]  # The copied event keeps its time.
    assert forked_at > runs["src"]["startedAt"]
    table = wop("runs").stdout.splitlines()
    assert any(line.startswith("forked ") and line.endswith(forked_at) for line in table)


def test_validate_says_human_turns_are_not_in_the_worst_case(wop: Wop,
                                                             human_council: Path) -> None:
    done = wop("validate", str(human_council))
    assert done.returncode == 0
    assert ("  worst case: 3 member turns (sum of caps), not counting the turns of human "
            "members (me)") in done.stdout.splitlines()


DECORATED = """\
from wopdsl import Council, Reply

team = Council("deco", task="T")
team.room("r", members=["solo"])


@team.member("solo", role="w")
def solo(turn):
    return Reply(summary="done")
"""

PINGPONG = """\
[council]
id = "pingpong"
task = "Agree on a name."
max_turns_per_member = 2

[[rooms]]
id = "desk"
members = ["ping", "pong"]

[[members]]
id = "ping"
role = "r"
engine = "script"
script = [{ summary = "Asked.", posts = [{ room = "desk", text = "@pong?", mentions = ["pong"] }] },
          { summary = "Again", posts = [{ room = "desk", text = "@pong!", mentions = ["pong"] }] }]

[[members]]
id = "pong"
role = "r"
engine = "script"
initial_turn = false
script = [{ summary = "Yes.", posts = [{ room = "desk", text = "@ping!", mentions = ["ping"] }] },
          { summary = "Yes!", posts = [{ room = "desk", text = "@ping!!", mentions = ["ping"] }] }]
"""


def test_a_python_file_is_answered_with_the_module_attr_to_run(wop: Wop,
                                                               tmp_path: Path) -> None:
    (tmp_path / "council.py").write_text(DECORATED, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deco.py").write_text(DECORATED, encoding="utf-8")

    here = wop("run", "council.py")
    there = wop("validate", "sub/deco.py")

    assert here.returncode == there.returncode == 2
    assert here.stderr.splitlines()[:3] == [
        "error[DECLARATION_INVALID]: invalid council declaration:",
        "  council.py: this is a Python file, not a council file (TOML)",
        "    hint: give a decorator council as MODULE:ATTR, from the folder that holds the "
        "module (it is put on sys.path): `wop run council:team`; in Python, import the module"]
    assert "TOML syntax error" not in here.stderr + there.stderr
    assert "`cd sub && wop run deco:team`" in there.stderr
    # The suggested commands run the council.
    assert wop("run", "council:team").returncode == 0
    assert wop("run", "deco:team", cwd=tmp_path / "sub").returncode == 0


def test_a_wrong_mention_in_a_reply_names_the_rooms_members(wop: Wop,
                                                            human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h2").returncode == 3

    done = wop("reply", "h2", "--room", "desk", "thanks @namr")

    assert done.returncode == 2
    assert done.stderr.splitlines()[:2] == [
        "error[validation_error]: mention '@namr' is not a member of room 'desk' (me, namer); "
        "did you mean 'namer'?",
        "    hint: mention members of room 'desk': @me, @namer (or @all); a name without @ "
        "asks nobody"]


def test_a_member_mentioned_after_its_cap_names_it_the_cap_and_the_fixes(
        wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "pingpong.toml").write_text(PINGPONG, encoding="utf-8")

    done = wop("run", "pingpong.toml", "--run-id", "pingpong-0123456789ab")

    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == (
        "error[TEAM_TURN_LIMIT]: ping was mentioned by pong in room 'desk' after using all 2 "
        "of its turns (max_turns = 2); fix: raise its max_turns (or max_turns_per_member), "
        "debate in a room with rounds = N (a mention there never adds a turn), or end the "
        "discussion on a decision ([[decisions]]: members vote instead of asking again; see "
        "docs/guides/deliberation.md)")
    assert "see: docs/errors.md#team_turn_limit" in done.stderr
    for check in (("check", "pingpong-0123456789ab"), ("check", "--v2", "pingpong-0123456789ab")):
        assert wop(*check).returncode == 0, wop(*check).stdout
