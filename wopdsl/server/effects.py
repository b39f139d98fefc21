"""``GET /host/effect-seams`` (v1: ``/v1/host/effect-seams``): the effect-seam manifest.

v2 ``replay.md`` §The effect-seam manifest (RFC 0173 §C.1): one row per outbound effect path
a council's members can reach through the engine, each guarded in a ``replay`` fork. Those
paths are tool calls (docs/guides/tools.md): a Python tool function, and the tools of an MCP
server over stdio or streamable HTTP. In a replay fork each call is answered from the source
run's kept result (looked up by the source run and the call's id); a call the source never
made is answered ``NOT_REPLAYED`` and nothing is called. A ``branch`` fork makes its calls
anew (``branchReFires``). What a replay does run again — model calls, a ``python`` member's
own code — is said in docs/guides/serve.md §Fork and replay.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any, Final

__all__ = ["MANIFEST_PATH", "manifest"]

MANIFEST_PATH: Final = "/host/effect-seams"
"""The v2 address (``replay.effectSeamsManifest``, a constant of the replay facet)."""

_GUARD: Final = ("wopdsl.agents.tools.runner.CallRunner: in a replay fork the source run's "
                 "kept result answers the call (keyed by the source run and the call id); a "
                 "call the source never made is answered NOT_REPLAYED and nothing is called")

_SEAMS: Final = (
    {"seam": "tool.native", "kind": "other", "guarded": True, "guardedBy": _GUARD,
     "branchReFires": True,
     "note": "a Python tool function an llm member calls (a typed callable of the council)"},
    {"seam": "tool.mcp-stdio", "kind": "other", "guarded": True, "guardedBy": _GUARD,
     "branchReFires": True,
     "note": "a tool of an MCP server the host starts as a subprocess (stdio transport)"},
    {"seam": "tool.mcp-http", "kind": "http", "guarded": True, "guardedBy": _GUARD,
     "branchReFires": True, "note": "a tool of an MCP server over streamable HTTP"},
)


def manifest() -> dict[str, Any]:
    """The manifest ``{manifestVersion: "1", host: {name, build}, seams}``."""
    return {"manifestVersion": "1",
            "host": {"name": "wopdsl", "build": {"kind": "artifact-sha256", "id": _build()}},
            "seams": [dict(seam) for seam in _SEAMS]}


@functools.cache
def _build() -> str:
    """The sha256 of the running ``wopdsl`` package: each file's path and contents."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
