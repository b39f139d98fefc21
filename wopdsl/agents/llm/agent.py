"""The ``llm`` member engine: one turn = compose, call (with retries and budget), check, repair.

Each step is recorded through the engine's :class:`~wopdsl.agents.base.TurnRecorder`:
``prompt.composed`` once per turn, ``node.retried`` (+ ``node.started`` attempt + 1) per
transport retry, ``provider.usage`` and ``budget.consumed`` after every call,
``envelope.retry.attempted`` per repair and ``envelope.retry.exhausted`` when repairs run out,
``budget.exhausted`` and ``cap.breached`` when a call's worst case does not fit the budget.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import TYPE_CHECKING, Any, ClassVar

from wopdsl.agents.base import MemberAgent, TurnRecorder
from wopdsl.agents.budget import estimate_tokens
from wopdsl.agents.llm.answers import AnswerBounds, AnswerProblem, check_answer, result_schema
from wopdsl.agents.llm.client import CallFailure, Completion, ProfileClient
from wopdsl.agents.llm.endpoint import resolve
from wopdsl.agents.llm.prompts import PromptTemplates, RoomView
from wopdsl.agents.llm.tap import CALL_SITE, CallSite
from wopdsl.agents.llm.turnview import TurnView, view_of
from wopdsl.errors import TurnError, TurnSuspended
from wopdsl.model.turns import Turn

if TYPE_CHECKING:
    from wopdsl.agents.tools.toolset import Toolset

__all__ = ["REPAIR_PROMPT", "LlmAgent"]

REPAIR_PROMPT = ("Your answer was not a valid turn result: {problem}. Answer again with one "
                 "JSON object of the requested shape and nothing else.")
"""The message that re-asks after an invalid answer (``{problem}`` names the field)."""

_MAX_BACKOFF_S = 60.0


class LlmAgent(MemberAgent):
    """A member whose turns a chat model produces (DESIGN.md §18).

    Args:
        member: The member id.
        client: The profile's client (shared by the members naming the profile).
        templates: The member's compiled prompt templates.
        temperature: The effective temperature (``None``: the server's default).
        max_output_tokens: The effective completion-token cap per call.
        repair_attempts: How often an invalid answer is re-asked.
        max_output_bytes: The member's ``max_output_bytes`` (bounds streamed text too).
        toolset: The member's tools (DESIGN.md §20; the loop is in ``agents/llm/tools.py``).
        votes: How many decisions the member votes on (their reasons share the answer's
            length).
    """

    kind: ClassVar[str] = "llm"
    records: ClassVar[bool] = True

    def __init__(self, member: str, client: ProfileClient, templates: PromptTemplates, *,
                 temperature: float | None, max_output_tokens: int,
                 repair_attempts: int, max_output_bytes: int = 262_144,
                 toolset: Toolset | None = None, votes: int = 0) -> None:
        self.member = member
        self.client = client
        self.profile = client.profile
        self.templates = templates
        self.rooms: tuple[RoomView, ...] = templates.rooms
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.repair_attempts = repair_attempts
        self.max_output_bytes = max_output_bytes
        self.chair = templates.chair
        self.bounds = AnswerBounds.of(len(self.rooms), max_output_tokens, max_output_bytes,
                                      votes=votes, chair=self.chair)
        self.schema = result_schema(self.rooms, self.bounds, chair=self.chair)
        """The schema when everyone may be mentioned (each turn's leaves out spent members)."""
        self._schemas: dict[Any, dict[str, Any]] = {}
        self.provenance: dict[str, str] | None = {"provider": self.profile.provider,
                                                  "model": self.profile.model}
        """RFC 0109 provenance of this member's posts: the model the server reported for
        the member's last answer (the profile's model name until one came)."""
        self._others = frozenset(m for room in self.rooms for m in room.members)
        self.toolset = toolset

    async def start(self) -> None:
        """Count a run using the profile's connections (and start the member's MCP servers)."""
        await self.client.acquire()
        if self.toolset is not None:
            try:
                await self.toolset.open()
            except BaseException:
                await self.client.release()
                raise

    async def stop(self) -> None:
        """Release them (the last run closes them)."""
        if self.toolset is not None:
            await self.toolset.close()
        await self.client.release()

    async def take_turn(self, turn: Turn) -> object:
        """Not used: the engine calls :meth:`take_recorded_turn` (``records = True``)."""
        raise TurnError("TEAM_NODE_FAILED", "llm members run through the engine's recorder")

    def turn_schema(self, requestable: frozenset[str]) -> dict[str, Any]:
        """The result schema of a turn in which only ``requestable`` may be mentioned."""
        key = requestable & self._others
        if key == self._others:
            return self.schema
        schema = self._schemas.get(key)
        if schema is None:
            schema = self._schemas[key] = result_schema(self.rooms, self.bounds, key,
                                                        chair=self.chair)
        return schema

    def view_schema(self, view: TurnView) -> dict[str, Any]:
        """The result schema of a deliberating turn: its rooms, mentions and open votes.

        Cached per distinct shape (the rooms offered, who may be mentioned, the open
        decisions): the schema changes as rounds settle and decisions close.
        """
        names = frozenset(m for room in view.rooms for m in room.members)
        key = (view.rooms, view.requestable & names, view.votes)
        schema = self._schemas.get(key)
        if schema is None:
            schema = self._schemas[key] = result_schema(
                view.rooms, self.bounds, key[1], votes=view.votes, chair=self.chair)
        return schema

    def request(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None = None,
                *, tools: bool = True) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for these messages."""
        request: dict[str, Any] = {"model": self.profile.model, "messages": messages,
                                   "max_tokens": self.max_output_tokens}
        if tools and self.toolset is not None and self.toolset.tools:
            request["tools"] = self.toolset.definitions()
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.profile.structured_output == "json_schema":
            request["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "turn_result", "strict": True, "schema": schema or self.schema}}
        else:
            request["response_format"] = {"type": "json_object"}
        if self.profile.stream:
            request["stream"] = True
            request["stream_options"] = {"include_usage": True}
        return request

    async def take_recorded_turn(self, turn: Turn, recorder: TurnRecorder) -> object:
        """Compose the prompt, call the model, check the answer, repair it if needed."""
        CALL_SITE.set(CallSite(self.member, turn.turn, recorder))  # this turn's own task
        view = view_of(turn, self.rooms, recorder.requestable)
        try:
            composed = self.templates.compose(turn, self._others - recorder.requestable) \
                if view is None else self.templates.compose(
                    turn, view.spent, rooms=view.roster, posts=bool(view.rooms),
                    votes=bool(view.votes))
        except Exception as exc:
            raise TurnError("RESULT_INVALID", f"the prompt of {self.member} failed to render "
                            f"({type(exc).__name__}: {exc}); fix system_prompt/turn_prompt"
                            ) from None
        recorder.record("prompt.composed", composed.event(
            recorder.node_id, full=self.profile.observability == "full"))
        messages: list[dict[str, Any]] = [{"role": "system", "content": composed.system},
                                          {"role": "user", "content": composed.user}]
        schema = self.turn_schema(recorder.requestable) if view is None else \
            self.view_schema(view)
        if self.toolset is None:
            return await self._answer(messages, schema, recorder, None, turn, view)
        from wopdsl.agents.llm.tools import ToolLoop  # tools (DESIGN.md §20)

        async def call(messages: list[dict[str, Any]], tools: bool) -> Completion:
            return await self._call(messages, schema, recorder, tools=tools)

        loop = ToolLoop(self.member, self.toolset, recorder, call,
                        full=self.profile.observability == "full")
        outcome = "failed"
        try:
            result = await self._answer(messages, schema, recorder, loop, turn, view)
            outcome = "completed"
            return result
        except (asyncio.CancelledError, TurnSuspended):
            outcome = "cancelled"
            raise
        finally:
            loop.close(outcome)

    async def _answer(self, messages: list[dict[str, Any]], schema: dict[str, Any],
                      recorder: TurnRecorder, loop: Any, turn: Turn,
                      view: TurnView | None) -> object:
        """Call the model (through the tool loop, if any), check the answer, repair it."""
        requestable = recorder.requestable if view is None else view.requestable
        rooms = self.rooms if view is None else view.rooms
        offers = () if view is None else view.votes
        attempts = self.repair_attempts + 1
        for attempt in range(1, attempts + 1):
            completion = await (loop.answer(messages) if loop is not None
                                else self._call(messages, schema, recorder))
            try:
                if completion.finish_reason == "refusal":
                    raise AnswerProblem("refusal", "the model refused to answer")
                result = check_answer(completion.text, rooms,
                                      truncated=completion.finish_reason == "length",
                                      bounds=self.bounds, requestable=requestable,
                                      votes=offers, decisions=turn.decisions)
                self.provenance = {"provider": self.profile.provider,
                                   "model": completion.model}
                return self.client.redact(result)
            except AnswerProblem as problem:
                if attempt < attempts and problem.reason != "refusal":
                    recorder.record("envelope.retry.attempted", {
                        "nodeId": recorder.node_id, "attempt": attempt + 1,
                        "reason": problem.reason, "previousError": problem.message})
                    messages = [*messages,
                                {"role": "assistant", "content": completion.text},
                                {"role": "user",
                                 "content": REPAIR_PROMPT.format(problem=problem.message)}]
                    continue
                recorder.record("envelope.retry.exhausted", {
                    "nodeId": recorder.node_id, "totalAttempts": attempt,
                    "finalReason": problem.reason, "finalError": problem.message})
                raise TurnError("RESULT_INVALID", f"{self.member}'s answer is not a valid turn "
                                f"result after {attempt} attempt(s): {problem.message}",
                                {"reason": problem.reason, "attempts": attempt}) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def _call(self, messages: list[dict[str, Any]], schema: dict[str, Any],
                    recorder: TurnRecorder, *, tools: bool = True) -> Completion:
        """One model call: budget reservation, transport retries, usage."""
        request = self.request(messages, schema, tools=tools)
        prompt_tokens = estimate_tokens(json.dumps(messages, ensure_ascii=False))
        worst_tokens = prompt_tokens + self.max_output_tokens
        worst_cost = self.profile.cost_usd(prompt_tokens, self.max_output_tokens)
        budget = recorder.budget
        if budget is not None and budget.limited:
            breach = budget.reserve(worst_tokens, worst_cost)
            if breach is not None:
                self._breach(recorder, breach.dimension, breach.consumed, breach.limit,
                             breach.wanted)
        spent = _Spent()
        try:
            completion = await self._with_retries(request, recorder, spent)
        except asyncio.CancelledError:
            # Stopped (a steer, a pause, a cancel): the stream was aborted, but what the
            # model was sent and streamed so far was spent and counts (steering.md).
            if spent.sent:
                self._used(recorder, self.profile.model, prompt_tokens,
                           estimate_tokens("".join(spent.text)), (worst_tokens, worst_cost),
                           estimated=True)
            elif budget is not None and budget.limited:
                budget.settle(worst_tokens, worst_cost, 0, 0.0)
            raise
        except BaseException:
            if budget is not None and budget.limited:
                budget.settle(worst_tokens, worst_cost, 0, 0.0)
            raise
        reported_in = _usable(completion.input_tokens, "prompt_tokens", recorder)
        reported_out = _usable(completion.output_tokens, "completion_tokens", recorder)
        input_tokens = reported_in if reported_in is not None else prompt_tokens
        output_tokens = (reported_out if reported_out is not None
                         else estimate_tokens(completion.text))
        self._used(recorder, completion.model, input_tokens, output_tokens,
                   (worst_tokens, worst_cost))
        return completion

    def _used(self, recorder: TurnRecorder, model: str, input_tokens: int, output_tokens: int,
              reserved: tuple[int, float | None], *, estimated: bool = False) -> None:
        """Record a call's ``provider.usage`` and settle its budget reservation."""
        cost = self.profile.cost_usd(input_tokens, output_tokens)
        usage: dict[str, Any] = {"provider": self.profile.provider, "model": model,
                                 "inputTokens": input_tokens, "outputTokens": output_tokens,
                                 "totalTokens": input_tokens + output_tokens,
                                 "nodeId": recorder.node_id}
        if cost is not None:
            usage["costEstimateUsd"] = round(cost, 9)
        recorder.record("provider.usage", usage)
        if estimated:  # a stopped call: the server never sent its usage
            recorder.record("log.appended", {
                "level": "info", "nodeId": recorder.node_id,
                "message": "the model call was stopped mid-stream; its usage is the engine's "
                           "estimate of the prompt and the text streamed so far",
                "fields": {"estimated": True}})
        budget = recorder.budget
        if budget is not None:
            worst_tokens, worst_cost = reserved
            budget.settle(worst_tokens if budget.limited else 0,
                          worst_cost if budget.limited else None,
                          input_tokens + output_tokens, cost)
            for payload in budget.consumed_events():
                recorder.record("budget.consumed", payload)

    def _breach(self, recorder: TurnRecorder, dimension: str, consumed: float, limit: float,
                wanted: float) -> None:
        recorder.record("budget.exhausted", {"dimension": dimension, "consumed": consumed,
                                             "limit": limit})
        if dimension == "tokens":
            observed, cap = int(consumed + wanted), int(limit)
            unit, what = "tokens", f"{int(wanted)} more tokens (worst case)"
        else:  # cost in micro-USD: cap.breached counts in integers
            observed, cap = round((consumed + wanted) * 1e6), round(limit * 1e6)
            unit, what = "microUsd", f"${wanted:.6f} more (worst case)"
        recorder.record("cap.breached", {"kind": f"budget-{dimension}", "limit": cap,
                                         "observed": observed, "nodeId": recorder.node_id,
                                         "unit": unit})
        shown = f"{consumed:g} of {limit:g}" if dimension == "tokens" else (
            f"${consumed:.6f} of ${limit:g}")
        raise TurnError("BUDGET_EXHAUSTED",
                        f"{self.member}'s call needs {what}; the run has used {shown} "
                        f"({'max_tokens' if dimension == 'tokens' else 'max_cost_usd'})",
                        {"dimension": dimension})

    async def _with_retries(self, request: dict[str, Any], recorder: TurnRecorder,
                            spent: _Spent) -> Completion:
        on_text = None
        if request.get("stream"):
            def on_text(text: str) -> None:
                spent.text.append(text)
                recorder.chunk(text)
        endpoint = resolve(self.profile, recorder.endpoints.get(self.client.name))
        retries = self.profile.retries
        for index in range(retries + 1):
            try:
                spent.text.clear()  # what an attempt that failed streamed was counted by it
                completion = await self.client.complete(request, on_text, endpoint=endpoint,
                                                        max_bytes=self.max_output_bytes,
                                                        on_sent=spent.mark_sent)
                if on_text is not None:
                    recorder.chunk("", last=True)
                return completion
            except CallFailure as failure:
                details: dict[str, Any] = {}
                if failure.status is not None:
                    details["status"] = failure.status
                if not failure.retryable:
                    raise TurnError(failure.code, failure.message, details) from None
                if index == retries:
                    raise TurnError("MODEL_ERROR", f"{failure.message} (gave up after "
                                    f"{retries + 1} attempt(s))", details) from None
                delay = (failure.retry_after_s if failure.retry_after_s is not None
                         else self._backoff(recorder, index))
                error: dict[str, Any] = {"code": "MODEL_ERROR", "message": failure.message,
                                         "retryable": True}
                if details:
                    error["details"] = details
                recorder.retried(round(delay * 1000), error)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, recorder: TurnRecorder, index: int) -> float:
        """Exponential backoff with jitter (seeded per turn attempt: reproducible logs)."""
        base = self.profile.retry_backoff_ms / 1000 * (2 ** index)
        jitter = random.Random(f"{recorder.node_id}:{recorder.attempt}:{index}").uniform(0.5, 1)
        return float(min(_MAX_BACKOFF_S, base * jitter))


class _Spent:
    """What one model call has spent so far: whether it was sent, and the text streamed."""

    __slots__ = ("sent", "text")

    def __init__(self) -> None:
        self.sent = False
        self.text: list[str] = []

    def mark_sent(self) -> None:
        self.sent = True


MAX_USAGE_TOKENS = 2**53 - 1
"""Largest token count taken from a model's ``usage``: beyond it (no model bills that much in
one call) the count is ignored, the engine's estimate recorded instead, with a note."""


def _usable(value: int | None, name: str, recorder: TurnRecorder) -> int | None:
    """``value`` if it is a believable token count, else ``None`` (and a ``log.appended``)."""
    if value is None or value <= MAX_USAGE_TOKENS:
        return value
    recorder.record("log.appended", {
        "level": "warn", "nodeId": recorder.node_id,
        "message": f"the model reported usage.{name} as a number of {len(str(value))} digits, "
                   "beyond any real count (2^53-1); the engine's estimate is recorded instead",
        "fields": {"field": f"usage.{name}", "digits": len(str(value))}})
    return None
