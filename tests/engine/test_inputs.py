"""Turn input (DESIGN.md §3): messages, triggers, turn, result, sandboxed brief."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import MakeCouncil
from tests.engine.helpers import Calls, of_type, reply, say
from wopdsl import Reply, Turn


async def test_messages_are_room_tails_plus_triggers_once_in_saved_order(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()

    def ann(turn: Turn) -> Reply:
        return reply("ann", say("r1", "a0", "x"), say("r1", "a1"), say("r1", "a2"),
                     say("r2", "a3"))

    def bob(turn: Turn) -> Reply:
        return reply("bob", say("r3", "b0"), say("r1", "b1", "x"))

    council = make_council(
        {"ann": calls.handler(ann), "bob": calls.handler(bob), "x": calls.handler(),
         "cat": calls.handler()},
        rooms={"r1": ["ann", "x", "bob"], "r2": ["ann", "x"], "r3": ["bob", "cat"]},
        waiting=["x", "cat"],
        tail_messages=2,
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed", run.error
    (x,) = calls.of("x")
    # r1 holds a0 a1 a2 b1: its tail is a2 b1; a0 is a trigger outside the tail; b1 is a
    # trigger inside it (listed once); r2's tail is a3; r3 (not x's room) is never shown.
    assert x.triggers == ["team/ann/1/0", "team/bob/2/1"]
    assert x.messages == ["team/ann/1/0", "team/ann/1/2", "team/ann/1/3", "team/bob/2/1"]
    assert [m.room for m in x.input.messages] == ["r1", "r1", "r2", "r1"]
    assert [m.text for m in x.input.triggers] == ["a0", "b1"]
    assert all(m.room != "r3" for m in x.input.messages)
    # bob's first turn saw the tails of his rooms: r1 (a1 a2) and nothing of r2.
    (bob_call,) = calls.of("bob")
    assert bob_call.messages == ["team/ann/1/1", "team/ann/1/2"]


@pytest.mark.parametrize("tail", [1, 2, 3, 5])
async def test_a_one_room_member_sees_its_tail_plus_older_triggers(
    make_council: MakeCouncil, db_path: Path, tail: int
) -> None:
    calls = Calls()

    def ann(turn: Turn) -> Reply:
        return reply("ann", say("r", "a0", "x"), say("r", "a1"), say("r", "a2", "x"),
                     say("r", "a3"))

    council = make_council({"ann": calls.handler(ann), "x": calls.handler()},
                           rooms={"r": ["ann", "x"]}, waiting=["x"], tail_messages=tail)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed", run.error
    (x,) = calls.of("x")
    ids = [f"team/ann/1/{i}" for i in range(4)]
    assert x.triggers == [ids[0], ids[2]]
    # The room's last `tail` messages, plus the triggers older than them, in saved order.
    expected = [m for m in ids if m in ids[-tail:] or m in (ids[0], ids[2])]
    assert x.messages == expected


async def test_a_member_in_no_room_sees_no_messages(make_council: MakeCouncil,
                                                    db_path: Path) -> None:
    calls = Calls()
    council = make_council(
        {"talker": calls.handler(lambda t: reply("t", say("pair", "hi"))),
         "loner": calls.handler(), "other": calls.handler()},
        rooms={"pair": ["talker", "other"]},
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.of("loner")[0].messages == []
    assert calls.of("other")[0].messages == ["team/talker/1/0"]


async def test_turn_counts_from_one_and_result_is_the_previous_result(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()

    def echo(turn: Turn) -> Reply:
        more = [say("all", f"again {turn.turn}", "echo")] if turn.turn < 3 else []
        return reply(f"echo {turn.turn}", *more, data={"n": turn.turn})

    council = make_council({"echo": calls.handler(echo)}, max_turns_per_member=3)

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed", run.error
    assert [c.turn for c in calls.log] == [1, 2, 3]
    assert [c.input.result for c in calls.log] == [
        None,
        {"summary": "echo 1", "data": {"n": 1},
         "posts": [{"roomId": "all", "text": "again 1", "mentions": ["echo"]}]},
        {"summary": "echo 2", "data": {"n": 2},
         "posts": [{"roomId": "all", "text": "again 2", "mentions": ["echo"]}]},
    ]
    assert [c.input.task for c in calls.log] == ["Ship it."] * 3
    assert {(c.input.member, c.input.role) for c in calls.log} == {("echo", "echo")}


async def test_brief_is_rendered_as_a_template_over_the_turn_input(
    make_council: MakeCouncil, db_path: Path
) -> None:
    calls = Calls()
    brief = ("I am {{ member }} the {{ role }}, turn {{ turn }} of '{{ task }}'"
             "{% if triggers %}, asked by {{ triggers[0].sender }}{% endif %}.")
    council = make_council(
        {"lead": calls.handler(lambda t: reply("l", say("all", "go", "helper"))),
         "helper": calls.handler()},
        waiting=["helper"],
        options={"helper": {"brief": brief, "role": "assistant"},
                 "lead": {"brief": "Plain {brace} text, not a template."}},
    )

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.of("helper")[0].input.brief == (
        "I am helper the assistant, turn 1 of 'Ship it.', asked by lead.")
    assert calls.of("lead")[0].input.brief == "Plain {brace} text, not a template."


@pytest.mark.parametrize(
    "brief",
    [
        "{{ ''.__class__.__mro__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ messages.__class__.__init__.__globals__ }}",
        "{{ task.format.__globals__ }}",
    ],
)
async def test_a_sandbox_escape_in_the_brief_fails_the_turn_not_the_host(
    make_council: MakeCouncil, db_path: Path, brief: str
) -> None:
    calls = Calls()
    council = make_council({"sneaky": calls.handler(), "next": calls.handler()},
                           options={"sneaky": {"brief": brief}})

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    assert run.state.failed_node == "sneaky"
    assert calls.log == []  # the handler never ran with an unrendered or leaked brief
    (failed,) = of_type(run.events, "node.failed")
    assert failed["nodeId"] == "sneaky"
    assert failed["payload"]["error"]["code"]
    text = str(list(run.events))
    assert "Traceback" not in text
    assert "<class 'object'>" not in text and "__builtins__" not in text


async def test_a_sandbox_escape_in_a_script_template_fails_the_turn(
    make_council: MakeCouncil, db_path: Path
) -> None:
    council = make_council(
        {"bot": [{"summary": "{{ ''.__class__.__mro__[1].__subclasses__() }}"}]})

    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "failed"
    assert run.error is not None and run.error["code"] == "TEAM_NODE_FAILED"
    (failed,) = of_type(run.events, "node.failed")
    assert failed["payload"]["error"]["code"] == "RESULT_INVALID"
    assert "subclasses" not in str(run.result)
