"""llm members deliberate (DESIGN.md §22): votes in the turn schema, rounds and aliases in
the prompt, the chair's last word — asserted on what the scripted server received."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.llm.conftest import KEY_ENV
from tests.llm.test_cli import REPO, wop
from tests.llm.test_run import kinds, payloads, run_it
from tests.llm.test_turn_schema import schema_of
from wopdsl import Council
from wopdsl.agents.llm import REPAIR_PROMPT
from wopdsl.agents.llm.prompts import CHAIR_SUMMARY
from wopdsl.testing.deliberation_answers import offered_votes
from wopdsl.testing.model_server import Answer, CapturedRequest, ScriptedModelServer
from wopdsl.testing.review_answers import council_answer


def council_of(members: dict[str, dict[str, Any]], *, chair: str | None = None,
               **settings: Any) -> Council:
    """llm members on one profile ``m`` (base_url from ``OPENAI_BASE_URL``)."""
    council = Council("deliberating", task="Ship v2 this week?", chair=chair, **settings)
    council.model("m", model="test-model", api_key_env=KEY_ENV, retry_backoff_ms=1)
    for member, options in members.items():
        council.add_member(member, role=options.pop("role", member), engine="llm",
                           model="m", **options)
    return council


def answer(text: str | None = None, room: str = "board", *mentions: str,
           votes: Any = None, summary: str = "done") -> dict[str, Any]:
    content: dict[str, Any] = {"summary": summary, "posts": [] if text is None else [
        {"roomId": room, "text": text, "mentions": list(mentions)}]}
    if votes is not None:
        content["votes"] = votes
    return content


def v(choice: Any, reason: str = "because") -> dict[str, Any]:
    """A vote as the turn schema asks for it, under its decision's id."""
    return {"choice": choice, "reason": reason}


def vote(decision: str, choice: Any, reason: str = "because") -> dict[str, Any]:
    """A vote as a turn result lists it."""
    return {"decision": decision, "choice": choice, "reason": reason}


def prompt(request: CapturedRequest) -> str:
    """The system prompt and the turn message, as sent."""
    return "\n".join(m["content"] for m in request.body["messages"][:2])


def of(server: ScriptedModelServer, member: str) -> list[CapturedRequest]:
    return [r for r in server.requests if r.member == member]


# -- votes in the turn schema ------------------------------------------------------------------

def desk(**settings: Any) -> Council:
    """writer and critic vote on ``plan``; only the writer on ``quick``; a scribe on none."""
    council = council_of({"writer": {"max_turns": 2}, "critic": {"initial_turn": False},
                          "scribe": {"initial_turn": False}}, **settings)
    council.room("desk", members=["writer", "critic", "scribe"])
    council.decision("quick", room="desk", question="Quick fix?", options=["yes", "no"],
                     voters=["writer"])
    council.decision("plan", room="desk", question="How good is the plan?", scale=(1, 5),
                     voters=["writer", "critic"])
    return council


async def test_the_schema_offers_only_open_decisions_with_their_choices(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Answer(answer("Plan A.", "desk", "critic", votes={
        "quick": v("yes"), "plan": v(3)})),
        Answer(answer("Agreed.", "desk", "scribe", votes={"plan": None})), member="writer")
    server.add(Answer(answer("Plan A is fine.", "desk", "writer",
                             votes={"plan": v(4, "solid")})), member="critic")
    server.add(Answer(answer("Noted.", "desk")), member="scribe")
    run, events = await run_it(desk(), tmp_path / "runs.db")

    assert run.status == "completed", run.error
    first, second = (schema_of(r) for r in of(server, "writer"))
    # The writer's first turn: both decisions, each with its own choices, one vote each
    # (an object keyed by decision: a grammar allows no second vote on one), all owed.
    assert offered_votes(first) == {"quick": ["yes", "no"], "plan": [1, 2, 3, 4, 5]}
    votes = first["properties"]["votes"]
    assert "votes" in first["required"]
    assert votes["required"] == ["quick", "plan"] and votes["additionalProperties"] is False
    for ballot in votes["properties"].values():
        assert ballot["required"] == ["choice", "reason"]
        assert ballot["additionalProperties"] is False
        assert ballot["properties"]["reason"]["minLength"] == 1
    assert votes["properties"]["quick"]["properties"]["choice"]["enum"] == ["yes", "no"]
    # "quick" closed once the writer voted (nobody else votes on it): never offered again;
    # "plan" stays open (the writer is queued) and, voted on already, may be null.
    assert offered_votes(second) == {"plan": [1, 2, 3, 4, 5]}
    assert second["properties"]["votes"]["properties"]["plan"]["anyOf"][1] == {"type": "null"}
    assert offered_votes(schema_of(of(server, "critic")[0])) == {"plan": [1, 2, 3, 4, 5]}
    # A member who votes on nothing has no votes property, and no decision in its prompt.
    scribe = of(server, "scribe")[0]
    assert "votes" not in schema_of(scribe)["properties"]
    assert "Open decisions" not in prompt(scribe) and '"votes"' not in prompt(scribe)
    turn = of(server, "writer")[1].body["messages"][1]["content"]
    assert "- plan: How good is the plan? Choose a whole score from 1 to 5. Your vote so " \
           "far: 3 (because)." in turn
    assert "Closed decisions:\n- quick: Quick fix? Outcome: yes. Votes: yes: 1, no: 0. " \
           "Dissent: none." in turn
    assert {d["id"]: d["outcome"] for d in run.decisions} == {"quick": "yes", "plan": 3.5}
    outputs = [p["outputs"] for p in payloads(events, "node.completed")]
    assert outputs[0]["votes"] == [vote("quick", "yes"), vote("plan", 3)]
    assert "votes" not in outputs[2]  # null: the writer's vote on plan stands


@pytest.mark.parametrize(("bad", "problem"), [
    ({"plan": v(9)}, "votes.plan.choice is not one of the choices of 'plan' (1..5)"),
    ({"plan": {"choice": 4}}, "votes.plan.reason is missing: give the reason for your vote"),
    ({"plan": v(4, " ")}, "votes.plan.reason is missing: give the reason for your vote"),
    ({"plan": None}, '"votes" has no vote on plan: vote on each open decision you have not '
                     "voted on yet"),
    ({"plan": v(4), "ship": v("yes")}, 'a key of "votes" is not a decision of this council; '
                                       "you may vote on: plan"),
    ({"quick": v("yes")}, "votes.quick is closed (outcome: no); you may vote on: plan"),
    ([vote("plan", 9)], "votes[0].choice is not one of the choices of 'plan' (1..5)"),
    ([vote("plan", 4), vote("plan", 3)], "votes[1] votes on 'plan' a second time; one vote "
                                         "per decision"),
])
async def test_an_invalid_vote_is_repaired(server: ScriptedModelServer, tmp_path: Path,
                                           bad: dict[str, Any], problem: str) -> None:
    server.add(Answer(answer("Plan A.", "desk", "critic", votes={
        "quick": v("no"), "plan": v(3)})), Answer(answer("Done.", "desk")), member="writer")
    server.add(Answer(answer("Hmm.", "desk", "writer", votes=bad)),
               Answer(answer("Plan A is fine.", "desk", "writer",
                             votes={"plan": v(4, "solid")})), member="critic")
    run, events = await run_it(desk(), tmp_path / "runs.db")

    assert run.status == "completed", run.error
    assert payloads(events, "envelope.retry.attempted") == [{
        "nodeId": "critic", "attempt": 2, "reason": "schema-violation",
        "previousError": problem}]
    repaired = of(server, "critic")[1].body["messages"]
    assert repaired[-1] == {"role": "user", "content": REPAIR_PROMPT.format(problem=problem)}
    assert run.state.decisions["plan"].votes["critic"].choice == 4
    assert [m.text for m in run.messages if m.sender == "critic"] == ["Plan A is fine."]


async def test_a_first_vote_left_out_is_asked_for(server: ScriptedModelServer,
                                                  tmp_path: Path) -> None:
    """A voter who has not voted yet must vote: an answer without it is repaired."""
    server.add(Answer(answer("Plan A.", "desk", "critic", votes={"quick": v("no")})),
               Answer(answer("Plan A.", "desk", "critic", votes={
                   "quick": v("no"), "plan": v(2)})),
               Answer(answer("Done.", "desk")), member="writer")
    server.add(Answer(answer("Fine.", "desk", votes={"plan": v(4)})), member="critic")
    run, events = await run_it(desk(), tmp_path / "runs.db")

    assert run.status == "completed", run.error
    assert [p["previousError"] for p in payloads(events, "envelope.retry.attempted")] == [
        '"votes" has no vote on plan: vote on each open decision you have not voted on yet']


async def test_a_vote_on_a_closed_decision_fails_clearly_after_the_repairs(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    late = Answer(answer("Changed my mind.", "desk", votes={"quick": v("no")}))
    server.add(Answer(answer("Plan A.", "desk", "critic", votes={
        "quick": v("yes"), "plan": v(3)})), late, late, member="writer")
    server.add(Answer(answer("Fine.", "desk", "writer", votes={"plan": v(4)})),
               member="critic")
    council = desk()
    council._members[0]["repair_attempts"] = 1
    run, events = await run_it(council, tmp_path / "runs.db")

    assert run.status == "failed"
    assert run.error["code"] == "TEAM_NODE_FAILED"
    problem = "votes.quick is closed (outcome: yes); you may vote on: plan"
    assert payloads(events, "envelope.retry.exhausted") == [{
        "nodeId": "writer", "totalAttempts": 2, "finalReason": "schema-violation",
        "finalError": problem}]
    failed = payloads(events, "node.failed")[-1]
    assert failed["nodeId"] == "writer"
    assert failed["error"]["code"] == "RESULT_INVALID"
    assert problem in failed["error"]["message"]
    assert "Changed my mind." not in [m.text for m in run.messages]
    assert len(run.state.decisions["quick"].history) == 1  # the late vote was never cast


# -- rounds, blindness, anonymity ----------------------------------------------------------------

THREE = ("zorro", "yeti", "xenon")


def board(*, blind: bool, anonymous: bool, rounds: int = 2, chair: str | None = None,
          **settings: Any) -> Council:
    members = {m: {"role": f"role-{m}"} for m in (*THREE, *([chair] if chair else []))}
    council = council_of(members, chair=chair, **settings)
    council.room("board", members=list(members), rounds=rounds, blind=blind,
                 anonymous=anonymous)
    return council


def speaks(request: CapturedRequest) -> Answer:
    """Each member posts a text naming itself and its turn."""
    turn = request.body["messages"][1]["content"].split("This is your turn ")[1][0]
    return Answer(answer(f"{request.member}-says-{turn}"))


async def test_a_blind_round_prompt_holds_none_of_the_others_posts_of_that_round(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    server.default = speaks
    run, _ = await run_it(board(blind=True, anonymous=False), tmp_path / "runs.db")

    assert run.status == "completed", run.error
    assert len(server.requests) == 6
    for request in server.requests:
        text = prompt(request)
        turn = int(text.split("This is your turn ")[1][0])
        assert (f"[board] Round {turn} of 2; blind: you cannot see the others' answers of "
                "this round until it ends.") in text
        for other in THREE:
            if other == request.member:
                continue
            assert f"{other}-says-{turn}" not in text  # this round's: hidden
            if turn == 2:
                assert f"{other}-says-1" in text  # the last round's: visible
    # Not blind: a later speaker of the same round sees the earlier ones.
    server.requests.clear()
    run, _ = await run_it(board(blind=False, anonymous=False), tmp_path / "other.db")
    assert run.status == "completed", run.error
    last = server.requests[2]
    first = server.requests[0].member
    assert f"{first}-says-1" in prompt(last)
    assert "[board] Round 1 of 2.\n" in prompt(last)


async def test_an_anonymous_room_prompt_holds_no_other_member_id(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """Roster, messages, mention enum and spent list show aliases; a mention of an alias
    reaches the member behind it."""
    asked: dict[str, str] = {}

    def mentioning(request: CapturedRequest) -> Answer:
        schema = schema_of(request)
        enum = schema["properties"]["posts"]["items"]["properties"]["mentions"]["items"]
        turn = request.body["messages"][1]["content"].split("This is your turn ")[1][0]
        alias = enum["enum"][0]
        if not alias:  # everyone else has used their turns: nobody may be asked
            return Answer(answer(f"text-{turn} for nobody"))
        asked[f"{request.member}-{turn}"] = alias
        return Answer(answer(f"text-{turn} over to @{alias.lower().replace(' ', '-')}",
                             "board", alias))

    server.default = mentioning
    run, _ = await run_it(board(blind=False, anonymous=True, max_turns_per_member=2),
                          tmp_path / "runs.db")

    assert run.status == "completed", run.error
    aliases = run.state.aliases
    for request in server.requests:
        sent = json.dumps(request.body)
        for other in THREE:
            if other != request.member:
                assert other not in sent, (request.member, other)
                assert f"role-{other}" not in sent
        others = sorted((aliases[m] for m in THREE if m != request.member),
                        key=lambda a: (len(a), a))
        assert f"- board: {', '.join(others)} (anonymous:" in prompt(request)
        mentions = schema_of(request)["properties"]["posts"]["items"]["properties"][
            "mentions"]["items"]["enum"]
        assert set(mentions) - {""} <= set(others)  # [""]: nobody may be asked
    by_alias = {alias: member for member, alias in aliases.items()}
    for message in run.messages:
        if message.sender in THREE and "over to" in message.text:  # ids: mapped back
            turn = message.text.split("-")[1][0]
            target = by_alias[asked[f"{message.sender}-{turn}"]]
            assert message.mentions == [target]
    second = [r for r in server.requests if "This is your turn 2." in prompt(r)]
    assert any("do not mention them: Member" in prompt(r) for r in second)


# -- settled rooms and the chair ---------------------------------------------------------------

async def test_a_settled_room_is_no_longer_offered(server: ScriptedModelServer,
                                                   tmp_path: Path) -> None:
    council = council_of({"lead": {}, "peer": {}, "helper": {"initial_turn": False}})
    council.room("board", members=["lead", "peer"], rounds=1)
    council.room("side", members=["lead", "helper"])
    server.add(Answer({"summary": "s", "posts": [
        {"roomId": "board", "text": "my answer", "mentions": []},
        {"roomId": "side", "text": "help?", "mentions": ["helper"]}]}),
        Answer(answer("thanks", "side")), member="lead")
    server.add(Answer(answer("peer answer")), member="peer")
    server.add(Answer(answer("here", "side", "lead")), member="helper")
    run, _ = await run_it(council, tmp_path / "runs.db")

    assert run.status == "completed", run.error
    first, second = of(server, "lead")
    rooms = [v["properties"]["roomId"]["enum"][0] for v in
             schema_of(first)["properties"]["posts"]["items"]["anyOf"]]
    assert rooms == ["board", "side"]
    later = schema_of(second)["properties"]["posts"]
    assert later["items"]["properties"]["roomId"]["enum"] == ["side"]
    assert later["maxItems"] == 1
    assert "- board: peer (the debate is over: you can no longer post here)" in prompt(second)
    assert "[board] The debate is over: you can no longer post here." in prompt(second)


async def test_the_chair_prompt_holds_every_outcome_tally_and_dissent(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    council = board(blind=True, anonymous=True, rounds=1, chair="chair")
    council.decision("ship", room="board", question="Ship v2 this week?",
                     options=["ship", "hold"])
    council.decision("sure", room="board", question="How sure (1-10)?", scale=(1, 10))
    choices = {"zorro": ("ship", 8), "yeti": ("ship", 7), "xenon": ("hold", 2)}
    for index, (member, (choice, score)) in enumerate(choices.items()):
        server.add(Answer(answer(f"I think {choice}", votes={
            "ship": v(choice, f"reason {index}"), "sure": v(score, f"score {index}")})),
            member=member)
    server.add(Answer({"summary": "Ship, with one dissent on billing."}), member="chair")
    run, events = await run_it(council, tmp_path / "runs.db")

    assert run.status == "completed", run.error
    chair = of(server, "chair")[0]
    text = prompt(chair)
    alias = run.state.aliases["xenon"]
    assert "your \"summary\" is the council's answer" in text
    assert ("- ship: Ship v2 this week? Outcome: ship. Votes: ship: 2, hold: 1. Dissent: "
            f"{alias} (hold): reason 2.") in text
    assert ("- sure: How sure (1-10)? Outcome: 7 (the median score). Votes: 8: 1, 7: 1, "
            f"2: 1. Dissent: {alias} (2): score 2.") in text
    assert not any(m in json.dumps(chair.body) for m in THREE)
    schema = schema_of(chair)
    assert list(schema["properties"]) == ["summary"]  # no room left to post in, no vote
    assert schema["properties"]["summary"]["description"] == CHAIR_SUMMARY
    assert run.result["answer"] == "Ship, with one dissent on billing."
    assert "envelope.retry.attempted" not in kinds(events)


async def test_a_wide_scale_is_an_integer_with_its_range_described(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """Over 101 scores no enum: an integer (no minimum/maximum, which some strict modes
    refuse), the range in its description, and a score off the scale is repaired."""
    council = council_of({"judge": {}, "peer": {"initial_turn": False}})
    council.room("desk", members=["judge", "peer"])
    council.decision("budget", room="desk", question="Budget in k$?", scale=(0, 1000),
                     voters=["judge"])
    server.add(Answer(answer(None, votes={"budget": v(1001)})),
               Answer(answer(None, votes={"budget": v(250, "enough for a quarter")})),
               member="judge")
    run, events = await run_it(council, tmp_path / "runs.db")

    assert run.status == "completed", run.error
    choice = schema_of(server.requests[0])["properties"]["votes"]["properties"]["budget"][
        "properties"]["choice"]
    assert choice["type"] == "integer" and "enum" not in choice and "minimum" not in choice
    assert choice["description"].endswith("From 0 to 1000.")
    assert [p["previousError"] for p in payloads(events, "envelope.retry.attempted")] == [
        "votes.budget.choice is not one of the choices of 'budget' (0..1000)"]
    assert {d["id"]: d["outcome"] for d in run.decisions} == {"budget": 250}


# -- the llm council -------------------------------------------------------------------------

def test_the_llm_council_runs_to_its_end_and_its_log_checks_in_v1_and_v2(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """``councils/llm-council.toml`` through the CLI against the scripted answers."""
    server.default = council_answer
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "llm-council.toml", tmp_path / "councils")
    run_id = "llm-council-check-0001"
    done = wop(tmp_path, "run", "councils/llm-council.toml", "--run-id", run_id, "--json")
    result = json.loads(done.stdout)["result"]
    assert {d["id"]: d["outcome"] for d in result["decisions"]} == {
        "first_step": "colocate", "confidence": 4}
    assert result["answer"].startswith("The council chose to colocate")
    assert [r.member for r in server.requests].count("chair") == 1
    for flag in ((), ("--v2",)):
        checked = wop(tmp_path, "check", *flag, run_id)
        assert checked.returncode == 0, checked.stdout + checked.stderr
