"""What a failed model call means: retried or not, and a message that says where and why.

Messages name the profile, and for connection failures the base URL tried and where it came
from (the profile, ``$OPENAI_BASE_URL``, the run's record, or unset); the server's own
message is redacted of the key. A connection that cannot be made at all (refused, unknown
host) fails at once — retrying a server that is not there only delays the answer.
"""

from __future__ import annotations

import email.utils
import ssl
import time
from typing import Any

from wopdsl.agents.llm.endpoint import Endpoint
from wopdsl.agents.llm.redact import Redactor

__all__ = ["CallFailure", "failure_of", "is_stale_connection"]

_MAX_RETRY_AFTER_S = 120.0
_CONNECT = frozenset({"ConnectError", "ConnectTimeout", "gaierror", "ConnectionRefusedError"})
"""Exception types (httpx's, the socket's) of a connection that could not be made."""
_STALE = frozenset({"RemoteProtocolError", "ReadError", "WriteError", "ConnectionResetError",
                    "BrokenPipeError"})
"""Exception types of a connection lost before or while an answer came."""


class CallFailure(Exception):
    """A failed call: ``retryable`` for 429/5xx/timeouts/dropped connections.

    Attributes:
        status: The HTTP status, when the server answered.
        retry_after_s: The server's ``Retry-After`` in seconds, when it sent one.
        code: The turn's error code when it fails on this (``MODEL_ERROR``, or
            ``RESULT_INVALID`` for an answer over ``max_output_bytes``).
    """

    def __init__(self, message: str, *, retryable: bool, status: int | None = None,
                 retry_after_s: float | None = None, code: str = "MODEL_ERROR") -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s
        self.code = code


def _causes(exc: BaseException) -> list[BaseException]:
    seen: set[int] = set()
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def is_stale_connection(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection lost without an answer: sent again at once.

    That is what a reused keep-alive connection the server had closed looks like.
    """
    names = {type(e).__name__ for e in _causes(exc)}
    return bool(names & _STALE) and not names & _CONNECT


def failure_of(exc: Exception, profile: str, key_env: str, endpoint: Endpoint,
               redact: Redactor, *, no_key: bool) -> CallFailure:
    """The :class:`CallFailure` for an exception of the ``openai`` client."""
    import openai

    where = f"model profile '{profile}'"
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = redact(_server_message(exc))
        retryable = status == 429 or status >= 500 or status == 408
        message = f"{where}: HTTP {status} from the model server: {detail}"
        if status in (401, 403) and no_key:
            message += f" (environment variable {key_env} is not set)"
        if status == 404:
            message += f" (at {endpoint.describe()})"
        return CallFailure(message, retryable=retryable, status=status,
                           retry_after_s=_retry_after(exc.response.headers))
    if isinstance(exc, openai.APITimeoutError):
        return CallFailure(f"{where}: the request to {endpoint.describe()} timed out",
                           retryable=True)
    chain = _causes(exc)
    untrusted = next((e for e in chain if isinstance(e, ssl.SSLCertVerificationError)), None)
    if untrusted is not None:  # Not retried: the certificate stays the same.
        reason = untrusted.verify_message or "certificate verify failed"
        return CallFailure(f"{where}: the TLS certificate is not trusted ({reason}) at "
                           f"{endpoint.describe()}; point SSL_CERT_FILE at the CA bundle that "
                           "signed it", retryable=False)
    names = [type(e).__name__ for e in chain]
    if set(names) & _CONNECT:
        reason = next((redact(str(e)) for e in chain[1:] if str(e)), "")[:200]
        return CallFailure(f"{where}: cannot connect to {endpoint.describe()}"
                           f"{f' ({reason})' if reason else ''}; start the model server, or "
                           "point the profile's base_url or OPENAI_BASE_URL at it",
                           retryable=False)
    if set(names) & _STALE:
        cause = next(n for n in names if n in _STALE)
        return CallFailure(f"{where}: the connection to {endpoint.describe()} dropped "
                           f"({cause})", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        cause_name = names[1] if len(names) > 1 else type(exc).__name__
        return CallFailure(f"{where}: connection to {endpoint.describe()} failed or dropped "
                           f"({cause_name})", retryable=True)
    if isinstance(exc, openai.OpenAIError):
        return CallFailure(f"{where}: {redact(str(exc))}", retryable=False)
    return CallFailure(f"{where}: {type(exc).__name__}: {redact(str(exc))}"[:1000],
                       retryable=False)


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
