"""The remote agent of an ``a2a`` member, reached through the official ``a2a-sdk`` client.

:class:`Remote` reads the agent's card (its well-known path under the member's ``url``),
sends a message — streamed when the card says the agent streams, otherwise returned at once
and followed with ``GetTask`` — follows a task it knows the id of, and finds the task a
message started (``ListTasks`` of the member's context), and tells whether an answer sent to
a task that asked for input reached it. Everything it reads is bounded
(:class:`Bounded`: an answer over the limit is an error, never held in memory), and every
error it raises (:class:`RemoteFailure`) is redacted of the member's header values.

The SDK and ``httpx`` are imported when a member first connects (``import wopdsl`` stays
light); answers are handed on as JSON (``google.protobuf.json_format.MessageToDict``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from wopdsl.agents.a2a.wire import ANSWERED, FAILED, WAITING, state_name
from wopdsl.agents.llm.redact import Redactor

if TYPE_CHECKING:
    import httpx

__all__ = ["AnswerTooLarge", "Remote", "RemoteFailure", "card_problems"]

SETTLED: Final = ANSWERED | FAILED | WAITING
"""States in which the agent stopped working on a task (for now or for good)."""
POLL_S: Final = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0)
"""Delays between ``GetTask`` calls while following a task (the last one repeats)."""


class RemoteFailure(Exception):
    """A call to the remote agent that did not get an answer.

    Args:
        message: What happened (redacted).
        delivered: Whether the message may have reached the agent (``False``: certainly
            not, so sending it again is safe).
        retryable: Whether trying again later may help.
    """

    def __init__(self, message: str, *, delivered: bool, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.delivered = delivered
        self.retryable = retryable


class AnswerTooLarge(Exception):
    """The agent sent more than the member's answers may hold."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the agent's answer is over {limit} bytes")
        self.limit = limit


def _bounded_transport(limit: int) -> httpx.AsyncBaseTransport:
    import httpx

    class Capped(httpx.AsyncByteStream):
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.seen = 0

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self.inner:
                self.seen += len(chunk)
                if self.seen > limit:
                    raise AnswerTooLarge(limit)
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    class Bounded(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response = await self.inner.handle_async_request(request)
            return httpx.Response(response.status_code, headers=response.headers,
                                  stream=Capped(response.stream),
                                  extensions=response.extensions)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Bounded()


def card_problems(card: dict[str, Any]) -> list[str]:
    """What is wrong with an agent card (JSON form) for a council member."""
    problems = []
    if not str(card.get("name", "")).strip():
        problems.append("it has no name")
    if not card.get("skills"):
        problems.append("it lists no skills")
    interfaces = card.get("supportedInterfaces") or []
    if not any(i.get("protocolBinding") == "JSONRPC" for i in interfaces
               if isinstance(i, dict)):
        problems.append("it offers no JSONRPC interface (wopdsl speaks A2A over JSON-RPC)")
    modes = [*card.get("defaultOutputModes", []), *card.get("defaultInputModes", [])]
    if modes and not any(m in ("text/plain", "text", "application/json") or
                         str(m).startswith("text/") for m in modes):
        problems.append("it neither reads nor writes text")
    return problems


class Remote:
    """One member's connection to its agent (see the module docstring).

    Args:
        member: The member id (for messages).
        url: The agent's base URL.
        headers: Header name → value (secrets: redacted from everything said).
        max_bytes: The most a response (a card, an answer, a whole stream) may hold.
    """

    def __init__(self, member: str, url: str, headers: dict[str, str], max_bytes: int) -> None:
        from wopdsl.agents.tools.mcp_wire import secrets_redactor

        self.member = member
        self.url = url
        self.headers = headers
        self.max_bytes = max_bytes
        self.redact: Redactor = secrets_redactor(headers.values(), url)
        self.card: dict[str, Any] = {}
        self.streaming = False
        self._http: httpx.AsyncClient | None = None
        self._client: Any = None

    async def open(self) -> None:
        """Read the card and make the SDK's client (once).

        Raises:
            RemoteFailure: the card cannot be read or has no interface wopdsl speaks.
        """
        if self._client is not None:
            return
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
        from google.protobuf.json_format import MessageToDict

        http = httpx.AsyncClient(headers=self.headers, transport=_bounded_transport(
            self.max_bytes), timeout=httpx.Timeout(30.0, read=300.0))
        try:
            card = await self._guard(A2ACardResolver(http, self.url).get_agent_card(),
                                     delivered=False, what="read its agent card")
            self.card = MessageToDict(card)
            self.streaming = bool(card.capabilities.streaming)
            self._client = ClientFactory(ClientConfig(httpx_client=http,
                                                      streaming=self.streaming)).create(card)
        except ValueError as exc:  # no transport in common
            await http.aclose()
            raise RemoteFailure(self.redact(f"{self.member}'s agent at {self.url}: {exc}"),
                                delivered=False, retryable=False) from None
        except BaseException:
            await http.aclose()
            raise
        self._http = http

    async def close(self) -> None:
        """Close the connection."""
        client, http, self._client, self._http = self._client, self._http, None, None
        if client is not None:
            await client.close()
        if http is not None:
            await http.aclose()

    async def send(self, message: dict[str, Any], on_task: Callable[[str], Awaitable[None]],
                   on_text: Callable[[str], None] | None) -> dict[str, Any]:
        """Send ``message``; return the task (or message) the agent settled on (JSON form).

        ``on_task`` is awaited with the task id as soon as the agent names it (before the
        answer is awaited); ``on_text`` gets streamed text as it arrives.
        """
        from a2a.types import Message, SendMessageConfiguration, SendMessageRequest
        from google.protobuf.json_format import MessageToDict, ParseDict

        request = SendMessageRequest(
            message=ParseDict(message, Message()),
            configuration=SendMessageConfiguration(return_immediately=not self.streaming))
        task: dict[str, Any] = {}
        named = ""

        async def consume() -> None:
            nonlocal task, named
            async for response in self._client.send_message(request):
                event = MessageToDict(response)
                task = _fold(task, event, on_text)
                if not named and task.get("id"):
                    named = str(task["id"])
                    await on_task(named)
                if "message" in event or state_name(
                        (task.get("status") or {}).get("state")) in SETTLED:
                    return

        await self._guard(consume(), delivered=True, what="send the message")
        if "parts" in task or state_name((task.get("status") or {}).get("state")) in SETTLED:
            return task
        if not named:
            raise RemoteFailure(f"{self.member}'s agent ended its answer without a task or a "
                                "message", delivered=True, retryable=False)
        return await self.follow(named)

    async def follow(self, task_id: str) -> dict[str, Any]:
        """Wait, with ``GetTask``, until the agent stops working on ``task_id``; return it."""
        from a2a.types import GetTaskRequest
        from google.protobuf.json_format import MessageToDict

        for index in range(1 << 62):
            task = MessageToDict(await self._guard(
                self._client.get_task(GetTaskRequest(id=task_id, history_length=0)),
                delivered=True, what=f"read task {task_id}"))
            if state_name((task.get("status") or {}).get("state")) in SETTLED:
                return _trim(task)
            await asyncio.sleep(POLL_S[min(index, len(POLL_S) - 1)])
        raise AssertionError("unreachable")  # pragma: no cover

    async def delivered(self, task_id: str, message_id: str) -> bool:
        """Whether a message to the waiting task ``task_id`` reached it.

        A task that no longer waits for input went on with it; one that still waits has it
        in its history when it got it (and asks again).
        """
        from a2a.types import GetTaskRequest
        from google.protobuf.json_format import MessageToDict

        task = MessageToDict(await self._guard(
            self._client.get_task(GetTaskRequest(id=task_id)), delivered=True,
            what=f"read task {task_id}"))
        if state_name((task.get("status") or {}).get("state")) not in WAITING:
            return True
        return any(m.get("messageId") == message_id for m in task.get("history") or ())

    async def find(self, context_id: str, message_id: str) -> str | None:
        """The task the message ``message_id`` started in ``context_id`` (``None``: none)."""
        from a2a.types import ListTasksRequest
        from google.protobuf.json_format import MessageToDict

        listed = MessageToDict(await self._guard(
            self._client.list_tasks(ListTasksRequest(context_id=context_id)),
            delivered=True, what="list its tasks"))
        for task in listed.get("tasks") or ():
            if any(m.get("messageId") == message_id for m in task.get("history") or ()):
                return str(task.get("id", "")) or None
        return None

    async def _guard(self, call: Awaitable[Any], *, delivered: bool, what: str) -> Any:
        """Await ``call``; turn what the SDK and httpx raise into :class:`RemoteFailure`."""
        import httpx
        from a2a.utils.errors import A2AError

        try:
            return await call
        except AnswerTooLarge as exc:
            raise RemoteFailure(f"{self.member}'s agent sent more than {exc.limit} bytes "
                                f"when asked to {what} (max_output_bytes bounds it)",
                                delivered=delivered, retryable=False) from None
        except (A2AError, httpx.HTTPError) as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            if isinstance(cause, AnswerTooLarge):
                raise RemoteFailure(f"{self.member}'s agent sent more than {cause.limit} "
                                    f"bytes when asked to {what} (max_output_bytes bounds it)",
                                    delivered=delivered, retryable=False) from None
            refused = isinstance(cause, httpx.ConnectError)
            status = getattr(getattr(cause, "response", None), "status_code", None)
            retryable = refused or isinstance(cause, httpx.TransportError) or \
                status in (429, 502, 503, 504)
            detail = str(exc) or type(exc).__name__
            raise RemoteFailure(self.redact(
                f"{self.member}'s agent at {self.url} could not {what}: {detail}"),
                delivered=delivered and not refused, retryable=retryable) from None


def _fold(task: dict[str, Any], event: dict[str, Any],
          on_text: Callable[[str], None] | None) -> dict[str, Any]:
    """Apply one streamed response (JSON form) to the task known so far."""
    if "task" in event:
        return _trim(event["task"])
    if "message" in event:
        return dict(event["message"])
    if "statusUpdate" in event:
        update = event["statusUpdate"]
        task = {**task, "id": task.get("id") or update.get("taskId", ""),
                "status": update.get("status") or {}}
        return task
    if "artifactUpdate" in event:
        update = event["artifactUpdate"]
        artifact = update.get("artifact") or {}
        parts = [p for p in artifact.get("parts") or () if isinstance(p, dict)]
        piece = "".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str))
        if on_text is not None and piece:
            on_text(piece)
        artifacts = [dict(a) for a in task.get("artifacts") or ()]
        for kept in artifacts:
            if kept.get("artifactId") == artifact.get("artifactId"):
                kept["parts"] = (_appended(kept.get("parts") or [], parts)
                                 if update.get("append") else parts)
                break
        else:
            artifacts.append(artifact)
        return {**task, "id": task.get("id") or update.get("taskId", ""),
                "artifacts": artifacts}
    return task


def _appended(parts: list[dict[str, Any]], more: list[dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """``parts`` with ``more`` appended: a text chunk continues the text part before it."""
    out = [dict(p) for p in parts]
    for part in more:
        if out and isinstance(out[-1].get("text"), str) and isinstance(part.get("text"), str):
            out[-1]["text"] += part["text"]
        else:
            out.append(dict(part))
    return out


def _trim(task: dict[str, Any]) -> dict[str, Any]:
    """A task without its history (what is kept: the answer, not the conversation)."""
    return {k: v for k, v in task.items() if k != "history"}
