"""``ListTasks`` of a council served as an A2A agent: the caller's tasks, newest first.

Filters (``contextId``, ``status``, ``statusTimestampAfter``: the task's last event after
that time), pages of ``pageSize`` (1 to 100, default 50) with an opaque ``pageToken``, and
``historyLength`` / ``includeArtifacts`` as A2A 1.0 says. A bad value is an
``InvalidParamsError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Final

from a2a.types import ListTasksRequest, TaskState
from a2a.utils.errors import InvalidParamsError

from wopdsl import CouncilState
from wopdsl.server.a2a.tasks import task_of

__all__ = ["check_history_length", "list_tasks"]

_PAGE: Final = 50
_MOST: Final = 100

Read = Callable[[str], Awaitable[tuple[CouncilState, str] | None]]
"""A run's state and its last event's time, if the caller may read it (else ``None``)."""


def check_history_length(value: int | None) -> int | None:
    """``historyLength`` as given, refused when negative."""
    if value is not None and value < 0:
        raise InvalidParamsError(message=f"historyLength must be 0 or more (got {value})")
    return value


async def list_tasks(params: ListTasksRequest, runs: list[tuple[str, str]],
                     read: Read) -> dict[str, Any]:
    """The ``ListTasksResponse`` (JSON form) of ``runs`` (``(run id, started at)``)."""
    size = params.page_size if params.HasField("page_size") else _PAGE
    if not 1 <= size <= _MOST:
        raise InvalidParamsError(message=f"pageSize must be 1 to {_MOST} (got {size})")
    start = 0
    if params.page_token:
        if not params.page_token.startswith("p") or not params.page_token[1:].isdigit():
            raise InvalidParamsError(message=f"pageToken {params.page_token!r} is not one "
                                     "this agent gave")
        start = int(params.page_token[1:])
    length = check_history_length(params.history_length
                                  if params.HasField("history_length") else None)
    if params.status and params.status not in TaskState.values():
        raise InvalidParamsError(message=f"status {params.status} is not a task state")
    after = params.status_timestamp_after.ToDatetime(tzinfo=UTC) \
        if params.HasField("status_timestamp_after") else None
    found = []
    for run_id, _ in sorted(runs, key=lambda r: r[1], reverse=True):
        read_back = await read(run_id)
        if read_back is None:
            continue
        state, updated = read_back
        task = task_of(state, length, updated)
        if params.context_id and task["contextId"] != params.context_id:
            continue
        if params.status and TaskState.Value(task["status"]["state"]) != params.status:
            continue
        if after is not None and datetime.fromisoformat(updated) <= after:
            continue
        if not params.include_artifacts:
            task.pop("artifacts", None)
        found.append(task)
    page = found[start:start + size]
    following = f"p{start + size}" if start + size < len(found) else ""
    return {"tasks": page, "nextPageToken": following, "pageSize": len(page),
            "totalSize": len(found)}
