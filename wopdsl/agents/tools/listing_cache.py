"""MCP tool lists kept between ``wop validate`` runs, for as long as each server allows.

Listing a stdio server's tools means starting it (seconds for a Python server); a cached list
lets ``wop validate`` skip that. An entry is used only while the server said it may be: its
``tools/list`` answer carries a SEP-2549 cache hint (``ttlMs`` > 0, ``cacheScope =
"public"``, clamped to 24 hours). A ``private`` list may depend on who asks (a token, an env
value), so it is never kept: nothing about credentials is ever written here.

The key is a SHA-256 of what starts or reaches the server, never a secret's value: the
command (and the program it resolves to), args, the NAMES of the variables in ``env``, the
folder it runs in, the url and the NAMES of its headers, plus the size and modification time
of the program and of each arg that names a file (editing a server script starts it again).
The entry records the name and version the server reported; every live listing (``wop
validate`` on a miss, ``wop run``) replaces it, or removes it when the server no longer allows
caching. Entries live under ``$XDG_CACHE_HOME/wopdsl/mcp-tools`` (default ``~/.cache``),
readable by the user only; a missing, stale or unreadable entry is a miss, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from wopdsl.agents.tools.mcp import McpConnection

__all__ = ["MAX_TTL_S", "Cached", "ListedTool", "cache_dir", "cache_key", "forget", "load",
           "save"]

FORMAT: Final = 1
"""The entries' format (part of the key: another format is another entry)."""
MAX_TTL_S: Final = 24 * 3600
"""The longest an entry is used, whatever the server allows (the MCP SDK's clamp too)."""


@dataclass(frozen=True, slots=True)
class ListedTool:
    """What wopdsl reads of an MCP tool: its name, description and arguments' schema."""

    name: str
    description: str | None
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Cached:
    """A kept listing, with what ``wop validate`` says about it."""

    server_info: tuple[str, str]
    """The name and version the server reported when it was listed."""
    protocol: str
    listed_at: float
    """When it was listed (seconds since the epoch)."""
    ttl_s: float
    """How long the server let it be kept (at most :data:`MAX_TTL_S`)."""
    tools: list[ListedTool]

    def age_s(self) -> float:
        """Seconds since it was listed."""
        return max(0.0, time.time() - self.listed_at)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/wopdsl/mcp-tools`` (``~/.cache`` when unset or not absolute).

    Raises:
        RuntimeError: neither is set and the user has no home folder.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "wopdsl" / "mcp-tools"


def cache_key(connection: McpConnection) -> str:
    """The entry's name: a hash of how the server is started or reached (no secret value)."""
    spec = connection.spec
    folder = connection.base_dir
    program = None
    if spec.command is not None:
        if spec.command in ("python", "python3"):
            program = sys.executable
        elif "/" in spec.command:
            program = str((folder or Path.cwd()) / spec.command)
        else:
            program = shutil.which(spec.command)
    identity = {
        "format": FORMAT, "command": spec.command, "program": _stat(program),
        "args": list(spec.args), "env": sorted(spec.env),
        "cwd": str(folder) if folder is not None else None, "url": spec.url,
        "headers": sorted(name.lower() for name in spec.headers),
        "files": [_stat(str((folder or Path.cwd()) / arg)) for arg in spec.args
                  if _is_file((folder or Path.cwd()) / arg)],
    }
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def load(connection: McpConnection) -> Cached | None:
    """The kept listing of the connection's server while the server allows it, else ``None``.

    A server whose ``env`` or ``headers`` name a variable that is not set is not served from
    the cache: starting it reports the variable, as a run would.
    """
    spec = connection.spec
    if any(name not in os.environ for name in [*spec.env, *spec.headers.values()]):
        return None
    try:
        path = cache_dir() / f"{cache_key(connection)}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            return None
        ttl_s = min(float(data["ttl_ms"]) / 1000, MAX_TTL_S)
        listed_at = float(data["listed_at"])
        if not 0 <= time.time() - listed_at < ttl_s:
            return None
        tools = [ListedTool(str(t["name"]), t.get("description"), dict(t["input_schema"]))
                 for t in data["tools"]]
        info = data["server"]
        return Cached((str(info["name"]), str(info["version"])), str(data["protocol"]),
                      listed_at, ttl_s, tools)
    except (OSError, RuntimeError, ValueError, KeyError, TypeError, AttributeError):
        return None  # RuntimeError: no home folder


def save(connection: McpConnection) -> None:
    """Keep the connection's live listing if its server allows caching; else drop any entry.

    Writing is best effort (a read-only home is not an error).
    """
    if connection.cache_ttl_ms <= 0:
        forget(connection)
        return
    name, version = connection.server_info
    data = {"format": FORMAT, "server": {"name": name, "version": version},
            "protocol": connection.protocol, "listed_at": time.time(),
            "ttl_ms": connection.cache_ttl_ms,
            "tools": [{"name": str(tool.name), "description": tool.description,
                       "input_schema": _schema(tool)} for tool in connection.listing.values()]}
    with contextlib.suppress(OSError, RuntimeError):
        folder = cache_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".entry-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:  # mode 0600 (mkstemp)
                json.dump(data, out, ensure_ascii=False, separators=(",", ":"))
            os.replace(temporary, folder / f"{cache_key(connection)}.json")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        _prune(folder)


def forget(connection: McpConnection) -> None:
    """Drop the connection's entry (if any)."""
    with contextlib.suppress(OSError, RuntimeError):
        (cache_dir() / f"{cache_key(connection)}.json").unlink()


def _prune(folder: Path) -> None:
    """Remove entries older than :data:`MAX_TTL_S` (stale whatever their hint said)."""
    limit = time.time() - MAX_TTL_S
    for entry in folder.glob("*.json"):
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < limit:
                entry.unlink()


def _schema(tool: Any) -> dict[str, Any]:
    schema = getattr(tool, "input_schema", None)
    return dict(schema) if isinstance(schema, Mapping) else {}


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _stat(path: str | None) -> list[Any] | None:
    """``[path, size, mtime_ns]`` of a file, ``None`` when there is none."""
    if path is None:
        return None
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return [path, None, None]
    return [path, found.st_size, found.st_mtime_ns]
