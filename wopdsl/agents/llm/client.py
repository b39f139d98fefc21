"""One model profile's connection: the official ``openai`` async client, used one call at a time.

``openai`` is imported on the first call, never at ``import wopdsl`` or ``compile()``, and
that first import (with the TLS context it needs) runs in a worker thread: the event loop of
a host serving other runs never stalls on it. The client's own retries are off
(``max_retries=0``): the engine retries and records each retry — except a request that a
reused keep-alive connection lost before any answer came, which is sent again at once.

Every call is bounded: a total deadline (``request_timeout_ms``, default
:data:`DEFAULT_CALL_TIMEOUT_MS`, streaming included), ``max_output_tokens`` counted on our side
while streaming (a server that ignores ``max_tokens`` is cut off), and the streamed bytes
counted against the member's ``max_output_bytes``. The API key is read from the profile's
environment variable when a call is made and goes only into the ``Authorization`` header:
everything the server sends back is redacted of it (:mod:`wopdsl.agents.llm.redact`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from wopdsl.agents.llm._tool_calls import StreamedCalls, ToolCall, calls_of
from wopdsl.agents.llm.answers import BOUND_KEYWORDS, strip_bounds
from wopdsl.agents.llm.endpoint import Endpoint
from wopdsl.agents.llm.failures import CallFailure, failure_of, is_stale_connection
from wopdsl.agents.llm.redact import Redactor, redactor
from wopdsl.agents.llm.tap import CALL_SITE, ModelTap
from wopdsl.agents.llm.tls import tls_context, tls_context_ready
from wopdsl.model.llm import ModelProfile

__all__ = ["DEFAULT_CALL_TIMEOUT_MS", "CallFailure", "Completion", "ProfileClient"]

DEFAULT_CALL_TIMEOUT_MS = 300_000
"""A call's total deadline when the profile sets no ``request_timeout_ms`` (5 minutes)."""

_NO_KEY = "not-set"
"""Sent when the key variable is unset (local servers need none; others answer 401)."""
_MAX_MODEL_NAME = 256
_CONNECT_TIMEOUT_S = 10.0
"""A server that does not even accept the connection within this is not there."""


@dataclass(frozen=True, slots=True)
class Completion:
    """What one successful call returned (redacted of the key)."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    model: str
    """The model the server says answered (the requested name when it says none)."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The functions the model asked to call (DESIGN.md §20), in order."""


class ProfileClient:
    """Calls one ``[models.NAME]`` profile; shared by every member that names it.

    Args:
        name: The profile's name (for messages).
        profile: The profile.
    """

    def __init__(self, name: str, profile: ModelProfile) -> None:
        self.name = name
        self.profile = profile
        self.deadline_s = (profile.request_timeout_ms or DEFAULT_CALL_TIMEOUT_MS) / 1000
        self.bounded_schema = True
        """Whether requests keep the schema's bounds (``maxItems`` …); off once the server
        refused them (some strict modes do): the answers are still checked against them."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._clients: dict[tuple[str | None, str], Any] = {}
        self._users = 0
        self.tap: ModelTap | None = None
        """Tests only: send calls where the tap says, with ``wop-*`` headers (see
        :mod:`wopdsl.agents.llm.tap`). ``None`` (always, outside tests): the profile's server."""

    # -- lifetime: one set of connections per event loop, closed when its last run stops ---

    def _bind(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # A new loop (a new asyncio.run): clients and limits of the old one are unusable.
            self._loop = loop
            self._semaphore = asyncio.Semaphore(self.profile.max_concurrency)
            self._clients = {}
            self._users = 0

    async def acquire(self) -> None:
        """A run that may call this profile starts (see :meth:`release`)."""
        self._bind()
        self._users += 1

    async def release(self) -> None:
        """A run stops; the last one closes the HTTP connections."""
        if self._loop is not asyncio.get_running_loop():
            return
        self._users = max(0, self._users - 1)
        if self._users == 0:
            clients, self._clients = list(self._clients.values()), {}
            for client in clients:
                await client.close()

    async def _client(self, endpoint: Endpoint, key: str) -> Any:
        if not tls_context_ready():
            # The first call of the process: import openai (~0.5 s) and load the CA bundle
            # off the event loop.
            await asyncio.to_thread(_prepare)
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient, Timeout

        url = endpoint.url
        if self.tap is not None:
            url = self.tap.base_url(self.name, url)
        cache_key = (url, key)
        client = self._clients.get(cache_key)
        if client is None:
            timeout = Timeout(self.deadline_s, connect=min(self.deadline_s, _CONNECT_TIMEOUT_S))
            client = AsyncOpenAI(api_key=key, base_url=url, max_retries=0,
                                 timeout=timeout,
                                 http_client=DefaultAsyncHttpxClient(verify=tls_context()))
            self._clients[cache_key] = client
        return client

    def redact(self, value: Any) -> Any:
        """A JSON value with the profile's key (in any form :mod:`.redact` knows) removed.

        For what a model's answer decoded to: a JSON escape can spell the key.
        """
        key = os.environ.get(self.profile.api_key_env)
        return redactor(key).data(value) if key and key != _NO_KEY else value

    # -- one call --------------------------------------------------------------------------

    async def complete(self, request: dict[str, Any],
                       on_text: Callable[[str], None] | None = None, *,
                       endpoint: Endpoint, max_bytes: int,
                       on_sent: Callable[[], None] | None = None) -> Completion:
        """Send one chat completion (streamed when the request says so).

        Args:
            request: The keyword arguments of ``chat.completions.create``.
            on_text: Called with each streamed piece of text as it arrives (redacted).
            endpoint: Where to send it.
            max_bytes: Most bytes of text the answer may have (``max_output_bytes``).
            on_sent: Called once the request is on its way (a concurrency slot taken).

        Raises:
            CallFailure: the call failed (its message names the endpoint, never the key).
        """
        self._bind()
        key = os.environ.get(self.profile.api_key_env) or _NO_KEY
        redact = redactor(key if key != _NO_KEY else None)
        assert self._semaphore is not None
        async with self._semaphore:
            if on_sent is not None:
                on_sent()
            try:
                site = CALL_SITE.get()
                if self.tap is not None and site is not None:
                    request = {**request, "extra_headers": site.headers()}
                async with asyncio.timeout(self.deadline_s):
                    return await self._send(request, on_text, endpoint, key, redact,
                                            max_bytes)
            except CallFailure:
                raise
            except TimeoutError:
                raise CallFailure(f"model profile '{self.name}': the call to "
                                  f"{endpoint.describe()} took longer than "
                                  f"{self.deadline_s:g} s (request_timeout_ms)",
                                  retryable=True) from None
            except Exception as exc:
                raise failure_of(exc, self.name, self.profile.api_key_env, endpoint, redact,
                                 no_key=key == _NO_KEY) from None

    async def _send(self, request: dict[str, Any], on_text: Callable[[str], None] | None,
                    endpoint: Endpoint, key: str, redact: Redactor,
                    max_bytes: int) -> Completion:
        client = await self._client(endpoint, key)
        for again in (True, True, False):
            body = request if self.bounded_schema else _unbounded(request)
            progress: list[str] = []
            try:
                if body.get("stream"):
                    return await self._stream(client, body, on_text, redact, max_bytes,
                                              progress)
                response = await client.chat.completions.create(**body)
                return _completion(response, body["model"], redact, max_bytes)
            except Exception as exc:
                if again and not progress and is_stale_connection(exc):
                    continue  # a keep-alive connection the server had closed: send again
                if again and self.bounded_schema and _refuses_bounds(exc, body):
                    self.bounded_schema = False
                    continue
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _stream(self, client: Any, request: dict[str, Any],
                      on_text: Callable[[str], None] | None, redact: Redactor,
                      max_bytes: int, progress: list[str]) -> Completion:
        scrub = redact.stream()
        calls = StreamedCalls()  # tools (DESIGN.md §20)
        finish: str | None = None
        usage: Any = None
        model = request["model"]
        pieces = size = 0
        max_tokens = request.get("max_tokens") or 0
        stream = await client.chat.completions.create(**request)
        try:
            async for chunk in stream:
                model = getattr(chunk, "model", None) or model
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                for choice in (chunk.choices or [])[:1]:
                    piece = choice.delta.content if choice.delta is not None else None
                    if choice.delta is not None:
                        size += calls.add(getattr(choice.delta, "tool_calls", None))
                        if size > max_bytes:
                            raise CallFailure(
                                f"the answer streamed more than max_output_bytes "
                                f"({max_bytes} bytes)", retryable=False, code="RESULT_INVALID")
                    if piece:
                        pieces += 1
                        size += len(piece.encode("utf-8", "surrogatepass"))
                        if size > max_bytes:
                            raise CallFailure(
                                f"the answer streamed more than max_output_bytes "
                                f"({max_bytes} bytes)", retryable=False, code="RESULT_INVALID")
                        shown = scrub.feed(piece)
                        progress.append(shown)
                        if on_text is not None and shown:
                            on_text(shown)
                    if choice.finish_reason:
                        finish = choice.finish_reason
                if max_tokens and pieces > max_tokens and finish is None:
                    finish = "length"  # the server ignores max_tokens: cut it off here
                    break
        finally:
            await stream.close()
        if finish is None:
            raise CallFailure("the stream ended before the answer was complete",
                              retryable=True)
        rest = scrub.end()
        progress.append(rest)
        if on_text is not None and rest:
            on_text(rest)
        return Completion("".join(progress), _tokens(usage, "prompt_tokens"),
                          _tokens(usage, "completion_tokens"), finish,
                          _model_name(model, request["model"], redact), calls.calls())


def _prepare() -> None:
    import openai  # noqa: F401  (imported for its side effect: loaded once, in a thread)

    tls_context()


def _unbounded(request: dict[str, Any]) -> dict[str, Any]:
    form = request.get("response_format") or {}
    if form.get("type") != "json_schema":
        return request
    spec = form["json_schema"]
    return {**request, "response_format": {**form, "json_schema": {
        **spec, "schema": strip_bounds(spec["schema"])}}}


def _refuses_bounds(exc: Exception, request: dict[str, Any]) -> bool:
    """A 400 that names one of the schema's bounding keywords (a strict mode refusing it)."""
    if getattr(exc, "status_code", None) != 400 or "response_format" not in request:
        return False
    text = str(getattr(exc, "body", None) or "") + str(exc)
    return any(word in text for word in BOUND_KEYWORDS)


def _completion(response: Any, model: str, redact: Redactor, max_bytes: int) -> Completion:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise CallFailure("the model server answered without a choice", retryable=True)
    choice = choices[0]
    message = choice.message
    text = message.content or ""
    calls = calls_of(message)
    size = sum(len(call.name) + len(call.arguments.encode("utf-8", "surrogatepass"))
               for call in calls)
    if len(text.encode("utf-8", "surrogatepass")) + size > max_bytes:
        raise CallFailure(f"the answer has more than max_output_bytes ({max_bytes} bytes)",
                          retryable=False, code="RESULT_INVALID")
    refusal = getattr(message, "refusal", None)
    usage = getattr(response, "usage", None)
    completion = Completion(redact(text), _tokens(usage, "prompt_tokens"),
                            _tokens(usage, "completion_tokens"), choice.finish_reason,
                            _model_name(getattr(response, "model", None), model, redact),
                            calls)
    if refusal and not text:
        return replace(completion, finish_reason="refusal")
    return completion


def _model_name(reported: Any, requested: str, redact: Redactor) -> str:
    if not isinstance(reported, str) or not reported.strip():
        return requested
    return redact(reported)[:_MAX_MODEL_NAME]


def _tokens(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None) if usage is not None else None
    # A count beyond belief is the agent's to replace, with a note (agent._usable).
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
        else None
