"""An MCP server for the tests, built with the official SDK: tools that count their effects,
hang, answer huge, fail, and die. ``--http PORT`` serves streamable HTTP on loopback and
refuses requests without ``Authorization: Bearer $MCP_TEST_TOKEN``. ``--many N`` adds N tools
``t00001`` … (a server offering too many), ``--version V`` sets the version it reports, and
``--ttl-ms MS`` lets clients cache its tool list that long (a SEP-2549 cache hint, scope
``--scope``, default public); ``$MCP_TEST_VERSION``, ``$MCP_TEST_TTL_MS`` and
``$MCP_TEST_SCOPE`` set them too. With ``$MCP_TEST_STARTS``, each start appends a line there.

Over stdio, ``@@lone-udc80@@`` in what the server writes becomes the JSON escape ``\\udc80``:
a lone surrogate as a JavaScript server's ``JSON.stringify`` spells it (the Python SDK cannot
serialise one at all, so the ``garbled`` tool names them and the wire spells them).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import sys

import anyio
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--many", type=int, default=0)
    parser.add_argument("--version", default=os.environ.get("MCP_TEST_VERSION", ""))
    parser.add_argument("--ttl-ms", type=int, default=int(os.environ.get("MCP_TEST_TTL_MS", 0)))
    parser.add_argument("--scope", default=os.environ.get("MCP_TEST_SCOPE", "public"))
    return parser.parse_args()


def numbered(value: str) -> str:
    """Answer the value (one of the --many numbered tools)."""
    return value


ARGS = _arguments()
_NUMBERED = Tool.from_function(numbered)
server = MCPServer("test-tools", version=ARGS.version, tools=[
    _NUMBERED.model_copy(update={"name": f"t{index:05d}", "description": f"Tool {index}."})
    for index in range(1, ARGS.many + 1)], cache_hints={
    "tools/list": CacheHint(ttl_ms=ARGS.ttl_ms, scope=ARGS.scope)} if ARGS.ttl_ms else None)
if os.environ.get("MCP_TEST_STARTS"):
    with open(os.environ["MCP_TEST_STARTS"], "a", encoding="utf-8") as _starts:
        _starts.write(f"{os.getpid()}\n")


def _effect(**fields: object) -> None:
    path = os.environ.get("WOPDSL_TEST_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({**fields, "pid": os.getpid()}) + "\n")
            out.flush()
            os.fsync(out.fileno())


@server.tool()
def count(label: str) -> str:
    """Count one effect with this label."""
    _effect(tool="count", label=label)
    return f"counted {label}"


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    _effect(tool="sleep")
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def big(megabytes: int) -> str:
    """Answer with this many megabytes."""
    return "y" * (megabytes * 1024 * 1024)


@server.tool()
def fail(message: str) -> str:
    """Fail with a message (a ToolError: the client sees it)."""
    raise ToolError(message)


@server.tool()
def garbled() -> str:
    """Answer with text that is not valid Unicode (lone surrogates, as JavaScript sends them)."""
    _effect(tool="garbled")
    return "before @@lone-udc80@@ pair \U0001f600 after @@lone-ud83d@@"


@server.tool()
def die(code: int = 3) -> str:
    """Exit the server process at once (a crash)."""
    _effect(tool="die")
    os._exit(code)


@server.tool()
def die_loudly() -> str:
    """Print the secret passed in $OPS_MCP_SECRET to stderr (in four forms), then exit."""
    secret = os.environ.get("OPS_MCP_SECRET", "")
    print("dying with", secret, secret.upper(), secret[::-1],
          base64.b64encode(secret.encode()).decode(), file=sys.stderr, flush=True)
    os._exit(6)


@server.tool()
def die_once() -> str:
    """Exit the server process the first time (marker file $MCP_TEST_DIE_MARKER), then answer."""
    _effect(tool="die_once")
    marker = os.environ["MCP_TEST_DIE_MARKER"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(4)
    return "alive again"


def _guarded(app):  # type: ignore[no-untyped-def]
    token = os.environ["MCP_TEST_TOKEN"]

    async def guard(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"no"})
                return
        await app(scope, receive, send)

    return guard


class _SpelledAsJavaScript:
    """The server's stdout, with ``@@lone-uXXXX@@`` written as the JSON escape ``\\uXXXX``."""

    def __init__(self) -> None:
        self.out = sys.stdout.buffer

    def write(self, text: str) -> int:
        self.out.write(re.sub(r"@@lone-(u[0-9a-f]{4})@@", r"\\\1", text).encode())
        return len(text)

    def flush(self) -> None:
        self.out.flush()


async def _stdio() -> None:
    """``server.run()`` over stdio, its stdout spelling lone surrogates (see the docstring)."""
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    async with stdio_server(stdout=anyio.wrap_file(_SpelledAsJavaScript())) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


if __name__ == "__main__":
    if ARGS.http:
        import uvicorn

        uvicorn.run(_guarded(server.streamable_http_app()), host="127.0.0.1", port=ARGS.http,
                    log_level="warning")
    else:
        anyio.run(_stdio)
