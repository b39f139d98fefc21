"""`wop eval` in a real subprocess: exit codes, the report, kill -9 and Ctrl-C mid-way."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.cli.conftest import DB, Wop, _env
from tests.evals.conftest import BOARD, SOLO_HALF, board_vs_solo, write
from wopdsl import open_store
from wopdsl.protocol.check import check_events

EVAL = board_vs_solo("e", settings="repeats = 2\njobs = 2\n", tail="\n[gate]\ncorrect = 0.5\n")

SLOW = """\
import asyncio
from pathlib import Path

from wopdsl import Reply


async def solve(turn):
    for _ in range(3000):  # a slow model: until the test says go (or 30 s)
        if Path(__file__).with_name("go").exists():
            break
        await asyncio.sleep(0.01)
    return Reply(summary=f"{turn.task} = 4")
"""

SLOW_COUNCIL = """\
[council]
id = "slow"
task = "placeholder"

[[members]]
id = "solver"
role = "solver"
handler = "slow:solve"
"""


def _folder(tmp_path: Path) -> None:
    write(tmp_path, "solo.toml", SOLO_HALF)
    write(tmp_path, "board.toml", BOARD)
    write(tmp_path, "slow.py", SLOW)
    write(tmp_path, "slow.toml", SLOW_COUNCIL)


def _stored(tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    store = open_store(tmp_path / DB)
    try:
        return {info.run_id: store.read(info.run_id) for info in store.runs()}
    finally:
        store.close()


def test_the_report_and_the_exit_codes(wop: Wop, tmp_path: Path) -> None:
    _folder(tmp_path)
    write(tmp_path, "e.toml", EVAL)
    done = wop("eval", "e.toml", "--json", "out/report.json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("eval e: 2 arm(s) x 2 case(s) x 2 repeat(s), 8 runs in ")
    assert "board  correct  100.0 % (4/4)     [51.0, 100.0]  4       0" in done.stdout
    assert "solo   correct  50.0 % (2/4)      [15.0, 85.0]   4       0" in done.stdout
    assert "  correct >= 0.5 on solo: 0.5 ok" in done.stdout
    assert done.stderr.count("\n") == 8  # a line per run (not a terminal)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert sorted(r["runId"] for r in report["runs"]) == sorted(_stored(tmp_path))
    failing = wop("eval", "e.toml", "--quiet")  # the same runs, reused; a stricter gate
    assert failing.returncode == 0 and failing.stderr == ""
    write(tmp_path, "e.toml", EVAL.replace("correct = 0.5", "correct = 0.75"))
    failing = wop("eval", "e.toml", "--quiet")
    assert failing.returncode == 1
    assert failing.stderr.startswith("error[EVAL_GATE_FAILED]: 1 gate(s) failed: correct on "
                                     "solo: 0.5 < 0.75")


def test_bad_input_exits_2_with_file_line_col(wop: Wop, tmp_path: Path) -> None:
    _folder(tmp_path)
    write(tmp_path, "e.toml", EVAL.replace("jobs = 2", "jobs = 0"))
    bad = wop("eval", "e.toml")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error[DECLARATION_INVALID]: invalid eval file:\n"
                                 "  e.toml:4:1: eval.jobs: ")
    assert "Traceback" not in bad.stderr and bad.stdout == ""
    write(tmp_path, "e.toml", EVAL)
    write(tmp_path, "old.json", "[1, 2]")
    bad = wop("eval", "e.toml", "--compare", "old.json")
    assert bad.returncode == 2
    assert "old.json: not a wopdsl-eval/1 report" in bad.stderr
    assert not (tmp_path / DB).exists()  # nothing ran


def _slow_eval(tmp_path: Path) -> None:
    _folder(tmp_path)
    write(tmp_path, "e.toml", EVAL.replace('council = "solo.toml"', 'council = "slow.toml"')
          .replace("repeats = 2", "repeats = 3"))


def _popen(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "wopdsl", "eval", "e.toml", *args],
                            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, encoding="utf-8")


def _wait_for(tmp_path: Path, finished: int) -> dict[str, list[dict[str, Any]]]:
    """Until ``finished`` runs completed and a slow one is in its turn (30 s at most)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (tmp_path / DB).exists():
            runs = _stored(tmp_path)
            ended = [r for r in runs.values() if r[-1]["type"] == "run.completed"]
            waiting = [r for r in runs.values() if r[-1]["type"] == "node.started"]
            if len(ended) >= finished and waiting:
                return runs
        time.sleep(0.05)
    raise AssertionError("the eval did not get that far")


def test_kill_9_mid_way_then_the_rerun_resumes_without_repeating(wop: Wop,
                                                                 tmp_path: Path) -> None:
    _slow_eval(tmp_path)
    process = _popen(tmp_path, "--quiet")
    try:
        _wait_for(tmp_path, finished=2)
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)
    assert process.returncode == -signal.SIGKILL
    before = _stored(tmp_path)
    finished = {rid: len(events) for rid, events in before.items()
                if events[-1]["type"] == "run.completed"}
    cut = [rid for rid, events in before.items() if events[-1]["type"] == "node.started"]
    assert finished and cut
    (tmp_path / "go").write_text("now")
    again = wop("eval", "e.toml", "--quiet", "--json", "r.json")
    assert again.returncode == 0, again.stderr
    how = {r["runId"]: r["how"] for r in json.loads((tmp_path / "r.json").read_text())["runs"]}
    assert len(how) == 12
    after = _stored(tmp_path)
    for rid, count in finished.items():
        assert how[rid] == "reused" and len(after[rid]) == count  # not run again
    for rid in cut:
        assert how[rid] == "resumed"
        types = [e["type"] for e in after[rid]]
        assert types.count("run.started") == 1 and "run.resumed" in types
        assert types[-1] == "run.completed"
    for rid, events in after.items():  # every log, resumed ones included, is valid OpenWOP
        assert check_events(events) == [], rid


def test_ctrl_c_stops_cleanly_with_a_partial_report(wop: Wop, tmp_path: Path) -> None:
    _slow_eval(tmp_path)
    process = _popen(tmp_path, "--json", "partial.json")
    try:
        _wait_for(tmp_path, finished=2)
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert "PARTIAL:" in out.splitlines()[0]
    assert "interrupted:" in err and "run the same command again to go on" in err
    partial = json.loads((tmp_path / "partial.json").read_text())
    assert partial["status"] == "partial" and partial["passed"] is None
    assert 2 <= partial["finished"] < partial["planned"] == 12
    stored = _stored(tmp_path)
    assert not any(e["type"] == "run.cancelled" for events in stored.values() for e in events)
    (tmp_path / "go").write_text("now")
    again = wop("eval", "e.toml", "--quiet")
    assert again.returncode == 0, again.stderr
    assert os.path.exists(tmp_path / DB)


def test_on_a_terminal_a_progress_bar_with_eta_and_a_live_table(tmp_path: Path) -> None:
    import pty

    _folder(tmp_path)
    write(tmp_path, "e.toml", EVAL)
    leader, follower = pty.openpty()  # standard error is a terminal; standard output a pipe
    try:
        process = subprocess.Popen([sys.executable, "-m", "wopdsl", "eval", "e.toml"],
                                   cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                                   stderr=follower, text=True, encoding="utf-8")
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the process closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        out = process.communicate(timeout=60)[0]
    finally:
        os.close(leader)
    assert process.returncode == 0
    screen = drawn.decode("utf-8")
    assert re.search(r"\[#{24}\] 8/8 runs  elapsed \d+:\d\d:\d\d  ETA 0:00:00", screen), screen
    assert re.search(r"\[#{3}\.{21}\] 1/8 runs  elapsed \d+:\d\d:\d\d  ETA \d+:\d\d:\d\d",
                     screen), screen
    assert "  board: correct 4/4" in screen and "  solo: correct 2/4" in screen
    assert screen.count("\x1b[3F\x1b[J") == 8  # redrawn in place 7 times, cleared at the end
    assert out.startswith("eval e: 2 arm(s) x 2 case(s) x 2 repeat(s)")
    assert "\x1b" not in out  # the report itself is plain text


def test_wop_runs_filters_an_evals_runs_by_tag(wop: Wop, tmp_path: Path) -> None:
    _folder(tmp_path)
    write(tmp_path, "e.toml", EVAL)
    assert wop("eval", "e.toml", "--quiet").returncode == 0
    assert wop("run", "solo.toml", "--run-id", "plain").returncode == 0
    everything = json.loads(wop("runs", "--json").stdout)
    assert len(everything) == 9 and "tags" not in everything[-1]
    solo = json.loads(wop("runs", "--eval", "e", "--arm", "solo", "--json").stdout)
    assert len(solo) == 4 and all(r["tags"][:2] == ["eval=e", "arm=solo"] for r in solo)
    one = json.loads(wop("runs", "--tag", "case=c2", "--tag", "repeat=2", "--arm", "board",
                         "--json").stdout)
    assert [r["tags"] for r in one] == [["eval=e", "arm=board", "case=c2", "repeat=2"]]
    table = wop("runs", "--eval", "e", "--case", "c1").stdout.splitlines()
    assert table[0].split() == ["RUN", "COUNCIL", "STATUS", "EVENTS", "TOKENS", "COST",
                                "STARTED", "TAGS"]
    assert len(table) == 5 and all(line.endswith(" case=c1 repeat=1") or
                                   line.endswith(" case=c1 repeat=2") for line in table[1:])
    none = wop("runs", "--eval", "other")
    assert none.stdout == "no runs tagged eval=other in .wop/runs.db\n"


def test_an_evals_runs_open_in_every_command(wop: Wop, tmp_path: Path) -> None:
    _folder(tmp_path)
    write(tmp_path, "e.toml", EVAL)
    assert wop("eval", "e.toml", "--quiet", "--json", "r.json").returncode == 0
    runs = {(r["arm"], r["case"], r["repeat"]): r["runId"]
            for r in json.loads((tmp_path / "r.json").read_text())["runs"]}
    board, solo = runs[("board", "c2", 1)], runs[("solo", "c2", 1)]
    metrics = json.loads(wop("metrics", board, "--json").stdout)
    assert metrics["decisions"]["pick"]["dissent"] == 1
    replay = wop("replay", solo, "--json")
    assert replay.returncode == 0 and json.loads(replay.stdout)["status"] == "completed"
    assert "1+3 = 4 (x)" in wop("transcript", board).stdout
    diff = wop("diff", board, solo)
    assert diff.returncode == 1 and "solver" in diff.stdout  # two councils: they differ
    tree = wop("trace", board, "--tree")
    assert tree.returncode == 0 and tree.stdout.startswith("invoke_workflow board")
    for rid in runs.values():  # every run's log is valid OpenWOP, v1 and v2
        assert wop("check", rid).returncode == 0, rid
        v2 = wop("check", "--v2", rid)
        assert v2.returncode == 0, v2.stdout
