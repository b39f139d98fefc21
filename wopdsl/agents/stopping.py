"""Stopping a turn without leaving a tool call in doubt.

A turn runs in a task; this process stops it by cancelling that task — an immediate pause, a
cancel, a detach, a council or turn timeout. Any way of stopping a turn goes through the same
two halves:

- the stopper calls :func:`stop_turns`: it cancels the turns' tasks and waits until each has
  ended, so nothing of theirs is still running (or still to be recorded) when it goes on;
- a turn wraps each tool call, from its ``agent.toolCalled`` to its recorded
  ``agent.toolReturned``, in :func:`finish_then_stop`: a stop that arrives meanwhile lets the
  call end (within its own ``timeout_ms``) and its result be recorded, then stops the turn.

Everything else in a turn stops at once: a model stream is aborted, partial output dropped.
So a call this process made and saw end is never in doubt; only a crash (``kill -9``, a
lost machine) can leave one in doubt, and DESIGN.md §20 says what resume does with it.

A task cancelled directly rather than through its turn (the event loop shutting down, which
cancels every task) is cut off at once: that is a crash as far as the call is concerned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

__all__ = ["finish_then_stop", "outlast", "stop_once", "stop_turns"]

T = TypeVar("T")


async def outlast(future: asyncio.Future[Any]) -> bool:
    """Wait until ``future`` is done, even if the calling task is cancelled meanwhile.

    ``future`` itself is not cancelled by that, and what it returned or raised is left in it.

    Returns:
        Whether the caller was cancelled while it waited: it must then stop (raise
        :class:`asyncio.CancelledError`) once it has done what it must.
    """
    stopped = False
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError:
            stopped = True  # keep waiting for the future
    return stopped


async def stop_turns(turns: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel the tasks running ``turns`` and wait until every one has ended.

    A turn in the middle of a tool call ends once the call has ended and been recorded (see
    :func:`finish_then_stop`), which its ``timeout_ms`` bounds. Cancelling the caller meanwhile
    does not cut the wait short; the cancellation is raised once the turns have ended.
    """
    pending = [turn for turn in turns if not turn.done()]
    for turn in pending:
        stop_once(turn)
    if pending and await outlast(asyncio.gather(*pending, return_exceptions=True)):
        raise asyncio.CancelledError


def stop_once(turn: asyncio.Future[Any]) -> None:
    """Cancel ``turn`` unless a stop is already on its way to it (a steer, then a pause).

    A second cancellation would cut short what the first one waits for — a task that
    ``asyncio.wait_for`` runs the turn in, still finishing its tool call — and end the turn
    with the call in flight.
    """
    if isinstance(turn, asyncio.Task) and turn.cancelling():
        return
    turn.cancel()


async def finish_then_stop(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` (a tool call and its records) to its end, even if the turn is stopped.

    A stop of the calling task that arrives while ``work`` runs waits for it to end, then
    stops the turn: ``CancelledError``, whatever ``work`` returned or raised (it has recorded
    that by then). ``work`` runs in a task of its own, cancelled only directly (the event
    loop shutting down).

    Raises:
        asyncio.CancelledError: the turn was stopped.
    """
    task = asyncio.ensure_future(work)
    if await outlast(task):
        if not task.cancelled():
            task.exception()  # seen: recorded already, the stop wins
        raise asyncio.CancelledError
    return task.result()
