"""Private: what a recording agent (``llm``) writes while its turn runs.

A :class:`Recorder` turns an agent's records into events of the run: emitted at once (so the
state fold sees them in order) and committed together at the next turn of the event loop, not
one commit per event. Streamed text is coalesced into ``output.chunk`` events at most every
:data:`CHUNK_INTERVAL_MS` per member, so viewers see tokens arrive without a commit per token.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import TYPE_CHECKING, Any, Final

from wopdsl.agents.base import MemberAgent
from wopdsl.agents.budget import RunBudget
from wopdsl.compile.graph import CompiledMember
from wopdsl.engine._steering import Steering
from wopdsl.errors import StoreConflict, StoreError, TurnError, WopError
from wopdsl.model.turns import Turn
from wopdsl.protocol import payloads as p
from wopdsl.state import CouncilState, Inflight

if TYPE_CHECKING:
    from wopdsl.engine._journal import Journal

__all__ = ["CHUNK_INTERVAL_MS", "LiveRecords", "Recorder", "requestable"]

CHUNK_INTERVAL_MS: Final = 50
"""Streamed text is committed at most this often per member, counted from the turn's start
(and at the stream's end)."""


class LiveRecords(Steering):
    """The engine's side: recording agents' lifetime, the run budget and live commits."""

    _budget: RunBudget | None = None
    """The run's model budget and usage, while driven (recording agents only)."""
    _live: list[tuple[str, dict[str, Any], str]] | None = None
    """Events recorded by turns in flight since the last commit."""
    _live_flush: asyncio.Handle | None = None
    _live_tasks: set[asyncio.Task[bool]] = set()  # noqa: RUF012 - replaced per instance
    """Live commits on a worker thread (a blocking store), kept until they finish."""
    replay_source: str | None = None
    """For a replay-mode fork: the source run, whose tool results are used (nothing is
    called again)."""
    _started: list[MemberAgent] | None = None
    """The recording agents started for this drive (each is stopped when it ends)."""
    _unstarted: dict[str, WopError] | None = None
    """Why a recording agent could not start for this drive (an MCP server that cannot be
    started or reached), by member: its next turn fails with it."""

    @contextlib.asynccontextmanager
    async def _recording_agents(self) -> AsyncIterator[None]:
        """While driven: recording agents started, the budget built from the log.

        An agent that cannot start (its MCP server is down) does not stop the drive: a run
        that needs nothing of it goes on, and the member's turns fail with the reason
        (``TOOL_ERROR`` naming the server; ``retries`` tries again, a new start each time).
        """
        members = [m for m in self.graph.members.values()
                   if m.agent is not None and m.agent.records]
        if members:
            settings = self.graph.spec.council
            spent = self.state.usage.total
            self._budget = RunBudget(settings.max_tokens, settings.max_cost_usd,
                                     tokens=spent.total_tokens, cost=spent.cost_usd or 0.0,
                                     max_tool_calls=settings.max_tool_calls,
                                     tool_calls=self.state.tools.calls)
        started = self._started = []
        self._unstarted = {}
        try:
            for member in members:
                assert member.agent is not None
                failure = await _started(member.agent)
                if failure is None:
                    started.append(member.agent)
                else:
                    self._unstarted[member.id] = failure
            yield
        finally:
            self._started = self._unstarted = None
            for agent in started:
                await agent.stop()

    def _agent_call(self, member: CompiledMember, turn: Turn,
                    inflight: Inflight) -> Coroutine[Any, Any, object]:
        """The member's turn call; a recording agent gets its :class:`Recorder`."""
        agent = member.agent
        assert agent is not None
        if agent.records:
            if self._started is not None and agent not in self._started:
                return self._late_turn(member, agent, turn, inflight)
            return agent.take_recorded_turn(turn, Recorder(self, inflight, self._budget))
        return agent.take_turn(turn)

    async def _late_turn(self, member: CompiledMember, agent: MemberAgent, turn: Turn,
                         inflight: Inflight) -> object:
        """A turn of an agent that did not start with the drive: start it now, or fail."""
        failure = (self._unstarted or {}).pop(member.id, None)  # tried at the drive's start
        if failure is None:
            failure = await _started(agent)
            if failure is None:
                assert self._started is not None, "a turn runs within its drive"
                self._started.append(agent)
        if failure is not None:
            hint = f" ({failure.hint})" if failure.hint else ""
            server = getattr(failure, "server", None)
            raise TurnError(failure.code, f"{failure.message}{hint}",
                            {"server": server} if server else {})
        return await agent.take_recorded_turn(turn, Recorder(self, inflight, self._budget))

    def model_endpoints(self) -> dict[str, str]:
        """Profile name → the base URL the run recorded at its start.

        See :mod:`wopdsl.agents.llm.endpoint`.
        """
        from wopdsl.agents.llm.endpoint import recorded_from

        return recorded_from(self.state.metadata)

    def _start_metadata(self) -> dict[str, Any]:
        """What ``run.started`` metadata records for recording agents.

        The base URL of each model profile that has none of its own, so resume and forks
        call the same server.
        """
        spec = self.graph.spec
        used = {m.model for m in spec.members if m.engine == "llm" and m.model}
        if not used:
            return {}
        from wopdsl.agents.llm.endpoint import recorded_endpoints

        models = recorded_endpoints((name, spec.models[name]) for name in sorted(used))
        return {"models": models} if models else {}

    def _reserve_budget(self) -> None:
        """``budget.reserved`` at run start when the council sets a budget (RFC 0084 §C)."""
        settings = self.graph.spec.council
        if settings.max_tokens is not None or settings.max_cost_usd is not None or \
                settings.max_tool_calls is not None:
            self._emit("budget.reserved", p.budget_reserved(
                settings.max_tokens, settings.max_cost_usd, settings.max_tool_calls))

    def record_live(self, type_: str, payload: dict[str, Any], node_id: str) -> None:
        """Append an event of a turn in flight; committed at the loop's next turn.

        Everything recorded in one iteration of the event loop shares one commit. Should
        another process append first (a person posting), the records are re-applied on top
        of its events as long as the turns that made them are still in flight.
        """
        self._take_in()  # a post another writer made meanwhile comes first
        self._emit(type_, payload, node_id=node_id)
        if self._live is None:
            self._live = []
        self._live.append((type_, payload, node_id))
        if self._live_flush is None:
            self._live_flush = asyncio.get_running_loop().call_soon(self._commit_live)

    async def commit_live_now(self) -> bool:
        """Commit what turns in flight recorded, now; return whether it is durable.

        Never holds the event loop on a blocking store: the append runs on a worker thread,
        after the live commits already on their way (commits keep their order).
        """
        if self._live_flush is not None:
            self._live_flush.cancel()
        if not self._blocking:
            return self._commit_live()
        self._live_flush = None
        records, self._live = self._live or [], []
        if self.settled:
            return True
        return await self._commit_live_off_loop(records)

    def _commit_live(self) -> bool:
        self._live_flush = None
        records, self._live = self._live or [], []
        if self.settled:
            return True  # the batch's settlement committed them already
        if self._blocking:
            if not self._live_tasks:
                self._live_tasks = set()
            task = asyncio.ensure_future(self._commit_live_off_loop(records))
            self._live_tasks.add(task)
            task.add_done_callback(self._live_tasks.discard)
            return False  # on its way, not durable yet
        for _ in range(8):
            try:
                self._flush()
                return True
            except StoreConflict:
                # _flush re-folded the state from the log: apply the records again on top.
                nodes = {node for _type, _payload, node in records}
                if self.state.terminal or not nodes <= set(self.state.inflight):
                    return False  # the turns were taken over; the settlement sees it too
                for type_, payload, node in records:
                    self._emit(type_, payload, node_id=node)
        return False

    async def _commit_live_off_loop(self, records: list[tuple[str, dict[str, Any], str]]
                                    ) -> bool:
        """:meth:`_commit_live` for a blocking store (the append on a worker thread)."""
        for _ in range(8):
            try:
                await self._commit()
                return True
            except StoreConflict:
                nodes = {node for _type, _payload, node in records}
                if self.state.terminal or not nodes <= set(self.state.inflight):
                    return False
                for type_, payload, node in records:
                    self._emit(type_, payload, node_id=node)
            except StoreError:
                # Unreachable: the batch's settlement fails on it too, and the drive retries
                # from the log once the store answers again (see Engine.drive).
                return False
        return False


async def _started(agent: MemberAgent) -> WopError | None:
    """Start ``agent``; return why it cannot start (a store failure is raised)."""
    try:
        await agent.start()
    except WopError as exc:
        if isinstance(exc, StoreError):
            raise
        return exc
    return None


def requestable(state: CouncilState) -> frozenset[str]:
    """Members a mention may request now without breaking a turn cap.

    Those queued already (a mention shares their queued turn) and those with a turn left
    once their turns in flight are counted.
    """
    queue, inflight = state.queue, state.inflight
    return frozenset(m.id for m in state.members.values()
                     if m.id in queue or m.turns + (m.id in inflight) < m.cap)


class Recorder:
    """The :class:`~wopdsl.agents.base.TurnRecorder` of one turn in flight."""

    def __init__(self, engine: LiveRecords, inflight: Inflight,
                 budget: RunBudget | None) -> None:
        self._engine = engine
        self._inflight = inflight
        self.node_id = inflight.member
        self.attempt = inflight.attempt
        self.position = inflight.position
        self.budget = budget
        self.requestable = requestable(engine.state)
        self.endpoints = engine.model_endpoints()
        self._journal: Journal | None = None
        self._text: list[str] = []
        self._streams = 0
        """Streams of this attempt already ended. Each call streams on a channel of its own:
        ``attempt-N``, then ``attempt-N.call-1`` … for further calls (a repair, or the model
        reading tool results)."""
        # Counted from the turn's start: a model answering within the interval has its text
        # committed once, with its usage, not a first chunk alone plus the rest. On the run's
        # clock, so a deterministic run (a fixed clock) also splits its text the same way.
        self._clock = engine.clock
        self._sent = self._clock.now_ms()

    @property
    def journal(self) -> Journal:
        """The turn's tool journal (made on first use: only members with tools use one)."""
        if self._journal is None:
            from wopdsl.engine._journal import Journal  # tools only: loaded when first used

            engine = self._engine
            self._journal = Journal(engine.store, engine.run_id, self._inflight,
                                    engine.replay_source, engine.commit_live_now)
        return self._journal

    def record(self, type_: str, payload: dict[str, Any]) -> None:
        """Append one event attributed to this turn's node."""
        self._engine.record_live(type_, payload, self.node_id)

    def chunk(self, text: str, *, last: bool = False) -> None:
        """Buffer streamed text; emit an ``output.chunk`` when due (or at the end)."""
        if text:
            self._text.append(text)
        now = self._clock.now_ms()
        if not (last or now - self._sent >= CHUNK_INTERVAL_MS) or not (self._text or last):
            return
        self._emit_chunk(now, last=last)

    def _emit_chunk(self, now: int, *, last: bool) -> None:
        self._sent = now
        channel = f"attempt-{self.attempt}"
        if self._streams:
            channel += f".call-{self._streams}"
        payload: dict[str, Any] = {"nodeId": self.node_id, "chunk": "".join(self._text),
                                   "channel": channel, "isLast": last}  # v2 requires isLast.
        if last:
            self._streams += 1
        self._text = []
        self.record("output.chunk", payload)

    def retried(self, delay_ms: int, error: dict[str, Any]) -> None:
        """``node.retried`` then the turn's ``node.started`` as the next attempt (DESIGN §6).

        Text the failed attempt streamed and not yet committed goes out first, on its channel.
        """
        if self._text:
            self._emit_chunk(self._clock.now_ms(), last=False)
        self.attempt += 1
        self._streams = 0
        inflight = self._inflight
        self.record("node.retried", {"nodeId": self.node_id, "attempt": self.attempt,
                                     "delayMs": delay_ms, "lastError": error})
        self.record("node.started", p.member_started(
            self.node_id, attempt=self.attempt, turn=inflight.turn, position=inflight.position,
            triggers=inflight.triggers))
