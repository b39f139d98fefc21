"""Recording: one call passed on to the real model server, its answer written down.

The cassette server (:mod:`wopdsl.testing.cassette`) calls :func:`forward` for each call it
receives while recording. The request goes to the profile's real API root with the client's
own headers (its ``Authorization`` included) minus the ``wop-*`` ones; the answer is read
whole — a stream is assembled into one ``chat.completion`` — and returned for the cassette,
with the key scrubbed from it and no header kept but ``Retry-After``.
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from wopdsl.testing.chat_wire import assemble, parse_sse

__all__ = ["REDACTED", "forward", "scrub"]

REDACTED = "[REDACTED]"
"""What a key that appears in a recorded body is replaced by."""

_DROPPED = {"host", "content-length", "connection", "keep-alive", "transfer-encoding",
            "accept-encoding", "te", "upgrade", "proxy-authorization"}
_KEPT_ANSWER_HEADERS = ("retry-after", "retry-after-ms")
_TIMEOUT_S = 600.0


def scrub(data: Any, secret: str) -> Any:
    """``data`` with every occurrence of ``secret`` in its strings replaced (keys too).

    Values shorter than 8 characters are no keys (what wopdsl sends when the key variable is
    unset, ``not-set``, among them) and are left alone: ordinary words are never replaced.
    """
    if len(secret) < 8:
        return data
    if isinstance(data, str):
        return data.replace(secret, REDACTED)
    if isinstance(data, list):
        return [scrub(item, secret) for item in data]
    if isinstance(data, dict):
        return {scrub(key, secret): scrub(value, secret) for key, value in data.items()}
    return data


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
    url = upstream.rstrip("/") + str(request["path"])
    sent = {name: value for name, value in headers.items()
            if name.lower() not in _DROPPED and not name.lower().startswith("wop-")}
    data = json.dumps(request["body"]).encode()
    call = urllib.request.Request(url, data=data, method="POST", headers=sent)
    try:
        try:
            with urllib.request.urlopen(call, timeout=_TIMEOUT_S, context=_context()) as answer:
                status, raw, kind = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as exc:
            status, raw, kind = exc.code, exc.read(), exc.headers
    except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError is an OSError
        reason = scrub(str(getattr(exc, "reason", exc)) or type(exc).__name__, secret)
        failure = f"no answer from the model server at {url} ({reason})"
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
                                "body": scrub(body, secret)}
    kept = {name: kind[name] for name in _KEPT_ANSWER_HEADERS if kind.get(name)}
    if kept and status != 200:
        response["headers"] = kept
    return response, None
