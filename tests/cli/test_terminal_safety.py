"""Nothing a member or person wrote acts on the terminal: every CLI output escapes control
and bidirectional characters, JSON stays valid, exports round-trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import DB, Wop, json_lines
from wopdsl import attach
from wopdsl.declare import loads_spec

HOSTILE = ("clear\x1b[2J title\x1b]0;owned\x07 nul\x00 cr\r back\b c1\x9b31m del\x7f "
           "rlo\u202eevil\u2066iso line\u2028sep")
"""ANSI and OSC sequences, NUL, CR, backspace, a C1 CSI, DEL, bidi overrides, U+2028."""

UNSAFE = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in "\n\t"} | {
    "\u061c", "\u200e", "\u200f", "\u2028", "\u2029",
    *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)),
}


def assert_terminal_safe(text: str) -> None:
    found = sorted({f"U+{ord(ch):04X}" for ch in text if ch in UNSAFE})
    assert found == [], f"raw control/bidi characters reached the terminal: {found}"


@pytest.fixture
def hostile_run(wop: Wop, tmp_path: Path, human_council: Path) -> str:
    assert wop("run", str(human_council), "--run-id", "h1").returncode == 3
    run = attach(tmp_path / DB, "h1")
    run.reply_sync(HOSTILE + " @namer", room="desk")
    assert run.status == "completed"
    return "h1"


@pytest.mark.parametrize("command", [
    ["transcript", "h1"], ["replay", "h1"], ["replay", "h1", "--json"], ["runs"],
    ["events", "h1"], ["rooms", "h1", "--out", "rooms"],
])
def test_read_commands_escape_what_people_wrote(wop: Wop, hostile_run: str,
                                                command: list[str]) -> None:
    done = wop(*command)

    assert done.returncode == 0, done.stderr
    assert_terminal_safe(done.stdout + done.stderr)


def test_the_transcript_shows_the_escapes(wop: Wop, hostile_run: str) -> None:
    out = wop("transcript", hostile_run).stdout
    assert "clear\\x1b[2J title\\x1b]0;owned\\x07 nul\\x00 cr\\r back\\x08 c1\\x9b31m" in out
    assert "rlo\\u202eevil\\u2066iso line\\u2028sep @namer" in out


def test_json_output_is_ascii_and_keeps_the_text(wop: Wop, hostile_run: str) -> None:
    done = wop("events", hostile_run)
    assert done.stdout.isascii()
    texts = [e["payload"]["turn"]["content"]["text"] for e in json_lines(done.stdout)
             if e["type"] == "conversation.exchanged"]
    assert HOSTILE + " @namer" in texts
    replayed = wop("replay", hostile_run, "--json")
    assert replayed.stdout.isascii()
    assert json.loads(replayed.stdout)["status"] == "completed"


def test_live_output_of_a_reply_is_escaped(wop: Wop, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h2").returncode == 3
    done = wop("reply", "h2", "--room", "desk", "bell\x07 csi\x1b[31m rlo\u202e @namer")
    assert done.returncode == 0, done.stderr
    assert_terminal_safe(done.stdout + done.stderr)
    assert "bell\\x07 csi\\x1b[31m rlo\\u202e @namer" in done.stdout


def test_errors_escape_what_the_user_typed(wop: Wop, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "h3").returncode == 3
    done = wop("reply", "h3", "--room", "desk\x1b]0;owned\x07\u202e", "hello")
    assert done.returncode == 2
    assert "error[validation_error]" in done.stderr
    assert_terminal_safe(done.stdout + done.stderr)
    assert "desk\\x1b]0;owned\\x07\\u202e" in done.stderr


def test_export_escapes_bidi_and_c1_and_round_trips(wop: Wop, tmp_path: Path) -> None:
    task = "Ship\u202e it\x9b now\u2028"
    (tmp_path / "tricky.py").write_text(
        "from wopdsl import Council\n"
        f"council = Council('tricky', task={task!r})\n"
        "council.add_member('a', role='r', engine='script', script=[{'summary': 'ok'}])\n",
        encoding="utf-8")

    done = wop("export", "tricky:council")

    assert done.returncode == 0, done.stderr
    assert_terminal_safe(done.stdout)
    assert "\\u202e" in done.stdout and "\\u009b" in done.stdout
    assert loads_spec(done.stdout).council.task == task


def test_a_typed_escape_never_reads_like_an_escaped_control(wop: Wop, tmp_path: Path,
                                                            human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "t1").returncode == 3
    typed = "real \x1b[1m and typed \\x1b[1m; C:\\Temp and \\\\server @namer"
    done = wop("reply", "t1", "--room", "desk", typed)
    assert done.returncode == 0, done.stderr
    out = wop("transcript", "t1").stdout
    # As `wop run` prints it: control characters escaped, backslashes doubled.
    line = "real \\x1b[1m and typed \\\\x1b[1m; C:\\\\Temp and \\\\\\\\server @namer"
    assert line in out
    assert line in done.stdout
    assert_terminal_safe(out)
    # The log keeps the exact text.
    assert attach(tmp_path / DB, "t1").state.rooms["desk"].messages[-1].text == typed
