"""The runs a host drives: one task per run, woken by what people do, on time for deadlines."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from wopdsl import Run, RunBusy, StoreUnavailable, WopError
from wopdsl.agents.python import host_loop
from wopdsl.state import CouncilState

__all__ = ["STORE_RETRY_S", "TERMINAL_STATUSES", "Supervisor", "reason_of"]

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
STORE_RETRY_S = 5.0
"""Seconds between attempts to take up a run whose store stayed unreachable."""

_log = logging.getLogger("wopdsl.server")


class Supervisor:
    """Drives the runs a host executes, each in a task of its own.

    A waiting run's task sleeps until :meth:`wake` (a post, an approval, a cancel) or the
    council's ``timeout_ms`` passes. ``settled`` is called with a run's id once its task
    ends with the run over.
    """

    def __init__(self, settled: Callable[[str], None]) -> None:
        self._settled = settled
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._wakes: dict[str, asyncio.Event] = {}
        self._pausing: set[asyncio.Task[None]] = set()
        """Draining pauses waiting for their runs' turns to finish."""

    def supervise(self, run: Run, *, resume: bool) -> None:
        """Drive ``run`` (``resume``: take it up from its log) unless it is driven already."""
        host_loop()
        if run.run_id in self._tasks:
            return
        self._tasks[run.run_id] = asyncio.ensure_future(self._watch(run, resume))

    def holds(self, run_id: str) -> bool:
        """Whether a task of this supervisor follows the run."""
        return run_id in self._tasks

    def drives(self, run_id: str) -> bool:
        """Whether the run's task is still going."""
        task = self._tasks.get(run_id)
        return task is not None and not task.done()

    def wake(self, run_id: str) -> None:
        """Let a waiting run's task look at the run again."""
        wake = self._wakes.get(run_id)
        if wake is not None:
            wake.set()

    def drain(self, run: Run, reason: str) -> None:
        """Pause ``run`` once its running turns finish, in the background."""
        pausing = asyncio.ensure_future(run.pause(reason, drain=True))
        self._pausing.add(pausing)
        pausing.add_done_callback(self._paused)

    async def stop(self) -> None:
        """Stop every task (the runs stay resumable)."""
        tasks = [*self._tasks.values(), *self._pausing]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _paused(self, task: asyncio.Task[None]) -> None:
        self._pausing.discard(task)
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            _log.info("a draining pause did not land: %s", reason_of(failure))

    async def _watch(self, run: Run, resume: bool) -> None:
        """Follow a run this host drives; fire a waiting run's deadline on time.

        A run whose store stayed unreachable longer than the store's ``reconnect_s`` is
        taken up again every :data:`STORE_RETRY_S` seconds until the store answers (the
        run then goes on, ``run.resumed``) or the host stops; meanwhile its reads answer
        503 ``STORE_ERROR``.
        """
        run_id = run.run_id
        try:
            while True:
                try:
                    await self._follow(run, resume)
                    break
                except StoreUnavailable as exc:
                    _log.warning("run %s waits for its store: %s", run_id, reason_of(exc))
                    await asyncio.sleep(STORE_RETRY_S)
                    resume = True
        except asyncio.CancelledError:
            raise
        except RunBusy:
            _log.info("run %s is executing in another process; not driven here", run_id)
        except WopError as exc:
            _log.warning("run %s stopped: %s", run_id, reason_of(exc))
        except Exception as exc:  # A bug must not take the host down; the log says what.
            _log.error("run %s: unexpected %s", run_id, type(exc).__name__)
        finally:
            self._tasks.pop(run_id, None)
            self._wakes.pop(run_id, None)
        if await _settled(run):  # Not when cancelled: the host stops.
            self._settled(run_id)

    async def _follow(self, run: Run, resume: bool) -> None:
        """Drive (or wait for) the run until it ends or another process drives it."""
        status = await (run.resume() if resume else run.wait())
        while status not in TERMINAL_STATUSES:
            if status != "waiting-input":
                return  # Another process drives it now; its driver keeps its deadline.
            wake = self._wakes[run.run_id] = asyncio.Event()
            delay = _deadline_in(await run.astate())
            try:
                await asyncio.wait_for(wake.wait(), delay)
                status = await run.wait()
            except TimeoutError:
                # The council's timeout_ms passed while the run waited: applying it now
                # (not when someone next touches the run) is this host's job.
                status = await run.resume()


def _deadline_in(state: CouncilState) -> float | None:
    """Seconds until the run's council ``timeout_ms`` passes (``None`` without one)."""
    timeout = (state.council.get("council") or {}).get("timeout_ms")
    started = state.started_ms
    if not isinstance(timeout, int) or not started:
        return None
    return max(0.0, timeout / 1000 - state.active_ms(int(time.time() * 1000)) / 1000)


async def _settled(run: Run) -> bool:
    """Whether the run has ended (False when its store cannot say)."""
    try:
        return await run.astatus() in TERMINAL_STATUSES
    except WopError:
        return False


def reason_of(exc: BaseException) -> str:
    """``CODE: message`` of a failure, for the host's log."""
    message = getattr(exc, "message", None)
    return f"{getattr(exc, 'code', type(exc).__name__)}: {message or type(exc).__name__}"
