"""RFC 0005 §B–§D conversation lifecycle as `wop check` enforces it on stored logs.

§B opening (gate node, ``conversation.opened`` caused by ``node.suspended``), §C turn shape,
§D lifecycle (contiguous ``turnIndex``, causation chain, nothing after ``closed``, the gate
ends). Each rule: a real run passes (positive), the same log broken on purpose fails with
that rule named (negative); and `wop check RUN` in a subprocess exits 0 / 1.
"""

from __future__ import annotations

import json

import pytest

import wopdsl

from .helpers import COUNCILS, broken, checks


@pytest.fixture
def events(tmp_path):
    store = wopdsl.open_store(tmp_path / "runs.db")
    run = wopdsl.load(COUNCILS / "incident-response.toml").run(store=store)
    assert run.status == "completed"
    yield list(run.events)
    store.close()


def first(events, type_):
    return next(e for e in events if e["type"] == type_)


def test_a_real_log_passes_every_rule(events):
    assert checks(events) == set()


def test_b_opened_is_caused_by_the_gates_suspension(events):
    bad = broken(events)
    first(bad, "conversation.opened")["causationId"] = "evt.elsewhere.000000000000"
    assert "causation" in checks(bad)


def test_c_a_turn_breaking_its_schema_is_caught(events):
    bad = broken(events)
    first(bad, "conversation.exchanged")["payload"]["turn"]["role"] = "robot"
    assert "turn" in checks(bad)


def test_d_turn_indexes_are_contiguous(events):
    bad = broken(events)
    exchanged = first(bad, "conversation.exchanged")
    exchanged["payload"]["turnIndex"] = exchanged["payload"]["turn"]["turnIndex"] = 5
    assert "turnIndex" in checks(bad)


def test_d_exchanges_chain_their_causation(events):
    bad = broken(events)
    first(bad, "conversation.exchanged")["causationId"] = first(bad, "run.started")["eventId"]
    assert "causation" in checks(bad)


@pytest.mark.wop_invalid_log
def test_d_nothing_follows_closed_and_the_gate_ends(events):
    bad = broken(events)
    closed = first(bad, "conversation.closed")
    late = broken([first(bad, "conversation.exchanged")])[0]
    late["payload"]["conversationId"] = closed["payload"]["conversationId"]
    at = closed["sequence"] + 1
    after = [*bad[:at], late, *bad[at:]]
    for sequence, event in enumerate(after):
        event["sequence"] = sequence
    assert "conversation" in checks(after)
    unfinished = [e for e in broken(events) if not (e["type"] == "node.completed"
                                                   and e.get("nodeId", "").startswith("room:"))]
    for sequence, event in enumerate(unfinished):
        event["sequence"] = sequence
    assert "node" in checks(unfinished)


@pytest.mark.wop_invalid_log
def test_wop_check_exit_codes(wop, tmp_path):
    assert wop("run", str(COUNCILS / "release-team.toml"), "--run-id", "ok").returncode == 0
    done = wop("check", "ok")
    assert done.returncode == 0 and done.stdout.startswith("ok: run ok:")
    doc = json.loads(wop("check", "ok", "--json").stdout)
    assert doc["valid"] is True and doc["violations"] == []
    # Break the stored log (as a buggy host would) and check again.
    import sqlite3

    db = tmp_path / ".wop" / "runs.db"
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("select name from sqlite_master where type='table'")]
        table = next(t for t in tables if t.startswith("event"))
        columns = [r[1] for r in conn.execute(f"pragma table_info({table})")]
        body = next(c for c in columns if c in ("body", "event", "doc", "data", "payload"))
        row = conn.execute(f"select rowid, {body} from {table} where {body} like "
                           "'%conversation.exchanged%' limit 1").fetchone()
        assert isinstance(row[1], str), "the test edits the store's JSON text"
        event = json.loads(row[1])
        target = event.get("payload", event)
        target["turn"]["role"] = "robot"
        conn.execute(f"update {table} set {body} = ? where rowid = ?",
                     (json.dumps(event), row[0]))
    bad = wop("check", "ok")
    assert bad.returncode == 1
    assert "error[EVENT_INVALID]" in bad.stdout and "turn" in bad.stdout
