"""The ``python`` member engine: a callable ``(Turn) -> Reply``, sync or async."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from wopdsl.agents.base import MemberAgent
from wopdsl.model.turns import Turn

__all__ = ["Handler", "PythonAgent"]

Handler = Callable[[Turn], Any] | Callable[[Turn], Awaitable[Any]]
"""A member handler: returns a ``Reply``, a JSON result dict or a summary string."""


class PythonAgent(MemberAgent):
    """Runs a bound handler; sync handlers run in a worker thread, off the event loop."""

    kind: ClassVar[str] = "python"

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self._is_async = _is_async_callable(handler)

    async def take_turn(self, turn: Turn) -> object:
        """Call the handler with the turn input."""
        if self._is_async:
            result = await self.handler(turn)
        else:
            # Sync handlers may block (I/O, CPU); a thread keeps the loop and other turns moving.
            result = await asyncio.to_thread(self.handler, turn)
        # A sync wrapper (``lambda turn: work(turn)``) may hand back a coroutine: await it.
        while inspect.isawaitable(result):
            result = await result
        return result


def _is_async_callable(obj: object) -> bool:
    while isinstance(obj, functools.partial):
        obj = obj.func
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(
        getattr(obj, "__call__", None)  # noqa: B004 - callable objects with async __call__.
    )
