"""Tenant-bound run ids (v2 ``identity.md`` §5): ``<tenant>/<opaque>`` on the wire.

A run's v2 id binds its store id to the caller's tenant: ``local/release-team-1a2b…``. In a
URL path the id travels as one segment, every byte outside ``[A-Za-z0-9._-]`` written as
``~`` and two hex digits (``local~2Frelease-team-…``); a bare store id (a run created
through ``/v1/runs``, read through ``/runs``) is accepted too. (The legacy ``%2F`` form is
decoded by the server before routing, so it names no route.)
"""

from __future__ import annotations

import re
from typing import Final

from wopdsl.server.errors import ApiError

__all__ = ["bind", "project", "tenant_of", "unbind"]

_PASSTHROUGH: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                b"abcdefghijklmnopqrstuvwxyz0123456789._-")
_ESCAPE: Final = re.compile(r"[~%]([0-9A-Fa-f]{2})")
_TENANT: Final = re.compile(r"(anon:)?[A-Za-z0-9._~-]{1,128}")
LOCAL_TENANT: Final = "local"


def tenant_of(principal: str | None) -> str:
    """The tenant of a caller: its principal (``local`` on a host without tokens)."""
    return principal or LOCAL_TENANT


def bind(tenant: str, run_id: str) -> str:
    """``<tenant>/<run id>``: the run id as v2 bodies carry it."""
    return f"{tenant}/{run_id}"


def project(bound: str) -> str:
    """The one-segment path form of a bound id (``acme/r-1`` → ``acme~2Fr-1``)."""
    return "".join(chr(b) if b in _PASSTHROUGH else f"~{b:02X}" for b in bound.encode())


def unbind(segment: str, tenant: str) -> str:
    """The store id named by a path segment, for a caller of ``tenant``.

    Raises:
        ApiError: 403 ``id_tenant_mismatch`` when the id names another tenant.
    """
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
    if owner != tenant or not _TENANT.fullmatch(owner):
        raise ApiError(403, "id_tenant_mismatch",
                       "this run id is bound to another tenant than the caller's",
                       {"tenant": tenant})
    return run_id
