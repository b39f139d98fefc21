"""``Run``: the handle UIs, notebooks and tests use on a run, here or in another process.

Split by concern: :mod:`wopdsl.run.reading` (the fold and its views), :mod:`wopdsl.run.driving`
(driving and acting), and here the public class with its sync twins, and :func:`attach`.
"""

from __future__ import annotations

import os
from typing import Any

from wopdsl._sync import run_sync
from wopdsl.compile.graph import Compiles
from wopdsl.model.mentions import parse_mentions
from wopdsl.projections.log import EventLog
from wopdsl.run.driving import RunDriver
from wopdsl.run.reading import SHOW_ENTRY_POINTS
from wopdsl.state import RunStatus
from wopdsl.store import EventStore, open_store, require_run

__all__ = ["SHOW_ENTRY_POINTS", "Compiles", "EventLog", "Run", "attach", "parse_mentions",
           "run_sync"]


class Run(RunDriver):
    """A handle on one run: status, result, transcript, events, reply, pause, cancel, wait.

    Works the same on a run executing in this process (``council.start()``) and on one
    executing in another process that shares the store (:func:`attach`): it reads events.
    """

    # -- sync twins, for scripts outside an event loop ----------------------------------------

    def reply_sync(self, text: str = "", **options: Any) -> str | None:
        """Synchronous twin of :meth:`reply`: post, then wait until the run stops again.

        Takes the same arguments as :meth:`reply`. The run is driven in this call (to its
        end, or until it waits for a person again), so the script may exit right after.
        """

        async def go() -> str | None:
            message = await self.reply(text, **options)
            await self.wait()
            return message

        return run_sync(go(), "reply_sync()", "await run.reply(...)")

    def vote_sync(self, decision: str, choice: str | int | float, **options: Any) -> str | None:
        """Synchronous twin of :meth:`vote`: vote, then wait until the run stops again."""

        async def go() -> str | None:
            message = await self.vote(decision, choice, **options)
            await self.wait()
            return message

        return run_sync(go(), "vote_sync()", "await run.vote(...)")

    def wait_sync(self) -> RunStatus:
        """Synchronous twin of :meth:`wait`."""
        return run_sync(self.wait(), "wait_sync()", "await run.wait()")

    def resume_sync(self) -> RunStatus:
        """Synchronous twin of :meth:`resume`."""
        return run_sync(self.resume(), "resume_sync()", "await run.resume()")

    def cancel_sync(self, reason: str = "cancelled by user") -> None:
        """Synchronous twin of :meth:`cancel`."""
        run_sync(self.cancel(reason), "cancel_sync()", "await run.cancel()")

    def pause_sync(self, reason: str = "paused by user", *, drain: bool = False) -> None:
        """Synchronous twin of :meth:`pause`."""
        run_sync(self.pause(reason, drain=drain), "pause_sync()", "await run.pause()")

    def unpause_sync(self) -> RunStatus:
        """Synchronous twin of :meth:`unpause`: resume the run, then wait until it stops."""

        async def go() -> RunStatus:
            await self.unpause()
            return await self.wait()

        return run_sync(go(), "unpause_sync()", "await run.unpause()")

    def close_sync(self, *, room: str | None = None, outcome: Any = None,
                   as_: str | None = None) -> RunStatus:
        """Synchronous twin of :meth:`close`: close, then wait until the run stops."""

        async def go() -> RunStatus:
            await self.close(room=room, outcome=outcome, as_=as_)
            return await self.wait()

        return run_sync(go(), "close_sync()", "await run.close(...)")

    def __repr__(self) -> str:
        return f"Run({self.run_id!r}, status={self.status!r})"


def attach(store: str | os.PathLike[str] | EventStore | None, run_id: str,
           council: Compiles | None = None) -> Run:
    """Return a handle on a stored run (executing here, elsewhere, or finished).

    Args:
        store: A path, ``"memory:"`` or a store object (``None``: the default store).
        run_id: The run.
        council: The council to drive the run with (re-binds python handlers); by default
            it is rebuilt from the log on the first write.

    Raises:
        RunNotFound: the store has no such run.
    """
    return Run(require_run(open_store(store), run_id), run_id, council=council)
