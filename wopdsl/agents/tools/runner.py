"""One tool call of a turn, exactly once: checked, approved, recorded, made, kept, recorded.

:meth:`CallRunner.settle` takes a call the model asked for (or one an earlier attempt of the
turn recorded) to the output the model reads:

1. a kept result is used as it is (the call is never made again);
2. an unknown tool or invalid arguments are answered as errors without calling anything;
3. in a replay-mode fork the source run's kept result is used: nothing is called;
4. a call that was in flight when an earlier attempt stopped (``agent.toolCalled`` without
   a result) is made again only when its tool is ``idempotent``; otherwise its approver is
   asked, and without one the turn fails with ``TOOL_IN_DOUBT``;
5. a tool with ``approval = MEMBER`` waits for that person's decision (the turn suspends; a
   rejection is the tool's result);
6. otherwise ``agent.toolCalled`` is committed, the tool called within its timeout, the
   result kept privately and ``agent.toolReturned`` committed, before the model goes on.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from wopdsl.agents.base import TurnRecorder
from wopdsl.agents.stopping import finish_then_stop
from wopdsl.agents.tools import events as ev
from wopdsl.agents.tools.base import Policy, ToolFault, ToolOutput, ToolSetupError
from wopdsl.agents.tools.journal import Decision, RecordedCall, result_record
from wopdsl.agents.tools.mcp import McpConnection, McpTool, ServerDied
from wopdsl.agents.tools.toolset import Toolset
from wopdsl.errors import TurnError, TurnSuspended

__all__ = ["CallRunner"]


class CallRunner:
    """Makes a turn's tool calls (see the module docstring).

    Args:
        member: The member id.
        toolset: Its tools.
        recorder: The turn's recorder (events, budget, journal).
        full: Whether events carry arguments and results (``observability = "full"``).
    """

    def __init__(self, member: str, toolset: Toolset, recorder: TurnRecorder, *,
                 full: bool) -> None:
        self.member = member
        self.agent = f"host:{member}"
        self.toolset = toolset
        self.recorder = recorder
        self.journal = recorder.journal
        self.full = full
        self.errors = 0
        """Calls of this turn whose result was an error."""
        self._sessions: dict[str, tuple[str, int]] = {}
        """Open ``tool.session`` per MCP server: its id and the server's generation."""

    # -- the outcome of one call ---------------------------------------------------------

    async def settle(self, call: RecordedCall) -> ToolOutput:
        """The output the model reads for ``call``, making the call at most once.

        Raises:
            TurnSuspended: the call waits for an approval.
            TurnError: the turn cannot go on (``TOOL_IN_DOUBT``, ``TOOL_ERROR``,
                ``BUDGET_EXHAUSTED``, ``STORE_CONFLICT``).
        """
        if call.output is not None:  # kept: the call was made (or answered) before
            if not call.returned:
                self._returned(call, call.output, call.status, call.duration_ms)
                await self.journal.commit()
            self._count(call.output, call.status)
            return call.output
        tool = self.toolset.tools.get(call.name)
        if tool is None:
            names = ", ".join(sorted(self.toolset.tools)) or "none"
            return await self._answer(call, "UNKNOWN_TOOL", f"there is no tool named "
                                      f"{call.name[:64]!r}; the tools are: {names}")
        try:
            arguments = tool.parse(call.arguments)
        except ToolFault as fault:
            return await self._answer(call, fault.code, fault.message)
        if self.journal.replaying:
            return await self._replayed(call)
        policy = self.toolset.policy(call.name)
        if call.started and not policy.idempotent:
            if policy.approval is None:
                raise TurnError("TOOL_IN_DOUBT", f"{self.member}'s call {call.call_id} to "
                                f"{call.name} was in flight when the run stopped; the tool is "
                                "not idempotent and has no approver, so it is not made again",
                                {"callId": call.call_id, "tool": call.name})
            decision = await self._decision(call, policy.approval, repeat=True)
            if not decision.granted:
                return await self._rejected(call, decision)
        elif not call.started and policy.approval is not None:
            decision = await self._decision(call, policy.approval, repeat=False)
            if not decision.granted:
                return await self._rejected(call, decision)
        return await self._make(call, tool, arguments, policy)

    async def _decision(self, call: RecordedCall, approver: str, *, repeat: bool) -> Decision:
        decision = call.repeat_decision if repeat else call.decision
        if decision is not None:
            return decision
        asked = call.repeat_requested if repeat else call.requested
        payloads = ev.approval_payloads(self.member, call, approver, full=self.full,
                                        repeat=repeat)
        for type_, payload in payloads if not asked else payloads[-1:]:
            self.recorder.record(type_, payload)
        await self.journal.commit()
        raise TurnSuspended(f"{self.member}'s call to {call.name} waits for {approver}")

    # -- answers without a call ------------------------------------------------------------

    async def _answer(self, call: RecordedCall, code: str, message: str, *,
                status: str = "error") -> ToolOutput:
        """Record a call that is answered without calling anything."""
        output = ToolOutput(f"error ({code}): {message}", error=True)
        self._called(call)
        await self._keep(call, output, status, 0)
        self._returned(call, output, status, 0, code=code)
        await self.journal.commit()
        self._count(output, status)
        return output

    async def _rejected(self, call: RecordedCall, decision: Decision) -> ToolOutput:
        reason = f": {decision.reason}" if decision.reason else ""
        who = decision.principal or "the approver"
        return await self._answer(call, "REJECTED",
                                  f"not called: {who} rejected this call{reason}",
                                  status="forbidden")

    async def _replayed(self, call: RecordedCall) -> ToolOutput:
        source = await self.journal.source(call.call_id)
        if source is None or source.output is None or source.name != call.name or \
                ev.args_hash(source.arguments) != ev.args_hash(call.arguments):
            return await self._answer(call, "NOT_REPLAYED", "this is a replay, and the "
                                      "replayed run made no such call, so nothing was called")
        self._called(call)
        await self._keep(call, source.output, source.status, source.duration_ms)
        self._returned(call, source.output, source.status, source.duration_ms)
        await self.journal.commit()
        self._count(source.output, source.status)
        return source.output

    # -- the call itself -------------------------------------------------------------------

    async def _make(self, call: RecordedCall, tool: Any, arguments: dict[str, Any],
                    policy: Policy) -> ToolOutput:
        if not call.started:
            self._reserve()
        connection = tool.connection if isinstance(tool, McpTool) else None
        if connection is not None:
            await self._session(connection)
        # From its agent.toolCalled to its agent.toolReturned a call is not cut off: a stop
        # of the turn (a pause, a cancel, a detach, a timeout) lets it end, within its
        # timeout_ms, and be recorded first. This process never leaves a call in doubt.
        return await finish_then_stop(self._call(call, tool, arguments, connection, policy))

    async def _call(self, call: RecordedCall, tool: Any, arguments: dict[str, Any],
                    connection: McpConnection | None, policy: Policy) -> ToolOutput:
        """Record the call, make it, keep and record its result (see :meth:`_make`)."""
        timeout_s, max_bytes = policy.timeout_s, policy.max_result_bytes
        self._called(call, repeated=call.started)
        await self.journal.commit()  # durable before the effect: a crash now leaves it in doubt
        started = time.monotonic()
        failure: str | None = None  # the kind of error the model reads (not a wopdsl code)
        output = ToolOutput("error (TOOL_ERROR): not called", error=True)
        for attempt in (1, 2):
            try:
                output = await asyncio.wait_for(tool.call(arguments), timeout_s)
                assert isinstance(output, ToolOutput)
                break
            except TimeoutError:
                failure = "TIMEOUT"
                output = ToolOutput(f"error (TIMEOUT): no answer within {timeout_s:g} s "
                                    "(timeout_ms); the call may still have had its effect",
                                    error=True)
                break
            except ToolFault as fault:
                failure = fault.code
                output = ToolOutput(f"error ({fault.code}): {fault.message}", error=True)
                break
            except ServerDied as died:
                self._close_session(connection, "failed")
                if not policy.idempotent or attempt == 2:
                    raise TurnError("TOOL_ERROR", f"{died}; call {call.call_id} to {call.name} "
                                    "is not made again (its tool is not idempotent)"
                                    if not policy.idempotent else str(died),
                                    {"callId": call.call_id}) from None
                if connection is not None:
                    await self._session(connection)
            except ToolSetupError as exc:
                self._close_session(connection, "failed")
                raise TurnError("TOOL_ERROR", exc.message, {"callId": call.call_id}) from None
        duration = round((time.monotonic() - started) * 1000)
        size = len(output.text.encode("utf-8", "replace"))
        if size > max_bytes:
            failure = "RESULT_TOO_LARGE"
            output = ToolOutput(f"error (RESULT_TOO_LARGE): the result has {size} bytes, more "
                                f"than max_result_bytes ({max_bytes}); ask for less", error=True)
        status = "error" if output.error else "ok"
        await self._keep(call, output, status, duration)
        self._returned(call, output, status, duration, code=failure)
        await self.journal.commit()  # durable before the model reads it
        self._count(output, status)
        return output

    def _reserve(self) -> None:
        budget = self.recorder.budget
        if budget is None:
            return
        breach = budget.reserve_tool_call()
        if breach is not None:
            self.recorder.record("budget.exhausted", {"dimension": "toolCalls",
                                                      "consumed": breach.consumed,
                                                      "limit": breach.limit})
            self.recorder.record("cap.breached", {
                "kind": "budget-tool-calls", "limit": int(breach.limit),
                "observed": int(breach.consumed) + 1, "nodeId": self.member})
            raise TurnError("BUDGET_EXHAUSTED", f"{self.member}'s tool call would be call "
                            f"{int(breach.consumed) + 1} of the run, over max_tool_calls = "
                            f"{int(breach.limit)}", {"dimension": "toolCalls"})
        consumed = budget.tool_calls_event()
        if consumed is not None:
            self.recorder.record("budget.consumed", consumed)

    # -- records ---------------------------------------------------------------------------

    def _called(self, call: RecordedCall, *, repeated: bool = False) -> None:
        tool = self.toolset.tools.get(call.name)
        transport = tool.transport if tool is not None else "native"
        self.recorder.record("agent.toolCalled", ev.tool_called(
            self.agent, call, transport, full=self.full, repeated=repeated))
        call.started = True

    async def _keep(self, call: RecordedCall, output: ToolOutput, status: str, ms: int) -> None:
        await self.journal.save({f"{call.call_id}#result": result_record(output, status, ms)})
        call.output, call.status, call.duration_ms = output, status, ms

    def _returned(self, call: RecordedCall, output: ToolOutput, status: str, ms: int, *,
                  code: str | None = None) -> None:
        self.recorder.record("agent.toolReturned", ev.tool_returned(
            self.agent, call, output, status, ms, full=self.full, code=code))
        call.returned = True

    def _count(self, output: ToolOutput, status: str) -> None:
        if output.error or status != "ok":
            self.errors += 1

    # -- MCP sessions (tool.session.opened / closed around a turn's calls) -----------------

    async def _session(self, connection: McpConnection) -> None:
        try:
            await connection.ensure()
        except ToolSetupError as exc:
            raise TurnError("TOOL_ERROR", exc.message, {"server": connection.name}) from None
        current = self._sessions.get(connection.name)
        if current is not None and current[1] == connection.generation:
            return
        self._close_session(connection, "failed")
        session = (f"session/{self.member}/{self.journal.position}/{self.recorder.attempt}/"
                   f"{connection.name}/{connection.generation}")
        self._sessions[connection.name] = (session, connection.generation)
        self.recorder.record("tool.session.opened", {"sessionId": session,
                                                     "toolId": f"mcp:{connection.name}"})

    def _close_session(self, connection: McpConnection | None, outcome: str) -> None:
        if connection is None:
            return
        current = self._sessions.pop(connection.name, None)
        if current is not None:
            self.recorder.record("tool.session.closed", {
                "sessionId": current[0], "toolId": f"mcp:{connection.name}",
                "outcome": outcome})

    def close(self, outcome: str) -> None:
        """End the turn's MCP sessions (``completed``, ``failed`` or ``cancelled``)."""
        for name in list(self._sessions):
            self._close_session(self.toolset.connections[name], outcome)
