"""The schema a member gets is built for the turn; answers obey the rules a person's post obeys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import MakeCouncil
from tests.llm.conftest import llm_council
from tests.llm.test_run import kinds, payloads, post, run_it
from wopdsl.agents.llm.answers import BOUND_KEYWORDS
from wopdsl.testing.model_server import Answer, CapturedRequest, Failure, ScriptedModelServer


def schema_of(request: CapturedRequest) -> dict[str, Any]:
    schema: dict[str, Any] = request.body["response_format"]["json_schema"]["schema"]
    return schema


def mention_enum(request: CapturedRequest) -> list[str]:
    posts = schema_of(request)["properties"]["posts"]
    enum: list[str] = posts["items"]["properties"]["mentions"]["items"]["enum"]
    return enum


def keywords(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in keywords(v)}
    if isinstance(value, list):
        return {k for v in value for k in keywords(v)}
    return set()


async def test_a_spent_member_is_not_offered_and_its_mention_is_repaired(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """The critic has one turn: once it is used, the writer's schema and prompt leave it out,
    and an answer that mentions it anyway (a JSON-mode model) is repaired with the reason."""
    server.add(Answer(post("asked", "desk", "Please check.", "critic")),
               Answer(post("again", "desk", "Check again?", "critic")),
               Answer(post("done", "desk", "Thanks, done.")), member="writer")
    server.add(Answer(post("checked", "desk", "Looks right.", "writer")), member="critic")
    council = llm_council(members={"writer": {"max_turns": 3},
                                   "critic": {"initial_turn": False, "max_turns": 1}})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed", run.error
    writer = [r for r in server.requests if r.member == "writer"]
    assert mention_enum(writer[0]) == ["critic"]
    assert "do not mention" not in writer[0].body["messages"][1]["content"]
    # Turn 2: the critic has used its only turn.
    second = writer[1]
    posts = schema_of(second)["properties"]["posts"]["items"]["properties"]["mentions"]
    assert posts["maxItems"] == 0 and "uniqueItems" not in posts
    assert second.body["messages"][1]["content"].endswith(
        "These members have used all their turns; do not mention them: critic.")
    attempted = payloads(events, "envelope.retry.attempted")
    assert attempted == [{"nodeId": "writer", "attempt": 2, "reason": "schema-violation",
                          "previousError": "posts[0].mentions names critic, who has used all "
                          "of its turns and cannot be asked again (you may mention: nobody: "
                          "leave it empty)"}]
    assert "TEAM_TURN_LIMIT" not in str(events)
    assert [m.text for m in run.messages][-1] == "Thanks, done."


async def test_a_human_who_used_its_turns_is_not_offered(server: ScriptedModelServer,
                                                         tmp_path: Path) -> None:
    server.add(Answer(post("asked", "desk", "Your view, Ann?", "ann")),
               Answer({"summary": "noted", "posts": []}), member="writer")
    council = llm_council(members={"writer": {"max_turns": 2}}, rooms={})
    council.add_member("ann", role="owner", engine="human", max_turns=1)
    council.room("desk", members=["writer", "ann"])
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "waiting-input", run.error
    await run.reply("Ship it, @writer", room="desk", as_="ann")
    assert await run.wait() == "completed", run.error
    first, second = (r for r in server.requests if r.member == "writer")
    assert mention_enum(first) == ["ann"]
    assert schema_of(second)["properties"]["posts"]["items"]["properties"]["mentions"][
        "maxItems"] == 0


async def test_lists_and_texts_are_bounded(server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Answer({"summary": "ok", "posts": []}))
    council = llm_council(members={"writer": {"max_output_tokens": 300},
                                   "critic": {"initial_turn": False},
                                   "editor": {"initial_turn": False}},
                          rooms={"desk": ["writer", "critic", "editor"], "solo": ["writer"]})
    run, _ = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed", run.error
    schema = schema_of(server.requests[0])
    summary, posts = schema["properties"]["summary"], schema["properties"]["posts"]
    assert summary["maxLength"] == 120 and summary["description"]
    assert posts["maxItems"] == 2  # one per room
    desk = posts["items"]["anyOf"][0]["properties"]
    assert desk["mentions"] | {"items": None} == {
        "type": "array", "items": None, "maxItems": 2, "uniqueItems": True,
        "description": desk["mentions"]["description"]}
    assert desk["text"]["minLength"] == 1 and desk["text"]["maxLength"] == 140
    # The prompt shows the same instructions, with no placeholder to copy.
    system = server.requests[0].body["messages"][0]["content"]
    assert desk["mentions"]["description"] in system and summary["description"] in system
    assert "<" not in system


async def test_a_server_refusing_the_bounds_gets_the_schema_without_them(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """A strict mode that refuses maxLength & co. (HTTP 400 naming one) is sent the schema
    without bounds, at once and from then on; the answers are still checked against them."""
    def strict(request: CapturedRequest) -> Answer | Failure:
        if keywords(schema_of(request)) & BOUND_KEYWORDS:
            return Failure(400, "Invalid schema for response_format 'turn_result': In "
                           "context=('properties', 'summary'), 'maxLength' is not permitted.")
        summary = "x" * 1000 if len(server.requests) == 2 else "short"
        return Answer({"summary": summary, "posts": []})

    server.default = strict
    council = llm_council(members={"writer": {"max_output_tokens": 100}}, rooms={})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert [bool(keywords(schema_of(r)) & BOUND_KEYWORDS) for r in server.requests] == [
        True, False, False]
    assert "node.retried" not in kinds(events)
    assert payloads(events, "envelope.retry.attempted")[0]["previousError"] == (
        '"summary" is longer than 40 characters; keep it to one sentence')


async def test_empty_texts_are_repaired_and_duplicate_mentions_kept_once(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Answer(post("said nothing", "desk", " ")),
               Answer({"summary": "asked", "posts": [
                   {"roomId": "desk", "text": "Check?", "mentions": ["critic", "critic"]}]}),
               Answer({"summary": "done", "posts": []}), member="writer")
    server.add(Answer({"summary": "checked", "posts": []}), member="critic")
    run, events = await run_it(llm_council(), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert payloads(events, "envelope.retry.attempted")[0]["previousError"] == (
        'posts[0].text is empty; write the message, or leave the post out ("posts": [])')
    assert [m.mentions for m in run.messages] == [["critic"]]


async def test_a_python_member_posting_an_empty_text_fails_the_turn(
        make_council: MakeCouncil, tmp_path: Path) -> None:
    council = make_council({"ann": lambda turn: {"summary": "s", "posts": [
        {"roomId": "all", "text": "", "mentions": ["bob"]}]}, "bob": lambda turn: "ok"},
        waiting=["bob"])
    run = await council.arun(store=str(tmp_path / "runs.db"))
    assert run.status == "failed"
    assert "ann: posts[0]: the post is empty" in run.error["message"]


async def test_usage_and_provenance_record_the_model_the_server_reports(
        tmp_path: Path, monkeypatch: Any) -> None:
    with ScriptedModelServer(model_name="smollm2-135m-instruct-q8") as served:
        monkeypatch.setenv("OPENAI_BASE_URL", served.url)
        served.add(Answer(post("asked", "desk", "Check?", "critic")), member="writer")
        served.add(Answer({"summary": "fine", "posts": []}), member="critic")
        run, events = await run_it(llm_council(), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert {p["model"] for p in payloads(events, "provider.usage")} == {
        "smollm2-135m-instruct-q8"}
    turn = payloads(events, "conversation.exchanged")[0]["turn"]
    assert turn["agent"] == {"model": {"provider": "openai",
                                       "model": "smollm2-135m-instruct-q8"}}
    assert served.requests[0].body["model"] == "test-model"


async def test_a_repair_streams_on_its_own_channel(server: ScriptedModelServer,
                                                   tmp_path: Path) -> None:
    server.add(Answer("{not json"), Answer({"summary": "fixed", "posts": []}))
    run, events = await run_it(llm_council(members={"writer": {}}), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    chunks = payloads(events, "output.chunk")
    by_channel: dict[str, list[dict[str, Any]]] = {}
    for chunk in chunks:
        by_channel.setdefault(chunk["channel"], []).append(chunk)
    assert list(by_channel) == ["attempt-0", "attempt-0.call-1"]
    assert "".join(c["chunk"] for c in by_channel["attempt-0"]) == "{not json"
    for stream in by_channel.values():
        assert [c.get("isLast", False) for c in stream][-1] is True
        assert sum(c.get("isLast", False) for c in stream) == 1
