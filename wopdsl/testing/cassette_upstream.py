"""Recording: one call passed on to the real model server, its answer written down.

The cassette server (:mod:`wopdsl.testing.cassette`) calls :func:`forward` for each call it
receives while recording. The request goes to the profile's real API root with the client's
own headers (its ``Authorization`` included) minus the ``wop-*`` ones — or, when the API root
carries ``user:password@``, HTTP Basic credentials instead, as the ``openai`` client sends
them; the answer is read whole — a stream is assembled into one ``chat.completion`` — and
returned for the cassette, with the key and the password scrubbed from it (in every form the
event log's redaction knows: reversed, upper case, base64 …) and no header kept but
``Retry-After``. Messages name the API root without its user info.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from wopdsl.agents.llm.endpoint import shown
from wopdsl.agents.llm.redact import Redactor
from wopdsl.testing.chat_wire import assemble, parse_sse

__all__ = ["REDACTED", "forward", "scrub", "upstream_secrets"]

REDACTED = "[REDACTED]"
"""What a key that appears in a recorded body is replaced by."""

_DROPPED = {"host", "content-length", "connection", "keep-alive", "transfer-encoding",
            "accept-encoding", "te", "upgrade", "proxy-authorization"}
_KEPT_ANSWER_HEADERS = ("retry-after", "retry-after-ms")
_TIMEOUT_S = 600.0


def scrub(data: Any, *secrets: str) -> Any:
    """``data`` with every form of each secret in its strings replaced (keys too).

    The forms the event log's redaction knows (:mod:`wopdsl.agents.llm.redact`): verbatim,
    reversed, upper and lower case, base64. Values shorter than 8 characters are no keys
    (what wopdsl sends when the key variable is unset, ``not-set``, among them) and are left
    alone: ordinary words are never replaced.
    """
    kept = [secret for secret in secrets if len(secret) >= 8]
    return Redactor(*kept).data(data) if kept else data


def upstream_secrets(upstream: str | None) -> list[str]:
    """The secrets an API root carries (``user:password@``): the password, the pair, its base64."""
    return _credentials(upstream)[2] if upstream else []


def _credentials(upstream: str) -> tuple[str, str | None, list[str]]:
    """The API root without user info, the Basic credentials it carried, and their secrets."""
    parts = urlsplit(upstream)
    if parts.username is None and parts.password is None:
        return upstream, None, []
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    pair = f"{user}:{password}"
    basic = base64.b64encode(pair.encode()).decode()
    return bare, f"Basic {basic}", [s for s in (password, pair, basic) if s]


def _context() -> ssl.SSLContext:
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile is None and capath is None:
        try:
            import certifi
        except ImportError:
            return ssl.create_default_context()
        cafile = certifi.where()
    return ssl.create_default_context(cafile=cafile, capath=capath)


def forward(upstream: str, request: Mapping[str, Any], headers: Mapping[str, str],
            secret: str) -> tuple[dict[str, Any], str | None]:
    """Send one recorded-to-be request to ``upstream`` and return ``(response, failure)``.

    ``response`` is ``{status, streamed, body, headers?}`` as a cassette keeps it (scrubbed
    of ``secret``); ``failure`` says why the model could not be reached (``response`` is
    then a 502 to give the client), else ``None``.
    """
    root, basic, secrets = _credentials(upstream)
    secrets = [secret, *secrets]
    url = root.rstrip("/") + str(request["path"])
    sent = {name: value for name, value in headers.items()
            if name.lower() not in _DROPPED and not name.lower().startswith("wop-")}
    if basic is not None:  # what the openai client sends for a base_url with user:password@
        sent = {n: v for n, v in sent.items() if n.lower() != "authorization"}
        sent["Authorization"] = basic
    data = json.dumps(request["body"]).encode()
    call = urllib.request.Request(url, data=data, method="POST", headers=sent)
    try:
        try:
            with urllib.request.urlopen(call, timeout=_TIMEOUT_S, context=_context()) as answer:
                status, raw, kind = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as exc:
            status, raw, kind = exc.code, exc.read(), exc.headers
    except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError is an OSError
        reason = scrub(str(getattr(exc, "reason", exc)) or type(exc).__name__, *secrets)
        failure = f"no answer from the model server at {shown(url)} ({reason})"
        return {"status": 502, "body": {"error": {"message": failure}}}, failure
    streamed = "text/event-stream" in (kind.get("content-type") or "")
    if streamed:
        body: Any = assemble(parse_sse(raw))
    else:
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
    response: dict[str, Any] = {"status": status, "streamed": streamed,
                                "body": scrub(body, *secrets)}
    kept = {name: kind[name] for name in _KEPT_ANSWER_HEADERS if kind.get(name)}
    if kept and status != 200:
        response["headers"] = kept
    return response, None
