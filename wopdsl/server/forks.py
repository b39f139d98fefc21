"""``POST …/runs/{runId}:fork``: replay or branch a run from a point of its log.

v1 ``replay.md`` §Endpoint, v2 ``replay.md`` §The surface and ``runs.md`` §Fork. The body is
``{mode, fromSeq?, runOptionsOverlay?}``. Events with ``sequence < fromSeq`` are the fork's
fixed history; the event at ``fromSeq`` and those after it are executed again. ``fromSeq``
may be left out for ``replay`` (``0``: everything again) and must be given for ``branch``.
A council's opening events (``run.started`` and each room's opening) follow from its
declaration and task alone, so a ``fromSeq`` before the last room opened forks just after
the openings: executed again they would be the same events. The fork is owned as its
source (``owner`` copied verbatim, RFC 0165 §B.4 / RFC 0170 §A.4); who forked it is kept
in ``run.started`` ``metadata.forkedFrom.by``.
"""

from __future__ import annotations

import functools
from typing import Any, Final

from starlette.requests import Request

from wopdsl import EventStore, WopError, fork
from wopdsl.server.errors import ApiError, from_wop_error
from wopdsl.server.io import read_body, read_object, want_int

__all__ = ["FORK_MODES", "answer", "fork_body", "fork_point", "forked"]

FORK_MODES: Final = ("replay", "branch")
"""The ``mode`` values a fork takes."""

async def fork_body(request: Request, max_bytes: int, timeout_s: float
                    ) -> tuple[str, int | None]:
    """The request's ``(mode, fromSeq)``; 400 ``validation_error`` for a body that is not one.

    ``runOptionsOverlay`` must be absent or empty: ``replay`` takes none (it would break
    determinism), and this host applies none to a branch either.
    """
    raw = await read_body(request, max_bytes, timeout_s)
    body = read_object(raw, allowed={"mode", "fromSeq", "runOptionsOverlay"}, empty_ok=True)
    mode = body.get("mode", "branch")
    if mode not in FORK_MODES:
        raise ApiError(400, "validation_error", "mode must be 'replay' or 'branch'",
                       {"field": "mode", "allowed": list(FORK_MODES)})
    overlay = body.get("runOptionsOverlay", {})
    if not isinstance(overlay, dict):
        raise ApiError(400, "validation_error", "runOptionsOverlay must be an object",
                       {"field": "runOptionsOverlay"})
    if overlay:
        why = ("a replay re-executes the run as it was: runOptionsOverlay is for branch "
               "forks only" if mode == "replay" else
               "this host applies no runOptionsOverlay to a branch: send it empty or leave "
               "it out")
        raise ApiError(400, "validation_error", why, {"field": "runOptionsOverlay"})
    if "fromSeq" in body:
        value = body["fromSeq"]  # JSON: a number, not its text (want_int parses strings)
        return mode, want_int(None if isinstance(value, str) else value, "fromSeq", low=0)
    if mode == "branch":
        raise ApiError(400, "validation_error",
                       "a branch fork needs fromSeq (the sequence it branches from)",
                       {"field": "fromSeq"})
    return mode, None


def fork_point(store: EventStore, run_id: str, from_seq: int) -> int:
    """The last sequence a fork at ``from_seq`` keeps (the library's inclusive cut).

    Raises:
        ApiError: 422 ``fork_point_invalid`` when ``from_seq`` names no event of the run
            (``details``: ``sourceRunId``, ``fromSeq``, ``lastSequence``).
    """
    events = store.read(run_id)
    last = events[-1]["sequence"] if events else -1
    if from_seq > last:
        raise ApiError(422, "fork_point_invalid",
                       f"fromSeq {from_seq} names no event of run {run_id}: its log is "
                       f"0..{last}",
                       {"sourceRunId": run_id, "fromSeq": from_seq, "lastSequence": last})
    opened = max((e["sequence"] for e in events if e["type"] == "conversation.opened"),
                 default=0)
    return max(from_seq - 1, opened)


async def forked(store: EventStore, run_id: str, from_seq: int, mode: str,
                 by: str | None) -> str:
    """Fork ``run_id`` at ``from_seq`` (exclusive) in ``mode``; return the new run's id."""
    cut = await store.call(fork_point, store, run_id, from_seq)
    try:
        new_id: str = await store.call(functools.partial(
            fork, store, run_id, cut, mode=mode, forked_by=by))  # type: ignore[arg-type]
    except WopError as exc:
        raise from_wop_error(exc) from None
    return new_id


def answer(new_id: str, source: str, from_seq: int, mode: str, status: str) -> dict[str, Any]:
    """The 201 body: ``{runId, sourceRunId, fromSeq, mode, status, eventsUrl}``."""
    return {"runId": new_id, "sourceRunId": source, "fromSeq": from_seq, "mode": mode,
            "status": status, "eventsUrl": f"/v1/runs/{new_id}/events"}
