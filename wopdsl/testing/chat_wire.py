"""Chat Completions bodies on the wire: a whole answer, and the same answer as a stream.

The scripted model server and the cassette server answer from *completion bodies* (the JSON
``chat.completion`` object a non-streamed call returns). When the client asks for a stream,
:func:`stream_chunks` turns the body into the ``chat.completion.chunk`` events a server
would send; :func:`assemble` turns a stream received from a real server back into one body.
Text, refusals, tool calls (by index: id, type, function name and arguments) and any other
string field of a delta are carried both ways, so a body can hold whatever a model answered.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

__all__ = ["assemble", "completion_body", "parse_sse", "stream_chunks", "usage_of"]


def usage_of(prompt: int, completion: int) -> dict[str, int]:
    """A ``usage`` object for ``prompt`` input and ``completion`` output tokens."""
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


def completion_body(ident: str, model: str, content: str, *, finish_reason: str = "stop",
                    usage: tuple[int, int] | None = None,
                    created: int | None = None) -> dict[str, Any]:
    """A ``chat.completion`` body with one assistant message."""
    body: dict[str, Any] = {
        "id": ident, "object": "chat.completion",
        "created": int(time.time()) if created is None else created, "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content}}],
    }
    if usage is not None:
        body["usage"] = usage_of(*usage)
    return body


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i:i + size] for i in range(0, len(text), size)]


def stream_chunks(body: dict[str, Any], *, pieces: int = 1,
                  include_usage: bool = True) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` events that stream ``body`` (without ``[DONE]``).

    Per choice: a first chunk with the role, the content in ``pieces`` chunks, any other
    string field (``refusal``, ``reasoning_content`` …) in one chunk, one chunk per tool call,
    then the finish reason; last, when ``include_usage`` and the body has usage, a chunk with
    the usage and no choices (as ``stream_options.include_usage`` asks).
    """
    base = {"id": body.get("id", "chatcmpl"), "object": "chat.completion.chunk",
            "created": body.get("created", 0), "model": body.get("model", "")}
    if body.get("system_fingerprint") is not None:
        base["system_fingerprint"] = body["system_fingerprint"]

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}

    events: list[dict[str, Any]] = []
    for choice in body.get("choices") or []:
        index = choice.get("index", 0)
        message = dict(choice.get("message") or {})
        events.append(chunk(index, {"role": message.pop("role", "assistant"), "content": ""}))
        content = message.pop("content", None)
        events += [chunk(index, {"content": piece}) for piece in _split(content or "", pieces)]
        calls = message.pop("tool_calls", None) or []
        for position, call in enumerate(calls):
            events.append(chunk(index, {"tool_calls": [{"index": position, **call}]}))
        events += [chunk(index, {key: value}) for key, value in message.items()
                   if isinstance(value, str)]
        events.append(chunk(index, {}, choice.get("finish_reason") or "stop"))
    if include_usage and body.get("usage") is not None:
        events.append({**base, "choices": [], "usage": body["usage"]})
    return events


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """The JSON events of a server-sent event stream (comments and ``[DONE]`` skipped)."""
    events: list[dict[str, Any]] = []
    for block in raw.decode("utf-8", "replace").replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip(" ") for line in block.split("\n")
                         if line.startswith("data:"))
        if not data or data.strip() == "[DONE]":
            continue
        try:
            event = json.loads(data)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _merge_call(calls: dict[int, dict[str, Any]], delta: dict[str, Any]) -> None:
    call = calls.setdefault(int(delta.get("index", len(calls))), {})
    for key, value in delta.items():
        if key == "index" or value is None:
            continue
        if key == "function" and isinstance(value, dict):
            function = call.setdefault("function", {})
            for name, part in value.items():
                if isinstance(part, str):
                    function[name] = function.get(name, "") + part
        else:
            call[key] = value


def assemble(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One ``chat.completion`` body from the chunks of a stream (see :func:`stream_chunks`)."""
    body: dict[str, Any] = {"object": "chat.completion"}
    messages: dict[int, dict[str, Any]] = {}
    finishes: dict[int, str | None] = {}
    calls: dict[int, dict[int, dict[str, Any]]] = {}
    for event in events:
        for key in ("id", "created", "model", "system_fingerprint"):
            if event.get(key) is not None:
                body[key] = event[key]
        if event.get("usage") is not None:
            body["usage"] = event["usage"]
        for choice in event.get("choices") or []:
            index = int(choice.get("index", 0))
            message = messages.setdefault(index, {"role": "assistant", "content": ""})
            finishes.setdefault(index, None)
            for key, value in (choice.get("delta") or {}).items():
                if key == "tool_calls":
                    for part in value or []:
                        _merge_call(calls.setdefault(index, {}), part)
                elif key == "role" and value:
                    message["role"] = value
                elif isinstance(value, str):
                    message[key] = message.get(key, "") + value
            if choice.get("finish_reason"):
                finishes[index] = choice["finish_reason"]
    choices = []
    for index in sorted(messages):
        message = messages[index]
        if index in calls:
            message["tool_calls"] = [calls[index][n] for n in sorted(calls[index])]
        choices.append({"index": index, "finish_reason": finishes[index], "message": message})
    body["choices"] = choices
    return {key: body[key] for key in ("id", "object", "created", "model",
                                       "system_fingerprint", "choices", "usage") if key in body}
