"""The ``a2a`` member engine: a remote A2A agent takes the member's turns (DESIGN.md §25).

A turn is one message to the agent, exactly once, through the turn's journal (the one tools
use, :mod:`wopdsl.agents.tools.journal`), call ``call/{member}/{position}/{n}``:

1. the message is kept privately and ``agent.toolCalled`` (``transport: "http"``, marked
   ``a2a: {messageId, contextId}``) is committed *before* it is sent;
2. the task id the agent gives it is kept as soon as the agent names it, before its answer is
   awaited;
3. the answer (the task without its history, redacted of the member's header values) is kept
   and ``agent.toolReturned`` committed (``a2a: {taskId, state}``).

A turn that runs again (a retry, a resume after kill -9) reads those records: a kept answer
is used as it is; a sent message is followed by its task id (``GetTask``), or found among the
agent's tasks of the member's context (``ListTasks``) — never sent twice; a message the agent
certainly never got (the connection was refused) is sent again. When neither the task nor a
refusal is known, the turn fails with ``A2A_IN_DOUBT``. A replay-mode fork calls nothing: it
uses the source run's kept answer.

An agent that asks for input (``input-required``) suspends the turn (:class:`TurnAsks`; the
engine puts the question to the room, :mod:`wopdsl.state.asks`). Once a post answers it, the
turn runs again and sends the answer to the same task as its next call ``n + 1``, through the
same journal: its task id is known before it leaves, and an answer recorded as sent but
missing from the waiting task's history never reached it, so it is sent then.
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from wopdsl.agents.a2a.remote import Remote, RemoteFailure
from wopdsl.agents.a2a.wire import (
    ANSWERED,
    WAITING,
    answer_of,
    outgoing_parts,
    reply_parts,
    reply_room,
    result_of,
)
from wopdsl.agents.base import MemberAgent, TurnRecorder
from wopdsl.agents.headers import UnsetHeader, header_values
from wopdsl.agents.llm.answers import AnswerBounds, result_schema
from wopdsl.agents.llm.prompts import RoomView
from wopdsl.agents.tools.base import ToolOutput
from wopdsl.agents.tools.events import tool_called, tool_returned
from wopdsl.agents.tools.journal import RecordedCall, call_record, result_record
from wopdsl.errors import TurnAsks, TurnError, WopError
from wopdsl.model.tools import env_variable
from wopdsl.model.turns import Turn
from wopdsl.protocol.payloads import ask_key

__all__ = ["A2aAgent", "A2aSetupError"]

TOOL_NAME = "a2a"
"""The ``toolName`` of a message to a remote agent in ``agent.toolCalled``."""


class A2aSetupError(WopError):
    """An ``a2a`` member cannot reach its agent at all (a header's variable is not set).

    Args:
        message: What is wrong.
        hint: How to fix it.
        header: The header whose variable is not set.
    """

    code = "A2A_ERROR"

    def __init__(self, message: str, *, hint: str = "", header: str = "") -> None:
        super().__init__(message, hint=hint)
        self.header = header


class A2aAgent(MemberAgent):
    """A member whose turns a remote A2A agent takes.

    Args:
        member: The member id.
        url: The agent's base URL.
        headers: Header name → ``env:NAME`` (the variable holding its value).
        rooms: The member's rooms as a result schema shows them.
        max_output_bytes: The member's ``max_output_bytes`` (bounds what the agent may send).
    """

    kind: ClassVar[str] = "a2a"
    records: ClassVar[bool] = True

    def __init__(self, member: str, url: str, headers: dict[str, str],
                 rooms: tuple[RoomView, ...], *, max_output_bytes: int = 262_144) -> None:
        self.member = member
        self.agent_id = f"host:{member}"
        self.url = url
        self.header_vars = {name: env_variable(value) for name, value in headers.items()}
        self.rooms = rooms
        self.room_ids = tuple(room.id for room in rooms)
        self.max_bytes = 4 * max_output_bytes + 65_536
        """Most bytes one response of the agent may hold (JSON and escapes around text)."""
        self.schema = result_schema(rooms, AnswerBounds.of(len(rooms), 4096, max_output_bytes))
        self.remote: Remote | None = None

    async def start(self) -> None:
        """Read the headers' variables (the agent is reached on the first turn)."""
        try:
            headers = header_values(self.header_vars)
        except UnsetHeader as unset:
            raise A2aSetupError(unset.said_of(f"{self.member}'s header"), hint=unset.hint,
                                header=unset.header) from None
        self.remote = Remote(self.member, self.url, headers, self.max_bytes)

    async def stop(self) -> None:
        """Close the connection to the agent."""
        remote, self.remote = self.remote, None
        if remote is not None:
            await remote.close()

    async def take_turn(self, turn: Turn) -> object:
        """Not used: the engine calls :meth:`take_recorded_turn` (``records = True``)."""
        raise TurnError("TEAM_NODE_FAILED", "a2a members run through the engine's recorder")

    async def take_recorded_turn(self, turn: Turn, recorder: TurnRecorder) -> object:
        """Send the turn to the agent (at most once), and read its answer as a turn result."""
        journal = recorder.journal
        calls = await journal.recorded()
        if journal.replaying:
            call_id, value = await self._replayed(calls, recorder)
        else:
            call_id, value = await self._answer(turn, recorder, calls)
        answer = answer_of(value)
        if answer.state in WAITING:  # the agent asks: the room answers (DESIGN.md §25)
            room = reply_room(turn, self.room_ids)
            question = answer.status_text or "(the agent asks for input without a question)"
            if room is None:
                raise TurnError("A2A_ERROR", f"{self.member}'s agent asks for input "
                                f"({question}), but {self.member} is in no room")
            raise TurnAsks(room, question, ask_key(call_id))
        return self._result(value, turn)

    # -- the answer of this turn -----------------------------------------------------------

    async def _answer(self, turn: Turn, recorder: TurnRecorder,
                      calls: list[RecordedCall]) -> tuple[str, dict[str, Any]]:
        """The call that settled this turn and the agent's answer to it (JSON form)."""
        last = calls[-1] if calls else None
        if last is not None and last.output is not None and last.status == "ok":
            if not last.returned:
                self._returned(recorder, last, last.output, last.duration_ms)
                await recorder.journal.commit()
            value: dict[str, Any] = json.loads(last.output.text)
            if last.reply is None or answer_of(value).state not in WAITING:
                return last.call_id, value
            # Its question was answered in the room: the answer is the next message to the
            # same task, sent exactly once like the first.
            call = self._reply_call(last, recorder, len(calls))
            await recorder.journal.save({f"{call.call_id}#call": call_record(call)})
            return call.call_id, await self._send(call, await self._remote(), recorder)
        remote = await self._remote()
        if last is not None and last.output is None:
            if last.started:
                return last.call_id, await self._follow(last, remote, recorder)
            return last.call_id, await self._send(last, remote, recorder)  # kept, never sent
        call = self._call(turn, recorder, len(calls))
        await recorder.journal.save({f"{call.call_id}#call": call_record(call)})
        return call.call_id, await self._send(call, remote, recorder)

    async def _remote(self) -> Remote:
        remote = self.remote
        assert remote is not None, "a turn runs while its agent is started"
        try:
            await remote.open()
        except RemoteFailure as failure:
            raise TurnError("A2A_ERROR", failure.message) from None
        return remote

    def _call(self, turn: Turn, recorder: TurnRecorder, index: int) -> RecordedCall:
        journal = recorder.journal
        call_id = f"call/{self.member}/{recorder.position}/{index}"
        message_id = f"{journal.run_id}/{call_id}"
        message = {"messageId": message_id, "contextId": self._context(recorder),
                   "role": "ROLE_USER", "parts": outgoing_parts(turn, self.schema)}
        return RecordedCall(call_id, index, index, message_id, TOOL_NAME,
                            json.dumps(message, ensure_ascii=False))

    def _reply_call(self, asked: RecordedCall, recorder: TurnRecorder,
                    index: int) -> RecordedCall:
        """The message carrying the answer to the question ``asked`` got (its task known)."""
        assert asked.reply is not None
        call_id = f"call/{self.member}/{recorder.position}/{index}"
        task_id = asked.remote or answer_of(json.loads(asked.output.text if asked.output
                                                       else "{}")).task_id
        message_id = f"{recorder.journal.run_id}/{call_id}"
        message = {"messageId": message_id, "contextId": self._context(recorder),
                   "taskId": task_id, "role": "ROLE_USER", "parts": reply_parts(asked.reply)}
        call = RecordedCall(call_id, index, index, message_id, TOOL_NAME,
                            json.dumps(message, ensure_ascii=False))
        call.remote = task_id  # the task is known before the message leaves
        return call

    def _context(self, recorder: TurnRecorder) -> str:
        """The member's A2A context in this run: its turns are one conversation."""
        return f"{recorder.journal.run_id}/{self.member}"

    async def _send(self, call: RecordedCall, remote: Remote,
                    recorder: TurnRecorder) -> dict[str, Any]:
        """Record the message, send it, keep the task id and the answer."""
        journal = recorder.journal
        message: dict[str, Any] = json.loads(call.arguments)
        payload = tool_called(self.agent_id, call, "http", full=False, repeated=call.started)
        payload["a2a"] = {"messageId": message["messageId"], "contextId": message["contextId"]}
        recorder.record("agent.toolCalled", payload)
        await journal.commit()  # durable before the message leaves
        started = time.monotonic()

        async def named(task_id: str) -> None:
            call.remote = task_id
            await journal.save({f"{call.call_id}#call": call_record(call)})

        stream = remote.redact.stream() if remote.streaming else None

        def text(piece: str) -> None:
            assert stream is not None
            recorder.chunk(stream.feed(piece))

        try:
            value = await remote.send(message, named, text if stream is not None else None)
        except RemoteFailure as failure:
            if not failure.delivered:  # never reached the agent: a retry sends it anew
                await self._keep(call, ToolOutput(failure.message, error=True), "error",
                                 started, recorder)
            raise TurnError("A2A_ERROR", failure.message) from None
        finally:
            if stream is not None:
                recorder.chunk(stream.end(), last=True)
        return await self._kept(call, value, started, recorder)

    async def _follow(self, call: RecordedCall, remote: Remote,
                      recorder: TurnRecorder) -> dict[str, Any]:
        """A message sent by an earlier attempt: follow its task, never send it again."""
        started = time.monotonic()
        message: dict[str, Any] = json.loads(call.arguments)
        try:
            task_id = call.remote or await remote.find(message["contextId"],
                                                       message["messageId"]) or ""
            if not task_id:
                raise TurnError("A2A_IN_DOUBT", f"{self.member}'s message {call.call_id} was "
                                "being sent when the run stopped, and its agent lists no task "
                                "for it; it is not sent again",
                                {"callId": call.call_id, "messageId": message["messageId"]})
            if not call.remote:
                call.remote = task_id
                await recorder.journal.save({f"{call.call_id}#call": call_record(call)})
            if "taskId" in message and not await remote.delivered(task_id,
                                                                  message["messageId"]):
                # An answer to a question that never reached the waiting task: send it now.
                return await self._send(call, remote, recorder)
            value = await remote.follow(task_id)
        except RemoteFailure as failure:
            raise TurnError("A2A_ERROR", failure.message) from None
        return await self._kept(call, value, started, recorder)

    async def _kept(self, call: RecordedCall, value: dict[str, Any], started: float,
                    recorder: TurnRecorder) -> dict[str, Any]:
        remote = self.remote
        if remote is not None:
            value = remote.redact.data(value)
        await self._keep(call, ToolOutput(json.dumps(value, ensure_ascii=False)), "ok",
                         started, recorder, value)
        return value

    async def _keep(self, call: RecordedCall, output: ToolOutput, status: str, started: float,
                    recorder: TurnRecorder, value: dict[str, Any] | None = None) -> None:
        duration = round((time.monotonic() - started) * 1000)
        await recorder.journal.save({f"{call.call_id}#result": result_record(
            output, status, duration)})
        self._returned(recorder, call, output, duration, status, value)
        await recorder.journal.commit()

    def _returned(self, recorder: TurnRecorder, call: RecordedCall, output: ToolOutput,
                  duration: int, status: str = "ok",
                  value: dict[str, Any] | None = None) -> None:
        payload = tool_returned(self.agent_id, call, output, status, duration, full=False,
                                code=None if status == "ok" else "A2A_ERROR")
        if value is None and status == "ok":
            value = json.loads(output.text)
        answer = answer_of(value) if value is not None else None
        payload["a2a"] = {"taskId": call.remote or (answer.task_id if answer else "")}
        if answer is not None:
            payload["a2a"]["state"] = answer.state
        recorder.record("agent.toolReturned", payload)

    async def _replayed(self, calls: list[RecordedCall],
                        recorder: TurnRecorder) -> tuple[str, dict[str, Any]]:
        """A replay-mode fork: the source run's kept answers of this turn; nothing is sent.

        The source's answered messages are replayed one by one: a question the agent asked
        waits for its answer in the fork too (the source's post supplies it), then the
        source's next answer follows.
        """
        journal = recorder.journal
        done = [c for c in calls if c.output is not None and c.status == "ok"]
        last = done[-1] if done else None
        if last is not None and last.output is not None and (
                last.reply is None or answer_of(json.loads(last.output.text)).state
                not in WAITING):
            value: dict[str, Any] = json.loads(last.output.text)
            return last.call_id, value  # replayed already (the turn runs again)
        found: RecordedCall | None = None
        for index in range(last.index + 1 if last is not None else 0, 1 << 16):
            source = await journal.source(f"call/{self.member}/{recorder.position}/{index}")
            if source is None:
                break
            if source.output is not None and source.status == "ok":
                found = source
                break
        if found is None or found.output is None:
            raise TurnError("A2A_ERROR", f"this is a replay, and the replayed run kept no "
                            f"answer of {self.member}'s agent for this turn, so nothing was sent")
        recorder.record("agent.toolCalled", tool_called(self.agent_id, found, "http",
                                                        full=False) | {"a2a": {}})
        self._returned(recorder, found, found.output, found.duration_ms)
        await journal.save({f"{found.call_id}#call": call_record(found),
                            f"{found.call_id}#result": result_record(
                                found.output, "ok", found.duration_ms)})
        await journal.commit()
        value = json.loads(found.output.text)
        return found.call_id, value

    # -- the answer as a turn result ---------------------------------------------------------

    def _result(self, value: dict[str, Any], turn: Turn) -> object:
        answer = answer_of(value)
        if answer.state in ANSWERED:
            try:
                return result_of(answer, turn, self.room_ids)
            except ValueError as exc:
                raise TurnError("RESULT_INVALID", f"{self.member}'s agent: {exc}") from None
        reason = f": {answer.status_text}" if answer.status_text else ""
        raise TurnError("A2A_ERROR", f"{self.member}'s agent ended task {answer.task_id} as "
                        f"{answer.state or 'unknown'}{reason}",
                        {"taskId": answer.task_id, "state": answer.state})
