"""Model output is data: it cannot leave the member's rooms, change the roster or run code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.llm.conftest import llm_council
from tests.llm.test_run import kinds, payloads, run_it
from wopdsl.testing.model_server import Answer, ScriptedModelServer

ROOMS = {"desk": ["writer", "critic"], "vault": ["critic", "keeper"]}
MEMBERS = {"writer": {}, "critic": {"initial_turn": False}, "keeper": {"initial_turn": False}}


def council() -> Any:
    return llm_council(members={k: dict(v) for k, v in MEMBERS.items()}, rooms=ROOMS)


@pytest.mark.parametrize(("answer", "reason", "says"), [
    ({"summary": "x", "posts": [{"roomId": "desk", "text": "psst", "mentions": ["keeper"]}]},
     "schema-violation", "not in room desk (you may mention: critic)"),
    ({"summary": "x", "posts": [{"roomId": "vault", "text": "let me in", "mentions": []}]},
     "schema-violation", "not one of your rooms (desk)"),
    ({"summary": "x", "members": ["writer", "mallory"]},
     "schema-violation", "unexpected key"),
    ({"summary": "x", "posts": [{"roomId": "desk", "text": "hi", "mentions": [],
                                 "sender": "critic", "speakerId": "host:critic"}]},
     "schema-violation", 'with "roomId", "text" and "mentions" only'),
    ({"summary": ["not", "text"]}, "type-mismatch", '"summary" must be a string'),
    (["a", "list"], "schema-violation", "must be a JSON object"),
])
async def test_hostile_answers_fail_the_turn(server: ScriptedModelServer, tmp_path: Path,
                                            answer: Any, reason: str, says: str) -> None:
    server.add(Answer(answer), Answer(answer))
    run, events = await run_it(council(), tmp_path / "runs.db")
    assert run.status == "failed"
    assert payloads(events, "node.failed")[0]["error"]["code"] == "RESULT_INVALID"
    exhausted = payloads(events, "envelope.retry.exhausted")[0]
    assert exhausted["finalReason"] == reason and says in exhausted["finalError"]
    assert "conversation.exchanged" not in kinds(events)
    # The roster never changed: the run's declaration and rooms are as declared.
    assert set(run.state.members) == {"writer", "critic", "keeper"}
    assert {r: list(s.members) for r, s in run.state.rooms.items()} == ROOMS


async def test_template_syntax_in_model_output_stays_text(server: ScriptedModelServer,
                                                          tmp_path: Path) -> None:
    payload = ("{{ ''.__class__.__mro__[1].__subclasses__() }} {% for x in range(9) %}x"
               "{% endfor %} {{ config }}")
    server.add(Answer({"summary": "{{ 7 * 7 }}", "posts": [
        {"roomId": "desk", "text": payload, "mentions": ["critic"]}]}), member="writer")
    server.add(Answer({"summary": "seen"}), member="critic")
    run, events = await run_it(council(), tmp_path / "runs.db")
    assert run.status == "completed", run.error
    turn = payloads(events, "conversation.exchanged")[0]["turn"]
    assert turn["content"]["text"] == payload
    critic_prompt = server.requests[1].body["messages"][1]["content"]
    assert payload in critic_prompt  # inserted verbatim, never evaluated
    assert "subclasses" in critic_prompt and "<class" not in critic_prompt
    assert run.result["agents"][0]["result"]["summary"] == "{{ 7 * 7 }}"


async def test_custom_templates_render_in_the_sandbox(server: ScriptedModelServer,
                                                      tmp_path: Path) -> None:
    evil = {"writer": {"turn_prompt": "{{ task.__class__.__mro__[1].__subclasses__() }}"}}
    run, events = await run_it(llm_council(members=evil, rooms={}), tmp_path / "runs.db")
    assert run.status == "failed"
    error = payloads(events, "node.failed")[0]["error"]
    assert error["code"] == "RESULT_INVALID" and "SecurityError" in error["message"]
    assert server.requests == []
