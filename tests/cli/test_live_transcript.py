"""What `wop run` prints live is what the stored log gives, whoever appended to it.

Real `wop` subprocesses on real SQLite files: the live transcript (fed from what the run's
own process just committed, and from the log for anything another process wrote) is compared
with `wop replay` (the same printer over the stored log, read back in one go) and with the
stored posts themselves.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.cli.conftest import REPO, Wop, _env, stored_events
from wopdsl.protocol.payloads import posted_turn, turn_sender

HANDLERS = """\
import asyncio
from pathlib import Path

from wopdsl import Post, Reply

HERE = Path(__file__).parent


def writer(turn):
    if turn.turn == 1:
        return Reply(summary="asked", posts=[
            Post(room="desk", text="first draft\\nin two lines @critic", mentions=["critic"])])
    return Reply(summary="done: " + "; ".join(t.text for t in turn.triggers))


async def critic(turn):
    # Waits (without holding the event loop) until the test has posted from elsewhere.
    (HERE / "critic.started").write_text("1")
    while not (HERE / "go").exists():
        await asyncio.sleep(0.02)
    return Reply(summary="ok", posts=[
        Post(room="desk", text="tab\\there, \\x1b[31mred\\x1b[0m @writer", mentions=["writer"])])
"""

COUNCIL = """\
[council]
id = "desk"
task = "Review the draft."

[[rooms]]
id = "desk"
members = ["writer", "critic", "me"]

[[members]]
id = "writer"
role = "w"
handler = "handlers:writer"

[[members]]
id = "critic"
role = "c"
initial_turn = false
handler = "handlers:critic"

[[members]]
id = "me"
role = "user"
engine = "human"
initial_turn = false
"""


def _post_lines(out: str) -> list[str]:
    """The lines of posts in `wop run` output (``[room] sender id …``), in order."""
    return [line for line in out.splitlines()
            if line.startswith("[") and " -- " not in line and "answered round" not in line]


def _stored_posts(db: Path, run_id: str) -> list[tuple[str, str, str]]:
    """(room, sender, message id) of every stored post, in log order."""
    posts = []
    for event in stored_events(db, run_id):
        turn = posted_turn(event)
        if turn is not None and turn.get("role") != "system":
            posts.append((turn["groupId"], turn_sender(turn), turn["messageId"]))
    return posts


def _check_against_the_log(wop: Wop, tmp_path: Path, out: str, run_id: str, *,
                           blind: bool = False) -> None:
    """``out`` (a `wop run`) against the stored log: `wop replay`'s lines, and its posts.

    Each post is printed once, in log order (``blind``: a blind round's posts are printed
    together when the round ends, so only once).
    """
    lines = out.splitlines()
    assert lines[0].startswith(f"run {run_id} ")
    replay = wop("replay", run_id, "--store", "runs.db")
    assert "\n".join(lines[1:]) + "\n" == replay.stdout  # Byte for byte.
    posts = _post_lines(out)
    stored = _stored_posts(tmp_path / "runs.db", run_id)
    if blind:
        posts.sort(key=lambda line: line.split()[2])
        stored.sort(key=lambda post: post[2])
    assert len(posts) == len(stored)
    for line, (room, sender, message_id) in zip(posts, stored, strict=True):
        assert line.startswith(f"[{room}] {sender} {message_id}"), (line, message_id)


def test_the_live_transcript_is_the_stored_logs(wop: Wop, tmp_path: Path) -> None:
    (tmp_path / "councils").mkdir()
    for name in ("launch-board", "incident-response", "release-team"):
        shutil.copy(REPO / "councils" / f"{name}.toml", tmp_path / "councils")
        done = wop("run", f"councils/{name}.toml", "--run-id", name, "--store", "runs.db")
        assert done.returncode == 0, done.stderr
        _check_against_the_log(wop, tmp_path, done.stdout, name, blind=name == "launch-board")
        as_json = wop("run", f"councils/{name}.toml", "--run-id", f"{name}-json", "--json",
                      "--store", "runs.db")
        assert as_json.returncode == 0, as_json.stderr
        assert as_json.stdout.startswith("{") and '"status": "completed"' in as_json.stdout


def _lines_of(process: subprocess.Popen[str], into: list[str]) -> threading.Thread:
    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            into.append(line)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _until(check: object, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def test_a_post_from_another_process_is_printed_once_in_order(wop: Wop,
                                                              tmp_path: Path) -> None:
    (tmp_path / "handlers.py").write_text(HANDLERS, encoding="utf-8")
    (tmp_path / "council.toml").write_text(COUNCIL, encoding="utf-8")
    command = [sys.executable, "-m", "wopdsl", "--store", "runs.db"]
    printed: list[str] = []
    replied: list[str] = []
    with subprocess.Popen([*command, "run", "council.toml", "--run-id", "r1"], cwd=tmp_path,
                          env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, encoding="utf-8") as running:
        reader = _lines_of(running, printed)
        try:
            _until((tmp_path / "critic.started").exists, "the critic's turn")
            # A second terminal posts while `wop run` follows the run (its critic waits).
            with subprocess.Popen(
                    [*command, "reply", "r1", "--council", "council.toml", "--room", "desk",
                     "from the other terminal @writer"], cwd=tmp_path, env=_env(),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    encoding="utf-8") as reply:
                reply_reader = _lines_of(reply, replied)
                # `wop run` prints the other process's post while its own turn still runs.
                _until(lambda: any("from the other terminal" in line for line in printed),
                       "wop run to print the post from the other terminal")
                (tmp_path / "go").write_text("1")
                assert reply.wait(timeout=120) == 0, reply.stderr.read()  # type: ignore[union-attr]
                reply_reader.join(timeout=30)
            assert running.wait(timeout=120) == 0, running.stderr.read()  # type: ignore[union-attr]
            reader.join(timeout=30)
        finally:
            for process in (running,):
                if process.poll() is None:
                    process.kill()

    out = "".join(printed)
    mine = [line for line in _post_lines(out) if "from the other terminal" in line]
    assert len(mine) == 1 and mine[0].startswith("[desk] me team/me/"), out
    _check_against_the_log(wop, tmp_path, out, "r1")
    senders = [line.split()[1] for line in _post_lines(out)]
    assert senders == ["writer", "me", "critic", "writer"] or \
        senders == ["writer", "me", "critic"], out
    # The replying process printed its own post once, then the run's next posts.
    assert [line for line in _post_lines("".join(replied))
            if "from the other terminal" in line] == mine
    assert "\\x1b[31mred" in out and "\x1b" not in out  # Escaped, as always.
