"""The host's runtime: the councils it serves and the runs it executes, outside any HTTP.

A :class:`Host` starts runs of its councils, holds a :class:`~wopdsl.Run` handle per run it
touches, supervises the runs it drives (a waiting run's council ``timeout_ms`` fires on
time), and on start resumes the unfinished runs of its councils that it can claim. Runs
another process executes are never driven here: their claim (``EventStore.claim``) refuses.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from wopdsl import (
    Council,
    CouncilSpec,
    EventStore,
    Run,
    RunStateConflict,
    WopError,
    attach,
)
from wopdsl.agents.python import host_loop
from wopdsl.server.config import Limits
from wopdsl.server.errors import ApiError, from_wop_error
from wopdsl.server.io import run_not_found, want_run_id
from wopdsl.server.supervision import TERMINAL_STATUSES, Supervisor, reason_of
from wopdsl.state import CouncilState
from wopdsl.store import Answer

__all__ = ["TERMINAL_STATUSES", "Host"]

_log = logging.getLogger("wopdsl.server")


class Host:
    """Runs councils for the HTTP layer (usable without it, e.g. in tests).

    Args:
        store: The event store every run lives in.
        councils: The councils served, by id (or an iterable of councils).
        limits: The host's limits.
    """

    def __init__(self, store: EventStore, councils: Mapping[str, Council] | Iterable[Council],
                 limits: Limits | None = None) -> None:
        self.store = store
        self.limits = limits or Limits()
        if isinstance(councils, Mapping):
            self.councils = dict(councils)
        else:
            self.councils = {}
            for council in councils:
                if council.id in self.councils:
                    raise ValueError(f"two councils have the id {council.id!r}")
                self.councils[council.id] = council
        self.fixtures: frozenset[str] = frozenset()
        """Served councils that are OpenWOP conformance fixtures (``wop serve --conformance``)."""
        self._runs: dict[str, Run] = {}
        self._supervisor = Supervisor(self._forget)
        self._creating = 0
        self._states: dict[str, CouncilState] = {}
        """Runs' states read for requests (a blocking store only; see :meth:`state_of`)."""
        self._reading: dict[str, asyncio.Lock] = {}

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> list[str]:
        """Resume the unfinished runs of the served councils that this host can claim.

        Returns:
            The ids of the runs taken up.
        """
        host_loop()  # Sync handlers never run on the loop that answers every request.
        taken: list[str] = []
        for info in await self.store.call(self.store.runs):
            if info.last_type in ("run.completed", "run.failed", "run.cancelled") or \
                    info.workflow_id not in self.councils:
                continue
            try:
                run = await self.open(info.run_id)
            except (WopError, ApiError) as exc:
                _log.warning("run %s not resumed: %s", info.run_id, reason_of(exc))
                continue
            self._supervisor.supervise(run, resume=True)
            taken.append(info.run_id)
        return taken

    async def stop(self) -> None:
        """Stop driving: every run is left resumable (a restarted host takes them up)."""
        await self._supervisor.stop()
        for run in list(self._runs.values()):
            with contextlib.suppress(Exception):
                await run.detach()

    # -- runs ------------------------------------------------------------------------------

    async def active(self) -> int:
        """Runs this host executes or holds waiting (the ``max_runs`` cap counts these).

        A run this host supervises counts without a read; the others are read off the loop.
        """
        for run_id, run in list(self._runs.items()):
            if not self._supervisor.drives(run_id) and \
                    await run.astatus() in TERMINAL_STATUSES:
                self._forget(run_id)
        return len(self._runs) + self._creating

    def council(self, workflow_id: str) -> Council:
        """Return the served council ``workflow_id``.

        Raises:
            ApiError: 404 ``workflow_not_found``.
        """
        council: Council | None = self.councils.get(workflow_id)
        if council is None:
            raise ApiError(404, "workflow_not_found", f"no council with id {workflow_id!r} is "
                           "served here", {"workflows": sorted(self.councils)})
        return council

    async def state_of(self, run_id: str) -> CouncilState:
        """The run's folded state, caught up with the log, for a reader (treat as read-only).

        A blocking store (PostgreSQL) is read on a worker thread, into a state this host
        keeps per run and folds on the loop: no request waits on the store while holding
        the loop, and no state is folded by two threads.

        Raises:
            ApiError: 404 ``run_not_found``.
        """
        if not self.store.blocking:
            return (await self.open(run_id)).state
        want_run_id(run_id)
        lock = self._reading.setdefault(run_id, asyncio.Lock())
        async with lock:
            state = self._states.get(run_id) or CouncilState()
            events = await self.store.call(self.store.read, run_id, state.last_sequence)
            state.apply_all(events)
            if state.last_sequence < 0:
                self._reading.pop(run_id, None)
                raise run_not_found(run_id)
            self._states[run_id] = state
            while len(self._states) > self.limits.max_runs:
                oldest = next(iter(self._states))
                del self._states[oldest]
                self._reading.pop(oldest, None)
            return state

    async def open(self, run_id: str) -> Run:
        """Return the handle on ``run_id`` (python handlers bound when its council is served).

        A blocking store is read on a worker thread.

        Raises:
            ApiError: 404 ``run_not_found``.
        """
        run = self._runs.get(run_id)
        if run is not None:
            return run
        handle, status = await self.store.call(self._load, want_run_id(run_id))
        run = self._runs.get(run_id)  # Opened by another request meanwhile.
        if run is not None:
            return run
        if status not in TERMINAL_STATUSES:
            self._runs[run_id] = handle
        return handle

    def _load(self, run_id: str) -> tuple[Run, str]:
        """A new handle on ``run_id`` and its status (reads the store: no loop needed)."""
        if not self.store.exists(run_id):
            raise run_not_found(run_id)
        handle = attach(self.store, run_id)
        state = handle.state
        served = self.councils.get(state.workflow_id or "")
        if served is not None and state.council:
            spec = CouncilSpec.model_validate(state.council)
            council = served  # Its compiled graph: tools, and the agents as configured.
            if spec.digest() != served.spec.digest():  # The run's own declaration.
                council = Council.from_spec(spec, source=served.source)
                council.handlers, council.tools = dict(served.handlers), dict(served.tools)
            handle = council.open(run_id, self.store)
        return handle, handle.status

    async def create(self, workflow_id: str, *, task: str | None = None,
                     metadata: dict[str, Any] | None = None,
                     run_id: str | None = None, principal: str | None = None) -> Run:
        """Start a run of a served council and return once its opening events are stored.

        ``principal`` (the caller, on a host with tokens) owns the run: see
        :mod:`wopdsl.server.access`.

        Raises:
            ApiError: 404 unknown council, 429 too many runs, 422 a council this host
                refuses (e.g. a room larger than ``max_participants``).
        """
        council = self.council(workflow_id)
        host_loop()
        if run_id is not None and await self.store.call(self.store.exists, run_id):
            return await self.open(run_id)
        if await self.active() >= self.limits.max_runs:
            raise ApiError(429, "too_many_runs",
                           f"this host already holds {self.limits.max_runs} unfinished runs "
                           "(its limit)", {"limit": "maxRuns", "value": self.limits.max_runs},
                           headers={"Retry-After": "5"})
        if task is not None and task != council.settings.task:
            derived = Council.from_spec(council.spec.model_copy(update={
                "council": council.settings.model_copy(update={"task": task})}),
                source=council.source)
            derived.handlers = dict(council.handlers)
            council = derived
        self._creating += 1
        try:
            run = await council.astart(self.store, run_id,
                                       max_participants=self.limits.max_participants,
                                       metadata=metadata, principal=principal)
            await _opened(run)
        except WopError as exc:
            raise from_wop_error(exc, refused_turn=True) from None
        finally:
            self._creating -= 1
        self._runs[run.run_id] = run
        self._supervisor.supervise(run, resume=False)
        return run

    async def adopt(self, run_id: str) -> Run:
        """Open a run created here by other means (a fork) and drive it."""
        run = await self.open(run_id)
        self._supervisor.supervise(run, resume=True)
        return run

    async def reply(self, run: Run, *, room: str, member: str, resume: dict[str, Any],
                    answer: Callable[[str | None, str], Answer] | None = None) -> str | None:
        """Submit a turn (RFC 0005 §E payload) as ``member`` in ``room``; wake the supervisor.

        ``answer`` builds an idempotent request's answer, kept with the turn (``Run.reply``).

        Raises:
            ApiError: 422 when the turn is refused (nothing appended), 409 when another
                driver took the run meanwhile.
        """
        try:
            message = await run.reply(room=room, as_=member, resume=resume, answer=answer)
        except WopError as exc:
            raise from_wop_error(exc, refused_turn=True) from None
        await self._woken(run)
        return message

    async def approve(self, run: Run, *, call: str, member: str, grant: bool,
                      reason: str, principal: str | None = None) -> str:
        """Decide a tool call waiting for ``member``'s approval; wake the supervisor.

        ``principal``: the caller who decided (recorded as ``decidedBy``; ``None``: the
        approver, as a local decision is recorded).

        Raises:
            ApiError: 422 when the decision is refused (nothing appended).
        """
        try:
            decided = await run.approve(call, as_=member, reject=not grant, reason=reason,
                                        principal=principal)
        except WopError as exc:
            raise from_wop_error(exc, refused_turn=True) from None
        await self._woken(run)
        return decided

    async def _woken(self, run: Run) -> None:
        if not self._supervisor.holds(run.run_id) and \
                await run.astatus() not in TERMINAL_STATUSES:
            self._runs[run.run_id] = run
            self._supervisor.supervise(run, resume=False)
        self._supervisor.wake(run.run_id)

    async def cancel(self, run: Run, reason: str) -> None:
        """Cancel ``run`` (``run.cancelled``); nothing happens to a run that already ended."""
        try:
            await run.cancel(reason)
        except WopError as exc:
            raise from_wop_error(exc) from None
        self._supervisor.wake(run.run_id)

    async def pause(self, run: Run, reason: str, *, drain: bool) -> str:
        """Pause ``run`` (``run.paused``); return its status now.

        ``drain``: the running turns finish first, in the background (the request does not
        wait for them: the answer says ``running`` until ``run.paused`` lands).

        Raises:
            ApiError: 409 ``run_state_conflict`` (not running) or ``run_terminal``.
        """
        try:
            if not drain:
                # Turns stop at once, but a tool call in flight ends and is recorded first.
                _log.info("run %s: pausing once its tool calls in flight have ended", run.run_id)
                await run.pause(reason)
                return await run.astatus()
            status = await run.astatus()  # Refused now, not in the background.
            if status != "running":
                raise RunStateConflict(run.run_id, status, "paused")
        except WopError as exc:
            raise from_wop_error(exc) from None
        self._supervisor.drain(run, reason)
        return status

    async def unpause(self, run: Run) -> str:
        """Resume a paused ``run`` (``run.resumed {reason: "unpaused"}``) and drive it here.

        Raises:
            ApiError: 409 ``run_state_conflict`` (not paused) or ``run_terminal``.
        """
        try:
            status = await run.unpause()
        except WopError as exc:
            raise from_wop_error(exc) from None
        await self._woken(run)
        return status

    def _forget(self, run_id: str) -> None:
        """Let go of the handle on a run this host no longer drives."""
        if not self._supervisor.drives(run_id):
            self._runs.pop(run_id, None)


async def _opened(run: Run) -> None:
    """Wait until the run's opening events are stored (or its start failed)."""
    first = asyncio.ensure_future(_first_event(run))
    stopped = asyncio.ensure_future(run.wait())
    try:
        done, _ = await asyncio.wait({first, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if stopped in done:
            stopped.result()  # Raises what the start raised.
    finally:
        first.cancel()
        if not stopped.done():
            stopped.cancel()
        await asyncio.gather(first, return_exceptions=True)


async def _first_event(run: Run) -> None:
    async for _event in run.store.subscribe(run.run_id, -1):
        return
