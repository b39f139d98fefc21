"""A human member: `wop run` waits (exit 3), `wop reply` joins and continues the run."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
from pathlib import Path

from tests.cli.conftest import DB, Wop, json_lines, stored_events


def test_run_waits_for_the_human_and_says_how_to_reply(wop: Wop, human_council: Path) -> None:
    done = wop("run", str(human_council), "--run-id", "h1")

    assert done.returncode == 3, done.stderr
    assert "[desk] namer team/namer/1/0 @me: Which name, @me?" in done.stdout
    assert "waiting-input: run h1 (" in done.stdout
    assert "waiting for input: me in room desk" in done.stdout
    assert 'reply with: wop reply h1 --room desk "' in done.stdout
    assert done.stderr == ""


def test_reply_continues_the_run_to_completion(wop: Wop, tmp_path: Path,
                                               human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h2").returncode == 3

    done = wop("reply", "h2", "--room", "desk", "Call it Falcon @namer")

    assert done.returncode == 0, done.stderr
    assert "[desk] me team/me/2/0 @namer: Call it Falcon @namer" in done.stdout
    # Only what is new since the reply: the namer's question is not printed again.
    assert "Which name" not in done.stdout
    assert "  namer (namer): Named: Call it Falcon @namer" in done.stdout
    assert "completed: run h2 (" in done.stdout
    events = stored_events(tmp_path / DB, "h2")
    turn = next(e["payload"]["turn"] for e in events if e["type"] == "conversation.exchanged"
                and e["payload"]["turn"]["speakerId"] == "host:me")
    assert turn["from"] == "user"
    assert turn["role"] == "user" and turn["content"]["mentions"] == ["namer"]
    assert events[-1]["type"] == "run.completed"


def test_reply_json_and_as_member(wop: Wop, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h3", "--json").returncode == 3
    done = wop("reply", "h3", "--room", "desk", "--as", "me", "--json", "Heron @namer")
    assert done.returncode == 0
    doc = json.loads(done.stdout)
    assert doc["status"] == "completed"
    assert doc["result"]["agents"][0]["result"]["summary"] == "Named: Heron @namer"


def test_reply_without_mention_completes_the_run(wop: Wop, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h4").returncode == 3
    done = wop("reply", "h4", "--room", "desk", "no idea")
    assert done.returncode == 0
    assert "  namer (namer): Asked." in done.stdout


def test_refused_reply_exits_2_and_appends_nothing(wop: Wop, tmp_path: Path,
                                                   human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h5").returncode == 3
    before = stored_events(tmp_path / DB, "h5")

    for args in (("--room", "desk", "hi @nobody"),     # mention outside the room
                 ("--room", "hall", "hi"),             # no such room
                 ("--room", "desk", "--as", "namer", "hi")):  # not a human member
        done = wop("reply", "h5", *args)
        assert done.returncode == 2, args
        assert done.stderr.startswith("error[validation_error]: "), done.stderr
        assert "Traceback" not in done.stderr

    assert stored_events(tmp_path / DB, "h5") == before
    assert wop("replay", "h5").returncode == 3


def test_reply_to_a_finished_run_is_refused(wop: Wop, release_team: Path) -> None:
    assert wop("run", str(release_team), "--run-id", "done").returncode == 0
    done = wop("reply", "done", "--room", "review", "late")
    assert done.returncode == 2
    assert done.stderr.startswith("error[validation_error]: ")


def test_reply_to_an_unknown_run(wop: Wop, human_council: Path) -> None:
    done = wop("reply", "ghost", "--room", "desk", "hi")
    assert done.returncode == 2
    assert done.stderr.startswith("error[RUN_NOT_FOUND]: ")


def test_resume_of_a_waiting_run_keeps_waiting(wop: Wop, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h6").returncode == 3
    done = wop("resume", "h6")
    assert done.returncode == 3
    assert "waiting for input: me in room desk" in done.stdout


def test_events_follow_ends_when_the_run_completes(wop: Wop, tmp_path: Path,
                                                   human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h7").returncode == 3
    stored = len(stored_events(tmp_path / DB, "h7"))
    with subprocess.Popen(
            [sys.executable, "-m", "wopdsl", "events", "h7", "--follow"], cwd=tmp_path,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            encoding="utf-8") as follower:
        # A safety net only: a follower that never ends is killed and the test fails.
        watchdog = threading.Timer(120, follower.kill)
        watchdog.start()
        try:
            assert follower.stdout is not None and follower.stderr is not None
            # The follower prints what is stored at once; reading it proves it is following.
            caught_up = [json.loads(follower.stdout.readline()) for _ in range(stored)]
            assert wop("reply", "h7", "--room", "desk", "Wren @namer").returncode == 0
            rest = follower.stdout.read()
            errors = follower.stderr.read()
            follower.wait()
        finally:
            watchdog.cancel()
            if follower.poll() is None:
                follower.kill()
    assert follower.returncode == 0, errors
    events = [*caught_up, *json_lines(rest)]
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "run.completed"
    assert events == stored_events(tmp_path / DB, "h7")


def test_control_characters_are_escaped_on_the_terminal(wop: Wop, tmp_path: Path,
                                                        human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h8").returncode == 3

    done = wop("reply", "h8", "--room", "desk", "\x1b[2Jgone\rover\nsecond line")

    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\r" not in done.stdout
    assert "[desk] me team/me/2/0: \\x1b[2Jgone\\rover\n    second line" in done.stdout
    saved = [e["payload"]["turn"]["content"]["text"] for e in stored_events(tmp_path / DB, "h8")
             if e["type"] == "conversation.exchanged"]
    assert saved[-1] == "\x1b[2Jgone\rover\nsecond line"  # The log keeps the exact text.


DECORATOR_COUNCIL = '''\
from wopdsl import Council, Post, Reply, Turn

council = Council("asker", task="Name the release.", max_turns_per_member=3)
council.room("desk", members=["namer", "me"])
council.human("me")


@council.member(role="namer")
def namer(turn: Turn) -> Reply:
    if not turn.triggers:
        return Reply(summary="Asked.", posts=[Post(room="desk", text="Which name, @me?",
                                                   mentions=["me"])])
    return Reply(summary=f"Named: {turn.triggers[0].text}")
'''


def test_the_hints_for_a_decorator_council_name_it_and_work_as_printed(wop: Wop,
                                                                       tmp_path: Path) -> None:
    # Its handler is bound in code, which the log cannot name: every hint passes it again.
    (tmp_path / "mymodule.py").write_text(DECORATOR_COUNCIL)
    done = wop("run", "mymodule:council", "--run-id", "d1")
    assert done.returncode == 3, done.stderr
    hint = next(line for line in done.stdout.splitlines() if line.startswith("reply with: "))
    assert hint.startswith("reply with: wop reply d1 --room desk --council mymodule:council \"")

    argv = shlex.split(hint.removeprefix("reply with: wop "))
    argv[-1] = "Falcon @namer"
    replied = wop(*argv)
    assert replied.returncode == 0, replied.stderr
    assert "namer (namer): Named: Falcon @namer" in replied.stdout


def test_the_hints_for_a_council_file_need_no_council(wop: Wop, human_council: Path) -> None:
    done = wop("run", str(human_council), "--run-id", "f1")
    assert done.returncode == 3
    assert "--council" not in done.stdout
