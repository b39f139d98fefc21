"""One served council as an A2A agent: the A2A SDK's request handler, over the host's runs.

The SDK's JSON-RPC dispatcher reads the wire (methods, params, JSON-RPC errors, SSE);
:class:`CouncilAgent` answers each method from the host (:class:`~wopdsl.server.host.Host`):

* ``SendMessage`` / ``SendStreamingMessage`` without ``taskId`` start a run (task = run);
  the message's text is the run's task (empty: the council's). Its ``contextId`` is kept
  (one is made when missing). The run id is derived from the caller and the ``messageId``:
  the same message sent again finds the same run, never a second one;
* with ``taskId`` the message is a turn in the run: posted as the member the run waits for
  (or the only ``human`` member; ``metadata.member`` and ``metadata.room`` choose), through
  the same door as every turn from outside (roster, role, principal, mentions); posted once
  per task and ``messageId``, whenever it is sent again (the answer is kept in the store
  with the turn, as an ``Idempotency-Key``'s);
* ``SendMessage`` answers once the run stops — completed, failed, canceled, waiting for
  input (``TASK_STATE_INPUT_REQUIRED``), or paused (``TASK_STATE_WORKING``, ``metadata.
  runStatus: "paused"``) — or at once with ``returnImmediately``; the stream
  sends the task, a ``working`` status update per post — an ``llm`` member's post streamed
  before it as artifact updates, token by token (:mod:`~wopdsl.server.a2a.tokens`) — then
  the artifacts and the state it stops in;
* ``GetTask``, ``ListTasks`` (the caller's tasks of this council), ``CancelTask`` (the run
  is cancelled), ``SubscribeToTask`` (the stream again, from now: after a dropped stream or
  a host restart).

Who may do what is the host's rule (:mod:`wopdsl.server.access`): a task the caller may not
read is not found for it. Push notifications and the extended card are not offered.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncGenerator
from typing import Any, Final

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler, validate_request_params
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict, ParseDict

from wopdsl import CouncilState
from wopdsl.server.a2a.listing import check_history_length, list_tasks
from wopdsl.server.a2a.tasks import TERMINAL, task_of
from wopdsl.server.a2a.turns import speaker_turn
from wopdsl.server.a2a.updates import ANSWERED, Event, updates
from wopdsl.server.access import Access
from wopdsl.server.errors import ApiError
from wopdsl.server.feed import Feeds
from wopdsl.server.host import Host
from wopdsl.server.idempotency import Idempotency, Keep, fingerprint, run_id_for_key
from wopdsl.store import Answer

__all__ = ["CouncilAgent"]

_MAX_TASK: Final = 100_000
"""Most characters of a message's text taken as a run's task (as ``POST /v1/runs``)."""


class CouncilAgent(RequestHandler):
    """The A2A agent of one served council (see the module docstring).

    Args:
        council_id: The council.
        host: The host running its runs.
        feeds: The host's event feeds (streams follow a run through them).
        access: The host's run rules.
        idempotency: The host's kept answers (a message is taken once per task).
    """

    def __init__(self, council_id: str, host: Host, feeds: Feeds, access: Access,
                 idempotency: Idempotency) -> None:
        self.council_id = council_id
        self.host = host
        self.feeds = feeds
        self.access = access
        self.idempotency = idempotency

    # -- tasks -----------------------------------------------------------------------------

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext
                          ) -> Task | None:
        """``GetTask``: the run as a task."""
        length = check_history_length(params.history_length
                                      if params.HasField("history_length") else None)
        state = await self._state(params.id, context, "read")
        return _task(task_of(state, length, await self._updated(state)))

    @validate_request_params
    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext
                            ) -> ListTasksResponse:
        """``ListTasks``: the caller's tasks of this council, newest first."""
        store = self.host.store
        runs = [(info.run_id, info.started_at) for info in await store.call(store.runs)
                if info.workflow_id == self.council_id]

        async def read(run_id: str) -> tuple[CouncilState, str] | None:
            try:
                state = await self._state(run_id, context, "read")
            except TaskNotFoundError:
                return None
            return state, await self._updated(state)

        listed = await list_tasks(params, runs, read)
        response: ListTasksResponse = ParseDict(listed, ListTasksResponse())
        return response

    async def _updated(self, state: CouncilState) -> str:
        """When the run's last event was written (the task's status timestamp)."""
        store = self.host.store
        tail = await store.call(store.read, state.run_id, state.last_sequence - 1)
        return str(tail[-1]["timestamp"]) if tail else state.started_at

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext
                             ) -> Task | None:
        """``CancelTask``: cancel the run; a run that ended is not cancelable."""
        state = await self._state(params.id, context, "cancel")
        if task_of(state)["status"]["state"] in TERMINAL:
            raise TaskNotCancelableError(message=f"task {params.id} has ended "
                                         f"({state.status}); it cannot be canceled")
        run = await self.host.open(params.id)
        await self.host.cancel(run, "canceled by the A2A client")
        return _task(task_of(await self.host.state_of(params.id)))

    # -- messages --------------------------------------------------------------------------

    @validate_request_params
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext
                              ) -> Task | Message:
        """``SendMessage``: start or continue the run; answer once it stops."""
        run_id, after = await self._deliver(params.message, context)
        length = check_history_length(params.configuration.history_length
                                      if params.configuration.HasField("history_length")
                                      else None)
        if not params.configuration.return_immediately:
            async for _ in updates(self.host, self.feeds, run_id, after, ANSWERED):
                pass
        return _task(task_of(await self.host.state_of(run_id), length))

    @validate_request_params
    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Event]:
        """``SendStreamingMessage``: start or continue the run; stream it until it stops."""
        run_id, after = await self._deliver(params.message, context)
        yield _task(task_of(await self.host.state_of(run_id), 0))
        async for event in updates(self.host, self.feeds, run_id, after):
            yield event

    @validate_request_params
    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Event]:
        """``SubscribeToTask``: the task now, then its updates until it stops."""
        state = await self._state(params.id, context, "read")
        task = task_of(state, 0)
        if task["status"]["state"] in TERMINAL:
            raise UnsupportedOperationError(message=f"task {params.id} has ended "
                                            f"({state.status}); there is nothing to follow")
        yield _task(task)
        async for event in updates(self.host, self.feeds, params.id, state.last_sequence):
            yield event

    async def _deliver(self, message: Message, context: ServerCallContext) -> tuple[str, int]:
        """Start the run or post the turn; return the run id and the sequence before."""
        principal = _principal(context)
        text = "\n".join(p.text for p in message.parts if p.HasField("text")).strip()
        if not message.message_id:
            raise InvalidParamsError(message="message.messageId is required")
        if message.task_id:
            return message.task_id, await self._continue(message, text, context)
        if len(text) > _MAX_TASK:
            raise InvalidParamsError(message=f"the message's text (the task) is longer than "
                                     f"{_MAX_TASK} characters")
        context_id = message.context_id or uuid.uuid4().hex
        run_id = run_id_for_key(self.council_id, principal, f"a2a\0{message.message_id}")
        try:
            run = await self.host.create(
                self.council_id, task=text or None, run_id=run_id,
                metadata={"a2a": {"contextId": context_id, "messageId": message.message_id}},
                principal=principal if self.access.tokens else None)
        except ApiError as exc:
            raise _a2a_error(exc) from None
        return run.run_id, -1

    async def _continue(self, message: Message, text: str, context: ServerCallContext) -> int:
        """Post the message as a turn of its task, once; return the sequence before it.

        A message is taken once per task and ``messageId``: its answer is kept in the
        host's store with the turn (as an ``Idempotency-Key``'s, :mod:`wopdsl.server.
        idempotency`), so the same message sent again, after a host restart too, posts
        nothing; the same ``messageId`` with other content is refused.
        """
        task_id = message.task_id
        principal = _principal(context)
        metadata = MessageToDict(message.metadata) if message.HasField("metadata") else {}

        async def act(keep: Keep) -> tuple[int, dict[str, Any]]:
            state = await self._state(task_id, context, "read")
            if message.context_id and message.context_id != task_of(state, 0)["contextId"]:
                raise InvalidParamsError(message=f"contextId {message.context_id} is not the "
                                         f"context of task {task_id}")
            if task_of(state, 0)["status"]["state"] in TERMINAL:
                raise UnsupportedOperationError(message=f"task {task_id} has ended "
                                                f"({state.status}); it takes no more messages")
            member, room, resume = speaker_turn(self.host, state, text, metadata,
                                                self.access, principal)
            run = await self.host.open(task_id)
            before = state.last_sequence  # (the state read goes on with the run)

            def kept(posted: str | None, _status: str) -> Answer:
                return keep(200, {"after": before, "messageId": posted})

            try:
                await self.host.reply(run, room=room, member=member, resume=resume,
                                      answer=kept)
            except ApiError as exc:
                raise _a2a_error(exc) from None
            return (keep.kept.status, keep.kept.body) if keep.kept else (200, {"after": before})

        key = hashlib.sha256(f"{task_id}\0{message.message_id}".encode()).hexdigest()
        meaning = {"contextId": message.context_id, "metadata": metadata,
                   "parts": [MessageToDict(part) for part in message.parts]}
        try:
            _, answer, _ = await self.idempotency.run(
                principal, f"a2a-{key}",
                fingerprint(f"/a2a/{self.council_id}/{task_id}", principal, meaning), act)
        except ApiError as exc:
            if exc.code == "idempotency_key_mismatch":
                raise InvalidParamsError(message=f"message {message.message_id} was sent to "
                                         f"task {task_id} already, with other content; send "
                                         "a new message with a new messageId") from None
            raise _a2a_error(exc) from None
        return int(answer["after"])

    async def _state(self, task_id: str, context: ServerCallContext,
                     action: Any) -> CouncilState:
        """The run of ``task_id`` if it is this council's and the caller may ``action`` it.

        A task the caller may not read is not found for it; one it may read but not
        ``action`` is an ``InvalidParamsError`` saying why.
        """
        principal = _principal(context)
        try:
            state = await self.host.state_of(task_id)
            if state.workflow_id != self.council_id:
                raise ApiError(404, "run_not_found", "")
            self.access.check(principal, state, "read")
        except ApiError:
            raise TaskNotFoundError(message=f"no task {task_id} here") from None
        try:
            self.access.check(principal, state, action)
        except ApiError as exc:
            raise InvalidParamsError(message=exc.message) from None
        return state

    # -- not offered -------------------------------------------------------------------------

    async def on_create_task_push_notification_config(
            self, params: TaskPushNotificationConfig,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        """Not offered."""
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
            self, params: GetTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> TaskPushNotificationConfig:
        """Not offered."""
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
            self, params: ListTaskPushNotificationConfigsRequest,
            context: ServerCallContext) -> ListTaskPushNotificationConfigsResponse:
        """Not offered."""
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
            self, params: DeleteTaskPushNotificationConfigRequest,
            context: ServerCallContext) -> None:
        """Not offered."""
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(self, params: GetExtendedAgentCardRequest,
                                         context: ServerCallContext) -> AgentCard:
        """Not offered."""
        raise ExtendedAgentCardNotConfiguredError


def _principal(context: ServerCallContext) -> str:
    return str(context.state.get("principal") or "local")


def _task(task: dict[str, Any]) -> Task:
    parsed: Task = ParseDict(task, Task())
    return parsed


def _a2a_error(exc: ApiError) -> A2AError:
    """A host's refusal as an A2A error."""
    if exc.status == 404:
        return TaskNotFoundError(message=exc.message)
    if exc.status in (400, 403, 409, 422):
        return InvalidParamsError(message=exc.message)
    return InternalError(message=exc.message)
