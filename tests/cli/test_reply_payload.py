"""`wop reply` takes RFC 0005 §E resume payloads: exchange, bare turn fields, close."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import DB, Wop, stored_events


def test_exchange_payload_posts_the_turn(wop: Wop, tmp_path: Path, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "p1").returncode == 3
    payload = {"operation": "exchange",
               "turn": {"content": {"text": "Osprey", "mentions": ["namer"]}}}
    done = wop("reply", "p1", "--room", "desk", "--payload", json.dumps(payload))
    assert done.returncode == 0, done.stderr
    assert "[desk] me team/me/2/0 @namer: Osprey" in done.stdout
    assert "completed: run p1" in done.stdout


def test_bare_turn_fields_are_accepted(wop: Wop, human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "p2").returncode == 3
    done = wop("reply", "p2", "--room", "desk", "--payload", '{"content": "Kite @namer"}')
    assert done.returncode == 0, done.stderr
    assert "@namer: Kite @namer" in done.stdout


def test_close_ends_the_room_conversation_with_its_outcome(wop: Wop, tmp_path: Path,
                                                           human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "p3").returncode == 3
    done = wop("reply", "p3", "--room", "desk", "--close", "--outcome", '{"name": "none"}')
    assert done.returncode == 0, done.stderr
    events = stored_events(tmp_path / DB, "p3")
    closed = [e for e in events if e["type"] == "conversation.closed"]
    assert [e["payload"]["outcome"] for e in closed] == [{"name": "none"}]
    assert events[-1]["type"] == "run.completed"
    late = wop("reply", "p3", "--room", "desk", "too late")
    assert late.returncode == 2 and "error[validation_error]" in late.stderr


def test_bad_payloads_exit_2_and_append_nothing(wop: Wop, tmp_path: Path,
                                               human_council: Path) -> None:
    assert wop("run", str(human_council), "--run-id", "p4").returncode == 3
    before = len(stored_events(tmp_path / DB, "p4"))
    for args in (["--payload", "{not json"], ["--payload", "[1]"],
                 ["--payload", '{"operation": "shout"}'], ["text", "--close"], []):
        done = wop("reply", "p4", "--room", "desk", *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "error[validation_error]" in done.stderr and "Traceback" not in done.stderr
    assert len(stored_events(tmp_path / DB, "p4")) == before
