"""A run followed as an A2A stream: the task's status and artifact updates from its events.

A post is a ``working`` status update (the post as its message); an ``llm`` member's post
is streamed before it, token by token, as artifact updates (:mod:`~wopdsl.server.a2a.
tokens`). The run stopping — for now (waiting for input) or for good — ends the stream with
the artifacts of a completed run and the state it stops in. A blocking ``SendMessage`` is
answered at the same points, and also when the run is paused (:data:`ANSWERED`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any, Final

from a2a.types import Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent
from google.protobuf.json_format import ParseDict

from wopdsl import CouncilState
from wopdsl.server.a2a.tasks import artifacts, context_of, post_message, status_of
from wopdsl.server.a2a.tokens import Tokens
from wopdsl.server.feed import Feeds
from wopdsl.server.host import Host

__all__ = ["ANSWERED", "STOPPED", "Event", "stopped_updates", "updates"]

Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent

STOPPED: Final = frozenset({"completed", "failed", "cancelled", "waiting-input"})
"""Run statuses at which a stream ends (the run stopped, for now or for good)."""
ANSWERED: Final = STOPPED | {"paused"}
"""Run statuses at which a blocking ``SendMessage`` is answered: also a paused run's (it
waits for someone to unpause it, not for the client)."""


async def updates(host: Host, feeds: Feeds, run_id: str, after: int,
                  stopped: frozenset[str] = STOPPED) -> AsyncGenerator[Event]:
    """The run's updates after sequence ``after``, until its status is one of ``stopped``.

    A run stopped with nothing after ``after`` says so at once.
    """
    subscriber = feeds.subscribe(run_id)
    try:
        state = await host.state_of(run_id)
        if state.status in stopped and state.last_sequence <= after:
            for update in stopped_updates(state):
                yield update
            return
        tokens = Tokens.of(state)
        async for batch in subscriber.batches(after):
            if not batch:
                continue
            state = await host.state_of(run_id)
            for frame in batch:
                event = json.loads(frame.data)
                for piece in tokens.feed(event, state):
                    yield _artifact(state, piece)
                posted = _posted(event)
                if posted is not None and posted in state.messages:
                    post = post_message(state, posted)
                    whole = tokens.saved(post)
                    if whole is not None:
                        yield _artifact(state, whole)
                    yield _working(state, post)
            # Stopped where this batch ends (a state read further on waits for its events)
            if state.status in stopped and state.last_sequence <= batch[-1].sequence:
                for update in stopped_updates(state):
                    yield update
                return
    finally:
        subscriber.close()


def stopped_updates(state: CouncilState) -> list[Event]:
    """The last updates of a stream: the artifacts of a completed run, then its status."""
    context_id = context_of(state)
    found: list[Event] = [ParseDict({"taskId": state.run_id, "contextId": context_id,
                                     "artifact": artifact, "lastChunk": True},
                                    TaskArtifactUpdateEvent())
                          for artifact in artifacts(state)]
    found.append(ParseDict({"taskId": state.run_id, "contextId": context_id,
                            "status": status_of(state)}, TaskStatusUpdateEvent()))
    return found


def _posted(event: dict[str, Any]) -> str | None:
    """The message id of a post an event saves (``None``: not a post)."""
    if event.get("type") != "conversation.exchanged":
        return None
    turn = (event.get("payload") or {}).get("turn") or {}
    return str(turn.get("messageId", "")) or None


def _working(state: CouncilState, post: dict[str, Any]) -> TaskStatusUpdateEvent:
    update: TaskStatusUpdateEvent = ParseDict(
        {"taskId": state.run_id, "contextId": context_of(state),
         "status": {"state": "TASK_STATE_WORKING", "message": post}},
        TaskStatusUpdateEvent())
    return update


def _artifact(state: CouncilState, update: dict[str, Any]) -> TaskArtifactUpdateEvent:
    """A streamed post's artifact update (:mod:`~wopdsl.server.a2a.tokens`) of the task."""
    parsed: TaskArtifactUpdateEvent = ParseDict(
        {"taskId": state.run_id, "contextId": context_of(state), **update},
        TaskArtifactUpdateEvent())
    return parsed
