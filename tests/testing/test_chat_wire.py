"""Answers on the wire: streams assembled and re-streamed, tool calls through a cassette.

A cassette keeps raw Chat Completions bodies, so whatever a model answers — text, a refusal,
tool calls — is recorded and replayed without the cassette knowing what it is. The official
``openai`` client reads the replayed answers here, streamed and not.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given
from hypothesis import strategies as st

from wopdsl.testing.cassette import Cassette, dump_yaml
from wopdsl.testing.chat_wire import assemble, parse_sse, stream_chunks
from wopdsl.testing.model_server import RawAnswer, ScriptedModelServer

TOOL_ANSWER: dict[str, Any] = {
    "id": "chatcmpl-7", "object": "chat.completion", "created": 1767225600,
    "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "",
        "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "read_log", "arguments": "{\"service\": \"api\"}"}},
            {"id": "call_2", "type": "function",
             "function": {"name": "restart_service", "arguments": "{\"name\": \"api\"}"}},
        ]}}],
    "usage": {"prompt_tokens": 90, "completion_tokens": 31, "total_tokens": 121},
}
TOOL_REQUEST: dict[str, Any] = {
    "model": "gpt-4o-mini", "stream": True, "stream_options": {"include_usage": True},
    "messages": [{"role": "system", "content": "member id: sre"},
                 {"role": "user", "content": "The api is down."}],
    "tools": [{"type": "function", "function": {"name": "read_log", "parameters": {
        "type": "object", "properties": {"service": {"type": "string"}}}}}],
}


def test_a_streamed_answer_assembles_back_to_its_body() -> None:
    for pieces in (1, 3):
        events = stream_chunks(TOOL_ANSWER, pieces=pieces)
        assert events[-1]["usage"] == TOOL_ANSWER["usage"]
        assert assemble(events) == TOOL_ANSWER
    text = {**TOOL_ANSWER, "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "Line one.\nLine two.", "refusal": "no"}}]}
    assert assemble(stream_chunks(text, pieces=4)) == text


def test_tool_call_fragments_as_servers_stream_them_are_joined() -> None:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def delta(**fields: Any) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": fields, "finish_reason": None}]}

    raw = "".join(f"data: {json.dumps(e)}\n\n" for e in [
        delta(role="assistant", content=None),
        delta(tool_calls=[{"index": 0, "id": "call_9", "type": "function",
                           "function": {"name": "read_log", "arguments": ""}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": "{\"serv"}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": "ice\": \"api\"}"}}]),
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]) + ": keep-alive\n\ndata: [DONE]\n\n"

    body = assemble(parse_sse(raw.encode()))

    assert body["choices"] == [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "", "tool_calls": [{
            "id": "call_9", "type": "function",
            "function": {"name": "read_log", "arguments": "{\"service\": \"api\"}"}}]}}]


async def _ask(base_url: str, stream: bool) -> Any:
    from openai import AsyncOpenAI

    request = {k: v for k, v in TOOL_REQUEST.items() if stream or not k.startswith("stream")}
    headers = {"wop-member": "sre", "wop-turn": "1", "wop-attempt": "0", "wop-position": "1"}
    async with AsyncOpenAI(api_key="sk-unused", base_url=base_url, max_retries=0) as client:
        if not stream:
            return await client.chat.completions.create(**request, extra_headers=headers)
        calls: dict[int, dict[str, str]] = {}
        finish = None
        async for chunk in await client.chat.completions.create(**request,
                                                                extra_headers=headers):
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                for part in choice.delta.tool_calls or []:
                    call = calls.setdefault(part.index, {"name": "", "arguments": ""})
                    call["name"] += part.function.name or ""
                    call["arguments"] += part.function.arguments or ""
        return finish, [calls[i] for i in sorted(calls)]


def test_tool_calls_are_recorded_and_replayed_to_the_openai_client(tmp_path: Path) -> None:
    path = tmp_path / "sre.yaml"
    with ScriptedModelServer() as real:
        real.add(RawAnswer(200, TOOL_ANSWER))
        recording = Cassette(path, record=True)
        try:
            url = recording.tap(1).base_url("ops", real.url)
            finish, calls = asyncio.run(_ask(url, stream=True))
        finally:
            recording.close()
        assert recording.save()
    assert finish == "tool_calls"
    assert calls == [{"name": "read_log", "arguments": "{\"service\": \"api\"}"},
                     {"name": "restart_service", "arguments": "{\"name\": \"api\"}"}]
    stored = yaml.safe_load(path.read_text(encoding="utf-8"))["exchanges"][0]
    assert stored["request"]["body"]["tools"] == TOOL_REQUEST["tools"]
    assert stored["response"]["body"]["choices"][0]["message"]["tool_calls"] == \
        TOOL_ANSWER["choices"][0]["message"]["tool_calls"]

    replaying = Cassette(path)
    try:
        url = replaying.tap(1).base_url("ops", None)
        assert asyncio.run(_ask(url, stream=True)) == (finish, calls)
    finally:
        replaying.close()
    assert replaying.problems == [] and replaying.unused() == []

    # The same exchange asked for without streaming is a different request: refused.
    replaying = Cassette(path)
    try:
        url = replaying.tap(1).base_url("ops", None)
        try:
            asyncio.run(_ask(url, stream=False))
        except Exception as exc:
            assert "no longer matches the recording" in str(exc)
        else:
            raise AssertionError("a changed request was answered")
    finally:
        replaying.close()
    assert "-  stream: true" in replaying.problems[0]


text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@given(st.recursive(st.none() | st.booleans() | st.integers() | text,
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(text, inner, max_size=4), max_leaves=20))
def test_cassette_yaml_reads_back_exactly(data: Any) -> None:
    assert yaml.safe_load(dump_yaml(data)) == data
