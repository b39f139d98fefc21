"""Private: run a coroutine to its end from synchronous code (the ``*_sync`` twins)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

_T = TypeVar("_T")


def run_sync(work: Coroutine[Any, Any, _T], name: str, instead: str) -> _T:
    """Run ``work`` to its end on a new event loop; refuse inside a running loop.

    Raises:
        RuntimeError: called inside a running event loop (a notebook cell, an async app):
            the message names the ``await`` form to use instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    work.close()
    raise RuntimeError(
        f"{name} can't be called inside a running event loop (Jupyter?); use `{instead}`"
    )
