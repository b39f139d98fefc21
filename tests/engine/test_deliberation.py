"""Deliberation (DESIGN.md §22): rounds, blind and anonymous rooms, @all, decisions, a chair.

Python handlers record exactly what they saw, so blindness and anonymity are proven from
inside the member; every run is on a real SQLite file and passes `wop check` (conftest).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.conftest import MakeCouncil
from tests.engine.helpers import Calls, dispatch_order, of_type, reply, say
from wopdsl import Council, Post, Reply, Turn, ValidationError, Vote
from wopdsl.protocol.check import check_events
from wopdsl.protocol.check_v2 import check_events_v2
from wopdsl.testing.snapshot import TextSnapshot


def vote(decision: str, choice: Any, reason: str = "") -> Vote:
    return Vote(decision=decision, choice=choice, reason=reason)


def board(calls: Calls, answers: dict[str, list[Reply]], *, blind: bool = True,
          anonymous: bool = False, rounds: int = 2, chair: str | None = None,
          decision: dict[str, Any] | None = None, **settings: Any) -> Council:
    """A board of cfo, cto, cmo (and a chair) answering ``answers[member][turn - 1]``."""
    council = Council("board", task="Ship v2?", chair=chair, **settings)
    members = ["cfo", "cto", "cmo", *([chair] if chair else [])]
    council.room("board", members=members, rounds=rounds, blind=blind, anonymous=anonymous)
    if decision is not None:
        council.decision("ship", room="board", question="Ship v2 this week?", **decision)
    for member in members:
        script = answers.get(member, [])

        def body(turn: Turn, script: list[Reply] = script) -> Reply:
            return script[turn.turn - 1] if turn.turn <= len(script) else \
                reply(f"{turn.member} {turn.turn}")

        council.member(member, role=member.upper())(calls.handler(body))
    return council


def post(text: str, *mentions: str, votes: list[Vote] | None = None) -> Reply:
    return Reply(summary=text, posts=[say("board", text, *mentions)], votes=votes or [])


# -- rounds and blindness ------------------------------------------------------------------

async def test_a_blind_round_hides_the_others_posts_until_it_ends(db_path: Path) -> None:
    calls = Calls()
    answers = {m: [post(f"{m} first"), post(f"{m} second")] for m in ("cfo", "cto", "cmo")}
    run = await board(calls, answers).arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    seen = {(c.member, c.turn): [m.text for m in c.input.messages if not m.system]
            for c in calls.log}
    # Round 1: each answer is independent — nobody sees another's first answer.
    assert seen[("cfo", 1)] == [] and seen[("cto", 1)] == [] and seen[("cmo", 1)] == []
    # Round 2: every first answer is visible, and nobody sees another's second answer.
    for member in ("cfo", "cto", "cmo"):
        assert sorted(t for t in seen[(member, 2)] if t.endswith("first")) == \
            ["cfo first", "cmo first", "cto first"]
        assert [t for t in seen[(member, 2)] if t.endswith("second")] in (
            [], [f"{member} second"])
    rounds = [m.input.rounds["board"] for m in calls.log]
    assert [r["round"] for r in rounds] == [1, 1, 1, 2, 2, 2]
    assert all(r == {**r, "of": 2, "blind": True, "settled": False} for r in rounds)
    notes = [m.text for m in run.messages if m.system]
    assert notes == ["Round 1 of 2 begins: 3 members answer.",
                     "Round 2 of 2 begins: 3 members answer.",
                     "Round 2 of 2 ended: the debate is over."]


async def test_a_blind_round_fills_the_tail_from_earlier_rounds(db_path: Path) -> None:
    calls = Calls()
    answers = {m: [post(f"{m} r{n}") for n in (1, 2, 3)] for m in ("cfo", "cto", "cmo")}
    run = await board(calls, answers, rounds=3, tail_messages=3, global_concurrency=3
                      ).arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    third = [c for c in calls.log if c.turn == 3]
    for call in third:
        texts = [m.text for m in call.input.messages]
        # Three visible messages: the round's opening note and two of round 2's posts.
        assert len(texts) == 3 and texts[-1] == "Round 3 of 3 begins: 3 members answer."
        assert not any(t.endswith("r3") for t in texts)


async def test_rounds_end_the_debate_without_failing_on_caps(db_path: Path) -> None:
    """A back-and-forth that would spend every cap ends after its rounds, completed."""
    calls = Calls()
    ping = {"cfo": [post("@cto?", "cto")] * 3, "cto": [post("@cfo!", "cfo")] * 3}
    run = await board(calls, ping, blind=False, rounds=3, max_turns_per_member=3
                      ).arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert [(c.member, c.turn) for c in calls.log].count(("cfo", 3)) == 1
    assert len(calls.log) == 9  # 3 rounds x 3 members: a mention adds no turn
    # A mention is among the mentioned member's triggers on its next round.
    cto_round2 = next(c for c in calls.log if c.member == "cto" and c.turn == 2)
    assert [m.text for m in cto_round2.input.triggers] == ["@cto?"]


async def test_a_member_with_no_turn_left_is_skipped_by_later_rounds(db_path: Path) -> None:
    calls = Calls()
    council = board(calls, {}, rounds=3)
    council._members[0]["max_turns"] = 1  # cfo: one turn only
    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    assert [c.member for c in calls.log].count("cfo") == 1
    assert [c.member for c in calls.log].count("cto") == 3
    openings = [m.text for m in run.messages if m.system and "begins" in m.text]
    assert openings[1:] == ["Round 2 of 3 begins: 2 members answer.",
                            "Round 3 of 3 begins: 2 members answer."]


# -- anonymity -------------------------------------------------------------------------------

async def test_an_anonymous_room_shows_aliases_never_ids(db_path: Path) -> None:
    calls = Calls()
    answers = {"cfo": [post("I say @cto should decide.", "cto"), post("ok")],
               "cto": [post("fine"), post("agreed")], "cmo": [post("hmm"), post("yes")]}
    run = await board(calls, answers, blind=False, anonymous=True).arun(
        store=db_path, deterministic=True)

    assert run.status == "completed"
    aliases = run.state.aliases
    assert sorted(aliases.values()) == ["Member A", "Member B", "Member C"]
    for call in calls.log:
        for message in call.input.messages:
            dumped = json.dumps(message.to_wire())
            for member in ("cfo", "cto", "cmo"):  # no id of another member anywhere
                if member != call.member:
                    assert member not in dumped, (call.member, dumped)
            assert not message.id.startswith("team/")
            if not message.system:
                assert message.sender in (*aliases.values(), "you")
    cto_second = next(c for c in calls.log if c.member == "cto" and c.turn == 2)
    first = next(m for m in cto_second.input.messages if m.text.startswith("I say"))
    assert first.sender == aliases["cfo"]
    assert first.text == "I say @you should decide." and first.mentions == ["you"]
    cmo_second = next(c for c in calls.log if c.member == "cmo" and c.turn == 2)
    seen = next(m for m in cmo_second.input.messages if m.text.startswith("I say"))
    slug = aliases["cto"].lower().replace(" ", "-")
    assert seen.text == f"I say @{slug} should decide." and seen.mentions == [aliases["cto"]]
    # Its own previous result names the others by alias too.
    cfo_second = next(c for c in calls.log if c.member == "cfo" and c.turn == 2)
    assert cfo_second.input.result is not None
    slug = aliases["cto"].lower().replace(" ", "-")
    assert cfo_second.input.result["posts"] == [
        {"roomId": "board", "text": f"I say @{slug} should decide.",
         "mentions": [aliases["cto"]]}]
    # The log and the transcript keep real ids.
    assert next(m for m in run.messages if m.text.startswith("I say")).mentions == ["cto"]
    assert "cfo team/cfo/" in run.transcript
    turns = [e["payload"]["turn"] for e in of_type(run.events, "conversation.exchanged")]
    assert {t["speakerId"] for t in turns if t["role"] == "agent"} == \
        {"host:cfo", "host:cto", "host:cmo"}


async def test_an_alias_mention_maps_back_to_the_member(db_path: Path) -> None:
    calls = Calls()
    council = Council("anon", task="t")
    council.room("room", members=["lead", "a", "b"], anonymous=True)

    def lead(turn: Turn) -> Reply:
        others = sorted({m.sender for m in turn.messages if m.sender not in ("you", "system")})
        return Reply(summary="asked", posts=[Post(room="room", text="over to you",
                                                  mentions=[others[0]])]) if turn.turn == 1 \
            else reply("done")

    def member(turn: Turn) -> Reply:
        return Reply(summary="hi", posts=[Post(room="room", text=f"{turn.member} here")]) \
            if turn.turn == 1 else reply("answered")

    council.member("a", role="a")(calls.handler(member))
    council.member("b", role="b")(calls.handler(member))
    council.member("lead", role="lead")(calls.handler(lead))
    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    aliases = run.state.aliases
    asked = next(m for m in run.messages if m.text == "over to you")
    target = asked.mentions[0]
    assert target in ("a", "b") and min(aliases[x] for x in ("a", "b")) == aliases[target]
    assert [c.turn for c in calls.of(target)] == [1, 2]


async def test_peers_name_the_others_of_an_anonymous_room_by_alias(db_path: Path) -> None:
    """``turn.peers``: each anonymous room's other members as aliases, in alias order (never
    the declaration order), and those who have used all their turns; a plain room has none."""
    calls = Calls()
    council = board(calls, {}, blind=False, anonymous=True, rounds=2)
    council._members[0]["max_turns"] = 1  # cfo: one turn only
    council.room("side", members=["cto", "cmo"])
    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    aliases = run.state.aliases
    for call in calls.log:
        others = [m for m in ("cfo", "cto", "cmo") if m != call.member]
        shown = sorted((aliases[m] for m in others), key=lambda a: (len(a), a))
        assert list(call.input.peers) == ["board"]  # "side" is not anonymous
        assert call.input.peers["board"]["members"] == shown
        dumped = json.dumps(call.input.peers)
        assert not any(m in dumped for m in others)
    cto_second = next(c for c in calls.log if c.member == "cto" and c.turn == 2)
    assert cto_second.input.peers["board"]["spent"] == [aliases["cfo"]]


# -- @all ------------------------------------------------------------------------------------

async def test_at_all_wakes_the_others_with_turns_left_at_most_max_wake(
        make_council: MakeCouncil, db_path: Path) -> None:
    calls = Calls()
    council = make_council(
        {"spent": calls.handler(),
         "lead": calls.handler(lambda t: reply("all", say("r", "everyone?", "all"))
                               if t.turn == 1 else reply("done")),
         "a": calls.handler(), "b": calls.handler(), "c": calls.handler()},
        rooms={"r": {"members": ["spent", "lead", "a", "b", "c"], "max_wake": 2}},
        waiting=["a", "b", "c"], options={"spent": {"max_turns": 1}})
    run = await council.arun(store=db_path, deterministic=True)

    assert run.status == "completed"
    # spent used its one turn first: @all skips it and wakes a, b (max_wake = 2), not c.
    assert dispatch_order(run.events) == ["spent", "lead", "a", "b"]
    message = next(m for m in run.messages if m.text == "everyone?")
    assert message.mentions == ["all"]
    assert [c.triggers for c in calls.of("a")] == [[message.id]]


def test_all_is_a_reserved_member_id() -> None:
    council = Council("c", task="t").add_member("all", role="everyone", engine="human")
    with pytest.raises(Exception, match="'all' is a reserved id"):
        council.compile()


# -- decisions and votes -----------------------------------------------------------------------

@pytest.mark.parametrize(("rule", "choices", "outcome"), [
    ("majority", ["ship", "ship", "hold"], "ship"),
    ("majority", ["ship", "hold", "maybe"], "tied"),
    ("two_thirds", ["ship", "ship", "hold"], "ship"),
    ("unanimous", ["ship", "ship", "hold"], "no_majority"),
    ("unanimous", ["ship", "ship", "ship"], "ship"),
    ("plurality", ["ship", "hold", "maybe"], "tied"),
])
async def test_decision_rules(db_path: Path, rule: str, choices: list[str],
                              outcome: str) -> None:
    calls = Calls()
    answers = {m: [post(f"{m} votes", votes=[vote("ship", c, f"{m} reason")])]
               for m, c in zip(("cfo", "cto", "cmo"), choices, strict=True)}
    run = await board(calls, answers, rounds=1, decision={
        "options": ["ship", "hold", "maybe"], "rule": rule}).arun(
        store=db_path, deterministic=True)

    assert run.status == "completed"
    (decision,) = run.decisions
    assert decision["outcome"] == outcome and not decision["open"]
    assert decision["tally"] == {o: choices.count(o) for o in ("ship", "hold", "maybe")}
    dissent = [d["voter"] for d in decision["dissent"]]
    assert dissent == ([m for m, c in zip(("cfo", "cto", "cmo"), choices, strict=True)
                        if c != outcome] if outcome in ("ship", "hold") else [])
    assert run.result is not None and run.result["decisions"][0]["outcome"] == outcome


async def test_no_quorum_and_a_changed_vote_kept_in_the_log(db_path: Path) -> None:
    calls = Calls()
    answers = {"cfo": [post("hold", votes=[vote("ship", "hold", "cash")]),
                       post("ship now", votes=[vote("ship", "ship", "convinced")])],
               "cto": [post("ship", votes=[vote("ship", "ship")]), post("same")]}
    run = await board(calls, answers, decision={"options": ["ship", "hold"], "quorum": 3}
                      ).arun(store=db_path, deterministic=True)

    (decision,) = run.decisions
    assert decision["outcome"] == "no_quorum" and decision["changed"] == 1
    history = run.state.decisions["ship"].history
    assert [(v.voter, v.choice, v.round) for v in history] == [
        ("cfo", "hold", 1), ("cto", "ship", 1), ("cfo", "ship", 2)]
    metrics = run.metrics().to_json()
    assert metrics["members"]["cfo"]["flips"] == 1
    assert metrics["members"]["cfo"]["survival"] == 0.0
    assert metrics["decisions"]["ship"]["first_round_outcome"] == "tied"


async def test_a_scale_decision_settles_on_the_median(db_path: Path) -> None:
    calls = Calls()
    answers = {m: [post("score", votes=[vote("ship", s)])]
               for m, s in (("cfo", 2), ("cto", 7), ("cmo", 8))}
    run = await board(calls, answers, rounds=1, decision={"scale": (1, 10)}).arun(
        store=db_path, deterministic=True)

    (decision,) = run.decisions
    assert decision["outcome"] == 7
    assert [d["voter"] for d in decision["dissent"]] == ["cfo"]  # > 2.25 from the median


@pytest.mark.parametrize(("bad", "why"), [
    (vote("nope", "ship"), "decision 'nope' does not exist"),
    (vote("ship", "later"), "is not an option of decision 'ship'"),
])
async def test_an_invalid_vote_fails_the_turn_clearly(db_path: Path, bad: Vote,
                                                      why: str) -> None:
    calls = Calls()
    run = await board(calls, {"cfo": [post("x", votes=[bad])]}, rounds=1,
                      decision={"options": ["ship", "hold"]}).arun(store=db_path)

    assert run.status == "failed"
    failed = of_type(run.events, "node.failed")[0]["payload"]["error"]
    assert failed["code"] == "RESULT_INVALID" and why in failed["message"]
    assert not of_type(run.events, "conversation.exchanged")[1:2] or all(
        e["payload"]["turn"]["role"] == "system"
        for e in of_type(run.events, "conversation.exchanged"))


async def test_a_vote_on_a_closed_decision_is_refused(make_council: MakeCouncil,
                                                      db_path: Path) -> None:
    calls = Calls()
    council = make_council(
        {"a": calls.handler(lambda t: Reply(summary="v", votes=[vote("d", "yes")])
                            if t.turn == 1 else Reply(summary="late", votes=[vote("d", "no")])),
         "b": calls.handler(lambda t: Reply(summary="v", votes=[vote("d", "no")],
                                            posts=[say("all", "over to c", "c")])),
         "c": calls.handler(lambda t: reply("asks a", say("all", "a, again?", "a")))},
        waiting=["c"])
    council.decision("d", room="all", question="q", options=["yes", "no"], voters=["a", "b"])
    run = await council.arun(store=db_path)

    assert run.status == "failed"
    closed = next(m for m in run.messages if m.system and "closed" in m.text)
    assert closed.text == "Decision 'd' closed: tied (yes 1, no 1; 2 of 2 voted)."
    error = of_type(run.events, "node.failed")[0]["payload"]["error"]
    assert error["code"] == "RESULT_INVALID"
    assert "decision 'd' is closed (outcome: tied)" in error["message"]


# -- the chair -------------------------------------------------------------------------------

async def test_the_chair_speaks_last_with_every_outcome_and_its_summary_is_the_answer(
        db_path: Path) -> None:
    calls = Calls()
    answers = {"cfo": [post("hold, @chair note the runway", "chair",
                            votes=[vote("ship", "hold", "runway")])],
               "cto": [post("ship", votes=[vote("ship", "ship", "tests green")])],
               "cmo": [post("ship", votes=[vote("ship", "ship", "campaign ready")])],
               "chair": [reply("We ship; the CFO's runway concern is noted.")]}
    run = await board(calls, answers, rounds=1, chair="chair",
                      decision={"options": ["ship", "hold"]}).arun(
        store=db_path, deterministic=True)

    assert run.status == "completed"
    assert calls.order[-1] == "chair" and calls.order.count("chair") == 1
    chair = calls.of("chair")[0].input
    (decision,) = chair.decisions
    assert decision["outcome"] == "ship" and decision["tally"] == {"ship": 2, "hold": 1}
    assert decision["dissent"] == [{"voter": "cfo", "choice": "hold", "reason": "runway"}]
    assert [m.text for m in chair.triggers] == ["hold, @chair note the runway"]
    assert run.result is not None
    assert run.result["answer"] == "We ship; the CFO's runway concern is noted."
    completed = of_type(run.events, "run.completed")[0]["payload"]["outputs"]
    assert completed["answer"] == run.result["answer"]


async def test_a_human_votes_and_the_run_goes_on(db_path: Path) -> None:
    calls = Calls()
    council = Council("vote", task="t")
    council.room("r", members=["bot", "founder"])
    council.decision("go", room="r", question="Go?", options=["go", "stop"])
    council.member("bot", role="bot")(calls.handler(
        lambda t: Reply(summary="voted", votes=[vote("go", "go", "why not")],
                        posts=[Post(room="r", text="@founder your vote?",
                                    mentions=["founder"])])))
    council.human("founder")
    run = await council.arun(store=db_path, deterministic=True)
    assert run.status == "waiting-input" and run.waiting_for == ["founder"]

    with pytest.raises(ValidationError, match="not an option"):
        await run.vote("go", "later")
    await run.vote("go", "Stop", reason="not yet")  # an option matched case-insensitively
    await run.wait()

    assert run.status == "completed"
    (decision,) = run.decisions
    assert decision["outcome"] == "tied"
    assert {v["voter"]: v["choice"] for v in decision["votes"]} == {"bot": "go",
                                                                    "founder": "stop"}


# -- the wire --------------------------------------------------------------------------------

async def test_every_deliberation_fact_validates_in_v1_and_v2(db_path: Path) -> None:
    calls = Calls()
    answers = {"cfo": [post("hold", votes=[vote("ship", "hold", "r")]), post("hold")],
               "cto": [post("ship", "all", votes=[vote("ship", "ship")]), post("ship")],
               "cmo": [post("ship", votes=[vote("ship", "ship")]), post("ship")]}
    run = await board(calls, answers, anonymous=True, chair="chair",
                      decision={"options": ["ship", "hold"]}).arun(store=db_path)

    assert run.status == "completed"
    events = list(run.events)
    assert check_events(events) == []
    assert check_events_v2(events) == []


async def test_what_each_member_saw_is_locked_with_aliases(db_path: Path,
                                                           snapshot: SnapshotAssertion) -> None:
    """A syrupy snapshot of every input of a blind, anonymous debate, as members saw it."""
    calls = Calls()
    answers = {"cfo": [post("Hold: the runway. @cto?", "cto", votes=[vote("ship", "hold", "r")]),
                       post("Still hold.", votes=[vote("ship", "hold", "r")])],
               "cto": [post("Ship: tests are green.", votes=[vote("ship", "ship", "g")]),
                       post("Ship, @cfo: rollback is ready.", "cfo",
                            votes=[vote("ship", "ship", "g")])],
               "cmo": [post("Hold: the campaign.", votes=[vote("ship", "hold", "c")]),
                       post("Ship after all.", votes=[vote("ship", "ship", "c")])],
               "chair": [reply("Ship; the CFO dissents.")]}
    council = board(calls, answers, anonymous=True, chair="chair",
                    decision={"options": ["ship", "hold"]})
    run = await council.arun(store=db_path, run_id="board-0123456789abcdef",
                             deterministic=True)

    assert run.status == "completed"
    views = []
    for call in calls.log:
        turn = call.input
        views.append(f"== {turn.member}, turn {turn.turn}, rounds {turn.rounds}")
        views += [f"  {m.sender} {m.id}{''.join(f' @{x}' for x in m.mentions)}: {m.text}"
                  for m in turn.messages]
        views += [f"  trigger {m.id}" for m in turn.triggers]
        views += [f"  decision {json.dumps(d, sort_keys=True)}" for d in turn.decisions]
    assert "\n".join(views) + "\n" == snapshot(extension_class=TextSnapshot)
    assert run.transcript == snapshot
