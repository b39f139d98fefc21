"""Cross-site rules as an ASGI middleware: only this host's names, only JSON writes, same origin.

A web page on another site can make a browser send requests to a host on loopback: a form
post or a ``text/plain`` fetch needs no permission from the host (no CORS preflight), and a
DNS-rebinding page even reads the answers, because the browser takes the host for the
page's own. Three checks close those doors, with or without tokens:

- **Host.** The ``Host`` header must name this host: a loopback name (``127.0.0.1`` or any
  ``127.x.y.z``, ``localhost``, ``[::1]``, any port) unless ``allowed_hosts`` says otherwise.
  A rebinding page's requests carry its own name: 400 ``host_not_allowed``.
- **Origin.** A request that changes something (any method but GET, HEAD and OPTIONS) and
  carries an ``Origin`` must come from this host's own origin: 403 ``origin_not_allowed``.
- **Content-Type.** Such a request with a body (or with any ``Content-Type``) must send
  JSON (``application/json`` or ``application/*+json``): 415 ``unsupported_media_type``. A
  form or ``text/plain`` body never reaches an endpoint. A request without a body and
  without a ``Content-Type`` (``curl -X POST …/cancel``) passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import urlsplit

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from wopdsl.server.config import is_loopback
from wopdsl.server.errors import envelope

__all__ = ["LOOPBACK_NAMES", "AllowedHosts", "SiteGuard", "host_name"]

LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "::1")
"""The names a host serves by default (any ``127.x.y.z`` too), on any port."""

_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


def host_name(authority: str) -> str | None:
    """The name in a ``Host`` value (``[::1]:8000`` → ``::1``), lower case; ``None`` if bad."""
    text = authority.strip().lower()
    if text.startswith("["):
        name, sep, rest = text[1:].partition("]")
        if not sep or (rest and not (rest.startswith(":") and rest[1:].isdigit())):
            return None
    else:
        name, sep, port = text.rpartition(":")
        if not sep:
            name = text
        elif not port.isdigit():
            return None
    name = name.removesuffix(".")
    return name or None


class AllowedHosts:
    """The names a host answers to: the loopback names, and ``names``.

    Args:
        names: More host names or IP addresses, ``*.example.com`` (that domain's
            subdomains), or ``*`` (any name: turns the check off).
    """

    def __init__(self, names: Iterable[str] = ()) -> None:
        given = [n.strip().lower() for n in names if n.strip()]
        self.any = "*" in given
        self.exact = {_name(n) for n in (*LOOPBACK_NAMES, *given) if not n.startswith("*")}
        self.suffixes = tuple(n[1:] for n in given if n.startswith("*."))

    def __repr__(self) -> str:
        return f"AllowedHosts({self.names!r})"

    @property
    def names(self) -> list[str]:
        """The names, for messages (``*`` when any name is allowed)."""
        if self.any:
            return ["*"]
        return [*sorted(self.exact), *("*" + s for s in self.suffixes)]

    def allows(self, authority: str | None) -> bool:
        """Whether a request whose ``Host`` header is ``authority`` is for this host."""
        if self.any:
            return True
        name = host_name(authority or "")
        if name is None:
            return False
        return name in self.exact or name.endswith(self.suffixes) or is_loopback(name)


class SiteGuard:
    """Refuse foreign ``Host`` names, foreign origins and non-JSON writes (see the module).

    Args:
        app: The wrapped app.
        hosts: The names the host answers to.
    """

    def __init__(self, app: ASGIApp, hosts: AllowedHosts) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI connection."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host")
        refusal = self._refusal(scope, headers, host)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, body = refusal
        await _answer(send, status, body)

    def _refusal(self, scope: Scope, headers: dict[str, str],
                 host: str | None) -> tuple[int, dict[str, Any]] | None:
        if not self.hosts.allows(host):
            return 400, envelope(
                "host_not_allowed", f"this host does not answer to the name {host!r}",
                {"host": host, "hint": "use the address the host was started on (e.g. "
                 "http://127.0.0.1:8000), or start it with --allowed-hosts NAME"})
        if scope["method"] in _SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin, host or ""):
            return 403, envelope(
                "origin_not_allowed", f"a page of {origin!r} may not change anything here",
                {"origin": origin, "hint": "requests that change something come from this "
                 "host's own page or from programs that send no Origin"})
        media = headers.get("content-type")
        has_body = headers.get("content-length", "0").strip() not in ("", "0") or \
            "transfer-encoding" in headers
        if (media is not None or has_body) and not _is_json(media or ""):
            return 415, envelope(
                "unsupported_media_type",
                f"a {scope['method']} body must be JSON, not {media or 'untyped data'!r}",
                {"contentType": media, "hint": "send Content-Type: application/json"})
        return None


def _name(given: str) -> str:
    """A configured name without port or brackets (``[::1]`` → ``::1``)."""
    if given.count(":") > 1 and not given.startswith("["):
        return given  # A bare IPv6 address.
    return host_name(given) or given


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers (the last of a repeated one; a repeated Host is refused)."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        if name == "host" and name in found:
            found[name] = "\0"  # Two Host headers: no name can match.
        else:
            found[name] = raw_value.decode("latin-1")
    return found


def _is_json(media: str) -> bool:
    kind = media.split(";", 1)[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/")
                                           and kind.endswith("+json"))


def _same_origin(origin: str, host: str) -> bool:
    """Whether ``Origin`` names the scheme-less authority the request was sent to."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return False  # "null" (sandboxed frames, file: pages) and other schemes.
    wanted = host_name(host)
    if wanted is None or parts.hostname.removesuffix(".") != wanted:
        return False
    given = "" if host.endswith("]") else host.rpartition(":")[2]
    if not given.isdigit():  # No port in Host: the origin's scheme's own (behind a proxy).
        return port is None or port == _DEFAULT_PORTS[parts.scheme]
    return (port or _DEFAULT_PORTS[parts.scheme]) == int(given)


async def _answer(send: Send, status: int, body: dict[str, Any]) -> None:
    data = orjson.dumps(body)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()),
                            (b"vary", b"Origin")]})
    await send({"type": "http.response.body", "body": data})
