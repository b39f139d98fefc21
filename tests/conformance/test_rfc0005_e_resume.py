"""RFC 0005 §E resume payloads: exchange, bare turn fields, close (keeping its turn), and the
checks at the door (empty, mentions, size, depth, NaN) — refused posts append nothing."""

from __future__ import annotations

import pytest

import wopdsl

from .helpers import desk, refused, valid


@pytest.fixture
def store(tmp_path):
    st = wopdsl.open_store(tmp_path / "runs.db")
    yield st
    st.close()


async def test_close_keeps_its_turn_as_the_closing_turn(store):
    run = await desk().arun(store=store)
    await run.reply(room="desk", resume={"operation": "close",
                                         "turn": {"content": {"text": "bye"}},
                                         "outcome": {"decision": "Q4"}})
    closed = next(e for e in run.events if e["type"] == "conversation.closed")
    final = closed["payload"]["finalTurn"]
    assert (final["role"], final["from"], final["speakerId"]) == ("user", "user", "host:me")
    assert final["content"]["text"] == "bye"
    assert closed["payload"]["outcome"] == {"decision": "Q4"}
    assert "bye" in run.transcript
    valid(run)


async def test_close_without_a_turn_gets_a_system_closing_turn(store):
    run = await desk().arun(store=store)
    await run.reply(room="desk", operation="close", outcome=None)
    closed = next(e for e in run.events if e["type"] == "conversation.closed")
    assert closed["payload"]["finalTurn"]["role"] == "system"
    await run.wait()
    await refused(run, run.reply("late", room="desk"), "closed|ended")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"text": "   "}, "empty"),
    ({"resume": {"content": {"text": "hi", "mentions": "assistant"}}}, "list of member ids"),
    ({"resume": {"content": {"text": "hi", "mentions": [{"id": "assistant"}]}}},
     "list of member ids"),
    ({"resume": {"content": {"text": "hi", "mentions": ["nobody"]}}}, "not a member"),
    ({"resume": {"content": {"text": "x" * 5000}}}, "max_input_bytes"),
    ({"resume": {"content": {"text": "hi"}, "colour": "red"}}, "unknown turn field"),
    ({"resume": {"operation": "exchange"}}, "needs a turn"),
    ({"resume": {"operation": "close", "outcome": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]
                                                   ]]]]]]]]]]]]]]]]]]]]]]]]]}}, "deeper"),
    ({"resume": {"content": {"text": 5}}}, "must be a string"),
    ({"resume": {"content": "x", "ts": -1}}, "ts"),
], ids=["empty", "mentions-string", "mentions-objects", "mention-outsider", "too-big",
        "unknown-field", "exchange-without-turn", "deep", "text-not-string", "bad-ts"])
async def test_bad_input_is_refused_at_the_door(store, kwargs, match):
    run = await desk(max_input_bytes=4096).arun(store=store)
    await refused(run, run.reply(room="desk", **kwargs), match)
    # Positive twin: a proper post right after is accepted.
    assert await run.reply("fine @assistant", room="desk") == "team/me/2/0"


async def test_a_submitters_timestamp_is_kept(store):
    run = await desk().arun(store=store)
    await run.reply(room="desk", resume={"content": "hello", "ts": 1_700_000_000_000})
    turn = next(e for e in run.events if e["type"] == "conversation.exchanged"
                and e["payload"]["turn"]["role"] == "user")["payload"]["turn"]
    assert turn["ts"] == 1_700_000_000_000


def test_cli_refuses_nan_and_deep_json_like_invalid_json(wop, tmp_path):
    (tmp_path / "c.toml").write_text(HUMAN)
    assert wop("run", "c.toml", "--run-id", "r").returncode == 3
    for args in (["--close", "--outcome", "NaN"], ["--close", "--outcome", "Infinity"],
                 ["--payload", "[" * 5000 + "]" * 5000], ["--payload", "{bad"]):
        done = wop("reply", "r", "--room", "desk", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert "error[validation_error]" in done.stderr and "Traceback" not in done.stderr
    ok = wop("reply", "r", "--room", "desk", "--close", "--outcome", '{"n": 1.5}')
    assert ok.returncode == 0, ok.stderr


HUMAN = """\
[council]
id = "ask"
task = "Name it."

[[rooms]]
id = "desk"
members = ["me", "namer"]

[[members]]
id = "namer"
role = "namer"
engine = "script"
script = [
  { summary = "Asked.", posts = [{ room = "desk", text = "Name, @me?", mentions = ["me"] }] },
]

[[members]]
id = "me"
role = "user"
engine = "human"
"""
