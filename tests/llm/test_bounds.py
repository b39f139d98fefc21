"""Model calls are bounded by default: deadline, output tokens and bytes, turn timeout."""

from __future__ import annotations

from pathlib import Path

from tests.llm.conftest import llm_council
from tests.llm.test_run import kinds, payloads, run_it
from wopdsl.model.llm import DEFAULT_LLM_TURN_TIMEOUT_MS
from wopdsl.testing.model_server import Answer, Endless, ScriptedModelServer


async def test_a_stream_that_never_ends_is_cut_at_max_output_tokens(
        server: ScriptedModelServer, tmp_path: Path) -> None:
    """A server that ignores max_tokens and streams forever: the engine stops reading after
    max_output_tokens pieces, treats the answer as truncated, repairs once, then fails."""
    server.default = Endless("la ")
    council = llm_council(members={"writer": {"max_output_tokens": 40}}, rooms={})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed"
    assert payloads(events, "node.failed")[0]["error"]["code"] == "RESULT_INVALID"
    assert [p["finalReason"] for p in payloads(events, "envelope.retry.exhausted")] == [
        "truncation"]
    assert len(server.requests) == 2  # the answer and its one repair
    streamed = "".join(p["chunk"] for p in payloads(events, "output.chunk"))
    assert len(streamed) <= 2 * 41 * len("la ")


async def test_streamed_bytes_count_against_max_output_bytes(server: ScriptedModelServer,
                                                            tmp_path: Path) -> None:
    server.default = Endless("x" * 1000)
    council = llm_council(members={"writer": {"max_output_bytes": 4096}}, rooms={})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed"
    error = payloads(events, "node.failed")[0]["error"]
    assert error["code"] == "RESULT_INVALID"
    assert "streamed more than max_output_bytes (4096 bytes)" in error["message"]
    assert len(server.requests) == 1  # not repaired: it would stream as much again
    assert sum(len(p["chunk"]) for p in payloads(events, "output.chunk")) <= 4096


async def test_a_call_has_a_total_deadline(server: ScriptedModelServer,
                                           tmp_path: Path) -> None:
    """A stream that trickles (each read well inside any per-read timeout) still ends at
    request_timeout_ms, the whole call's deadline; the retry is recorded."""
    server.default = Endless('{"summary": "', delay_s=0.05)
    council = llm_council(members={"writer": {}}, rooms={},
                          profile={"request_timeout_ms": 400, "retries": 1})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "failed"
    retried = payloads(events, "node.retried")
    assert len(retried) == 1
    assert "took longer than 0.4 s (request_timeout_ms)" in retried[0]["lastError"]["message"]
    error = payloads(events, "node.failed")[0]["error"]
    assert error["code"] == "MODEL_ERROR" and "gave up after 2 attempt(s)" in error["message"]


def test_llm_members_get_a_default_turn_timeout() -> None:
    council = llm_council(members={"writer": {}, "critic": {"turn_timeout_ms": 5000}})
    graph = council.compile()
    assert graph.members["writer"].turn_timeout_s == DEFAULT_LLM_TURN_TIMEOUT_MS / 1000 == 900
    assert graph.members["critic"].turn_timeout_s == 5
    overridden = llm_council(members={"writer": {}}, turn_timeout_ms=60_000).compile()
    assert overridden.members["writer"].turn_timeout_s == 60


async def test_a_well_behaved_answer_is_not_cut(server: ScriptedModelServer,
                                                tmp_path: Path) -> None:
    """Many small pieces, fewer than max_output_tokens: the answer goes through whole."""
    text = '{"summary": "' + "word " * 5 + '"}'
    server.add(Answer(text, chunks=len(text)))
    council = llm_council(members={"writer": {"max_output_tokens": 80}}, rooms={})
    run, events = await run_it(council, tmp_path / "runs.db")
    assert run.status == "completed", run.error
    assert "envelope.retry.attempted" not in kinds(events)
