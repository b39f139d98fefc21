"""The tool-calling loop of an ``llm`` turn: model → tool calls → results → model (DESIGN §20).

:class:`ToolLoop` runs inside ``LlmAgent.take_recorded_turn``: each model call is offered the
member's tools; while the answer asks for calls (several at once run in parallel), they are
made through a :class:`~wopdsl.agents.tools.runner.CallRunner` and their results given back,
until an answer without calls — the structured turn result, checked as before.

A turn that runs again (a crash, a retry, an approval decided) first rebuilds the
conversation from its journal: the rounds the model asked for are replayed from what was kept,
calls still owed are settled, and the model is called only after that. Bounds: the member's
``max_tool_calls`` per turn (then the model is asked to answer without tools), the run's
``max_tool_calls`` budget, and at most ``max_errors`` failed calls per turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final

from wopdsl.agents.base import TurnRecorder
from wopdsl.agents.llm.client import Completion
from wopdsl.agents.tools.journal import RecordedCall, call_record
from wopdsl.agents.tools.runner import CallRunner
from wopdsl.agents.tools.toolset import Toolset
from wopdsl.errors import TurnError, TurnSuspended

__all__ = ["LIMIT_PROMPT", "ToolLoop"]

LIMIT_PROMPT: Final = ("You have made the {limit} tool calls this turn allows. Do not call "
                       "tools now: answer with the turn result.")
"""Said to the model once a turn's tool calls are spent."""


class ToolLoop:
    """The tool side of one ``llm`` turn (see the module docstring).

    Args:
        member: The member id.
        toolset: The member's tools (opened at run start).
        recorder: The turn's recorder.
        call_model: Makes one model call (``tools``: offer the tools); the agent's.
        full: Whether events carry arguments and results (``observability = "full"``).
    """

    def __init__(self, member: str, toolset: Toolset, recorder: TurnRecorder,
                 call_model: Callable[[list[dict[str, Any]], bool], Awaitable[Completion]],
                 *, full: bool) -> None:
        self.member = member
        self.toolset = toolset
        self.recorder = recorder
        self.call_model = call_model
        self.runner = CallRunner(member, toolset, recorder, full=full)
        self.prefix = f"call/{member}/{recorder.position}/"
        self.count = 0
        """Tool calls the model asked for in this turn (all attempts)."""
        self.next_index = 0
        self.round = 0
        self._resumed = False

    async def answer(self, messages: list[dict[str, Any]]) -> Completion:
        """Call the model until it answers without tool calls; return that answer.

        ``messages`` grows in place with each round (the assistant's calls, the results).

        Raises:
            TurnSuspended: a call waits for an approval.
            TurnError: a bound was passed or a call cannot be settled.
        """
        if not self._resumed:
            self._resumed = True
            await self._resume(messages)
        limit = self.toolset.max_calls
        while True:
            spent = self.count >= limit
            if spent:
                messages.append({"role": "user", "content": LIMIT_PROMPT.format(limit=limit)})
            completion = await self.call_model(messages, not spent)
            if not completion.tool_calls:
                return completion
            if spent:
                self.recorder.record("cap.breached", {"kind": "loop-iterations", "limit": limit,
                                                      "observed": self.count + 1,
                                                      "nodeId": self.member})
                raise TurnError("TOOL_LIMIT", f"{self.member} asked for more tool calls "
                                f"after its {limit} of this turn (max_tool_calls) were spent "
                                "and it was told to answer", {"limit": limit})
            calls = await self._new_round(completion)
            messages.append(_assistant(calls))
            await self._settle(calls, messages)

    def close(self, outcome: str) -> None:
        """The turn ended (``completed``, ``failed`` or ``cancelled``): close its sessions."""
        self.runner.close(outcome)

    # -- rounds ----------------------------------------------------------------------------

    async def _new_round(self, completion: Completion) -> list[RecordedCall]:
        """Number the answer's calls and keep them (privately, durably) before any is made."""
        calls = []
        for offset, asked in enumerate(completion.tool_calls):
            index = self.next_index + offset
            calls.append(RecordedCall(f"{self.prefix}{index}", index, self.round, asked.id,
                                      asked.name, asked.arguments,
                                      completion.text if offset == 0 else ""))
        self.next_index += len(calls)
        self.round += 1
        self.count += len(calls)
        await self.recorder.journal.save({f"{c.call_id}#call": call_record(c) for c in calls})
        return calls

    async def _settle(self, calls: list[RecordedCall], messages: list[dict[str, Any]]) -> None:
        """Settle a round's calls together; append their results in call order."""
        if len(calls) == 1:
            outcomes: list[Any] = [await _outcome(self.runner.settle(calls[0]))]
        else:
            # Every call's outcome is collected, even a stop's: a stopped turn thus ends only
            # once each of its calls in flight has ended and been recorded.
            outcomes = list(await asyncio.gather(*(self.runner.settle(c) for c in calls),
                                                 return_exceptions=True))
        failure: BaseException | None = None
        suspended: TurnSuspended | None = None
        for call, outcome in zip(calls, outcomes, strict=True):
            if isinstance(outcome, TurnSuspended):
                suspended = suspended or outcome
            elif isinstance(outcome, BaseException):
                failure = failure or outcome
            else:
                messages.append({"role": "tool", "tool_call_id": call.tool_call_id,
                                 "content": outcome.text})
        if failure is not None:
            raise failure
        if suspended is not None:
            raise suspended
        bound = self.toolset.max_errors
        if self.runner.errors > bound:
            raise TurnError("TOOL_ERROR", f"{self.runner.errors} tool calls of "
                            f"{self.member}'s turn failed, more than the {bound} a turn "
                            "hands back to the model", {"errors": self.runner.errors})

    async def _resume(self, messages: list[dict[str, Any]]) -> None:
        """Rebuild the rounds an earlier attempt of this turn recorded, settling what is owed."""
        recorded = await self.recorder.journal.recorded()
        if not recorded:
            return
        self.next_index = max(call.index for call in recorded) + 1
        known = [call for call in recorded if call.round >= 0]
        rounds: dict[int, list[RecordedCall]] = {}
        for call in known:
            rounds.setdefault(call.round, []).append(call)
        self.count = len(known)
        self.round = max(rounds, default=-1) + 1
        for number in sorted(rounds):
            calls = rounds[number]
            messages.append(_assistant(calls))
            await self._settle(calls, messages)


async def _outcome(settling: Any) -> Any:
    """The call's output, or the exception it raised (cancellation goes through)."""
    try:
        return await settling
    except Exception as exc:
        return exc


def _assistant(calls: list[RecordedCall]) -> dict[str, Any]:
    """The assistant message that asked for ``calls``."""
    return {"role": "assistant", "content": calls[0].text or None, "tool_calls": [
        {"id": call.tool_call_id, "type": "function",
         "function": {"name": call.name, "arguments": call.arguments}} for call in calls]}
