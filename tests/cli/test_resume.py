"""`wop resume`: continue a run whose process died mid-turn (kill -9 style), re-binding handlers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import DB, SLOW, Wop, interrupt, stored_events

HANDLERS = """\
import os
from pathlib import Path

from wopdsl import Post, Reply

MARKER = Path(__file__).with_name("crashed.marker")


def writer(turn):
    if turn.turn == 1 and not MARKER.exists():
        MARKER.write_text("the first attempt died here")
        os._exit(9)  # The process dies mid-turn: node.started is stored, nothing else.
    if turn.turn == 1:
        return Reply(summary="asked", posts=[Post(room="r", text="look @critic",
                                                  mentions=["critic"])])
    return Reply(summary="thanks: " + turn.triggers[0].text)


def critic(turn):
    return Reply(summary="ok", posts=[Post(room="r", text="fine @writer", mentions=["writer"])])
"""

TOML = """\
[council]
id = "py"
task = "T"

[[rooms]]
id = "r"
members = ["writer", "critic"]

[[members]]
id = "writer"
role = "w"
handler = "handlers:writer"

[[members]]
id = "critic"
role = "c"
initial_turn = false
handler = "handlers:critic"
"""

DECORATED = """\
from handlers import critic, writer
from wopdsl import Council

council = Council("py-deco", task="T")
council.room("r", members=["writer", "critic"])
council.member("writer", role="w")(writer)
council.member("critic", role="c", initial_turn=False)(critic)
"""


def _crash(wop: Wop, *args: str) -> None:
    died = wop("run", *args)
    assert died.returncode == 9, died.stderr
    assert "Traceback" not in died.stderr


def test_resume_retries_the_interrupted_turn(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "handlers.py").write_text(HANDLERS, encoding="utf-8")
    (tmp_path / "team" / "council.toml").write_text(TOML, encoding="utf-8")
    _crash(wop, "team/council.toml", "--run-id", "k1")
    stored = stored_events(tmp_path / DB, "k1")
    assert stored[-1]["type"] == "node.started" and stored[-1]["nodeId"] == "writer"
    assert json.loads(wop("runs", "--json").stdout)[0]["status"] == "running"
    interrupted = wop("replay", "k1")
    assert interrupted.returncode == 4
    assert "wop resume k1" in interrupted.stdout

    done = wop("resume", "k1")  # Handlers come from the council file the log names.

    assert done.returncode == 0, done.stderr
    assert done.stdout.count("[r] writer team/writer/1/0 @critic: look @critic") == 1
    assert "[r] critic team/critic/2/0 @writer: fine @writer" in done.stdout
    assert "completed: run k1 (" in done.stdout
    events = stored_events(tmp_path / DB, "k1")
    assert events[: len(stored)] == stored
    attempts = [(e["payload"]["nodeId"], e["payload"]["attempt"]) for e in events
                if e["type"] == "node.started" and e["payload"].get("typeId") == "council.member"]
    assert attempts == [("writer", 0), ("writer", 1), ("critic", 0), ("writer", 0)]
    assert wop("resume", "k1").returncode == 0  # A finished run stays finished.
    assert stored_events(tmp_path / DB, "k1") == events


def test_resume_rebinds_a_decorator_council(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "handlers.py").write_text(HANDLERS, encoding="utf-8")
    (tmp_path / "deco.py").write_text(DECORATED, encoding="utf-8")
    (tmp_path / "other.toml").write_text(TOML, encoding="utf-8")
    _crash(wop, "deco:council", "--run-id", "k2")

    unbound = wop("resume", "k2")
    assert unbound.returncode == 2
    assert unbound.stderr.startswith("error[DECLARATION_INVALID]: run k2 has python members "
                                     "without a handler here: writer, critic")
    different = wop("resume", "k2", "other.toml")
    assert different.returncode == 2
    assert "differs from the one run k2 started with" in different.stderr

    done = wop("resume", "k2", "deco:council", "--json")

    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "completed"
    assert doc["result"]["agents"][0]["result"]["summary"] == "thanks: fine @writer"


def test_a_live_run_is_not_resumed_twice_and_ctrl_c_stops_it_at_once(
    wop: Wop, tmp_path: Path
) -> None:
    (tmp_path / "slow.py").write_text(SLOW, encoding="utf-8")
    (tmp_path / "slow.toml").write_text(
        '[council]\nid = "slow"\ntask = "t"\n\n[[members]]\nid = "solo"\nrole = "s"\n'
        'handler = "slow:solo"\n', encoding="utf-8")
    # A shell starts background jobs with SIGINT ignored, and children inherit that: the
    # child gets the default back, as a terminal's `wop run` has it.
    with subprocess.Popen([sys.executable, "-m", "wopdsl", "run", "slow.toml", "--run-id", "s1"],
                          cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, encoding="utf-8",
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
                          ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("run s1 ")
        assert child.stdout.readline() == "handler-started\n"
        # While the child executes the run, resuming it elsewhere is refused, not doubled.
        busy = wop("resume", "s1")
        assert busy.returncode == 1, busy.stderr
        assert "error[STORE_CONFLICT]" in busy.stderr
        assert "run s1 is executing in another process" in busy.stderr
        assert "Traceback" not in busy.stderr
        assert stored_events(tmp_path / DB, "s1")[-1]["type"] == "node.started"
        err = interrupt(child)
    assert child.returncode == 130
    assert "interrupted: run s1 stopped where it was; continue it with `wop resume s1`" in err
    assert "Traceback" not in err
    assert stored_events(tmp_path / DB, "s1")[-1]["type"] == "node.started"

    done = wop("resume", "s1")

    assert done.returncode == 0, done.stderr
    assert "  solo (s): done at last" in done.stdout
