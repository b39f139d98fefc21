"""OpenWOP v2 beside v1: version negotiation, tenant-bound ids, the v2 paths and shapes.

``create_app`` mounts it on every host: a request with ``OpenWOP-Version: 2.0`` speaks v2 on
the unversioned paths (``/runs``, ``/workflows``, ``/openapi.json``) and gets the v2
discovery root; a request without the header (or with ``1.x``) speaks v1 on ``/v1/…``.
Both majors drive the same runs (docs/openwop.md, "OpenWOP v2").
"""

from __future__ import annotations

from wopdsl.server.v2.negotiate import PROTOCOL_VERSIONS, VersionNegotiation
from wopdsl.server.v2.routes import V2Api

__all__ = ["PROTOCOL_VERSIONS", "V2Api", "VersionNegotiation"]
