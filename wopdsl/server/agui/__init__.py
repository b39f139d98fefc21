"""AG-UI 1.0 on ``wop serve`` (DESIGN.md §26): ``POST /agui/{councilId}`` per council.

The body is a ``RunAgentInput`` (parsed with the official ``ag-ui-protocol`` type: unknown
fields are kept and ignored, as the spec says); the answer is the AG-UI run as Server-Sent
Events (:mod:`.stream`). ``threadId`` names the council's conversation (:mod:`.threads`):

- the thread has no run, or its last run ended: the last user message (if new) is the task of
  the thread's next council run (``context`` entries are added to it as ``description:
  value`` lines); without a new message the thread is replayed: ``MESSAGES_SNAPSHOT``, the
  state, and how its last run ended;
- its last run goes on: ``resume`` entries answer its interrupts, or the last user message
  (if new) is its human member's post (:mod:`.answers`); the stream continues from there.
  Without either, the client reconnects: ``MESSAGES_SNAPSHOT``, the state, then the run live.

``runId`` is kept as given on ``RUN_STARTED``/``RUN_FINISHED``. A message is new when its id
is no post of the run and no message this host took already (kept like an
``Idempotency-Key``'s answer, so a retried input never posts twice). ``state`` and ``tools``
of the input are not used: the council owns its state and tools. ``forwardedProps.wopdsl``
may name the ``member`` and ``room`` a message is posted as. The host's tokens, principals,
cross-site rules and body bounds apply as on every endpoint; nothing is written to the log
but what the council itself writes.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson
from ag_ui.core import RunAgentInput
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wopdsl import CouncilState, Run
from wopdsl.server.agui.answers import answers_of, keeping, post_of
from wopdsl.server.agui.stream import Plan, frames
from wopdsl.server.agui.threads import Threads, thread_base
from wopdsl.server.errors import ApiError
from wopdsl.server.host import TERMINAL_STATUSES
from wopdsl.server.io import read_body
from wopdsl.server.streaming import SubscriberStream
from wopdsl.server.turns import council_spec

if TYPE_CHECKING:
    from wopdsl.server.routes import Api

__all__ = ["AguiApi"]


class AguiApi:
    """The AG-UI endpoint of a host, on its :class:`~wopdsl.server.routes.Api`."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.host = api.host
        self.threads = Threads(api.host.store)

    def routes(self) -> list[Route]:
        """``POST /agui/{councilId}``."""
        return [Route("/agui/{council_id}", self.run, methods=["POST"])]

    async def run(self, request: Request) -> Response:
        """Answer a ``RunAgentInput`` with its AG-UI run (SSE)."""
        council = self.host.council(request.path_params["council_id"])
        limits = self.host.limits
        raw = await read_body(request, limits.max_body_bytes, limits.body_timeout_s)
        given = _input(raw)
        principal = str(request.scope.get("state", {}).get("principal") or "")
        base = thread_base(council.id, given.thread_id)
        async with self.threads.lock(base):
            runs = await self.threads.runs(base)
            plan = await self._plan(request, given, council.id, base, runs, principal)
        subscriber = self.api.feeds.subscribe(plan.runs[-1])  # 503 when full: before 200.
        return SubscriberStream(
            subscriber, frames(self.host.store, subscriber, plan, limits.keepalive_s),
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _plan(self, request: Request, given: RunAgentInput, council_id: str, base: str,
                    runs: list[str], principal: str) -> Plan:
        thread = given.thread_id
        message = _last_user(given)
        run: Run | None = None
        state = None
        if runs:
            run, state = await self.api.run_for(request, "read", runs[-1])
        ongoing = state is not None and state.status not in TERMINAL_STATUSES
        if given.resume:
            if run is None or state is None:
                raise ApiError(404, "interrupt_not_found", f"thread {thread!r} has no run: "
                               "nothing waits for an answer", {"field": "resume"})
            acts = answers_of(list(given.resume), runs, state, _members(run, state),
                              self.api.access, principal, thread)
            after = state.last_sequence
            for act in acts:
                await act.submit(self.host, run, principal if self.api.tokens else None)
            return Plan(thread, given.run_id, runs, after, False, not acts)
        if ongoing:
            assert run is not None and state is not None
            after = state.last_sequence
            if message is not None and await self._post(run, state, message, given,
                                                        principal, thread):
                return Plan(thread, given.run_id, runs, after, False, False)
            return Plan(thread, given.run_id, runs, after, True, True)
        if message is None and runs:  # Nothing new: replay the thread as it stands.
            assert state is not None
            return Plan(thread, given.run_id, runs, state.last_sequence, True, True)
        if message is not None and state is not None and (
                message[0] == _started_by(state)
                or message[0] in state.messages):
            return Plan(thread, given.run_id, runs, state.last_sequence, True, True)
        new_id = f"{base}-{len(runs) + 1}"
        started = await self._start(council_id, new_id, message, given, principal, thread)
        if not started:
            assert state is not None
            return Plan(thread, given.run_id, runs, state.last_sequence, True, True)
        return Plan(thread, given.run_id, [*runs, new_id], -1, False, False)

    async def _start(self, council_id: str, run_id: str, message: tuple[str, str] | None,
                     given: RunAgentInput, principal: str, thread: str) -> bool:
        """Start the thread's next run; ``False`` when its message started one already."""
        task = None if message is None else message[1]
        if given.context:
            lines = "\n".join(f"{c.description}: {c.value}" for c in given.context)
            task = f"{task or self.host.council(council_id).settings.task}\n\n{lines}"
        metadata = {"agui": {"threadId": thread, "runId": given.run_id,
                             **({"messageId": message[0]} if message else {})}}

        async def act(keep: Any) -> tuple[int, dict[str, Any]]:
            await self.host.create(council_id, task=task, metadata=metadata, run_id=run_id,
                                   principal=principal if self.api.tokens else None)
            return 200, {"runId": run_id}

        if message is None:
            await act(None)
            return True
        return not await self._once(principal, thread, message[0], act)

    async def _post(self, run: Run, state: CouncilState, message: tuple[str, str],
                    given: RunAgentInput, principal: str, thread: str) -> bool:
        """Post a new user message as the human member; ``False`` if it is not new."""
        if message[0] in state.messages or \
                message[0] == _started_by(state):
            return False
        props = given.forwarded_props if isinstance(given.forwarded_props, dict) else {}
        chosen = props.get("wopdsl")
        chosen = chosen if isinstance(chosen, dict) else {}
        act = post_of(state, _members(run, state), self.api.access, principal, message[1],
                      chosen)

        async def submit(keep: Any) -> tuple[int, dict[str, Any]]:
            await act.submit(self.host, run, principal, keeping(keep, run.run_id))
            if keep is not None and keep.kept is not None:
                return keep.kept.status, keep.kept.body
            return 200, {"runId": run.run_id}

        return not await self._once(principal, thread, message[0], submit)

    async def _once(self, principal: str, thread: str, message: str, act: Any) -> bool:
        """Act on a user message once; ``True`` when it was taken before (a replay)."""
        key = "agui-" + hashlib.sha256(f"{thread}\0{message}".encode()).hexdigest()
        _, _, replay = await self.api.idempotency.run(principal, key, key, act)
        return replay


def _input(raw: bytes) -> RunAgentInput:
    """The body as a ``RunAgentInput`` (400 ``validation_error`` naming the field)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ApiError(400, "validation_error", f"the request body is not valid JSON: {exc}",
                       {"hint": "send a RunAgentInput as JSON"}) from None
    if not isinstance(data, dict):
        raise ApiError(400, "validation_error", "the request body must be a RunAgentInput "
                       "object", {"hint": "send {threadId, runId, messages, …}"})
    try:
        return RunAgentInput.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ApiError(400, "validation_error", f"RunAgentInput.{where}: {first['msg']}",
                       {"field": where, "errors": len(exc.errors())}) from None


def _last_user(given: RunAgentInput) -> tuple[str, str] | None:
    """``(id, text)`` of the input's last message when it is a user message with text."""
    if not given.messages:
        return None
    last = given.messages[-1]
    data = last.model_dump(by_alias=True)
    if data.get("role") != "user":
        return None
    content = data.get("content")
    if isinstance(content, list):
        content = "\n".join(str(p.get("text", "")) for p in content
                            if isinstance(p, dict) and p.get("type") == "text")
    text = str(content or "").strip()
    return (str(data.get("id")), text) if text else None


def _members(run: Run, state: CouncilState) -> dict[str, Any]:
    return {m.id: m for m in council_spec(run, state).members}


def _started_by(state: CouncilState) -> Any:
    """The id of the user message that started the run (``metadata.request.agui``)."""
    request = state.metadata.get("request")
    agui = request.get("agui") if isinstance(request, dict) else None
    return agui.get("messageId") if isinstance(agui, dict) else None
