"""The AG-UI projection over real logs: script councils run on a real SQLite store.

Each stream is checked with the official ``ag-ui-protocol`` types and the 1.0 behaviour rules
(``tests/agui/events.py``); the shared state a client rebuilds from the snapshot and its
deltas equals the state projected at the end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agui.events import check_stream, final_state, texts, validate
from wopdsl import EventStore, load, open_store
from wopdsl.projections.agui import (
    PROTOCOL_VERSION,
    AguiProjection,
    json_patch,
    shared_state,
    thread_messages,
)

REPO = Path(__file__).resolve().parents[2]
DESK = REPO / "tests" / "server" / "councils" / "desk.toml"
BOARD = REPO / "tests" / "deliberation_councils" / "vote-board.toml"


def stream(store: EventStore, run_id: str, after: int = -1, *, thread: str = "t-1",
           agui_run: str = "r-1") -> list[dict[str, Any]]:
    """The AG-UI run a host would send for the council run's events after ``after``."""
    events = store.read(run_id, -1)
    projection = AguiProjection(thread)
    projection.feed_all(e for e in events if e["sequence"] <= after)
    out = [projection.started(agui_run), *projection.state_events()]
    for event in events:
        if event["sequence"] > after:
            batch, ended = projection.step([event], agui_run)
            out += batch
            if ended:
                break
    return out


async def test_a_script_council_with_a_person_streams_posts_and_asks_for_the_turn(
        tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.db")
    run = await load(DESK).astart(store)
    assert await run.wait() == "waiting-input"
    first = stream(store, run.run_id)
    check_stream(first)
    assert first[0] == {"type": "RUN_STARTED", "threadId": "t-1", "runId": "r-1",
                        "protocolVersion": PROTOCOL_VERSION}
    assert texts(first) == {"team/bot/1/0": "Hello! What do you need, @visitor?"}
    start = next(e for e in first if e["type"] == "TEXT_MESSAGE_START")
    assert start["name"] == "bot" and start["role"] == "assistant"
    assert start["metadata"]["wopdsl"]["room"] == "chat"
    end = first[-1]
    assert end["type"] == "RUN_FINISHED" and end["outcome"]["type"] == "interrupt"
    [asked] = end["outcome"]["interrupts"]
    assert asked["reason"] == "human_turn" and asked["id"].startswith(f"{run.run_id}:")
    assert asked["metadata"]["wopdsl"] == {"kind": "human_turn", "member": "visitor",
                                           "room": "chat", "runId": run.run_id}
    state = final_state(first)
    assert state["status"] == "waiting-input" and state["waitingFor"] == ["visitor"]
    assert state["roster"]["bot"]["turnsLeft"] == 2 and state["rooms"]["chat"]["open"]
    # The person answers; the next AG-UI run carries the rest from where the first stopped.
    after = store.last_sequence(run.run_id)
    await run.reply(room="chat", as_="visitor", text="A refund, @bot")
    assert await run.wait() == "completed"
    second = stream(store, run.run_id, after, agui_run="r-2")
    check_stream(second)
    assert texts(second) == {"team/visitor/2/0": "A refund, @bot",
                             "team/bot/3/0": "You asked: A refund, @bot"}
    mine = next(e for e in second if e["type"] == "TEXT_MESSAGE_START")
    assert (mine["role"], mine["name"]) == ("user", "visitor")
    assert second[1]["type"] == "STATE_SNAPSHOT"  # The state it continues from, first.
    done = second[-1]
    assert done["type"] == "RUN_FINISHED" and done["outcome"] == {"type": "success"}
    assert done["result"]["task"] == "Help the visitor." and "usage" not in done
    assert final_state(second)["status"] == "completed"
    assert final_state(second) == shared_state(run.state, "t-1")


async def test_the_deltas_rebuild_the_shared_state_of_a_deciding_board(tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.db")
    run = await load(BOARD).astart(store)
    assert await run.wait() == "waiting-input"
    first = stream(store, run.run_id)
    check_stream(first)
    held = final_state(first)
    assert held["decisions"]["ship"]["open"] and held["decisions"]["ship"]["tally"] is None
    assert held["rooms"]["board"]["round"].startswith("round 1 of 1 · blind")
    after = store.last_sequence(run.run_id)
    await run.vote("ship", "hold", reason="too soon", as_="founder", text="Hold.")
    assert await run.wait() == "completed"
    rest = stream(store, run.run_id, after, agui_run="r-2")
    check_stream(rest)
    assert len([e for e in first + rest if e["type"] == "STATE_DELTA"]) > 3
    rebuilt = final_state(rest)
    assert rebuilt == shared_state(run.state, "t-1")
    assert rebuilt["decisions"]["ship"]["outcome"] == "hold"
    assert rebuilt["decisions"]["ship"]["dissent"][0]["voter"] == "cto"
    assert rebuilt["chair"]["done"] and rebuilt["chair"]["answer"].startswith("Decision: hold")
    assert rest[-1]["result"]["answer"] == rebuilt["chair"]["answer"]


FAILING = """
[council]
id = "failing"
task = "Talk."
[[rooms]]
id = "r"
members = ["a", "b"]
[[members]]
id = "a"
role = "asker"
engine = "script"
script = [{ summary = "Asked.", posts = [{ room = "r", text = "@b?", mentions = ["b"] }] },
          { summary = "Again.", posts = [{ room = "r", text = "@b again?", mentions = ["b"] }] }]
[[members]]
id = "b"
role = "answerer"
engine = "script"
script = [{ summary = "Yes.", posts = [{ room = "r", text = "Yes @a", mentions = ["a"] }] }]
"""


async def test_a_failed_run_ends_with_run_error_and_its_code(tmp_path: Path) -> None:
    path = tmp_path / "failing.toml"
    path.write_text(FAILING)
    store = open_store(tmp_path / "runs.db")
    run = await load(path).astart(store)
    assert await run.wait() == "failed"
    events = stream(store, run.run_id)
    check_stream(events)
    assert events[-1]["type"] == "RUN_ERROR"
    assert events[-1]["code"] == run.state.error["code"] == "TEAM_NODE_FAILED"
    assert "b" in events[-1]["message"]


async def test_a_cancelled_run_ends_with_the_cancelled_outcome(tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.db")
    run = await load(DESK).astart(store)
    assert await run.wait() == "waiting-input"
    after = store.last_sequence(run.run_id)
    await run.cancel("enough")
    events = stream(store, run.run_id, after)
    check_stream(events)
    assert events[-1]["outcome"] == {"type": "cancelled"} and "result" not in events[-1]


async def test_a_thread_snapshot_lists_every_run_in_order(tmp_path: Path) -> None:
    store = open_store(tmp_path / "runs.db")
    council = load(DESK)
    ids = []
    for text in ("first", "second"):
        run = await council.astart(store)
        await run.wait()
        await run.reply(room="chat", as_="visitor", text=f"{text} @bot")
        assert await run.wait() == "completed"
        ids.append(run.run_id)
    opening = {"id": "u-1", "role": "user", "content": "Help the visitor."}
    messages = thread_messages([(store.read(ids[0], -1), opening),
                                (store.read(ids[1], -1), None)])
    assert [m["id"] for m in messages] == ["u-1", *["team/bot/1/0", "team/visitor/2/0",
                                                    "team/bot/3/0"] * 2]
    assert messages[2] == {"id": "team/visitor/2/0", "role": "user",
                           "content": "first @bot", "name": "visitor"}
    validate({"type": "MESSAGES_SNAPSHOT", "messages": messages})


def test_json_patch_names_what_changed() -> None:
    old = {"a": 1, "b": {"c": [1, 2], "d/e": "x"}, "gone": True}
    new = {"a": 1, "b": {"c": [1, 2, 3], "d/e": "y"}, "new": None}
    assert json_patch(old, new) == [
        {"op": "remove", "path": "/gone"},
        {"op": "replace", "path": "/b/c", "value": [1, 2, 3]},
        {"op": "replace", "path": "/b/d~1e", "value": "y"},
        {"op": "add", "path": "/new", "value": None}]
    assert json_patch({"n": 1}, {"n": 1.0}) == [{"op": "replace", "path": "/n", "value": 1.0}]
    assert json_patch(old, old) == []


def test_the_projection_speaks_the_official_protocol_version() -> None:
    pytest.importorskip("ag_ui")
    from ag_ui.core import PROTOCOL_VERSION as OFFICIAL

    assert OFFICIAL == PROTOCOL_VERSION


TOOLS = REPO / "tests" / "server" / "web_tools"
STUDIO = REPO / "tests" / "server" / "web_llm" / "studio.toml"


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Any:
    pytest.importorskip("openai", reason="the llm extra (wopdsl[llm]) is not installed")
    from wopdsl.testing.model_server import ScriptedModelServer

    with ScriptedModelServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("WOPDSL_TEST_MODEL_KEY", "sk-test-secret")
        yield server


async def test_streamed_tokens_are_deltas_of_the_post_they_become(
        tmp_path: Path, model: Any) -> None:
    from wopdsl.testing.model_server import Answer

    note = "Beta ships Friday: faster sync, fewer clicks. @founder, approve?"
    model.add(Answer({"summary": "Drafted.", "posts": [
        {"roomId": "studio", "text": note, "mentions": ["founder"]}]},
        chunks=8, chunk_delay_s=0.08))
    store = open_store(tmp_path / "runs.db")
    run = await load(STUDIO).astart(store)
    assert await run.wait() == "waiting-input"
    events = stream(store, run.run_id)
    check_stream(events)
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(deltas) > 2 and "".join(deltas) == note  # Streamed, then completed, once.
    assert texts(events) == {"team/writer/1/0": note}
    assert events[-1]["usage"] == [{"provider": "openai", "model": "test-model",
                                    "inputTokens": 10, "outputTokens": 5, "totalTokens": 15}]
    assert "sk-test-secret" not in str(events)
    # A client that joins while the post is written gets it so far, then the rest live.
    joined = AguiProjection("t-1")
    log = store.read(run.run_id, -1)
    at = 0
    while not joined.messages.open:  # Up to the first chunk of the note's text.
        joined.feed(log[at], live=False)
        at += 1
    late = [joined.started("r-2"), *joined.messages.reopen(), *joined.state_events()]
    for event in log[at:]:
        batch, ended = joined.step([event], "r-2")
        late += batch
        if ended:
            break
    check_stream(late)
    assert texts(late) == {"team/writer/1/0": note}
    assert late[1]["type"] == "TEXT_MESSAGE_START" and late[2]["delta"] != note


async def test_a_retried_call_ends_what_it_streamed_and_posts_anew(
        tmp_path: Path, model: Any) -> None:
    from wopdsl.testing.model_server import Answer, Cut

    note = "A long launch note that the first stream does not finish writing."
    answer = {"summary": "Drafted.", "posts": [{"roomId": "studio", "text": note}]}
    model.add(Cut(answer, after_chunks=4, chunks=6), Answer(answer))
    store = open_store(tmp_path / "runs.db")
    run = await load(STUDIO).astart(store)
    await run.wait()
    events = stream(store, run.run_id)
    check_stream(events)
    found = texts(events)
    assert found["team/writer/1/0#2"] == note
    assert note.startswith(found["team/writer/1/0"]) and found["team/writer/1/0"] != note


async def test_a_tool_call_waits_for_its_approval_then_returns(
        tmp_path: Path, model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from wopdsl.testing.model_server import Answer, ToolCalls

    monkeypatch.syspath_prepend(str(TOOLS))
    monkeypatch.chdir(tmp_path)
    model.add(ToolCalls(("restart_service", {"service": "api"})), Answer({
        "summary": "Restarted.", "posts": [{"roomId": "ops", "text": "Done, @oncall.",
                                            "mentions": ["oncall"]}]}))
    store = open_store(tmp_path / "runs.db")
    run = await load(TOOLS / "desk.toml").astart(store)
    assert await run.wait() == "waiting-input"
    first = stream(store, run.run_id)
    check_stream(first)
    kinds = [e["type"] for e in first]
    assert kinds[-4:-1] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] or \
        "TOOL_CALL_START" in kinds
    start = next(e for e in first if e["type"] == "TOOL_CALL_START")
    assert (start["toolCallId"], start["toolCallName"]) == ("call/sre/1/0", "restart_service")
    args = next(e for e in first if e["type"] == "TOOL_CALL_ARGS")
    assert args["delta"] == '{"service": "api"}'
    [asked] = first[-1]["outcome"]["interrupts"]
    assert asked["reason"] == "tool_approval" and asked["toolCallId"] == "call/sre/1/0"
    assert asked["id"] == f"{run.run_id}:approval/call/sre/1/0"
    assert final_state(first)["status"] == "waiting-approval"
    after = store.last_sequence(run.run_id)
    await run.approve("call/sre/1/0", as_="oncall")
    assert await run.wait() == "waiting-input"
    rest = stream(store, run.run_id, after, agui_run="r-2")
    check_stream(rest)
    assert "TOOL_CALL_START" not in [e["type"] for e in rest]  # Announced by the approval.
    [result] = [e for e in rest if e["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == "call/sre/1/0" and result["content"].endswith(
        "api restarted")
    assert texts(rest) == {"team/sre/1/0": "Done, @oncall."}
    assert rest[-1]["outcome"]["interrupts"][0]["reason"] == "human_turn"


async def test_a_blind_rounds_posts_are_held_until_the_round_ends(tmp_path: Path) -> None:
    """Like every view: a blind round's answers reach the chat when the round ends."""
    store = open_store(tmp_path / "runs.db")
    run = await load(REPO / "councils" / "launch-board.toml").astart(store)
    assert await run.wait() == "completed"
    events = stream(store, run.run_id)
    check_stream(events)
    events_log = store.read(run.run_id, -1)
    board_posts = [e["payload"]["turn"]["messageId"] for e in events_log
                   if e["type"] == "conversation.exchanged" and e.get("nodeId") == "room:board"
                   and e["payload"]["turn"]["role"] != "system"]
    assert len(board_posts) == 6
    order = [e.get("messageId") for e in events if e["type"] == "TEXT_MESSAGE_START"]
    assert [m for m in order if m in board_posts] == board_posts  # in saved order
    # Mid-round, nothing of the round's answers was sent: the first answer of round 1 comes
    # after the state says all three answered.
    first = next(i for i, e in enumerate(events) if e.get("messageId") == board_posts[0])
    rounds = [e for e in events[:first] if e["type"] == "STATE_DELTA"]
    labels = [op.get("value") for e in rounds for op in e["delta"]
              if str(op.get("path", "")).endswith("/round")]
    assert any("3 of 3 answered" in str(label) for label in labels), labels
    # A thread snapshot taken mid-round holds none of the round's answers.
    mid = next(e["sequence"] for e in events_log
               if e["type"] == "conversation.exchanged" and
               e["payload"]["turn"]["messageId"] == board_posts[1])
    snapshot = thread_messages([([e for e in events_log if e["sequence"] <= mid], None)])
    assert not {m["id"] for m in snapshot} & set(board_posts)
