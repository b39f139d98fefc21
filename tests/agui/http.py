"""A small AG-UI client for the host tests: POST a ``RunAgentInput``, read the SSE answer."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Answer:
    """One POST's answer: its status, and the events (or the error envelope)."""

    status: int
    events: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: str = ""


def run_input(thread: str, text: str | None = None, *, run_id: str | None = None,
              messages: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    """A ``RunAgentInput``: ``messages`` and, with ``text``, one more user message."""
    history = list(messages or [])
    if text is not None:
        history.append({"id": f"u-{uuid.uuid4().hex[:12]}", "role": "user", "content": text})
    return {"threadId": thread, "runId": run_id or f"r-{uuid.uuid4().hex[:12]}",
            "messages": history, "tools": [], "context": [], **more}


def post(url: str, council: str, body: Any, *, token: str | None = None,
         headers: dict[str, str] | None = None, raw: bytes | None = None,
         timeout: float = 60) -> Answer:
    """POST ``body`` to ``/agui/{council}``; read the whole stream (it ends with its run)."""
    data = raw if raw is not None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}/agui/{council}", data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "text/event-stream")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
            return Answer(response.status, parse_sse(text), None, dict(response.headers),
                          text)
    except urllib.error.HTTPError as exc:
        body_text = exc.read().decode()
        return Answer(exc.code, [], json.loads(body_text), dict(exc.headers), body_text)


def parse_sse(text: str) -> list[dict[str, Any]]:
    """The ``data:`` payloads of an SSE body, as JSON (comments and other fields skipped)."""
    events = []
    for frame in text.split("\n\n"):
        data = [line[5:].lstrip() for line in frame.split("\n") if line.startswith("data:")]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


def history(events: list[dict[str, Any]],
            before: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The messages a client holds after ``events`` (what it sends back next time)."""
    messages = {m["id"]: dict(m) for m in before or []}
    for event in events:
        kind = event["type"]
        if kind == "MESSAGES_SNAPSHOT":
            messages = {m["id"]: dict(m) for m in event["messages"]}
        elif kind == "TEXT_MESSAGE_START":
            messages[event["messageId"]] = {"id": event["messageId"],
                                            "role": event.get("role", "assistant"),
                                            "content": "", "name": event.get("name")}
        elif kind == "TEXT_MESSAGE_CONTENT":
            messages[event["messageId"]]["content"] += event["delta"]
    return list(messages.values())


class Listener:
    """Reads one AG-UI stream in a thread, event by event (to act while it streams)."""

    def __init__(self, url: str, council: str, body: Any, token: str | None = None) -> None:
        import queue
        import threading

        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        request = urllib.request.Request(f"{url}/agui/{council}",
                                         data=json.dumps(body).encode(), method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "text/event-stream")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        self._thread = threading.Thread(target=self._read, args=(request,), daemon=True)
        self._thread.start()

    def _read(self, request: urllib.request.Request) -> None:
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                data: list[str] = []
                for raw in response:
                    line = raw.decode().rstrip("\n")
                    if line.startswith("data:"):
                        data.append(line[5:].lstrip())
                    elif not line and data:
                        self.events.put(json.loads("\n".join(data)))
                        data = []
        finally:
            self.events.put(None)

    def until(self, wanted: Any, timeout: float = 30) -> dict[str, Any]:
        """Read events until one for which ``wanted(event)`` holds; return it."""
        while True:
            event = self.events.get(timeout=timeout)
            assert event is not None, f"the stream ended first: {self.seen}"
            self.seen.append(event)
            if wanted(event):
                return event

    def rest(self, timeout: float = 30) -> list[dict[str, Any]]:
        """Read to the end of the stream; return every event read."""
        while (event := self.events.get(timeout=timeout)) is not None:
            self.seen.append(event)
        self._thread.join(timeout)
        return self.seen
