"""Run budgets (RFC 0084): a call whose worst case does not fit is never made."""

from __future__ import annotations

from pathlib import Path

from tests.llm.conftest import llm_council
from tests.llm.test_run import kinds, payloads, run_it
from wopdsl.testing.model_server import Answer, ScriptedModelServer


async def test_a_call_over_max_tokens_is_not_made(server: ScriptedModelServer,
                                                  tmp_path: Path) -> None:
    council = llm_council(members={"writer": {}}, max_tokens=500)  # output cap alone is 800
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed"
    assert run.error["code"] == "BUDGET_EXHAUSTED"
    assert server.requests == []
    assert payloads(events, "budget.reserved") == [
        {"effectiveBudget": {"maxTokens": 500}, "scope": "run"}]
    assert payloads(events, "budget.exhausted") == [
        {"dimension": "tokens", "consumed": 0, "limit": 500}]
    breached = payloads(events, "cap.breached")[0]
    assert breached["kind"] == "budget-tokens" and breached["limit"] == 500
    assert breached["observed"] > 800
    order = kinds(events)
    assert order.index("budget.exhausted") < order.index("cap.breached") < order.index(
        "node.failed") < order.index("run.failed")
    assert payloads(events, "run.failed")[0]["error"]["code"] == "BUDGET_EXHAUSTED"


async def test_budget_counts_what_earlier_calls_consumed(server: ScriptedModelServer,
                                                         tmp_path: Path) -> None:
    server.add(Answer({"summary": "big", "posts": [
        {"roomId": "desk", "text": "over to you", "mentions": ["critic"]}]}, usage=(1500, 500)))
    # The critic's worst case: its prompt (about 300 tokens) + 200 > 2300 - 2000.
    council = llm_council(max_tokens=2300, profile={"max_output_tokens": 200})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed" and run.error["code"] == "BUDGET_EXHAUSTED"
    assert len(server.requests) == 1  # the critic's call would pass 2300: never sent
    assert payloads(events, "budget.consumed")[0] == {
        "dimension": "tokens", "consumed": 2000, "limit": 2300, "remaining": 300}
    assert payloads(events, "budget.exhausted")[0]["consumed"] == 2000
    assert "critic" in run.error["message"] and "max_tokens" in run.error["message"]


async def test_cost_budget(server: ScriptedModelServer, tmp_path: Path) -> None:
    server.add(Answer({"summary": "ok"}, usage=(1000, 100)))
    council = llm_council(members={"writer": {}, "critic": {}}, rooms={}, max_cost_usd=0.0015,
                          profile={"price_in_per_mtok": 1.0, "price_out_per_mtok": 2.0,
                                   "max_output_tokens": 100})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed" and run.error["code"] == "BUDGET_EXHAUSTED"
    usage = payloads(events, "provider.usage")[0]
    assert usage["costEstimateUsd"] == 0.0012
    assert payloads(events, "budget.consumed")[0]["dimension"] == "cost"
    assert payloads(events, "cap.breached")[0]["kind"] == "budget-cost"
    assert run.result is None or "usage" not in (run.result or {})


async def test_within_budget_completes(server: ScriptedModelServer, tmp_path: Path) -> None:
    server.default = Answer({"summary": "ok"}, usage=(100, 10))
    council = llm_council(members={"writer": {}, "critic": {}}, rooms={}, max_tokens=10_000,
                          global_concurrency=2)
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed", run.error
    consumed = payloads(events, "budget.consumed")
    assert [c["consumed"] for c in consumed] == [110, 220]
