"""Tenant-bound run ids (v2 ``identity.md`` §5): ``<tenant>/<opaque>`` on the wire.

A run's v2 id binds its store id to the caller's tenant: ``local/release-team-1a2b…``. In a
URL path the id travels as one segment, every byte outside ``[A-Za-z0-9._-]`` written as
``~`` and two hex digits (``local~2Frelease-team-…``, RFC 0184); a bare store id (a run
created through ``/v1/runs``, read through ``/runs``) is accepted too, and so is the legacy
``local%2Frelease-team-…`` form, which the server would otherwise decode into two path
segments before routing (:func:`v2_route_path` keeps it one segment).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

from wopdsl.protocol.v2_events import bind, project
from wopdsl.server.errors import ApiError
from wopdsl.server.io import run_not_found

__all__ = ["bind", "project", "tenant_of", "unbind", "v2_route_path"]

_ESCAPE: Final = re.compile(r"[~%]([0-9A-Fa-f]{2})")
_MALFORMED: Final = re.compile(r"~(?![0-9A-Fa-f]{2})")
_TENANT: Final = re.compile(r"(anon:)?[A-Za-z0-9._~-]{1,128}")
LOCAL_TENANT: Final = "local"


def tenant_of(principal: str | None) -> str:
    """The tenant of a caller: its principal (``local`` on a host without tokens)."""
    return principal or LOCAL_TENANT


def unbind(segment: str, tenant: str) -> str:
    """The store id named by a path segment, for a caller of ``tenant``.

    Raises:
        ApiError: 403 ``id_tenant_mismatch`` when the id names another tenant.
    """
    if _MALFORMED.search(segment):
        raise ApiError(400, "validation_error", "a '~' in a run id path segment must introduce "
                       "two hex digits (RFC 0184: '/' travels as '~2F', '~' as '~7E')",
                       {"field": "runId"})
    raw = bytearray()
    position = 0
    for match in _ESCAPE.finditer(segment):
        raw += segment[position:match.start()].encode()
        raw.append(int(match.group(1), 16))
        position = match.end()
    raw += segment[position:].encode()
    wire = raw.decode(errors="replace")
    owner, sep, run_id = wire.rpartition("/")
    if not sep:
        return wire
    if "/" in owner:  # No bound id holds two slashes: it names no run.
        raise run_not_found(segment)
    if owner != tenant or not _TENANT.fullmatch(owner):
        raise ApiError(403, "id_tenant_mismatch",
                       "this run id is bound to another tenant than the caller's",
                       {"tenant": tenant})
    return run_id


def v2_route_path(raw_path: bytes) -> str | None:
    """The path to route for a ``/runs/<tenant>%2F<opaque>…`` request (else ``None``).

    The run segment's ``%2F`` becomes ``~2F`` (the same id, RFC 0184) and the rest is
    percent-decoded as usual, so the bound id stays one path segment.
    """
    if not raw_path.startswith(b"/runs/"):
        return None
    segment, slash, rest = raw_path[len(b"/runs/"):].partition(b"/")
    if b"%2f" not in segment.lower():
        return None
    segment = re.sub(rb"%2[fF]", b"~2F", segment)
    return unquote(f"/runs/{segment.decode('latin-1')}{slash.decode()}{rest.decode('latin-1')}")
