"""One model profile's connection: the official ``openai`` async client, used one call at a time.

``openai`` is imported on the first call, never at ``import wopdsl`` or ``compile()``. Its own
retries are off (``max_retries=0``): the engine retries and records each retry. The API key
is read from the profile's environment variable when a call is made and is never put in an
error, an event or a log line (every message from the server is scrubbed of it).
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wopdsl.agents.llm._tool_calls import StreamedCalls, ToolCall, calls_of
from wopdsl.model.llm import ModelProfile

__all__ = ["CallFailure", "Completion", "ProfileClient"]

_NO_KEY = "not-set"
"""Sent when the key variable is unset (local servers need none; others answer 401)."""

_MAX_RETRY_AFTER_S = 120.0


def _tls_context() -> ssl.SSLContext:
    """The process's TLS context for the CA settings in effect, built as httpx builds its own.

    An ``AsyncOpenAI`` made without one loads the CA bundle again (about 20 ms), and a run
    makes its clients afresh (they are closed when the run stops), so the context is built
    once per ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` pair and reused. Those variables are
    honoured, as httpx does (read at each call, so changing them takes effect for the next
    client); otherwise certifi's bundle, httpx's default.
    """
    return _context_for(os.environ.get("SSL_CERT_FILE") or None,
                        os.environ.get("SSL_CERT_DIR") or None)


@functools.cache
def _context_for(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    if not cafile and not capath:
        try:
            import certifi
        except ImportError:  # pragma: no cover - httpx depends on certifi
            return ssl.create_default_context()
        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile, capath=capath)


@dataclass(frozen=True, slots=True)
class Completion:
    """What one successful call returned."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    finish_reason: str | None
    model: str
    tool_calls: tuple[ToolCall, ...] = ()
    """The functions the model asked to call (DESIGN.md §20), in order."""


class CallFailure(Exception):
    """A failed call: ``retryable`` for 429/5xx/timeouts/dropped connections.

    Attributes:
        status: The HTTP status, when the server answered.
        retry_after_s: The server's ``Retry-After`` in seconds, when it sent one.
    """

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s


class ProfileClient:
    """Calls one ``[models.NAME]`` profile; shared by every member that names it.

    Args:
        name: The profile's name (for messages).
        profile: The profile.
    """

    def __init__(self, name: str, profile: ModelProfile) -> None:
        self.name = name
        self.profile = profile
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._clients: dict[tuple[str | None, str], Any] = {}
        self._users = 0

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

    def _client(self, key: str) -> Any:
        from openai import AsyncOpenAI, DefaultAsyncHttpxClient  # the extra, on first call

        base_url = self.profile.base_url or os.environ.get("OPENAI_BASE_URL") or None
        cache_key = (base_url, key)
        client = self._clients.get(cache_key)
        if client is None:
            timeout = (self.profile.request_timeout_ms / 1000
                       if self.profile.request_timeout_ms else 600.0)
            client = AsyncOpenAI(api_key=key, base_url=base_url, max_retries=0,
                                 timeout=timeout,
                                 http_client=DefaultAsyncHttpxClient(verify=_tls_context()))
            self._clients[cache_key] = client
        return client

    # -- one call --------------------------------------------------------------------------

    async def complete(self, request: dict[str, Any],
                       on_text: Callable[[str], None] | None = None) -> Completion:
        """Send one chat completion (streamed when the request says so).

        Args:
            request: The keyword arguments of ``chat.completions.create``.
            on_text: Called with each streamed piece of text as it arrives.

        Raises:
            CallFailure: the call failed (scrubbed of the key).
        """
        self._bind()
        key = os.environ.get(self.profile.api_key_env) or _NO_KEY
        assert self._semaphore is not None
        async with self._semaphore:
            try:
                client = self._client(key)
                if request.get("stream"):
                    return await self._stream(client, request, on_text)
                response = await client.chat.completions.create(**request)
                return _completion(response, request["model"])
            except CallFailure:
                raise
            except Exception as exc:
                raise self._failure(exc, key) from None

    async def _stream(self, client: Any, request: dict[str, Any],
                      on_text: Callable[[str], None] | None) -> Completion:
        parts: list[str] = []
        calls = StreamedCalls()  # tools (DESIGN.md §20)
        finish: str | None = None
        usage: Any = None
        model = request["model"]
        stream = await client.chat.completions.create(**request)
        try:
            async for chunk in stream:
                model = getattr(chunk, "model", None) or model
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                for choice in chunk.choices or []:
                    piece = choice.delta.content if choice.delta is not None else None
                    if choice.delta is not None:
                        calls.add(getattr(choice.delta, "tool_calls", None))
                    if piece:
                        parts.append(piece)
                        if on_text is not None:
                            on_text(piece)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        finally:
            await stream.close()
        if finish is None:
            raise CallFailure("the stream ended before the answer was complete",
                              retryable=True)
        return Completion("".join(parts), _tokens(usage, "prompt_tokens"),
                          _tokens(usage, "completion_tokens"), finish, model, calls.calls())

    def _failure(self, exc: Exception, key: str) -> CallFailure:
        import openai

        def scrub(text: str) -> str:
            return text.replace(key, "[REDACTED]") if key and key != _NO_KEY else text

        where = f"model profile '{self.name}'"
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = scrub(_server_message(exc))
            retryable = status == 429 or status >= 500 or status == 408
            message = f"{where}: HTTP {status} from the model server: {detail}"
            if status in (401, 403) and key == _NO_KEY:
                message += f" (environment variable {self.profile.api_key_env} is not set)"
            return CallFailure(message, retryable=retryable, status=status,
                               retry_after_s=_retry_after(exc.response.headers))
        if isinstance(exc, openai.APITimeoutError):
            return CallFailure(f"{where}: the request timed out", retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            untrusted = _cert_error(exc)
            if untrusted is not None:  # Not retried: the certificate stays the same.
                return CallFailure(f"{where}: the server's TLS certificate is not trusted "
                                   f"({untrusted}); point SSL_CERT_FILE at the CA bundle "
                                   "that signed it", retryable=False)
            cause = exc.__cause__ or exc.__context__
            reason = f" ({type(cause).__name__})" if cause is not None else ""
            return CallFailure(f"{where}: connection failed or dropped{reason}",
                               retryable=True)
        if isinstance(exc, openai.OpenAIError):
            return CallFailure(f"{where}: {scrub(str(exc))}", retryable=False)
        name = type(exc).__name__
        if name in {"RemoteProtocolError", "ReadError", "ReadTimeout"}:  # httpx, mid-stream
            return CallFailure(f"{where}: the connection dropped mid-answer ({name})",
                               retryable=True)
        return CallFailure(f"{where}: {name}: {scrub(str(exc))}", retryable=False)


def _completion(response: Any, model: str) -> Completion:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise CallFailure("the model server answered without a choice", retryable=True)
    choice = choices[0]
    message = choice.message
    text = message.content or ""
    refusal = getattr(message, "refusal", None)
    if refusal and not text:
        return Completion("", _tokens(response.usage, "prompt_tokens"),
                          _tokens(response.usage, "completion_tokens"), "refusal",
                          response.model or model)
    return Completion(text, _tokens(response.usage, "prompt_tokens"),
                      _tokens(response.usage, "completion_tokens"), choice.finish_reason,
                      response.model or model, calls_of(message))


def _tokens(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None) if usage is not None else None
    return value if isinstance(value, int) and value >= 0 else None


def _server_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:500]
        if isinstance(body.get("message"), str):
            return str(body["message"])[:500]
    return str(getattr(exc, "message", "") or type(exc).__name__)[:500]


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return min(_MAX_RETRY_AFTER_S, max(0.0, float(millis) / 1000))
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return min(_MAX_RETRY_AFTER_S, max(0.0, float(value)))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return min(_MAX_RETRY_AFTER_S, max(0.0, parsed.timestamp() - time.time()))


def _cert_error(exc: BaseException) -> str | None:
    """The verification message of a certificate failure behind ``exc``, if that is its cause."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return current.verify_message or "certificate verify failed"
        current = current.__cause__ or current.__context__
    return None
