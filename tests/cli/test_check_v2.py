"""`wop check --v2 RUN`: a stored run as OpenWOP v2 serves it, against the bundled v2 schemas.

Real `python -m wopdsl` subprocesses on a real SQLite file.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli.conftest import REPO, Wop

COUNCIL = REPO / "councils" / "release-team.toml"


def test_a_run_passes_the_v2_check(wop: Wop) -> None:
    assert wop("run", str(COUNCIL), "--run-id", "release-team-0001").returncode == 0
    done = wop("check", "--v2", "release-team-0001")
    assert done.returncode == 0, done.stdout
    assert "valid (OpenWOP v2 schemas" in done.stdout
    doc = json.loads(wop("check", "--v2", "release-team-0001", "--json").stdout)
    assert doc["valid"] is True and doc["violations"] == []


def test_the_v2_check_finds_what_v2_refuses(wop: Wop) -> None:
    # A run id too short for v2's tenant-bound grammar (<tenant>/<16+ characters>).
    assert wop("run", str(COUNCIL), "--run-id", "short-1").returncode == 0
    assert wop("check", "short-1").returncode == 0  # Valid v1.
    done = wop("check", "--v2", "short-1", "--json")
    assert done.returncode == 1
    found = json.loads(done.stdout)["violations"]
    assert {v["check"] for v in found} == {"envelope-v2"}
    assert all(v["message"].startswith("runId:") for v in found)


def _edit_run_started(db: Path, change: dict[str, object]) -> None:
    """Change the stored `run.started` payload (as a buggy host would)."""
    _edit_event(db, "run.started", change)


def _edit_event(db: Path, type_: str, change: dict[str, object],
                new_type: str | None = None) -> None:
    """Change the first stored `type_` event's payload, and maybe its type."""
    with sqlite3.connect(db) as conn:
        table = next(r[0] for r in conn.execute(
            "select name from sqlite_master where type='table'") if r[0].startswith("event"))
        columns = [r[1] for r in conn.execute(f"pragma table_info({table})")]
        body = next(c for c in columns if c in ("body", "event", "doc", "data", "payload"))
        rowid, text = conn.execute(f"select rowid, {body} from {table} where {body} like ? "
                                   "order by rowid limit 1", (f'%"{type_}"%',)).fetchone()
        event = json.loads(text)
        event["payload"].update(change)
        if new_type is not None:
            event["type"] = new_type
            if "type" in columns:
                conn.execute(f"update {table} set type = ? where rowid = ?", (new_type, rowid))
        conn.execute(f"update {table} set {body} = ? where rowid = ?",
                     (json.dumps(event), rowid))


def test_the_v2_check_validates_payloads_against_the_v2_defs(wop: Wop, tmp_path: Path) -> None:
    lifecycle = REPO / "wopdsl" / "server" / "conformance" / "councils"
    run_id = "conversation-lifecycle-0001"
    assert wop("run", str(lifecycle / "conformance-conversation-lifecycle.toml"),
               "--run-id", run_id).returncode == 0
    assert wop("check", "--v2", run_id).returncode == 0  # A conversation log, valid v2.
    # engineVersion: a string is valid v1; v2 says integer everywhere (RFC 0172 §B).
    _edit_run_started(tmp_path / ".wop" / "runs.db", {"engineVersion": "1.0"})
    assert wop("check", run_id).returncode == 0
    done = wop("check", "--v2", run_id, "--json")
    assert done.returncode == 1, done.stdout
    found = json.loads(done.stdout)["violations"]
    assert [(v["type"], v["check"]) for v in found] == [("run.started", "payload-v2")]
    assert "engineVersion" in found[0]["message"]


@pytest.mark.wop_invalid_log  # The edited log is invalid v1 too (v1's owner has no subject).
def test_an_invalid_owner_subject_is_reported(wop: Wop, tmp_path: Path) -> None:
    run_id = "release-team-0002"
    assert wop("run", str(COUNCIL), "--run-id", run_id).returncode == 0
    # run.started's `owner.subject` is checked against the bundled v2 subject.schema.json.
    _edit_run_started(tmp_path / ".wop" / "runs.db",
                      {"owner": {"tenant": "local", "subject": {"subjectId": "x"}}})
    done = wop("check", "--v2", run_id, "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    found = json.loads(done.stdout)["violations"]
    v2 = [v for v in found if v["check"] == "payload-v2"]
    assert v2 and {v["type"] for v in v2} == {"run.started"}, found
    assert any(v["message"].startswith("owner/subject: 'issuer'") for v in v2), found


@pytest.mark.wop_invalid_log  # A council never writes channel.written.
def test_a_field_whose_schema_is_not_bundled_is_reported_not_a_crash(wop: Wop,
                                                                     tmp_path: Path) -> None:
    run_id = "release-team-0003"
    assert wop("run", str(COUNCIL), "--run-id", run_id).returncode == 0
    # channel.written's payload refers to v2 channel-written-payload.schema.json: not bundled.
    _edit_event(tmp_path / ".wop" / "runs.db", "node.completed", {}, new_type="channel.written")
    done = wop("check", "--v2", run_id, "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    found = json.loads(done.stdout)["violations"]
    assert any("channel-written-payload.schema.json" in v["message"]
               and "cannot be checked" in v["message"] for v in found), found
    # The v1 check too: the v1 def's $ref is reported, not raised (it was error[INTERNAL]).
    done = wop("check", run_id)
    assert done.returncode == 1 and "INTERNAL" not in done.stderr + done.stdout, done.stderr
    assert "v1/channel-written-payload.schema.json" in done.stdout + done.stderr
